/** The one rule for a subject a caller names (issue 43). */
import type { Result } from "../result.ts";
import { invalid } from "./_private.ts";
import { DID_WEB_NO_LOCATION, didWebLocation } from "./did_web.ts";
import { normalizeDid } from "./normalize.ts";

/** The longest subject a caller may name (a did:jwk of an RSA-4096 key is about 950 characters). */
export const MAX_SUBJECT_DID_LENGTH = 2_048;
/** Whitespace (Unicode's included) and control characters: no DID holds one (DID Core's characters are ASCII). */
const SPACE_OR_CONTROL = /[\s\p{Cc}]/u;

/**
 * The one rule for a subject a caller names (issue 43), used by every route, MCP tool and client helper that takes one
 * (the attestation list and count, key status, controller authorization and discovery, reviews, the witness, subjects
 * and ownership proofs, webhook subjects): the subject in the form that is hashed ({@link normalizeDid}), or
 * `INVALID_DID` when
 * - it is empty or longer than {@link MAX_SUBJECT_DID_LENGTH};
 * - it holds whitespace or a control character (`did:web:not a did`, `did:web:exa<TAB>mple.com`: no attestation can
 *   name it, and `not a did` would otherwise become `did:web:not a did`); whitespace around it is trimmed, as
 *   {@link normalizeDid} always did (a pasted `  example.com `);
 * - {@link normalizeDid} refuses it;
 * - it is a did:web (a bare domain becomes one) naming no domain ({@link didWebLocation}): `did:web:a..b`, an IP host.
 *
 * A bare domain (`example.com`) stays a did:web subject where a route accepted one before; a route that takes DIDs
 * only (key status, webhooks) checks the `did:` prefix itself.
 */
export function normalizeSubjectDid(input: unknown): Result<string, "INVALID_DID"> {
  if (typeof input !== "string" || input.trim() === "") return invalid("The subject must be a non-empty DID or domain");
  if (input.length > MAX_SUBJECT_DID_LENGTH) return invalid(`The subject must be at most ${MAX_SUBJECT_DID_LENGTH} characters`);
  if (SPACE_OR_CONTROL.test(input.trim())) return invalid("The subject must not hold whitespace or control characters");
  const normalized = normalizeDid(input);
  if (!normalized.ok) return normalized;
  if (normalized.value.startsWith("did:web:") && didWebLocation(normalized.value) === undefined) {
    return invalid(DID_WEB_NO_LOCATION);
  }
  return normalized;
}
