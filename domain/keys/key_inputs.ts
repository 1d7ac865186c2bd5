/** The inputs of a key-status lookup read and made canonical: the key DID, the subject DID, the time. */
import { didKeyShapeProblem, normalizeDid, normalizeSubjectDid } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";

/** The key DID methods a signing key may use (decisions §17). */
export const KEY_DID_METHODS = ["pkh", "key", "jwk", "ethr"] as const;
/** Longest DID accepted as a key or subject (a did:jwk of an RSA-4096 key is about 950 characters). */
export const MAX_DID_LENGTH = 2_048;

/** A key DID made canonical (fragment dropped, did:pkh lowercased), or why it is not one. */
export function readKeyDid(value: unknown, field = "keyDid"): Result<string, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value !== "string" || value.trim() === "") return fail("INVALID_INPUT", `${field} is required`);
  if (value.length > MAX_DID_LENGTH) return fail("INVALID_INPUT", `${field} must be at most ${MAX_DID_LENGTH} characters`);
  // No DID holds whitespace or a control character (a did:ethr or did:jwk was kept as written, U+0000 included, which
  // SQLite stored and PostgreSQL answered with a 500).
  if (/[\s\p{Cc}]/u.test(value.trim())) return fail("INVALID_DID", `${field} must not hold whitespace or control characters`);
  const method = /^did:([a-z0-9]+):/.exec(value.trim())?.[1];
  if (method === undefined || !(KEY_DID_METHODS as readonly string[]).includes(method)) {
    return fail("INVALID_DID", `${field} must be a did:pkh, did:key, did:jwk or did:ethr`);
  }
  const normalized = normalizeDid(value);
  if (!normalized.ok) return fail("INVALID_DID", `${field} is not a valid did:${method}`);
  if (method === "pkh" && normalized.value.split(":").length < 5) return fail("INVALID_DID", `${field}: a did:pkh has at least 5 colon-separated parts`);
  // An Ethereum account is 20 bytes: `did:pkh:eip155:31337:0xdeadbeef` was registered and looked up as a key.
  if (method === "pkh" && normalized.value.startsWith("did:pkh:eip155:") && !/^did:pkh:eip155:[0-9]{1,20}:0x[0-9a-f]{40}$/.test(normalized.value)) {
    return fail("INVALID_DID", `${field}: a did:pkh:eip155 names an account of 20 bytes (0x and 40 hex digits)`);
  }
  if (normalized.value.split(":").length < 3 || normalized.value.endsWith(":")) return fail("INVALID_DID", `${field} is not a valid did:${method}`);
  // `did:key:x` was registered and looked up as a key; a did:key must name a public key.
  const keyProblem = method === "key" ? didKeyShapeProblem(normalized.value) : undefined;
  if (keyProblem !== undefined) return fail("INVALID_DID", `${field}: ${keyProblem}`);
  return ok(normalized.value);
}

/** A subject DID made canonical, or why it is not one. */
export function readSubjectDid(value: unknown, field = "subjectDid"): Result<string, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value !== "string" || value.trim() === "") return fail("INVALID_INPUT", `${field} is required`);
  if (value.length > MAX_DID_LENGTH) return fail("INVALID_INPUT", `${field} must be at most ${MAX_DID_LENGTH} characters`);
  if (!value.trim().startsWith("did:")) return fail("INVALID_DID", `${field} must be a DID`);
  // The one subject rule (issue 43): no whitespace or control character, a did:web naming a domain.
  const normalized = normalizeSubjectDid(value);
  return normalized.ok ? ok(normalized.value) : fail("INVALID_DID", `${field} is not a valid DID: ${normalized.message}`);
}

/** `at` as Unix seconds: absent = now; a whole number of seconds, not after now. */
export function readAt(value: unknown, nowSeconds: number): Result<number, "INVALID_INPUT"> {
  if (value === undefined || value === "") return ok(nowSeconds);
  const n = typeof value === "number" ? value : typeof value === "string" && /^\d{1,12}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 0) return fail("INVALID_INPUT", "at must be Unix seconds (a whole number)");
  if (n > nowSeconds) return fail("INVALID_INPUT", "at must not be in the future");
  return ok(n);
}
