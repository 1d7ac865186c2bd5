/** Controller values: which published text is a controller key, in its canonical form, and the bounds on reading them. */
import { buildDidPkhFromCaip10, normalizeDid } from "../did/mod.ts";

/**
 * Canonical form of a published controller value: a signing-key DID (did:pkh, did:ethr, did:key,
 * did:jwk) normalized, keeping the case of did:jwk and did:key (decisions §3), or a CAIP-10 account id
 * as did:pkh. Anything else is not a controller key.
 */
export function canonicalControllerKey(value: string): string | undefined {
  if (value.length > MAX_CONTROLLER_VALUE) return undefined;
  const trimmed = trimQuotes(value.trim()).trim();
  if (trimmed === "") return undefined;
  if (trimmed.startsWith("did:")) {
    const normalized = normalizeDid(trimmed);
    if (!normalized.ok) return undefined;
    return /^did:(pkh|ethr|key|jwk):/.test(normalized.value) ? normalized.value : undefined;
  }
  const pkh = buildDidPkhFromCaip10(trimmed);
  return pkh.ok ? pkh.value : undefined;
}

/**
 * The longest controller value read (a did:jwk of a P-256 key is about 150 characters, of an RSA-4096 key about
 * 950); longer text is not a key, and is refused before any parsing.
 *
 * The other bounds on remote text: a TXT record (its character-strings joined) is at most what one DNS message
 * carries (64 KiB over TCP), a did.json at most 64 KiB (adapters/https/https_did_document.ts). Every parser of them is
 * linear in its input: quotes trimmed by index, the record split once, keys deduplicated by
 * {@link controllerIdentity} in a `Set` (comparing every pair of did:jwk keys took 2 s for 192 RSA keys).
 */
export const MAX_CONTROLLER_VALUE = 2_048;

/** The most controller keys taken from one TXT name (all its records) or one DID document; the rest are ignored. */
export const MAX_CONTROLLERS_PER_SOURCE = 64;

/**
 * Strips leading and trailing `"` by index, in linear time. (A regular expression such as `/^"+|"+$/g`
 * retries its second branch from every position of a run of quotes: quadratic, 1.9 s of CPU for 60,000 `"`.)
 */
function trimQuotes(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) === 34) start++;
  while (end > start && text.charCodeAt(end - 1) === 34) end--;
  return text.slice(start, end);
}
