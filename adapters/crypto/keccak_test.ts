import { expect, test } from "bun:test";
import { hashTypedData, keccak256 } from "viem";
import { type AttestMessage, attestDigest, buildAttestTypedData } from "../../domain/delegation/mod.ts";
import { nobleKeccak256, openKeccak256 } from "./mod.ts";

const wasm = await openKeccak256();

test("the WebAssembly keccak-256 is used, and hashes as viem does across lengths and block boundaries", () => {
  expect(wasm.implementation).toBe("hash-wasm");
  for (const impl of [wasm, nobleKeccak256]) {
    for (let length = 0; length <= 700; length += length < 300 ? 1 : 17) {
      const data = crypto.getRandomValues(new Uint8Array(length));
      const hex = `0x${Buffer.from(data).toString("hex")}` as const;
      expect(`0x${Buffer.from(impl.bytes(data)).toString("hex")}`).toBe(keccak256(data));
      expect(impl.hex(hex)).toBe(keccak256(hex));
    }
    // A hasher used again and again keeps no state between calls; a view into a larger buffer hashes only its bytes.
    const big = crypto.getRandomValues(new Uint8Array(5_000));
    expect(impl.bytes(big.subarray(100, 300))).toEqual(impl.bytes(big.slice(100, 300)));
    // Each digest is its own bytes: a later hash does not change an earlier one (no view into the hasher's memory).
    const first = impl.bytes(Uint8Array.of(1));
    const copy = Uint8Array.from(first);
    impl.bytes(Uint8Array.of(2));
    expect(first).toEqual(copy);
    expect(impl.hex("0x")).toBe("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    expect(impl.hex("0xABCD")).toBe(keccak256("0xabcd"));
  }
});

test("hex that is not whole bytes is refused, not hashed short", () => {
  for (const bad of ["0xabc", "abcd", "0xzz", "0x12 34", "0x12g4"]) {
    expect(() => wasm.hex(bad as `0x${string}`)).toThrow();
    expect(() => nobleKeccak256.hex(bad as `0x${string}`)).toThrow();
  }
});

test("the Attest digest through the WebAssembly keccak is viem's hashTypedData", () => {
  const domain = { chainId: 66238, easAddress: "0x8835AF90f1537777F52E482C8630cE4e947eCa32" as const };
  for (const data of ["0x", "0x00", `0x${"ab".repeat(700)}`] as const) {
    const message: AttestMessage = {
      attester: "0x1111111111111111111111111111111111111111",
      schema: `0x${"22".repeat(32)}`,
      recipient: "0xabcdefabcdef0123456789abcdefabcdef012345",
      expirationTime: 0n,
      revocable: true,
      refUID: `0x${"F".repeat(64)}`,
      data,
      value: 0n,
      nonce: 7n,
      deadline: 1_800_000_000n,
    };
    expect(attestDigest(domain, message, wasm.hex)).toBe(hashTypedData(buildAttestTypedData(domain, message)));
  }
});
