/**
 * Ethereum address checks with the hash passed in (issue 43 item 4). viem's `isAddress` checks the EIP-55 checksum of
 * a mixed-case address with its JavaScript keccak, about 20 µs a call on this runtime, and every delegated attestation
 * from a wallet's checksummed address pays it twice (attester and recipient); the service's keccak in WebAssembly
 * (adapters/crypto) does the same check in about 4. The rule is viem's strict one: 40 hex digits after `0x`; all
 * lowercase passes, anything else must be the address's checksum (so all uppercase does not, as with viem).
 */
import { keccak256 } from "viem/utils";
import type { HexString } from "../ports/eas.ts";

/** keccak-256 of the bytes a 0x-prefixed hex string spells, as 0x-prefixed hex (the port's `hex`). */
export type KeccakHex = (data: HexString) => HexString;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Whether `value` is an address, its checksum checked when it is mixed case; `hash` defaults to viem's keccak. */
export function isAddress(value: unknown, hash: KeccakHex = keccak256): value is HexString {
  if (typeof value !== "string" || !ADDRESS.test(value)) return false;
  const digits = value.slice(2);
  const lower = digits.toLowerCase();
  if (digits === lower) return true;
  return checksummedDigits(lower, hash) === digits;
}

/** `address` (0x and 40 hex digits, any case) spelt with its EIP-55 checksum; `hash` defaults to viem's keccak. */
export function checksumAddress(address: string, hash: KeccakHex = keccak256): HexString {
  if (!ADDRESS.test(address)) throw new Error("Not an address");
  return `0x${checksummedDigits(address.slice(2).toLowerCase(), hash)}` as HexString;
}

/** The EIP-55 spelling of 40 lowercase hex digits: a letter is upper case where the hash's nibble is 8 or more. */
function checksummedDigits(lower: string, hash: KeccakHex): string {
  let ascii = "0x";
  for (let i = 0; i < 40; i++) ascii += lower.charCodeAt(i).toString(16);
  const digest = hash(ascii as HexString);
  let out = "";
  for (let i = 0; i < 40; i++) {
    const c = lower[i]!;
    out += c >= "a" && parseInt(digest[i + 2]!, 16) >= 8 ? c.toUpperCase() : c;
  }
  return out;
}
