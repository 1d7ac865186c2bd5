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
 * An eip155 did:pkh as CAIP-2 and CAIP-10 write it, after {@link normalizeDid} lowercased it: the chain id in decimal
 * with no leading zero, then a 20-byte address. The chain id must also be a safe integer (checked apart), as the service
 * reads chain ids as JavaScript numbers: a larger one would round to another's.
 */
const EIP155_DID_PKH = /^did:pkh:eip155:([1-9][0-9]{0,15}):0x[0-9a-f]{40}$/;

/**
 * The one rule for a subject a caller names (issue 43), used by every route, MCP tool and client helper that takes one
 * (the attestation list and count, key status, controller authorization and discovery, reviews, the witness, subjects
 * and ownership proofs, webhook subjects): the subject in the form that is hashed ({@link normalizeDid}), or
 * `INVALID_DID` when
 * - it is empty, or it or its normal form is longer than {@link MAX_SUBJECT_DID_LENGTH};
 * - it holds whitespace or a control character (`did:web:not a did`, `did:web:exa<TAB>mple.com`: no attestation can
 *   name it, and `not a did` would otherwise become `did:web:not a did`); whitespace around it is trimmed, as
 *   {@link normalizeDid} always did (a pasted `  example.com `);
 * - {@link normalizeDid} refuses it, or what it gives is not its own normal form (`did:web:x..`, `did:web:www.www.x`);
 * - it is a did:web (a bare domain becomes one) naming no domain ({@link didWebLocation}): `did:web:a..b`, an IP host;
 * - it is an eip155 did:pkh whose chain id is not written in plain decimal, or whose account is not a 20-byte address
 *   ({@link EIP155_DID_PKH}): `did:pkh:eip155:01:…`, `…:0x1:…` and `…:1e0:…` were second names for chain 1, each with a
 *   DID address of its own, and contract ownership was read on chain 1 for them; other namespaces stay as written.
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
  // The name is measured too: a bare domain with a path (`example.com:…`) gains `did:web:`, and a subject of 2,041 to
  // 2,048 characters became one no record names (recordSubjectDid names none over the length), listed and counted 0.
  if (normalized.value.length > MAX_SUBJECT_DID_LENGTH) return invalid(`The subject must be at most ${MAX_SUBJECT_DID_LENGTH} characters as a DID`);
  // One pass of the reference's rule must give a name it keeps: `did:web:x..` and `did:web:www.www.x` gave `x.` and
  // `www.x`, which the DID address and discovery normalize again (to `x`) but the evidence matching did not, so their
  // key bindings and witnesses were dropped and "not authorized" became "authorized". A name already in its normal
  // form (every record's subject the list reads, recordSubjectDid) is not normalized a second time.
  const again = normalized.value === input ? normalized : normalizeDid(normalized.value);
  if (!again.ok || again.value !== normalized.value) return invalid("The subject names a second trailing dot or a second www.: name the domain once");
  if (normalized.value.startsWith("did:web:") && didWebLocation(normalized.value) === undefined) {
    return invalid(DID_WEB_NO_LOCATION);
  }
  if (normalized.value.startsWith("did:pkh:eip155:") && !isPlainEip155(normalized.value)) {
    return invalid("An eip155 did:pkh names its chain in decimal with no leading zero, and a 20-byte address");
  }
  return normalized;
}

/** Whether an eip155 did:pkh is written as {@link EIP155_DID_PKH} says, with a chain id that is a safe integer. */
function isPlainEip155(did: string): boolean {
  const chainId = EIP155_DID_PKH.exec(did)?.[1];
  return chainId !== undefined && Number.isSafeInteger(Number(chainId));
}

/**
 * What a record's payload `subject` names (the list's and count's subject filter, the stored subject of the index,
 * webhook events): {@link normalizeDid}, the form that is hashed, kept only when it is a subject a caller can name by
 * {@link normalizeSubjectDid} (a fixed point of it); undefined otherwise. Key status and controller authorization compare
 * the hashed form with a subject {@link normalizeSubjectDid} gave, which agrees with it.
 *
 * A record's subject is data anyone writes, not a request's input: the rule for it cuts at `#` first (decisions §3: a
 * fragment names a part of the DID document, never another subject), so `did:web:x#<TAB>k` names `did:web:x`, where
 * {@link normalizeSubjectDid} refuses it whole as a caller's input. What it gives never holds whitespace or a control
 * character, so a stored subject never reaches PostgreSQL's text with U+0000.
 */
export function recordSubjectDid(subject: unknown): string | undefined {
  if (typeof subject !== "string") return undefined;
  const hashed = normalizeDid(subject);
  if (!hashed.ok) return undefined;
  const named = normalizeSubjectDid(hashed.value);
  return named.ok && named.value === hashed.value ? named.value : undefined;
}
