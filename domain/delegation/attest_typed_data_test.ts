import { describe, expect, test } from "bun:test";
import { hashTypedData } from "viem/utils";
import type { HexString } from "../../ports/eas.ts";
import { type AttestMessage, attestDigest, buildAttestTypedData, ZERO_ADDRESS, ZERO_UID } from "./attest_typed_data.ts";

const base: AttestMessage = {
  attester: "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb",
  schema: "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47",
  recipient: ZERO_ADDRESS,
  expirationTime: 0n,
  revocable: true,
  refUID: ZERO_UID,
  data: "0x",
  value: 0n,
  nonce: 0n,
  deadline: 1_800_000_000n,
};

describe("attestDigest", () => {
  const domains = [
    { chainId: 66238, easAddress: "0x8835AF90f1537777F52E482C8630cE4e947eCa32" as HexString },
    { chainId: 31337, easAddress: "0x5fbdb2315678afecb367f032d93f642f64180aa3" as HexString },
  ];
  const messages: AttestMessage[] = [
    base,
    { ...base, recipient: "0xabcdefabcdef0123456789abcdefabcdef012345", revocable: false, expirationTime: (1n << 64n) - 1n },
    { ...base, data: `0x${"ab".repeat(700)}`, nonce: 12_345_678_901_234_567_890n, refUID: `0x${"F".repeat(64)}` },
    { ...base, value: (1n << 256n) - 1n, nonce: (1n << 256n) - 1n, deadline: (1n << 64n) - 1n, data: "0x00" },
  ];

  test("is the digest viem's hashTypedData gives for the same Attest typed data", () => {
    for (const domain of domains) {
      for (const message of messages) {
        expect(attestDigest(domain, message)).toBe(hashTypedData(buildAttestTypedData(domain, message)));
      }
    }
  });

  test("refuses what the type cannot hold instead of hashing something else", () => {
    const domain = domains[0]!;
    expect(() => attestDigest(domain, { ...base, deadline: 1n << 64n })).toThrow();
    expect(() => attestDigest(domain, { ...base, attester: "0x1234" as HexString })).toThrow();
    expect(() => attestDigest(domain, { ...base, schema: "0x12" as HexString })).toThrow();
  });
});
