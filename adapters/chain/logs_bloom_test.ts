import { describe, expect, test } from "bun:test";
import { bytesToHex, hexToBytes, keccak256 } from "viem";
import { ATTESTED_TOPIC, REVOKED_TOPIC } from "../../domain/eas_abi.ts";
import type { HexString } from "../../ports/eas.ts";
import { bloomTest } from "./_logs_bloom.ts";

const EAS = "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512" as HexString;
const OTHER = "0x5fbdb2315678afecb367f032d93f642f64180aa3" as HexString;

/** A bloom with the bits of `values` set, written independently of the code under test (yellow paper M3:2048). */
function bloomOf(values: readonly HexString[]): HexString {
  const bloom = new Uint8Array(256);
  for (const value of values) {
    const hash = hexToBytes(keccak256(value));
    for (const i of [0, 2, 4]) {
      const bit = (hash[i]! * 256 + hash[i + 1]!) % 2048;
      bloom[255 - Math.floor(bit / 8)]! |= 1 << (bit % 8);
    }
  }
  return bytesToHex(bloom) as HexString;
}

describe("bloomTest(): may a block hold an EAS Attested or Revoked log", () => {
  const mayHold = bloomTest(EAS, [ATTESTED_TOPIC as HexString, REVOKED_TOPIC as HexString]);

  test("the contract and either topic: maybe; the contract alone, the topic from another contract, or nothing: no", () => {
    expect(mayHold(bloomOf([EAS, ATTESTED_TOPIC as HexString]))).toBe(true);
    expect(mayHold(bloomOf([EAS, REVOKED_TOPIC as HexString, `0x${"11".repeat(32)}`]))).toBe(true);
    expect(mayHold(bloomOf([EAS]))).toBe(false);
    expect(mayHold(bloomOf([OTHER, ATTESTED_TOPIC as HexString]))).toBe(false);
    expect(mayHold(`0x${"00".repeat(256)}`)).toBe(false);
  });

  test("an address in any case is the same contract; a missing or malformed bloom tells nothing", () => {
    expect(bloomTest(EAS.toUpperCase().replace("0X", "0x") as HexString, [ATTESTED_TOPIC as HexString])(bloomOf([EAS, ATTESTED_TOPIC as HexString]))).toBe(true);
    for (const bad of [undefined, null, "0x", "0x1234", 5]) expect(mayHold(bad)).toBeUndefined();
  });
});
