/**
 * DIDs: normalization, hashing, DID addresses and the per-method helpers every feature shares; one concept per file:
 * `normalize.ts` (the hashed form, and a method's parts read from any spelling), `did_address.ts` (hash and EAS
 * recipient), `subject.ts` (the one subject rule), `controller_id.ts` (when two DIDs name one controller), a file per
 * method (`did_web.ts`, `did_pkh.ts`, `did_jwk.ts`, `did_artifact.ts`; did:handle is only normalized) and
 * `codecs.ts` (base32, base64url, varints).
 *
 * Rules follow the newest reference SDK (reference §1.2) with the product decisions of decisions §3.
 * Every function here returns expected failures as values and never throws for any string input (save
 * {@link artifactDidFromDigest}, whose input is ours).
 */
export type { InvalidDid } from "./_private.ts";
export { base32LowerDecode, base32LowerEncode, base58btcDecode, base58btcEncode, base64UrlDecode, base64UrlEncode, varintReader } from "./codecs.ts";
export { controllerIdentity, isSameControllerId } from "./controller_id.ts";
export { didKeyShapeProblem } from "./did_key_shape.ts";
export { computeDidHash, didAddressFromHash, didToAddress, validateDidAddress } from "./did_address.ts";
export { type ArtifactDid, artifactDidFromDigest, parseArtifactDid } from "./did_artifact.ts";
export { type JwkToDidJwkOptions, jwkToDidJwk, publicJwkEquals, validatePublicJwk } from "./did_jwk.ts";
export { JWK_IGNORED_IN_EQUALITY, JWK_PUBLIC_MEMBERS } from "./_private.ts";
export { buildDidPkh, buildDidPkhFromCaip10, checksumEvmAddress, type DidPkhParts } from "./did_pkh.ts";
export { DID_WEB_NO_LOCATION, didWebLocation, isDidWebPathSegment, isDomainNameHost, normalizeDomain } from "./did_web.ts";
export { didJwkToJwk, didPkhToCaip10, extractAddressFromDid, getDomainFromDidWeb, normalizeDid, parseDidPkh } from "./normalize.ts";
export { MAX_SUBJECT_DID_LENGTH, normalizeSubjectDid, recordSubjectDid } from "./subject.ts";
