/** Folder-private pieces of `domain/did/`: the failure value, shared formats and canonical JSON. */
import { fail, type Result } from "../result.ts";

/** The failure every DID function reports. */
export type InvalidDid = Result<never, "INVALID_DID">;

/** An `INVALID_DID` failure with `message`. */
export const invalid = (message: string): InvalidDid => fail("INVALID_DID", message);

/** 32 bytes of hex with a `0x` prefix, either case. */
export const HASH_FORMAT = /^0x[0-9a-fA-F]{64}$/;
/** An EVM address: 20 bytes of hex with a `0x` prefix, either case. */
export const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** JWK members that name or restrict a key without being its material. */
export const JWK_IGNORED_IN_EQUALITY = new Set(["kid", "use", "key_ops", "alg", "ext"]);

/** The public members RFC 7638 names for each key type, in lexicographic order: a key's public key material. */
export const JWK_PUBLIC_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ["crv", "kty", "x", "y"],
  OKP: ["crv", "kty", "x"],
  RSA: ["e", "kty", "n"],
};


/** Tells whether a value is a plain JSON object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** JSON with every object's keys sorted; undefined when the value is not serializable. */
export function canonicalJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_key, v: unknown) =>
      isRecord(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
    );
  } catch {
    return undefined;
  }
}
