/**
 * How many bytes of call data a relay transaction carries, known before any RPC: a transaction of more bytes than a
 * node takes is refused by it (nothing broadcast), after its reads and a signature (a billed KMS Sign) were spent and
 * with everything charged given back (decisions §23), so a request could have it done again and again for nothing.
 */
import type { DelegatedAttestCall } from "../../ports/eas.ts";

/**
 * The most call data a relay transaction carries: 120 KiB. geth's and reth's pools refuse a transaction of more than
 * 128 KiB (four 32 KiB slots), its RLP envelope and signature counted (a couple of hundred bytes); 120 KiB leaves 8 KiB
 * for them. Every wallet factory call a chain can run fits: its largest, a factory given the wallet's whole init code,
 * is bounded by EIP-3860's 48 KiB of init code.
 */
export const MAX_CALLDATA_BYTES = 120 * 1024;

/** The bytes of `data` (0x hex), padded to whole 32-byte words as ABI `bytes` are. */
const paddedBytes = (data: string) => Math.ceil((data.length - 2) / 2 / 32) * 32;

/**
 * The bytes of EAS `attestByDelegation(call)`'s call data (adapters/chain/attest_calldata.ts): the selector, the offset
 * of its one argument, the request's seven head words, its data's six, the data's length and its padded bytes.
 */
export function attestCalldataBytes(call: DelegatedAttestCall): number {
  return 4 + 32 + 7 * 32 + 6 * 32 + 32 + paddedBytes(call.data.data);
}

/**
 * The bytes of EAS `multiAttestByDelegation(calls)`'s call data, encoded as adapters/chain/attest_calldata.ts does
 * (consecutive calls of one schema, attester and deadline share one request): the selector, the array's offset and
 * length; per request its offset, five head words, and its two arrays' lengths; per call its data's offset, six head
 * words, length and padded bytes, and its signature's three words.
 */
export function batchCalldataBytes(calls: readonly DelegatedAttestCall[]): number {
  let bytes = 4 + 32 + 32;
  let last: DelegatedAttestCall | undefined;
  for (const call of calls) {
    const sameRequest = last !== undefined && last.schema.toLowerCase() === call.schema.toLowerCase() &&
      last.attester.toLowerCase() === call.attester.toLowerCase() && last.deadline === call.deadline;
    if (!sameRequest) bytes += 32 + 5 * 32 + 32 + 32;
    bytes += 32 + 6 * 32 + 32 + paddedBytes(call.data.data) + 3 * 32;
    last = call;
  }
  return bytes;
}
