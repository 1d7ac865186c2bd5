/**
 * EAS `getAttestation`'s return read by hand (issue 43 item 4): the index follower reads every new attestation, and
 * viem's generic decoder (the ABI walked per call, each address checksummed with keccak in JavaScript) was its largest
 * share of CPU after the JSON-RPC exchanges, with the most compiler time of any function late in a run. The layout is
 * fixed: one tuple (EAS's `Attestation`) behind its offset, ten head words, then the `data` bytes. The answer is the
 * one viem gives (bigint times, checksummed addresses, lowercase hex); data that does not hold a whole answer throws,
 * as viem's decoder does.
 */
import type { EasAttestation } from "../../domain/eas_abi.ts";
import type { HexString } from "../../ports/eas.ts";

/** Spells 0x and 40 hex digits as a checksummed address. */
export type ChecksumAddress = (address: string) => HexString;

const WORD = 64;

/** Decodes one `getAttestation` answer (0x-prefixed hex). */
export function decodeAttestationResult(result: string, checksum: ChecksumAddress): EasAttestation {
  const hex = result.toLowerCase();
  if ((hex.length - 2) % WORD !== 0 || hex.length === 2 || !/^0x[0-9a-f]*$/.test(hex)) throw new Error("getAttestation: the answer is not whole words");
  const words = (hex.length - 2) / WORD;
  const word = (index: number) => {
    if (!Number.isSafeInteger(index) || index < 0 || index >= words) throw new Error("getAttestation: the answer is shorter than its layout");
    return hex.slice(2 + index * WORD, 2 + (index + 1) * WORD);
  };
  const offset = (index: number) => {
    const value = BigInt(`0x${word(index)}`);
    if (value % 32n !== 0n || value > BigInt(words * 32)) throw new Error("getAttestation: an offset outside the answer");
    return Number(value) / 32;
  };
  const tuple = offset(0);
  const at = (field: number) => word(tuple + field);
  const uint = (field: number) => BigInt(`0x${at(field)}`);
  const address = (field: number) => checksum(`0x${at(field).slice(24)}`);
  const revocable = uint(8);
  if (revocable > 1n) throw new Error("getAttestation: revocable is not a boolean");
  const data = tuple + offset(tuple + 9);
  const length = BigInt(`0x${word(data)}`);
  if (length > BigInt((words - data - 1) * 32)) throw new Error("getAttestation: data longer than the answer");
  const start = 2 + (data + 1) * WORD;
  return {
    uid: `0x${at(0)}`,
    schema: `0x${at(1)}`,
    time: uint(2),
    expirationTime: uint(3),
    revocationTime: uint(4),
    refUID: `0x${at(5)}`,
    recipient: address(6),
    attester: address(7),
    revocable: revocable === 1n,
    data: `0x${hex.slice(start, start + Number(length) * 2)}`,
  };
}
