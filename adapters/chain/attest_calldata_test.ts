import { expect, test } from "bun:test";
import { decodeFunctionData, encodeFunctionData, toFunctionSelector } from "viem";
import type { DelegatedAttestCall, HexString } from "../../ports/eas.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import {
  ATTEST_BY_DELEGATION_SELECTOR,
  encodeAttestByDelegation,
  encodeMultiAttestByDelegation,
  MULTI_ATTEST_BY_DELEGATION_SELECTOR,
  multiAttestSignatures,
} from "./attest_calldata.ts";
import { attestCalldataBytes, batchCalldataBytes } from "../../domain/delegation/mod.ts";

const hex = (bytes: number) => `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex")}` as HexString;
const random = (bits: number) => BigInt(hex(bits / 8));
const viems = (call: DelegatedAttestCall) => encodeFunctionData({ abi: EAS_ABI, functionName: "attestByDelegation", args: [call as never] });

test("the selector is the function's", () => {
  expect(ATTEST_BY_DELEGATION_SELECTOR).toBe(toFunctionSelector(EAS_ABI.find((item) => item.type === "function" && item.name === "attestByDelegation")!));
});

test("gives viem's bytes for data of every length class, extreme values and mixed-case hex", () => {
  for (const length of [0, 1, 31, 32, 33, 64, 200, 1_000]) {
    for (const extreme of [false, true]) {
      const call: DelegatedAttestCall = {
        schema: hex(32).toUpperCase().replace("0X", "0x") as HexString,
        attester: hex(20),
        deadline: extreme ? (1n << 64n) - 1n : random(32),
        data: {
          recipient: extreme ? `0x${"0".repeat(40)}` : hex(20),
          expirationTime: extreme ? (1n << 64n) - 1n : 0n,
          revocable: !extreme,
          refUID: hex(32),
          data: length === 0 ? "0x" : hex(length),
          value: extreme ? (1n << 256n) - 1n : 0n,
        },
        signature: { v: extreme ? 255 : 27, r: hex(32), s: hex(32) },
      };
      expect<string>(encodeAttestByDelegation(call)).toBe(viems(call).toLowerCase());
    }
  }
});

test("refuses what does not fit its type (viem refuses the same numbers, and pads hex that is not whole bytes)", () => {
  const base: DelegatedAttestCall = {
    schema: hex(32),
    attester: hex(20),
    deadline: 1n,
    data: { recipient: hex(20), expirationTime: 0n, revocable: true, refUID: hex(32), data: "0x", value: 0n },
    signature: { v: 27, r: hex(32), s: hex(32) },
  };
  const bad: DelegatedAttestCall[] = [
    { ...base, deadline: 1n << 64n },
    { ...base, deadline: -1n },
    { ...base, signature: { ...base.signature, v: 256 } },
    { ...base, schema: hex(31) },
    { ...base, attester: hex(21) },
    { ...base, data: { ...base.data, data: "0xabc" as HexString } },
    { ...base, data: { ...base.data, value: 1n << 256n } },
    { ...base, data: { ...base.data, refUID: "0xzz" as HexString } },
  ];
  for (const call of bad) expect(() => encodeAttestByDelegation(call)).toThrow();
  for (const call of bad.slice(0, 3)) expect(() => viems(call)).toThrow();
});

test("a batch's calldata: consecutive calls of one schema, attester and deadline share a request; the signatures read back in order", () => {
  const schema = hex(32);
  const attester = hex(20);
  const call = (over: Partial<DelegatedAttestCall> = {}): DelegatedAttestCall => ({
    schema,
    attester,
    deadline: 1_000n,
    data: { recipient: hex(20), expirationTime: 0n, revocable: false, refUID: hex(32), data: hex(3), value: 0n },
    signature: { v: 28, r: hex(32), s: hex(32) },
    ...over,
  });
  const calls = [call(), call(), call({ attester: hex(20) }), call()];
  const data = encodeMultiAttestByDelegation(calls);
  expect(data.startsWith(MULTI_ATTEST_BY_DELEGATION_SELECTOR)).toBe(true);
  const decoded = decodeFunctionData({ abi: EAS_ABI, data });
  const groups = decoded.args![0] as readonly { attester: string; data: readonly unknown[] }[];
  expect(groups.map((g) => g.data.length)).toEqual([2, 1, 1]);
  expect(multiAttestSignatures(data)).toEqual(calls.map((c) => `0x${c.signature.r.slice(2)}${c.signature.s.slice(2)}1c`));
  expect(multiAttestSignatures(encodeAttestByDelegation(calls[0]!))).toBeUndefined();
});

test("the call data's size the relays bound before any RPC (domain/delegation/_calldata_size.ts) is exactly the encoded bytes', single and batch", () => {
  const call = (length: number, attester: HexString, deadline: bigint, schema: HexString): DelegatedAttestCall => ({
    schema,
    attester,
    deadline,
    data: { recipient: hex(20), expirationTime: 0n, revocable: true, refUID: hex(32), data: length === 0 ? "0x" : hex(length), value: 0n },
    signature: { v: 27, r: hex(32), s: hex(32) },
  });
  const bytes = (data: string) => (data.length - 2) / 2;
  const [a, b] = [hex(20), hex(20)];
  const schema = hex(32);
  for (const length of [0, 1, 31, 32, 33, 1_000]) {
    const single = call(length, a, 5n, schema);
    expect(attestCalldataBytes(single)).toBe(bytes(encodeAttestByDelegation(single)));
  }
  // Consecutive calls of one schema, attester and deadline share a request; any change starts another.
  const batch = [call(3, a, 5n, schema), call(40, a, 5n, schema), call(0, a, 6n, schema), call(64, b, 6n, schema), call(100, b, 6n, hex(32)), call(7, a, 5n, schema)];
  for (let n = 1; n <= batch.length; n++) expect(batchCalldataBytes(batch.slice(0, n))).toBe(bytes(encodeMultiAttestByDelegation(batch.slice(0, n))));
});
