/** The did.json source: the controller keys a DID document publishes, and its evidence. */
import type { DidDocumentFetch } from "../../ports/discovery.ts";
import { controllerIdentity, jwkToDidJwk, normalizeDid } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { canonicalControllerKey } from "./controller_values.ts";
import type { EvidenceItem } from "./discovery_record.ts";
import type { KeySet } from "./key_set.ts";

/**
 * Reads the controller keys of a DID document: `blockchainAccountId` (CAIP-10, kept with its own
 * chain id) as did:pkh, `publicKeyJwk` as did:jwk (public members, sorted keys). A document that is
 * not an object, has no `id` or names another DID as `id` (the `id` must be the subject DID), or has
 * a non-array `verificationMethod` is invalid. Every verification method counts (decisions §8), however many: the
 * document's 64 KiB bounds them (controller_values.ts). Before, only the first 64 keys were read.
 */
export function controllerKeysFromDidDocument(document: unknown, subjectDid: string): Result<string[], "INVALID_INPUT"> {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return fail("INVALID_INPUT", "DID document is not a JSON object");
  }
  const doc = document as Record<string, unknown>;
  if (doc.id === undefined) return fail("INVALID_INPUT", "DID document has no id");
  const id = typeof doc.id === "string" ? normalizeDid(doc.id) : undefined;
  if (!id?.ok || id.value !== subjectDid) return fail("INVALID_INPUT", "DID document id does not match the subject");
  const methods = doc.verificationMethod ?? [];
  if (!Array.isArray(methods)) return fail("INVALID_INPUT", "DID document verificationMethod is not an array");
  const keys: string[] = [];
  const seen = new Set<string>();
  const add = (key: string | undefined) => {
    if (key === undefined) return;
    const identity = controllerIdentity(key) ?? key;
    if (seen.has(identity)) return;
    seen.add(identity);
    keys.push(key);
  };
  for (const method of methods) {
    if (typeof method !== "object" || method === null) continue;
    const m = method as Record<string, unknown>;
    if (typeof m.blockchainAccountId === "string") add(canonicalControllerKey(m.blockchainAccountId));
    if (typeof m.publicKeyJwk === "object" && m.publicKeyJwk !== null && !Array.isArray(m.publicKeyJwk)) {
      const did = jwkToDidJwk(m.publicKeyJwk as Record<string, unknown>, { publicOnly: true });
      if (did.ok) add(did.value);
    }
  }
  return ok(keys);
}

/** Why a did.json fetch gave no document, for people; undefined unless it was unavailable. */
export const didJsonError = (fetch: DidDocumentFetch): string | undefined => {
  if (fetch.status !== "unavailable") return undefined;
  switch (fetch.reason) {
    case "http-status":
      return `HTTP ${fetch.httpStatus ?? "error"}`;
    case "blocked-address":
      return "Host resolves to a non-public address";
    case "too-large":
      return "DID document exceeds 64 KiB";
    case "invalid-json":
      return "DID document is not valid JSON";
    case "redirect":
      return "Redirects are not followed";
    case "timeout":
      return "DID document fetch timed out";
    case "tls-error":
      return "TLS verification failed";
    case "dns-failure":
      return "Host name lookup failed";
    case "invalid-host":
      return "Invalid host";
    default:
      return "Network error";
  }
};

/**
 * Whether a fetch that gave no document failed for good: the host answered with content that can never be a DID
 * document (a body that is not JSON, over the byte cap, a redirect, never followed) or the DID names no usable host.
 * Everything else could not be read now, and is not held against the subject: the address lookup failed, a timeout,
 * a refused or reset connection, a TLS failure, any HTTP status (a 401, 403 or 421 is as often a WAF or a CDN's
 * incident as the subject's own answer), and a host the address policy refuses (its answers may be a rebinding
 * attempt, decided by whoever controls a resolver on the way). Only the witness's answer (422, not 502), subject
 * ownership (`failed`) and the verdicts that only get stricter read `lasting`; controller authorization and key status
 * still treat every source that gave no answer as undecided (domain/keys/_subject_evidence.ts).
 */
export function isLastingFetchFailure(fetch: DidDocumentFetch): boolean {
  if (fetch.status !== "unavailable") return false;
  return fetch.reason === "invalid-host" || fetch.reason === "redirect" || fetch.reason === "too-large" || fetch.reason === "invalid-json";
}

/**
 * The evidence of the did.json source, its keys added to `keySet`. An `unavailable` source is `lasting` when it was
 * read and cannot be used ({@link isLastingFetchFailure}, or a document that is not the subject's DID document).
 */
export function didJsonEvidence(
  document: DidDocumentFetch,
  location: string,
  subjectDid: string,
  keySet: KeySet,
): EvidenceItem {
  if (document.status === "not-found") {
    return { kind: "did-json", status: "not-found", location, keys: [], notes: ["No DID document there (HTTP 404, or the host has no address)"] };
  }
  if (document.status === "unavailable") {
    const lasting = isLastingFetchFailure(document) ? { lasting: true as const } : {};
    return { kind: "did-json", status: "unavailable", location, keys: [], error: didJsonError(document)!, ...lasting };
  }
  const keys = controllerKeysFromDidDocument(document.document, subjectDid);
  if (!keys.ok) return { kind: "did-json", status: "unavailable", location, keys: [], error: keys.message, lasting: true };
  for (const key of keys.value) keySet.add(key, "did-json");
  if (keys.value.length === 0) {
    return { kind: "did-json", status: "not-found", location, keys: [], notes: ["The DID document names no blockchainAccountId or publicKeyJwk"] };
  }
  return { kind: "did-json", status: "found", location, keys: keys.value };
}
