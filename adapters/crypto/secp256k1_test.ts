import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { keccak256, recoverAddress, type Hex } from "viem";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import { CURVE_ORDER } from "./_signature.ts";
import { loadSecp256k1, nobleSecp256k1, openKeccak256, openNativeSecp256k1 } from "./mod.ts";

const native = openNativeSecp256k1();
// As the service opens it: addresses hashed with the WebAssembly keccak.
const nativeWasm = openNativeSecp256k1(undefined, await openKeccak256());
// CI installs libsecp256k1 (scripts/test.sh), so there the native half must run; elsewhere it may be absent.
if (process.env.CI === "true") test("libsecp256k1 is installed and passes its known-answer check", () => expect(native?.implementation).toBe("libsecp256k1"));

const word = (n: bigint) => n.toString(16).padStart(64, "0");
const bytes = (hex: string) => new Uint8Array(Buffer.from(hex.slice(2), "hex"));
const viemRecover = (hash: Hex, signature: Hex): Promise<string | undefined> => recoverAddress({ hash, signature }).then((a) => a.toLowerCase(), () => undefined);

const cases = await Promise.all(Array.from({ length: 64 }, async (_, i) => {
  const key = generatePrivateKey();
  const account = privateKeyToAccount(key);
  const hash = keccak256(new TextEncoder().encode(`message ${i}`));
  return { key, account, hash, signature: await account.sign({ hash }) };
}));

const implementations: [string, Secp256k1 | undefined][] = [
  ["@noble/curves", nobleSecp256k1],
  ["libsecp256k1", native],
  ["libsecp256k1 with the WebAssembly keccak", nativeWasm],
];
for (const [name, impl] of implementations) {
  describe.skipIf(impl === undefined)(name, () => {
    const secp = impl!;
    test("signs exactly as viem does (RFC 6979, low s)", async () => {
      for (const c of cases) {
        const mine = secp.sign(bytes(c.hash), bytes(c.key));
        expect(`0x${word(mine.r)}${word(mine.s)}${(27 + mine.recovery).toString(16)}`).toBe(c.signature);
        expect(mine.s <= CURVE_ORDER / 2n).toBe(true);
      }
    });

    test("recovers what viem recovers, for v 27/28 and 0/1 and for the high-s twin", async () => {
      for (const c of cases) {
        const address = c.account.address.toLowerCase();
        expect<string | undefined>(secp.recoverAddress(c.hash, c.signature)).toBe(address);
        const v = Number.parseInt(c.signature.slice(130), 16);
        const yParity = `${c.signature.slice(0, 130)}0${v - 27}` as Hex;
        expect<string | undefined>(secp.recoverAddress(c.hash, yParity)).toBe(address);
        // The same point with s negated and the parity flipped: malleable, and recovered as viem recovers it.
        const s = BigInt(`0x${c.signature.slice(66, 130)}`);
        const twin = `${c.signature.slice(0, 66)}${word(CURVE_ORDER - s)}${v === 27 ? "1c" : "1b"}` as Hex;
        expect<string | undefined>(secp.recoverAddress(c.hash, twin)).toBe(await viemRecover(c.hash, twin));
        expect<string | undefined>(secp.recoverAddress(c.hash, twin)).toBe(address);
        // Another message: another (wrong) signer, the same one viem finds.
        const other = keccak256(c.hash);
        expect<string | undefined>(secp.recoverAddress(other, c.signature)).toBe(await viemRecover(other, c.signature));
      }
    });

    test("refuses what does not recover: zero or overlarge r and s, r off the curve, other v, wrong lengths, not hex", () => {
      const { hash, signature } = cases[0]!;
      const r = signature.slice(2, 66);
      const s = signature.slice(66, 130);
      const refused = [
        `0x${word(0n)}${s}1b`,
        `0x${r}${word(0n)}1b`,
        `0x${word(CURVE_ORDER)}${s}1b`,
        `0x${r}${word(CURVE_ORDER)}1b`,
        `0x${"ff".repeat(32)}${s}1b`,
        `0x${word(5n)}${s}1b`, // x = 5 is no point's x on secp256k1
        `0x${r}${s}1d`,
        `0x${r}${s}02`,
        `0x${r}${s}`,
        `${signature}00`,
        `0x${r}${s}zz`,
      ];
      for (const bad of refused) expect(secp.recoverAddress(hash, bad as Hex)).toBeUndefined();
      expect(secp.recoverAddress(`${hash}00` as Hex, signature)).toBeUndefined();
      expect(secp.recoverAddress(hash.slice(0, 64) as Hex, signature)).toBeUndefined();
    });

    test("refuses to sign with a key that is not one", () => {
      const hash = bytes(cases[0]!.hash);
      expect(() => secp.sign(hash, new Uint8Array(32))).toThrow();
      expect(() => secp.sign(hash, bytes(`0x${word(CURVE_ORDER)}`))).toThrow();
      expect(() => secp.sign(hash.subarray(0, 31), bytes(cases[0]!.key))).toThrow();
    });
  });
}

test("SECP256K1_LIBRARY: none is JavaScript, a library that does not open is a startup error, unset takes what is there", () => {
  expect(loadSecp256k1("none")).toEqual({ ok: true, value: nobleSecp256k1 });
  const missing = loadSecp256k1("/nonexistent/libsecp256k1.so");
  expect(missing.ok).toBe(false);
  expect(!missing.ok && missing.error).toContain("SECP256K1_LIBRARY=/nonexistent/libsecp256k1.so");
  const unset = loadSecp256k1(undefined);
  expect(unset.ok && unset.value.implementation).toBe(native === undefined ? "@noble/curves" : "libsecp256k1");
  // A shared library that is not libsecp256k1 (no such symbols) is refused too.
  expect(loadSecp256k1("libc.so.6").ok).toBe(false);
});
