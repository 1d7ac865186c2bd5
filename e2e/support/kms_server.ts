/**
 * A loopback AWS KMS for tests (issue 44): speaks the KMS JSON 1.1 protocol (`X-Amz-Target: TrentService.GetPublicKey`
 * and `TrentService.Sign`) and checks the AWS Signature Version 4 of every request with a known test access key, so
 * the official `@aws-sdk/client-kms` talks to it over real HTTP exactly as it talks to AWS. Keys are made with
 * @noble/curves; a Sign answers a DER signature whose s is high every second time (KMS does not normalise s).
 *
 * Test controls: `hold()` keeps every request waiting until `release()` (a signer timeout without any timing),
 * `disable(keyId)` answers DisabledException, `down()` answers 503 until `up()`.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { p256 } from "@noble/curves/p256";
import { secp256k1 } from "@noble/curves/secp256k1";

/** The credentials the server accepts. */
export const TEST_KMS_CREDENTIALS = { accessKeyId: "AKIDATSTESTKMS000001", secretAccessKey: "ats-test-secret/kms+loopback0000000000000" } as const;
export const TEST_KMS_REGION = "eu-central-1";
const ACCOUNT = "111122223333";

export type KmsKeySpec = "ECC_SECG_P256K1" | "ECC_NIST_P256";
type Key = { readonly id: string; readonly spec: KmsKeySpec; readonly privateKey: Uint8Array; disabled: boolean };

/** A running loopback KMS. */
export type KmsServer = {
  /** `127.0.0.1:<port>`, for `awskms://<host:port>/<key>`. */
  readonly hostPort: string;
  /** Creates a key; returns its id, its ARN and its uncompressed public key. */
  readonly createKey: (spec: KmsKeySpec, alias?: string) => { id: string; arn: string; publicKey: Uint8Array };
  readonly disable: (keyId: string) => void;
  readonly hold: () => void;
  readonly release: () => void;
  readonly down: () => void;
  readonly up: () => void;
  /** Requests whose SigV4 signature verified, and those refused for a bad or missing one. */
  readonly counts: () => { verified: number; badSignature: number; sign: number; getPublicKey: number };
  readonly stop: () => Promise<void>;
};

const SPKI_PREFIX: Record<KmsKeySpec, string> = {
  // SEQUENCE { SEQUENCE { ecPublicKey, secp256k1 }, BIT STRING }
  ECC_SECG_P256K1: "3056301006072a8648ce3d020106052b8104000a034200",
  // SEQUENCE { SEQUENCE { ecPublicKey, prime256v1 }, BIT STRING }
  ECC_NIST_P256: "3059301306072a8648ce3d020106082a8648ce3d030107034200",
};

const sha256Hex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Uint8Array | string, data: string) => createHmac("sha256", key).update(data).digest();

/** Checks the request's SigV4 Authorization against the test secret; undefined when it verifies, else why not. */
function sigV4Problem(request: Request, body: string, url: URL): string | undefined {
  const authorization = request.headers.get("authorization") ?? "";
  const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(authorization);
  if (match === null) return "no SigV4 Authorization header";
  const [, accessKey, date, region, service, signedHeaders, signature] = match as unknown as string[];
  if (accessKey !== TEST_KMS_CREDENTIALS.accessKeyId) return "unknown access key";
  if (service !== "kms") return "not signed for kms";
  const amzDate = request.headers.get("x-amz-date") ?? "";
  if (!amzDate.startsWith(date!)) return "x-amz-date does not match the credential scope";
  const names = signedHeaders!.split(";");
  if (!names.includes("host") || !names.includes("x-amz-date")) return "host and x-amz-date must be signed";
  const canonicalHeaders = names.map((name) => `${name}:${(request.headers.get(name) ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  const payloadHash = sha256Hex(body);
  const declared = request.headers.get("x-amz-content-sha256");
  if (declared !== null && declared !== payloadHash) return "x-amz-content-sha256 does not match the body";
  const query = [...url.searchParams].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).sort().join("&");
  const canonicalRequest = [request.method, url.pathname || "/", query, canonicalHeaders, signedHeaders, payloadHash].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256Hex(canonicalRequest)].join("\n");
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${TEST_KMS_CREDENTIALS.secretAccessKey}`, date!), region!), service!), "aws4_request");
  const expected = hmac(signingKey, stringToSign);
  const given = Buffer.from(signature!, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected) ? undefined : "signature mismatch";
}

/** DER of an ECDSA signature (r, s). */
function derSignature(r: bigint, s: bigint): Uint8Array {
  const integer = (n: bigint) => {
    let hex = n.toString(16);
    if (hex.length % 2) hex = `0${hex}`;
    const body = [...Buffer.from(hex, "hex")];
    if (body[0]! & 0x80) body.unshift(0);
    return [0x02, body.length, ...body];
  };
  const content = [...integer(r), ...integer(s)];
  return Uint8Array.of(0x30, content.length, ...content);
}

/** Starts the server on 127.0.0.1 (a free port). */
export function startKmsServer(): KmsServer {
  const keys = new Map<string, Key>();
  const aliases = new Map<string, string>();
  let held: Array<() => void> | undefined;
  let isDown = false;
  let signatures = 0;
  const counts = { verified: 0, badSignature: 0, sign: 0, getPublicKey: 0 };
  const arnOf = (id: string) => `arn:aws:kms:${TEST_KMS_REGION}:${ACCOUNT}:key/${id}`;

  const resolve = (keyId: unknown): Key | undefined => {
    if (typeof keyId !== "string") return undefined;
    let id = keyId;
    const arn = /^arn:aws:kms:[^:]+:\d{12}:(key|alias)\/(.+)$/.exec(keyId);
    if (arn !== null) id = arn[1] === "alias" ? `alias/${arn[2]}` : arn[2]!;
    if (id.startsWith("alias/")) id = aliases.get(id) ?? "";
    return keys.get(id);
  };
  const error = (status: number, type: string, message: string) =>
    Response.json({ __type: type, message }, { status, headers: { "content-type": "application/x-amz-json-1.1", "x-amzn-errortype": type } });
  const ok = (body: unknown) => new Response(JSON.stringify(body), { headers: { "content-type": "application/x-amz-json-1.1" } });

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = await request.text();
      if (held !== undefined) await new Promise<void>((go) => held!.push(go));
      if (isDown) return new Response("Service Unavailable", { status: 503 });
      if (request.method !== "POST") return error(400, "UnknownOperationException", "POST only");
      const problem = sigV4Problem(request, body, url);
      if (problem !== undefined) {
        counts.badSignature++;
        return error(400, "InvalidSignatureException", `The request signature we calculated does not match the signature you provided (${problem})`);
      }
      counts.verified++;
      let input: Record<string, unknown>;
      try {
        input = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return error(400, "SerializationException", "Malformed JSON");
      }
      const target = request.headers.get("x-amz-target");
      const key = resolve(input.KeyId);
      if (target === "TrentService.GetPublicKey") {
        counts.getPublicKey++;
        if (key === undefined) return error(400, "NotFoundException", "Key not found");
        const curve = key.spec === "ECC_SECG_P256K1" ? secp256k1 : p256;
        const spki = Buffer.concat([Buffer.from(SPKI_PREFIX[key.spec], "hex"), curve.getPublicKey(key.privateKey, false)]);
        return ok({
          KeyId: arnOf(key.id),
          PublicKey: spki.toString("base64"),
          KeySpec: key.spec,
          CustomerMasterKeySpec: key.spec,
          KeyUsage: "SIGN_VERIFY",
          SigningAlgorithms: ["ECDSA_SHA_256"],
        });
      }
      if (target === "TrentService.Sign") {
        counts.sign++;
        if (key === undefined) return error(400, "NotFoundException", "Key not found");
        if (key.disabled) return error(400, "DisabledException", "Key is disabled");
        if (input.SigningAlgorithm !== "ECDSA_SHA_256") return error(400, "InvalidKeyUsageException", "Unsupported signing algorithm");
        if (input.MessageType !== "DIGEST") return error(400, "ValidationException", "This endpoint signs digests only");
        const digest = Buffer.from(String(input.Message ?? ""), "base64");
        if (digest.length !== 32) return error(400, "ValidationException", "Digest must be 32 bytes");
        const curve = key.spec === "ECC_SECG_P256K1" ? secp256k1 : p256;
        const made = curve.sign(digest, key.privateKey, { lowS: true });
        // KMS gives whichever s its signer produced: here a high one every second signature.
        const s = signatures++ % 2 === 1 ? curve.CURVE.n - made.s : made.s;
        return ok({ KeyId: arnOf(key.id), Signature: Buffer.from(derSignature(made.r, s)).toString("base64"), SigningAlgorithm: "ECDSA_SHA_256" });
      }
      return error(400, "UnknownOperationException", "Unknown operation");
    },
  });

  return {
    hostPort: `127.0.0.1:${server.port}`,
    createKey(spec, alias) {
      const curve = spec === "ECC_SECG_P256K1" ? secp256k1 : p256;
      const privateKey = curve.utils.randomPrivateKey();
      const id = crypto.randomUUID();
      keys.set(id, { id, spec, privateKey, disabled: false });
      if (alias !== undefined) aliases.set(alias.startsWith("alias/") ? alias : `alias/${alias}`, id);
      return { id, arn: arnOf(id), publicKey: curve.getPublicKey(privateKey, false) };
    },
    disable(keyId) {
      const key = resolve(keyId);
      if (key !== undefined) key.disabled = true;
    },
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = undefined;
      for (const go of waiting) go();
    },
    down() {
      isDown = true;
    },
    up() {
      isDown = false;
    },
    counts: () => ({ ...counts }),
    async stop() {
      this.release();
      await server.stop(true);
    },
  };
}
