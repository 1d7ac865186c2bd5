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
 * Every controller value of a source counts (decisions §8): there is no cap on their number. Before, only the first 64
 * of a TXT name or a DID document were read, and the 65th controller a domain published was answered "not confirmed"
 * (the witness's 422 `EVIDENCE_NOT_FOUND`) with nothing saying why. What bounds the work is the size of the remote
 * text: a TXT name's records (character-strings joined) are at most what one DNS message carries (65,535 bytes over
 * TCP, adapters/dns), a did.json at most 64 KiB (adapters/https/https_did_document.ts), and a discovery reads two TXT
 * names and one did.json. The shortest value that is a key (`controller=a:b:c;`, 17 bytes) makes that at most about
 * 3,800 keys per TXT name and 2,000 per did.json (a discovery of 9,600 keys: 40 ms of CPU); the longest keys (RSA
 * did:jwk) fit about 68 to a source. Every parser of them is linear in its input: quotes trimmed by index, the record
 * split once, keys deduplicated in a `Set` (by {@link controllerIdentity} for did.json and when merged; comparing every
 * pair of did:jwk keys took 2 s for 192 RSA keys), so reading, merging and each later scan of the keys (is this
 * controller among them?) costs time linear in those bytes (domain/discovery/adversarial_input_test).
 */
export const MAX_CONTROLLER_VALUE = 2_048;

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
