import { describe, expect, test } from "bun:test";
import { p256 } from "@noble/curves/p256";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak256, recoverAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { SignerError } from "./_digest_signer.ts";
import { nobleSecp256k1, openNativeSecp256k1 } from "../crypto/mod.ts";
import { curveOrder, normalizeSignature, parseDerSignature, parseRawSignature } from "./_ecdsa.ts";

const hex = (s: string) => new Uint8Array(Buffer.from(s, "hex"));
const word = (n: bigint) => n.toString(16).padStart(64, "0");

/** A DER encoding written here by hand (what an HSM or KMS returns). */
function der(r: bigint, s: bigint): Uint8Array {
  const int = (n: bigint) => {
    let body = hex(n.toString(16).padStart(n.toString(16).length + (n.toString(16).length % 2), "0"));
    if (body[0]! & 0x80) body = Uint8Array.of(0, ...body);
    return [0x02, body.length, ...body];
  };
  const content = [...int(r), ...int(s)];
  return Uint8Array.of(0x30, content.length, ...content);
}

describe("parseDerSignature", () => {
  test("reads r and s, with and without a leading zero", () => {
    expect(parseDerSignature(der(1n, 2n))).toEqual({ r: 1n, s: 2n });
    const r = 0xefd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716n;
    const s = 0x7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8n;
    const bytes = der(r, s);
    expect(bytes[3]).toBe(33); // r has its high bit set: a zero in front
    expect(parseDerSignature(bytes)).toEqual({ r, s });
  });

  test("refuses what is not strict DER", () => {
    const good = der(5n, 7n);
    const cases: Uint8Array[] = [
      new Uint8Array(0),
      Uint8Array.of(0x31, ...good.subarray(1)), // not a sequence
      Uint8Array.of(...good, 0), // trailing byte
      Uint8Array.of(0x30, 6, 0x02, 1, 0x85, 0x02, 1, 7), // negative r
      Uint8Array.of(0x30, 7, 0x02, 2, 0, 5, 0x02, 1, 7), // r not minimal
      Uint8Array.of(0x30, 6, 0x02, 1, 5, 0x02, 2, 7), // s runs past the end
      Uint8Array.of(0x30, 9, 0x02, 1, 5, 0x02, 1, 7), // sequence length wrong
    ];
    for (const bytes of cases) {
      let error: unknown;
      try {
        parseDerSignature(bytes);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SignerError);
      expect((error as SignerError).kind).toBe("refused");
    }
  });
});

describe("parseRawSignature", () => {
  test("splits r‖s in halves", () => {
    expect(parseRawSignature(hex(word(3n) + word(4n)))).toEqual({ r: 3n, s: 4n });
  });
  test("refuses an odd or empty length", () => {
    expect(() => parseRawSignature(new Uint8Array(63))).toThrow(SignerError);
    expect(() => parseRawSignature(new Uint8Array(0))).toThrow(SignerError);
  });
});

describe("normalizeSignature", () => {
  test("RFC 6979 A.2.5 (P-256, SHA-256, \"sample\"): a high s made low, the key recovers", () => {
    const publicKey = hex(`04${"60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"}${"7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"}`);
    const digest = new Uint8Array(new Bun.CryptoHasher("sha256").update("sample").digest());
    const r = 0xefd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716n;
    const s = 0xf7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8n;
    const n = curveOrder("P-256");
    expect(s > n / 2n).toBe(true);
    const out = normalizeSignature("P-256", publicKey, digest, parseDerSignature(der(r, s)));
    expect(out.r).toBe(r);
    expect(out.s).toBe(n - s);
    expect(p256.verify(new p256.Signature(out.r, out.s), digest, publicKey, { prehash: false })).toBe(true);
    expect(new p256.Signature(out.r, out.s).addRecoveryBit(out.yParity).recoverPublicKey(digest).toHex(false)).toBe(Buffer.from(publicKey).toString("hex"));
  });

  test("secp256k1: low and high s both give the low-s signature whose address viem recovers", async () => {
    const n = curveOrder("secp256k1");
    for (let i = 1; i <= 40; i++) {
      const key = hex(word(BigInt(i) * 0x1234567890abcdefn + 7n));
      const account = privateKeyToAccount(`0x${word(BigInt(i) * 0x1234567890abcdefn + 7n)}`);
      const publicKey = secp256k1.getPublicKey(key, false);
      const digest = hex(keccak256(new TextEncoder().encode(`message ${i}`)).slice(2));
      const made = secp256k1.sign(digest, key); // low s
      const high = { r: made.r, s: n - made.s };
      for (const given of [{ r: made.r, s: made.s }, high]) {
        const out = normalizeSignature("secp256k1", publicKey, digest, given);
        expect(out).toEqual({ r: made.r, s: made.s, yParity: made.recovery as 0 | 1 });
        const signature = `0x${word(out.r)}${word(out.s)}${out.yParity ? "1c" : "1b"}` as Hex;
        expect(await recoverAddress({ hash: `0x${Buffer.from(digest).toString("hex")}`, signature })).toBe(account.address);
      }
    }
  });

  test("a known secp256k1 vector: key 1, digest of \"\"", () => {
    // Private key 1: the public key is the generator.
    const publicKey = hex(`04${"79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"}${"483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8"}`);
    const digest = hex(keccak256(new Uint8Array(0)).slice(2));
    const made = secp256k1.sign(digest, hex(word(1n)));
    const n = curveOrder("secp256k1");
    const out = normalizeSignature("secp256k1", publicKey, digest, { r: made.r, s: n - made.s });
    expect(out.s).toBe(made.s);
    expect(out.yParity).toBe(made.recovery as 0 | 1);
  });

  test("refuses a signature of another key, over another digest, or out of range", () => {
    const key = hex(word(42n));
    const other = secp256k1.getPublicKey(hex(word(43n)), false);
    const digest = hex(word(99n));
    const made = secp256k1.sign(digest, key);
    const n = curveOrder("secp256k1");
    const cases: Array<() => unknown> = [
      () => normalizeSignature("secp256k1", other, digest, made),
      () => normalizeSignature("secp256k1", secp256k1.getPublicKey(key, false), hex(word(100n)), made),
      () => normalizeSignature("secp256k1", secp256k1.getPublicKey(key, false), digest, { r: 0n, s: made.s }),
      () => normalizeSignature("secp256k1", secp256k1.getPublicKey(key, false), digest, { r: made.r, s: n }),
      () => normalizeSignature("secp256k1", secp256k1.getPublicKey(key, true), digest, made),
      () => normalizeSignature("P-256", secp256k1.getPublicKey(key, false), digest, made),
    ];
    for (const run of cases) {
      let error: unknown;
      try {
        run();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SignerError);
      expect((error as SignerError).kind).toBe("refused");
    }
  });
});

describe("normalizeSignature through the service's secp256k1 (libsecp256k1 when installed)", () => {
  const implementations = [nobleSecp256k1, openNativeSecp256k1()].filter((x) => x !== undefined);
  test.each(implementations.map((x) => [x.implementation, x] as const))("%s gives the answers of the @noble/curves path, and refuses the same", (_, native) => {
    const n = curveOrder("secp256k1");
    for (let i = 1; i <= 40; i++) {
      const key = hex(word(BigInt(i) * 0xfedcba987654321n + 3n));
      const publicKey = secp256k1.getPublicKey(key, false);
      const address = privateKeyToAccount(`0x${word(BigInt(i) * 0xfedcba987654321n + 3n)}`).address.toLowerCase() as Hex;
      const digest = hex(keccak256(new TextEncoder().encode(`native ${i}`)).slice(2));
      const made = secp256k1.sign(digest, key);
      for (const given of [{ r: made.r, s: made.s }, { r: made.r, s: n - made.s }]) {
        const fast = normalizeSignature("secp256k1", publicKey, digest, given, { secp256k1: native, address });
        expect(fast).toEqual(normalizeSignature("secp256k1", publicKey, digest, given));
        expect(fast).toEqual({ r: made.r, s: made.s, yParity: made.recovery as 0 | 1 });
      }
      const other = privateKeyToAccount(`0x${word(BigInt(i) + 1n)}`).address.toLowerCase() as Hex;
      expect(() => normalizeSignature("secp256k1", publicKey, digest, made, { secp256k1: native, address: other })).toThrow(SignerError);
    }
  });
});
