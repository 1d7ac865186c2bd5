/**
 * The calldata of EAS `attestByDelegation`, encoded by hand (issue 28): viem's `encodeFunctionData` walks the ABI
 * and hashes the function's signature for its selector on every call, about 0.15 ms per delegated attestation on
 * the benchmark machine, for a layout that never changes. The bytes are viem's (attest_calldata_test.ts compares
 * them over random calls, hex in lowercase); a value that does not fit its ABI type throws, and so do bytes that are not
 * whole bytes of hex (viem would pad those).
 *
 * Layout: the selector, the offset of the one dynamic argument (0x20), then the `DelegatedAttestationRequest` tuple:
 * seven head words (schema, the offset of `data` = 0xe0, the signature's v, r, s inline as a static tuple, attester,
 * deadline), then `data`'s six head words (recipient, expirationTime, revocable, refUID, the offset of its bytes =
 * 0xc0, value), then the bytes' length and the bytes padded to whole words.
 */
import { decodeFunctionData, encodeFunctionData, toFunctionSelector } from "viem/utils";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import type { DelegatedAttestCall, HexString } from "../../ports/eas.ts";

/** `attestByDelegation((bytes32,(address,uint64,bool,bytes32,bytes,uint256),(uint8,bytes32,bytes32),address,uint64))`. */
export const ATTEST_BY_DELEGATION_SELECTOR = "0x3c042715";

/** The selector of `multiAttestByDelegation`. */
export const MULTI_ATTEST_BY_DELEGATION_SELECTOR = toFunctionSelector(
  "multiAttestByDelegation((bytes32,(address,uint64,bool,bytes32,bytes,uint256)[],(uint8,bytes32,bytes32)[],address,uint64)[])",
);

const word = (hex: string) => hex.padStart(64, "0");

function uint(value: bigint | number, bits: number): string {
  const n = BigInt(value);
  if (n < 0n || n >= 1n << BigInt(bits)) throw new Error(`attestByDelegation: not a uint${bits}`);
  return word(n.toString(16));
}

function fixed(hex: string, bytes: number, name: string): string {
  if (hex.length !== 2 + 2 * bytes || !/^0x[0-9a-fA-F]*$/.test(hex)) throw new Error(`attestByDelegation: ${name} is not ${bytes} bytes`);
  return hex.slice(2).toLowerCase();
}

/** The calldata of `attestByDelegation(call)`. */
export function encodeAttestByDelegation(call: DelegatedAttestCall): HexString {
  const data = call.data;
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(data.data)) throw new Error("attestByDelegation: data is not hex bytes");
  const bytes = data.data.slice(2).toLowerCase();
  const length = bytes.length / 2;
  const padded = bytes.padEnd(Math.ceil(length / 32) * 64, "0");
  return `${ATTEST_BY_DELEGATION_SELECTOR}${word("20")}${fixed(call.schema, 32, "schema")}${word("e0")}${uint(call.signature.v, 8)}${
    fixed(call.signature.r, 32, "r")
  }${fixed(call.signature.s, 32, "s")}${word(fixed(call.attester, 20, "attester"))}${uint(call.deadline, 64)}${
    word(fixed(data.recipient, 20, "recipient"))
  }${uint(data.expirationTime, 64)}${word(data.revocable ? "1" : "0")}${fixed(data.refUID, 32, "refUID")}${word("c0")}${
    uint(data.value, 256)
  }${uint(length, 256)}${padded}`;
}

/**
 * The calldata of EAS `multiAttestByDelegation` for `calls`, in their order (decisions §23): consecutive calls of one
 * schema, attester and deadline share one `MultiDelegatedAttestationRequest` (EAS checks their signatures against the
 * attester's nonce incrementing within the call, so the order is the nonces'). Encoded by viem: one batch is one call.
 */
export function encodeMultiAttestByDelegation(calls: readonly DelegatedAttestCall[]): HexString {
  if (calls.length === 0) throw new Error("multiAttestByDelegation: no calls");
  const groups: { schema: HexString; attester: HexString; deadline: bigint; data: DelegatedAttestCall["data"][]; signatures: DelegatedAttestCall["signature"][] }[] = [];
  for (const call of calls) {
    const last = groups.at(-1);
    if (last !== undefined && last.schema.toLowerCase() === call.schema.toLowerCase() && last.attester.toLowerCase() === call.attester.toLowerCase() && last.deadline === call.deadline) {
      last.data.push(call.data);
      last.signatures.push(call.signature);
    } else {
      groups.push({ schema: call.schema, attester: call.attester, deadline: call.deadline, data: [call.data], signatures: [call.signature] });
    }
  }
  return encodeFunctionData({ abi: EAS_ABI, functionName: "multiAttestByDelegation", args: [groups] });
}

/**
 * The signatures a `multiAttestByDelegation` calldata carries, in order, each as the 65 normalized bytes of its
 * replay record (r, s, v as lowercase hex); undefined for any other calldata. The reconciler finds a batch item's
 * uid with it: the receipt's `Attested` logs come in this order.
 */
export function multiAttestSignatures(data: HexString): string[] | undefined {
  if (!data.toLowerCase().startsWith(MULTI_ATTEST_BY_DELEGATION_SELECTOR)) return undefined;
  try {
    const decoded = decodeFunctionData({ abi: EAS_ABI, data });
    if (decoded.functionName !== "multiAttestByDelegation") return undefined;
    const [groups] = decoded.args as unknown as [readonly { signatures: readonly { v: number; r: HexString; s: HexString }[] }[]];
    return groups.flatMap((group) => group.signatures.map((sig) => `0x${sig.r.slice(2)}${sig.s.slice(2)}${sig.v.toString(16).padStart(2, "0")}`.toLowerCase()));
  } catch {
    return undefined;
  }
}
