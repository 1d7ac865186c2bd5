import { describe, expect, test } from "bun:test";
import { decodeFunctionResult, encodeFunctionResult, getAddress, type Hex } from "viem";
import { checksumAddress } from "../../domain/address.ts";
import { EAS_ABI, type EasAttestation } from "../../domain/eas_abi.ts";
import { decodeAttestationResult } from "./_attestation_result.ts";

const word = (n: number) => `0x${(n * 2654435761 % 2 ** 32).toString(16).padStart(8, "0").repeat(8)}` as Hex;
const address = (n: number) => getAddress(`0x${(n * 40503 % 2 ** 16).toString(16).padStart(4, "0").repeat(10)}`);

function attestation(n: number, dataBytes: number): EasAttestation {
  return {
    uid: word(n),
    schema: word(n + 1),
    time: BigInt(1_700_000_000 + n),
    expirationTime: n % 2 === 0 ? 0n : 2n ** 64n - 1n,
    revocationTime: BigInt(n % 3),
    refUID: n % 4 === 0 ? `0x${"0".repeat(64)}` : word(n + 2),
    recipient: address(n),
    attester: address(n + 7),
    revocable: n % 2 === 1,
    data: `0x${Array.from({ length: dataBytes }, (_, i) => ((i * 37 + n) & 0xff).toString(16).padStart(2, "0")).join("")}`,
  };
}

const encode = (a: EasAttestation) => encodeFunctionResult({ abi: EAS_ABI, functionName: "getAttestation", result: a });

describe("decodeAttestationResult()", () => {
  test("gives what viem's decoder gives, for data of every length around a word", () => {
    const lengths = [0, 1, 31, 32, 33, 63, 64, 65, 200, 1_000];
    for (const [n, length] of lengths.entries()) {
      const encoded = encode(attestation(n, length));
      const viem = decodeFunctionResult({ abi: EAS_ABI, functionName: "getAttestation", data: encoded });
      expect(decodeAttestationResult(encoded, (a) => checksumAddress(a))).toEqual(viem as EasAttestation);
      expect(decodeAttestationResult(encoded.toUpperCase().replace("0X", "0x"), (a) => checksumAddress(a))).toEqual(viem as EasAttestation);
    }
  });

  test("an answer that does not hold a whole attestation throws, as viem's does", () => {
    const encoded = encode(attestation(3, 40));
    const cut = encoded.slice(0, encoded.length - 64);
    expect(() => decodeFunctionResult({ abi: EAS_ABI, functionName: "getAttestation", data: cut as Hex })).toThrow();
    expect(() => decodeAttestationResult(cut, (a) => checksumAddress(a))).toThrow();
    for (const bad of ["0x", "0x1234", `${encoded}00`, `0x${"f".repeat(64)}${encoded.slice(66)}`]) {
      expect(() => decodeAttestationResult(bad, (a) => checksumAddress(a))).toThrow();
    }
    // revocable must be 0 or 1.
    const tupleStart = 2 + 64;
    const badBool = `${encoded.slice(0, tupleStart + 8 * 64)}${"0".repeat(63)}2${encoded.slice(tupleStart + 9 * 64)}`;
    expect(() => decodeAttestationResult(badBool, (a) => checksumAddress(a))).toThrow("boolean");
  });
});
