/**
 * The `awskms:` signer (issue 44, decisions §27): a key in AWS KMS, through the official `@aws-sdk/client-kms`. The
 * key never leaves KMS: the service sends the 32-byte digest (`MessageType: DIGEST`, `ECDSA_SHA_256`) and gets a DER
 * signature back, whose s may be high (the caller normalises it, `_ecdsa.ts`).
 *
 * URI (sigstore's form): `awskms:///<key id | alias/<name> | key or alias ARN>`, or `awskms://<host:port>/<key>` for
 * another endpoint (a loopback host is spoken to over HTTP, as LocalStack and test endpoints serve; any other over
 * HTTPS). Region and credentials come from the SDK's standard chain (AWS_REGION, AWS_PROFILE, the web identity of
 * EKS, the instance role, ...); a key ARN names its own region, which wins.
 *
 * At open the key's public key is read (GetPublicKey: its spec must be `ECC_SECG_P256K1` for secp256k1 or
 * `ECC_NIST_P256` for P-256, usage SIGN_VERIFY) and one test digest is signed, so a role without `kms:Sign` stops
 * the start rather than answer every request 503. Each call is bounded by `timeoutMs`, the SDK's own retries of a
 * throttled or failing call included. Messages name the failing call and the AWS error's type, never the key or
 * the endpoint.
 */
import { GetPublicKeyCommand, KMSClient, SignCommand } from "@aws-sdk/client-kms";
import { p256 } from "@noble/curves/p256";
import { secp256k1 } from "@noble/curves/secp256k1";
import { type DigestSigner, type SignerCurve, SignerError } from "./_digest_signer.ts";
import { normalizeSignature, parseDerSignature } from "./_ecdsa.ts";

/** Options of {@link openAwsKmsSigner}. */
export type AwsKmsSignerOptions = { readonly curve: SignerCurve; readonly timeoutMs: number };

/** A parsed `awskms:` URI. */
export type AwsKmsUri = {
  readonly keyId: string;
  /** The endpoint's URL when the URI names one (`http://` for a loopback host, else `https://`). */
  readonly endpoint?: string | undefined;
  /** The region a key ARN names. */
  readonly region?: string | undefined;
};

const KEY_SPECS: Record<SignerCurve, string> = { secp256k1: "ECC_SECG_P256K1", "P-256": "ECC_NIST_P256" };

/** Reads an `awskms:` URI; throws SignerError "config" (without the key id) when it is malformed. */
export function parseAwsKmsUri(uri: string): AwsKmsUri {
  const bad = (why: string) => new SignerError("config", `Malformed awskms: URI: ${why}`);
  if (!uri.startsWith("awskms://")) throw bad("it does not start with awskms:// (awskms:///<key> or awskms://<host:port>/<key>)");
  const rest = uri.slice("awskms://".length);
  const slash = rest.indexOf("/");
  if (slash === -1) throw bad("no key after the endpoint");
  const host = rest.slice(0, slash);
  const keyId = rest.slice(slash + 1);
  if (keyId === "") throw bad("no key id, alias or ARN");
  if (!/^[A-Za-z0-9:/_+=,.@-]+$/.test(keyId)) throw bad("the key id has characters no key id, alias or ARN has");
  let endpoint: string | undefined;
  if (host !== "") {
    const parsed = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host);
    if (parsed === null) throw bad("the endpoint is not host or host:port");
    const name = parsed[1]!.toLowerCase();
    const loopback = name === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(name) || name === "[::1]";
    endpoint = `${loopback ? "http" : "https"}://${host}`;
  }
  const arn = /^arn:aws[a-z-]*:kms:([a-z0-9-]+):\d{12}:(?:key|alias)\/.+$/.exec(keyId);
  if (keyId.startsWith("arn:") && arn === null) throw bad("the ARN is not a KMS key or alias ARN");
  return { keyId, endpoint, region: arn?.[1] };
}

/** The uncompressed point and curve of a DER SubjectPublicKeyInfo of an EC key; undefined for anything else. */
export function parseEcSpki(spki: Uint8Array): { curve: SignerCurve; publicKey: Uint8Array } | undefined {
  // SEQUENCE { SEQUENCE { OID ecPublicKey, OID <curve> }, BIT STRING 00 <point> }: both known prefixes, then the point.
  const hex = Buffer.from(spki).toString("hex");
  const prefixes: Array<[SignerCurve, string]> = [
    ["secp256k1", "3056301006072a8648ce3d020106052b8104000a034200"],
    ["P-256", "3059301306072a8648ce3d020106082a8648ce3d030107034200"],
  ];
  for (const [curve, prefix] of prefixes) {
    if (!hex.startsWith(prefix) || hex.length !== prefix.length + 130) continue;
    const point = spki.subarray(prefix.length / 2);
    try {
      return { curve, publicKey: (curve === "P-256" ? p256 : secp256k1).ProjectivePoint.fromHex(point).toRawBytes(false) };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Opens the KMS key an `awskms:` URI names; throws SignerError "config" (one line, no key id, no URL) when it cannot. */
export async function openAwsKmsSigner(uri: string, options: AwsKmsSignerOptions): Promise<DigestSigner> {
  const parsed = parseAwsKmsUri(uri);
  let client: KMSClient;
  try {
    client = new KMSClient({
      ...(parsed.region !== undefined ? { region: parsed.region } : {}),
      ...(parsed.endpoint !== undefined ? { endpoint: parsed.endpoint } : {}),
    });
  } catch (error) {
    throw new SignerError("config", `The AWS KMS client cannot be made (${errorName(error)})`);
  }
  const fail = (message: string): never => {
    client.destroy();
    throw new SignerError("config", message);
  };

  let publicKey: Uint8Array;
  let curve: SignerCurve;
  try {
    const answer = await bounded(options.timeoutMs, (abortSignal) => client.send(new GetPublicKeyCommand({ KeyId: parsed.keyId }), { abortSignal }));
    const spec = answer.KeySpec ?? answer.CustomerMasterKeySpec;
    if (spec !== KEY_SPECS[options.curve]) {
      return fail(`The AWS KMS key's spec is ${safe(spec)}; this role needs ${KEY_SPECS[options.curve]}`);
    }
    if (answer.KeyUsage !== undefined && answer.KeyUsage !== "SIGN_VERIFY") return fail("The AWS KMS key is not a signing key (KeyUsage SIGN_VERIFY)");
    if (answer.SigningAlgorithms !== undefined && !answer.SigningAlgorithms.includes("ECDSA_SHA_256")) {
      return fail("The AWS KMS key does not sign with ECDSA_SHA_256");
    }
    const key = answer.PublicKey === undefined ? undefined : parseEcSpki(answer.PublicKey);
    if (key === undefined || key.curve !== options.curve) return fail("The AWS KMS key's public key is not an EC point of its curve");
    publicKey = key.publicKey;
    curve = key.curve;
  } catch (error) {
    if (error instanceof SignerError && error.kind === "config") throw error;
    return fail(`AWS KMS GetPublicKey failed (${describe(error)})`);
  }

  async function sign(digest: Uint8Array): Promise<{ r: bigint; s: bigint }> {
    let signature: Uint8Array | undefined;
    try {
      const answer = await bounded(options.timeoutMs, (abortSignal) =>
        client.send(new SignCommand({ KeyId: parsed.keyId, Message: digest, MessageType: "DIGEST", SigningAlgorithm: "ECDSA_SHA_256" }), { abortSignal }));
      signature = answer.Signature;
    } catch (error) {
      throw toSignerError(error, "AWS KMS did not sign");
    }
    if (signature === undefined) throw new SignerError("refused", "AWS KMS answered a Sign without a signature");
    return parseDerSignature(signature);
  }

  // kms:Sign allowed, and the key signs what its public key verifies: one test digest.
  const probe = new Uint8Array(new Bun.CryptoHasher("sha256").update("ats awskms signer self-test").digest());
  try {
    normalizeSignature(curve, publicKey, probe, await sign(probe));
  } catch (error) {
    return fail(`The AWS KMS key cannot be used: ${error instanceof SignerError ? error.message : "its test signature failed"}`);
  }

  let closed = false;
  return {
    backend: "awskms",
    curve,
    publicKey,
    async signDigest(digest) {
      if (closed) throw new SignerError("unavailable", "The AWS KMS signer is closed");
      if (digest.length !== 32) throw new SignerError("refused", "A digest to sign is 32 bytes");
      return await sign(Uint8Array.from(digest));
    },
    async close() {
      closed = true;
      client.destroy();
    },
  };
}

class Timeout extends Error {}

/** Runs `call` with an abort signal fired after `ms`; the answer is a Timeout error then, whatever the SDK does. */
async function bounded<T>(ms: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Timeout());
      controller.abort();
    }, ms);
  });
  try {
    return await Promise.race([call(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** AWS error types that mean the key or the caller's rights said no; other failures mean KMS or the link is down. */
const REFUSALS = new Set([
  "NotFoundException", "DisabledException", "KMSInvalidStateException", "InvalidKeyUsageException", "AccessDeniedException",
  "AccessDeniedError", "IncompleteSignatureException", "InvalidSignatureException", "UnrecognizedClientException",
  "InvalidClientTokenId", "ExpiredTokenException", "ExpiredToken", "KeyUnavailableException", "ValidationException",
  "InvalidGrantTokenException", "DryRunOperationException",
]);

function toSignerError(error: unknown, what: string): SignerError {
  if (error instanceof SignerError) return error;
  if (error instanceof Timeout) return new SignerError("timeout", `${what} within the signer timeout`);
  const name = errorName(error);
  if (name === "AbortError" || name === "TimeoutError") return new SignerError("timeout", `${what} within the signer timeout`);
  if (REFUSALS.has(name)) return new SignerError("refused", `${what} (${name})`);
  return new SignerError("unavailable", `${what} (${name})`);
}

function describe(error: unknown): string {
  if (error instanceof Timeout) return "no answer within the signer timeout";
  // The SDK's own configuration errors have no type; their fixed text says which (no key or URL in it).
  if (error instanceof Error && error.message === "Region is missing") return "no AWS region: set AWS_REGION or name the key by its ARN";
  return errorName(error);
}

/** The error's type name only (never its message, which may carry the key ARN or the endpoint). */
function errorName(error: unknown): string {
  const name = error instanceof Error ? error.name : "";
  if (/^[A-Za-z][A-Za-z0-9]{0,60}$/.test(name) && name !== "Error") return name;
  // A network failure (ECONNREFUSED, ENOTFOUND, ...) carries only its code.
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^E[A-Z_]{2,30}$/.test(code) ? code : "an error without a type";
}

function safe(value: string | undefined): string {
  return value !== undefined && /^[A-Z0-9_]{1,40}$/.test(value) ? value : "unknown";
}
