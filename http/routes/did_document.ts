/** The service's did:web document (decisions §18): its route (x402/elysia.ts) and its declaration. */
import { type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";

export { didDocumentRoutes } from "../../x402/elysia.ts";

/** The service's did:web document (decisions §18): route declarations, gathered by http/route_docs.ts. */
export const DID_DOCUMENT_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/.well-known/did.json"],
    auth: "public",
    cache: CACHE.static,
    summary: "The service's DID document (decisions §18), application/did+json: the did:web of PUBLIC_BASE_URL's host with the key that signs its x402 offers and receipts: a JsonWebKey2020 #key-1 (with alg) when X402_SIGNING_FORMAT=jws (the key JWS headers carry as jwk beside kid), an EcdsaSecp256k1RecoveryMethod2020 (blockchainAccountId) for eip712; served only when x402 is offered",
    responses: { 200: { description: "application/did+json" }, 404: err("NOT_FOUND: x402 is not offered") },
  },
];
