import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { p256 } from "@noble/curves/p256";
import { recoverAddress, type Hex } from "viem";
import { publicKeyToAddress } from "viem/accounts";
import { type KmsServer, startKmsServer, TEST_KMS_CREDENTIALS, TEST_KMS_REGION } from "../../e2e/support/kms_server.ts";
import { waitFor } from "../../e2e/support/wait_for.ts";
import { type DigestSigner, SignerError } from "./_digest_signer.ts";
import { curveOrder, normalizeSignature } from "./_ecdsa.ts";
import { openAwsKmsSigner, parseAwsKmsUri } from "./awskms_signer.ts";

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}` as Hex;
const word = (n: bigint) => n.toString(16).padStart(64, "0");

/** Expects `run` to throw a SignerError of `kind`; returns its message. */
async function signerError(kind: SignerError["kind"], run: () => Promise<unknown>): Promise<string> {
  let error: unknown;
  try {
    await run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(SignerError);
  expect({ kind: (error as SignerError).kind, message: (error as SignerError).message }).toMatchObject({ kind });
  return (error as SignerError).message;
}

// The SDK's standard chain, as an operator sets it: region and credentials from the environment.
const ENV = {
  AWS_ACCESS_KEY_ID: TEST_KMS_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: TEST_KMS_CREDENTIALS.secretAccessKey,
  AWS_REGION: TEST_KMS_REGION,
  AWS_EC2_METADATA_DISABLED: "true",
  AWS_CONFIG_FILE: "/nonexistent/aws-config",
  AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/aws-credentials",
};
const saved: Record<string, string | undefined> = {};

describe("awskms: signer through @aws-sdk/client-kms against a loopback KMS", () => {
  let kms: KmsServer;
  const opened: DigestSigner[] = [];
  beforeAll(() => {
    for (const [name, value] of Object.entries(ENV)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
    kms = startKmsServer();
  });
  afterAll(async () => {
    for (const signer of opened) await signer.close?.();
    await kms?.stop();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  const open = async (uri: string, curve: "secp256k1" | "P-256" = "secp256k1", timeoutMs = 30_000) => {
    const signer = await openAwsKmsSigner(uri, { curve, timeoutMs });
    opened.push(signer);
    return signer;
  };

  test("an ECC_SECG_P256K1 key signs 100 digests: high s from KMS made low, each recovers to the key's address; every request SigV4-verified", async () => {
    const key = kms.createKey("ECC_SECG_P256K1");
    const before = kms.counts();
    const signer = await open(`awskms://${kms.hostPort}/${key.id}`);
    expect(signer.backend).toBe("awskms");
    expect(signer.curve).toBe("secp256k1");
    expect(hex(signer.publicKey)).toBe(hex(key.publicKey));
    const address = publicKeyToAddress(hex(key.publicKey));
    const n = curveOrder("secp256k1");
    let high = 0;
    for (let i = 0; i < 100; i++) {
      const digest = crypto.getRandomValues(new Uint8Array(32));
      const raw = await signer.signDigest(digest);
      if (raw.s > n / 2n) high++;
      const { r, s, yParity } = normalizeSignature("secp256k1", signer.publicKey, digest, raw);
      expect(s <= n / 2n).toBe(true);
      expect(await recoverAddress({ hash: hex(digest), signature: `0x${word(r)}${word(s)}${yParity ? "1c" : "1b"}` })).toBe(address);
    }
    expect(high).toBe(50);
    const after = kms.counts();
    // GetPublicKey, the test signature at open, then the 100.
    expect(after.verified - before.verified).toBe(102);
    expect(after.badSignature).toBe(before.badSignature);
  });

  test("concurrent signatures all verify", async () => {
    const key = kms.createKey("ECC_SECG_P256K1");
    const signer = await open(`awskms://${kms.hostPort}/${key.id}`);
    const digests = Array.from({ length: 32 }, () => crypto.getRandomValues(new Uint8Array(32)));
    const raws = await Promise.all(digests.map((d) => signer.signDigest(d)));
    raws.forEach((raw, i) => normalizeSignature("secp256k1", signer.publicKey, digests[i]!, raw));
  });

  test("an ECC_NIST_P256 key by alias and a key by ARN", async () => {
    const jws = kms.createKey("ECC_NIST_P256", "ats-oauth");
    const signer = await open(`awskms://${kms.hostPort}/alias/ats-oauth`, "P-256");
    expect(hex(signer.publicKey)).toBe(hex(jws.publicKey));
    const digest = crypto.getRandomValues(new Uint8Array(32));
    const { r, s } = normalizeSignature("P-256", signer.publicKey, digest, await signer.signDigest(digest));
    expect(p256.verify(new p256.Signature(r, s), digest, jws.publicKey, { prehash: false })).toBe(true);

    const eth = kms.createKey("ECC_SECG_P256K1");
    const byArn = await open(`awskms://${kms.hostPort}/${eth.arn}`);
    expect(hex(byArn.publicKey)).toBe(hex(eth.publicKey));
  });

  test("a key of the wrong spec, an unknown key, wrong credentials: a config error at open naming neither key nor endpoint", async () => {
    const jws = kms.createKey("ECC_NIST_P256");
    const wrongCurve = await signerError("config", () => open(`awskms://${kms.hostPort}/${jws.id}`, "secp256k1"));
    expect(wrongCurve).toContain("ECC_SECG_P256K1");
    const unknown = await signerError("config", () => open(`awskms://${kms.hostPort}/alias/none`));
    expect(unknown).toContain("NotFoundException");
    const key = kms.createKey("ECC_SECG_P256K1");
    process.env.AWS_SECRET_ACCESS_KEY = "not-the-secret";
    const before = kms.counts().badSignature;
    try {
      const badCredentials = await signerError("config", () => open(`awskms://${kms.hostPort}/${key.id}`));
      expect(badCredentials).toContain("InvalidSignatureException");
      for (const message of [wrongCurve, unknown, badCredentials]) {
        expect(message).not.toContain(key.id);
        expect(message).not.toContain(jws.id);
        expect(message).not.toContain(kms.hostPort);
      }
    } finally {
      process.env.AWS_SECRET_ACCESS_KEY = ENV.AWS_SECRET_ACCESS_KEY;
    }
    // The server refused the requests the wrong secret signed: it really checks SigV4.
    expect(kms.counts().badSignature).toBeGreaterThan(before);
    delete process.env.AWS_REGION;
    try {
      expect(await signerError("config", () => open(`awskms://${kms.hostPort}/${key.id}`))).toContain("AWS_REGION");
      // A key ARN names its region.
      expect((await open(`awskms://${kms.hostPort}/${key.arn}`)).curve).toBe("secp256k1");
    } finally {
      process.env.AWS_REGION = ENV.AWS_REGION;
    }
  });

  test("a key disabled after start: refused; KMS down: unavailable; KMS silent: timeout, then it signs again", async () => {
    const key = kms.createKey("ECC_SECG_P256K1");
    // Opening calls KMS within the short timeout too: tried until a start is not slowed by a busy machine.
    const signer = await waitFor("the signer to open", () => open(`awskms://${kms.hostPort}/${key.id}`, "secp256k1", 500).catch(() => undefined));
    const digest = new Uint8Array(32).fill(1);

    kms.hold(); // every request waits until release(): the signer's own timeout answers, whatever the machine's speed
    await signerError("timeout", () => signer.signDigest(digest));
    kms.release();

    kms.down();
    const patient = await open(`awskms://${kms.hostPort}/${key.id}`, "secp256k1", 30_000).catch(() => undefined);
    expect(patient).toBeUndefined(); // opening needs KMS
    kms.up();
    const slow = await open(`awskms://${kms.hostPort}/${key.id}`, "secp256k1", 60_000);
    kms.down();
    expect(await signerError("unavailable", () => slow.signDigest(digest))).not.toContain(kms.hostPort);
    kms.up();
    normalizeSignature("secp256k1", slow.publicKey, digest, await slow.signDigest(digest));

    kms.disable(key.id);
    await signerError("refused", () => slow.signDigest(digest));
  });

  test("a closed signer refuses to sign", async () => {
    const key = kms.createKey("ECC_SECG_P256K1");
    const signer = await openAwsKmsSigner(`awskms://${kms.hostPort}/${key.id}`, { curve: "secp256k1", timeoutMs: 30_000 });
    await signer.close?.();
    await signerError("unavailable", () => signer.signDigest(new Uint8Array(32)));
  });
});

describe("parseAwsKmsUri", () => {
  test("the default endpoint, another endpoint, aliases and ARNs", () => {
    expect(parseAwsKmsUri("awskms:///1234abcd-12ab-34cd-56ef-1234567890ab")).toEqual({ keyId: "1234abcd-12ab-34cd-56ef-1234567890ab", endpoint: undefined, region: undefined });
    expect(parseAwsKmsUri("awskms:///alias/ats-delegate")).toEqual({ keyId: "alias/ats-delegate", endpoint: undefined, region: undefined });
    expect(parseAwsKmsUri("awskms:///arn:aws:kms:us-west-2:111122223333:key/1234abcd")).toEqual({
      keyId: "arn:aws:kms:us-west-2:111122223333:key/1234abcd",
      endpoint: undefined,
      region: "us-west-2",
    });
    expect(parseAwsKmsUri("awskms://localhost:4566/alias/x").endpoint).toBe("http://localhost:4566");
    expect(parseAwsKmsUri("awskms://kms.eu-west-1.amazonaws.com/alias/x").endpoint).toBe("https://kms.eu-west-1.amazonaws.com");
  });
  test("refuses what names no key", () => {
    for (const uri of ["awskms:", "awskms://", "awskms:///", "awskms://host", "gcpkms:///x", "awskms:///a b", "awskms://ho st:1/k", "awskms:///arn:aws:s3:::bucket"]) {
      let error: unknown;
      try {
        parseAwsKmsUri(uri);
      } catch (e) {
        error = e;
      }
      expect({ uri, kind: (error as SignerError | undefined)?.kind }).toEqual({ uri, kind: "config" });
    }
  });
});
