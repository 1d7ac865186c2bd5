/**
 * The Elysia side of the extension (`@ats/x402-offer-receipt/elysia`): the fetch-level x402 wrapper for an
 * Elysia app and the route serving the DID document. Kept out of `mod.ts` so the package's main entry loads
 * in any server (Express, Hono, Next on Node) without Elysia installed (decisions §26).
 */
import { Elysia } from "elysia";
import { DID_DOCUMENT_PATH, type DidDocument, didDocumentResponse } from "./did_document.ts";

export { createX402Fetch, withX402, type X402FetchOptions } from "./elysia_adapter.ts";

/** An Elysia plugin serving the document at `/.well-known/did.json`. */
export function didDocumentRoutes(document: DidDocument) {
  return new Elysia({ name: "x402-did-document" }).get(DID_DOCUMENT_PATH, () => didDocumentResponse(document));
}
