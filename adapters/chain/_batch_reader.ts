/** The sizes attestation reads plan with, and the batch reader installed by an `eth_call` state override. */
import { encodeFunctionData, type Hex } from "viem";
import { EAS_ABI } from "../../domain/eas_abi.ts";

export const ZERO_UID = `0x${"0".repeat(64)}`;

/** Return data of one getAttestation inside aggregate3 besides its `data`: offsets, lengths, ten fields. */
export const RESULT_OVERHEAD = 512;
/**
 * Return data one deployless call may carry. It comes back as the code the wrapper's constructor
 * "deploys", so nodes cap it at the contract size limit (24,576 bytes, EIP-170); this leaves room.
 */
export const RETURN_BUDGET = 22_000;
/**
 * Return data one batch-reader call may carry. Not capped by the node as such; the limit is gas: each
 * 32 bytes read is a cold SLOAD (2,100 gas), so 128 KB is about 8.4M gas, well inside the usual
 * `eth_call` gas caps (Anvil: the 30M block gas limit; geth: 50M).
 */
export const OVERRIDE_RETURN_BUDGET = 128_000;
/** viem's default limit on an HTTP response body. */
export const DEFAULT_MAX_RESPONSE_BYTES = 10_485_760;
/** The share of the response limit reads plan to fill (the rest: JSON framing, calls that ride in the same batch). */
export const RESPONSE_SHARE = 0.75;
/** A JSON-RPC answer's framing besides its result. */
export const CALL_OVERHEAD_BYTES = 256;

/** A policy-schema attestation (a certification with twenty fields is about 1.7 KB) with room to spare. */
export const TYPICAL_RESULT_BYTES = 2_048;

/**
 * Where the batch reader's code is installed for the duration of one `eth_call` (an address nothing
 * is deployed at; overriding code that did exist would only affect our own call).
 */
export const BATCH_READER_ADDRESS = "0x00000000000000000000000000000000a77e5ead" as const;
export const GET_ATTESTATION_SELECTOR = encodeFunctionData({ abi: EAS_ABI, functionName: "getAttestation", args: [ZERO_UID as Hex] }).slice(0, 10) as Hex;

/**
 * The batch reader: EVM runtime code, hand-assembled, 78 bytes. Calldata: word 0 the target contract,
 * word 1 a 4-byte selector (left-aligned), then one 32-byte argument per call. For each argument it
 * STATICCALLs `selector ‖ argument` on the target with all gas left and appends `length ‖ returndata`
 * (length as a 32-byte word) to its output, from memory 0x40 on; a failed call reverts the whole read.
 *
 * ```
 * 00 PUSH1 40                                  out = 0x40 (output end)
 * 02 PUSH1 40                                  i = 0x40 (calldata offset of the next argument)
 * 04 JUMPDEST                                  loop:
 * 05 CALLDATASIZE DUP2 LT ISZERO PUSH1 45 JUMPI  if !(i < calldatasize) goto end
 * 0c PUSH1 20 CALLDATALOAD PUSH1 00 MSTORE      mem[0..32] = selector word
 * 12 PUSH1 20 DUP2 PUSH1 04 CALLDATACOPY        mem[4..36] = calldata[i..i+32]
 * 18 PUSH1 00 PUSH1 00 PUSH1 24 PUSH1 00        retSize, retOffset, argsSize 36, argsOffset 0
 * 20 PUSH1 00 CALLDATALOAD GAS STATICCALL       ok = staticcall(gas, target, 0, 36, 0, 0)
 * 25 PUSH1 2c JUMPI PUSH1 00 DUP1 REVERT        if !ok revert(0, 0)
 * 2c JUMPDEST                                  cont:
 * 2d RETURNDATASIZE DUP3 MSTORE                 mem[out] = len
 * 30 RETURNDATASIZE PUSH1 00 DUP4 PUSH1 20 ADD RETURNDATACOPY   mem[out+32..] = returndata
 * 38 SWAP1 RETURNDATASIZE PUSH1 20 ADD ADD SWAP1                out += 32 + len
 * 3f PUSH1 20 ADD PUSH1 04 JUMP                 i += 32; goto loop
 * 45 JUMPDEST POP PUSH1 40 SWAP1 SUB PUSH1 40 RETURN            end: return mem[0x40..out]
 * ```
 */
export const BATCH_READER_CODE: Hex =
  "0x604060405b3681101560455760203560005260208160043760006000602460006000355afa602c57600080fd5b3d82523d6000836020013e903d60200101906020016004565b50604090036040f3";

/** Splits the batch reader's output into the `count` return data it holds; throws on anything else. */
export function splitBatchOutput(output: Hex, count: number): Hex[] {
  const out: Hex[] = [];
  let at = 2;
  while (at < output.length) {
    const length = Number.parseInt(output.slice(at, at + 64), 16);
    if (!Number.isSafeInteger(length) || at + 64 + length * 2 > output.length) throw new Error("Malformed batch reader output");
    out.push(`0x${output.slice(at + 64, at + 64 + length * 2)}`);
    at += 64 + length * 2;
  }
  if (out.length !== count) throw new Error("Malformed batch reader output");
  return out;
}

/** Splits `items` into consecutive slices of at most `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
