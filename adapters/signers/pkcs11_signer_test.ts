import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { p256 } from "@noble/curves/p256";
import { secp256k1 } from "@noble/curves/secp256k1";
import { recoverAddress, type Hex } from "viem";
import { publicKeyToAddress } from "viem/accounts";
import { createSoftHsm, type SoftHsm, softHsmAvailable, useSoftHsmInThisProcess } from "../../e2e/support/softhsm.ts";
import { type DigestSigner, SignerError } from "./_digest_signer.ts";
import { curveOrder, normalizeSignature } from "./_ecdsa.ts";
import { curveOfEcParams, openPkcs11Signer, parsePkcs11Uri, pointOfEcPoint, stallPkcs11SignerForTests } from "./pkcs11_signer.ts";
import { waitFor } from "../../e2e/support/wait_for.ts";

// scripts/test.sh installs softhsm2 and opensc; in CI they must be there, elsewhere the SoftHSM tests skip.
const available = softHsmAvailable();
if (process.env.CI === "true") test("SoftHSM2 and pkcs11-tool are installed", () => expect(available).toBe(true));

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}` as Hex;
const word = (n: bigint) => n.toString(16).padStart(64, "0");
const options = { curve: "secp256k1", timeoutMs: 10_000 } as const;

/** Expects `run` to throw a SignerError of `kind`; returns its message. */
async function signerError(kind: SignerError["kind"], run: () => Promise<unknown>): Promise<string> {
  let error: unknown;
  try {
    await run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(SignerError);
  expect((error as SignerError).kind).toBe(kind);
  return (error as SignerError).message;
}

describe.skipIf(!available)("pkcs11: signer on SoftHSM2", () => {
  let hsm: SoftHsm;
  let ethereumKey: Uint8Array;
  let jwsKey: Uint8Array;
  const opened: DigestSigner[] = [];

  beforeAll(async () => {
    hsm = createSoftHsm();
    await useSoftHsmInThisProcess(hsm);
    hsm.createToken("ats-keys", "4711");
    ethereumKey = hsm.generateKey("ats-keys", "4711", "delegate", "secp256k1", "01");
    jwsKey = hsm.generateKey("ats-keys", "4711", "oauth", "P-256", "02");
    hsm.createToken("ats-pin", "2468");
    hsm.generateKey("ats-pin", "2468", "witness", "secp256k1", "01");
  });
  afterAll(async () => {
    for (const signer of opened) await signer.close?.();
    hsm?.remove();
  });
  const open = async (uri: string, curve: "secp256k1" | "P-256" = "secp256k1") => {
    const signer = await openPkcs11Signer(uri, { ...options, curve });
    opened.push(signer);
    return signer;
  };

  test("a secp256k1 key signs 200 digests: each normalised signature is low-s and recovers to the key's address", async () => {
    const signer = await open(hsm.uri("ats-keys", "delegate", "4711"));
    expect(signer.backend).toBe("pkcs11");
    expect(signer.curve).toBe("secp256k1");
    expect(hex(signer.publicKey)).toBe(hex(ethereumKey));
    const address = publicKeyToAddress(hex(signer.publicKey));
    const n = curveOrder("secp256k1");
    let highFromToken = 0;
    for (let i = 0; i < 200; i++) {
      const digest = crypto.getRandomValues(new Uint8Array(32));
      const raw = await signer.signDigest(digest);
      if (raw.s > n / 2n) highFromToken++;
      const { r, s, yParity } = normalizeSignature("secp256k1", signer.publicKey, digest, raw);
      expect(s <= n / 2n).toBe(true);
      expect(await recoverAddress({ hash: hex(digest), signature: `0x${word(r)}${word(s)}${yParity ? "1c" : "1b"}` })).toBe(address);
    }
    // SoftHSM2 does not normalise: about half its signatures have a high s, which normalisation turned low.
    expect(highFromToken).toBeGreaterThan(0);
  });

  test("concurrent signatures on one signer are serialised through its session and all verify", async () => {
    const signer = await open(hsm.uri("ats-keys", "delegate", "4711"));
    const digests = Array.from({ length: 64 }, () => crypto.getRandomValues(new Uint8Array(32)));
    const signatures = await Promise.all(digests.map((d) => signer.signDigest(d)));
    signatures.forEach((raw, i) => normalizeSignature("secp256k1", signer.publicKey, digests[i]!, raw));
  });

  test("a P-256 key (for JWS) signs digests that verify, the PIN read from pin-source", async () => {
    const pinFile = join(hsm.dir, "pin");
    writeFileSync(pinFile, "4711\n");
    const signer = await open(hsm.uri("ats-keys", "oauth", "4711", pinFile), "P-256");
    expect(signer.curve).toBe("P-256");
    expect(hex(signer.publicKey)).toBe(hex(jwsKey));
    for (let i = 0; i < 20; i++) {
      const digest = crypto.getRandomValues(new Uint8Array(32));
      const raw = await signer.signDigest(digest);
      const { r, s } = normalizeSignature("P-256", signer.publicKey, digest, raw);
      expect(p256.verify(new p256.Signature(r, s), digest, signer.publicKey, { prehash: false })).toBe(true);
    }
  });

  test("a wrong PIN stops the open with a config error that does not contain the PIN", async () => {
    const message = await signerError("config", () => open(hsm.uri("ats-pin", "witness", "97531")));
    expect(message).toContain("PIN");
    expect(message).not.toContain("97531");
    // The right PIN then opens it.
    const signer = await open(hsm.uri("ats-pin", "witness", "2468"));
    expect(signer.publicKey.length).toBe(65);
  });

  test("a key of the wrong curve is refused at open", async () => {
    expect(await signerError("config", () => open(hsm.uri("ats-keys", "oauth", "4711"), "secp256k1"))).toContain("P-256");
    expect(await signerError("config", () => open(hsm.uri("ats-keys", "delegate", "4711"), "P-256"))).toContain("secp256k1");
  });

  test("a missing module, an unknown token or object: one line, no path, no PIN", async () => {
    const missing = `pkcs11:token=ats-keys;object=delegate?module-path=/nonexistent/libnothing.so&pin-value=4711`;
    const message = await signerError("config", () => open(missing));
    expect(message).not.toContain("/nonexistent");
    expect(message).not.toContain("4711");
    expect(await signerError("config", () => open(hsm.uri("no-such-token", "delegate", "4711")))).toContain("token");
    expect(await signerError("config", () => open(hsm.uri("ats-keys", "no-such-key", "4711")))).toContain("private key");
    for (const m of [message]) expect(m.includes("\n")).toBe(false);
  });

  test("a module call that hangs: the signature times out, the next fail at once, and once it returns the key signs again", async () => {
    // Opening signs a test digest within the short timeout too: tried until a start is not slowed by a busy machine.
    const signer = await waitFor("the signer to open", () =>
      openPkcs11Signer(hsm.uri("ats-keys", "delegate", "4711"), { curve: "secp256k1", timeoutMs: 300 }).catch(() => undefined));
    opened.push(signer);
    const digest = new Uint8Array(32).fill(9);
    // The signer's thread blocks until the gate opens, as in a C_Sign that never returns: no timing decides the outcome.
    const gate = new SharedArrayBuffer(4);
    stallPkcs11SignerForTests(signer, gate);
    expect(await signerError("timeout", () => signer.signDigest(digest))).toContain("300 ms");
    expect(await signerError("timeout", () => signer.signDigest(digest))).toContain("not yet answered");
    Atomics.store(new Int32Array(gate), 0, 1);
    Atomics.notify(new Int32Array(gate), 0);
    const raw = await waitFor("the HSM to sign again", () => signer.signDigest(digest).catch(() => undefined));
    normalizeSignature("secp256k1", signer.publicKey, digest, raw);
  });

  test("a closed signer refuses to sign", async () => {
    const signer = await openPkcs11Signer(hsm.uri("ats-keys", "delegate", "4711"), options);
    await signer.close?.();
    await signerError("unavailable", () => signer.signDigest(new Uint8Array(32)));
  });
});

describe("parsePkcs11Uri", () => {
  test("reads RFC 7512 path and query attributes, percent-decoded", () => {
    expect(parsePkcs11Uri("pkcs11:token=My%20Token;object=key%3b1;id=%01%a0?module-path=/usr/lib/x.so&pin-value=12%2634")).toEqual({
      modulePath: "/usr/lib/x.so",
      token: "My Token",
      serial: undefined,
      object: "key;1",
      id: Uint8Array.of(1, 0xa0),
      pin: "12&34",
    });
  });

  test("refuses what would pick the wrong key or no key", () => {
    const cases = [
      "pkcs12:token=a;object=b?module-path=/x.so",
      "pkcs11:token=a;object=b",
      "pkcs11:object=b?module-path=/x.so",
      "pkcs11:token=a?module-path=/x.so",
      "pkcs11:token=a;object=b;label=c?module-path=/x.so",
      "pkcs11:token=a;token=b;object=c?module-path=/x.so",
      "pkcs11:token=a;id=12?module-path=/x.so",
      "pkcs11:token=a;object=b;type=public?module-path=/x.so",
      "pkcs11:token=a;object=b?module-path=/x.so&pin-value=1&pin-source=file:/p",
      "pkcs11:token=a;object=b?module-path=/x.so&pin-source=file:/nonexistent/pin",
    ];
    for (const uri of cases) {
      let error: unknown;
      try {
        parsePkcs11Uri(uri);
      } catch (e) {
        error = e;
      }
      expect({ uri, kind: (error as SignerError | undefined)?.kind }).toEqual({ uri, kind: "config" });
    }
  });

  test("an attribute not written name=value is refused without echoing it: a PIN typed with ':' for '=' stays out of the start's line", () => {
    let message = "";
    try {
      parsePkcs11Uri("pkcs11:token=a;object=b?module-path=/x.so&pin-value:918273");
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toStartWith("Malformed pkcs11: URI: unknown attribute (not written name=value)");
    expect(message).not.toContain("918273");
  });
});

describe("CKA_EC_PARAMS and CKA_EC_POINT", () => {
  test("the two named curves, and no other", () => {
    expect(curveOfEcParams(Buffer.from("06052b8104000a", "hex"))).toBe("secp256k1");
    expect(curveOfEcParams(Buffer.from("06082a8648ce3d030107", "hex"))).toBe("P-256");
    expect(curveOfEcParams(Buffer.from("06052b81040022", "hex"))).toBeUndefined(); // P-384
  });
  test("a point wrapped in an OCTET STRING, bare, or compressed; whatever its first coordinate byte", () => {
    for (let i = 1; i <= 300; i++) {
      const point = secp256k1.getPublicKey(Buffer.from(word(BigInt(i)), "hex"), false);
      const compressed = secp256k1.getPublicKey(Buffer.from(word(BigInt(i)), "hex"), true);
      expect(hex(pointOfEcPoint("secp256k1", Uint8Array.of(0x04, 65, ...point))!)).toBe(hex(point));
      expect(hex(pointOfEcPoint("secp256k1", point)!)).toBe(hex(point));
      expect(hex(pointOfEcPoint("secp256k1", Uint8Array.of(0x04, 33, ...compressed))!)).toBe(hex(point));
    }
    // A bare point whose x starts with 0x3f (63 = its length - 2) looks like a wrapped one at first sight.
    let i = 1n;
    while (secp256k1.getPublicKey(Buffer.from(word(i), "hex"), false)[1] !== 63) i++;
    const tricky = secp256k1.getPublicKey(Buffer.from(word(i), "hex"), false);
    expect(hex(pointOfEcPoint("secp256k1", tricky)!)).toBe(hex(tricky));
    expect(pointOfEcPoint("P-256", Uint8Array.of(0x04, 65, ...secp256k1.getPublicKey(Buffer.from(word(5n), "hex"), false)))).toBeUndefined();
  });
});
