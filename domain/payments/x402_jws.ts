/** The JWS (JCS) bytes of x402 offers and receipts: canonical JSON, the signing input, compact JWS decoding. */
import { base64UrlDecode, base64UrlEncode } from "../did/mod.ts";

/**
 * RFC 8785 (JCS) for the JSON these payloads hold: keys sorted by UTF-16 code units, no whitespace,
 * strings and numbers as ECMAScript serializes them. `undefined` members are dropped.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("Non-finite numbers have no JSON form");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(",")}]`;
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`;
  }
  throw new TypeError(`Unsupported JSON value of type ${typeof value}`);
}

const utf8 = new TextEncoder();

/** The JWS algorithms offers and receipts may use. */
export type X402JwsAlgorithm = "ES256" | "ES256K" | "EdDSA";

/** A public JWK as carried in a JWS header (`jwk`) and published in did.json. */
export type HeaderJwk = { kty: string; crv: string; x: string; y?: string | undefined; alg?: string | undefined };

/**
 * `b64u(header).b64u(JCS(payload))`. The protected header is `{alg, kid}` in that order, as the official
 * issuers write it, then `jwk` when given (decisions §18, x402 issue 2696): the public key `kid` resolves to,
 * so a verifier can check the signature before it fetches anything; a verifier still resolves `kid` and
 * refuses a `jwk` that is not that key.
 */
export function jwsSigningInput(alg: X402JwsAlgorithm, kid: string, payload: object, jwk?: HeaderJwk | undefined): string {
  const protectedHeader: Record<string, unknown> = { alg, kid };
  if (jwk !== undefined) protectedHeader.jwk = publicJwkMembers(jwk);
  const header = base64UrlEncode(utf8.encode(JSON.stringify(protectedHeader)));
  return `${header}.${base64UrlEncode(utf8.encode(canonicalJson(payload)))}`;
}

/** The public members of a JWK in RFC 7638 order (`crv`, `kty`, `x`, `y`), then `alg`: never `d`. */
function publicJwkMembers(jwk: HeaderJwk): HeaderJwk {
  const out: HeaderJwk = { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  if (jwk.y !== undefined) out.y = jwk.y;
  if (jwk.alg !== undefined) out.alg = jwk.alg;
  return out;
}

/** The parts of a compact JWS, decoded; undefined unless it is well formed. */
export type DecodedJws = {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
  readonly signingInput: Uint8Array;
  readonly signature: Uint8Array;
};

/** Whether a value is a plain JSON object. */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Splits and decodes a compact JWS; undefined for anything malformed. */
export function decodeCompactJws(jws: unknown): DecodedJws | undefined {
  if (typeof jws !== "string") return undefined;
  const parts = jws.split(".");
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = decodeJsonPart(h);
  const payload = decodeJsonPart(p);
  const signature = base64UrlDecode(s);
  if (header === undefined || payload === undefined || signature === undefined) return undefined;
  return { header, payload, signingInput: utf8.encode(`${h}.${p}`), signature };
}

function decodeJsonPart(part: string): Record<string, unknown> | undefined {
  const bytes = base64UrlDecode(part);
  if (bytes === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
