import { describe, expect, test } from "bun:test";
import { getAddress, isAddress as viemIsAddress, keccak256 } from "viem/utils";
import { isAddress } from "./address.ts";
import type { HexString } from "../ports/eas.ts";

describe("isAddress", () => {
  const addresses = Array.from({ length: 200 }, (_, i) => getAddress(`0x${keccak256(`0x${i.toString(16).padStart(2, "0")}`).slice(-40)}`));

  test("agrees with viem's strict check on checksummed, lowercase, uppercase (refused) and miscased addresses", () => {
    const spellings = addresses.flatMap((a) => [
      a,
      a.toLowerCase(),
      `0x${a.slice(2).toUpperCase()}`,
      // One letter's case flipped: a checksum that no longer holds (when the address has a letter).
      a.replace(/[a-fA-F]/, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())),
    ]);
    const answers = spellings.map((s) => isAddress(s));
    expect(answers).toEqual(spellings.map((s) => viemIsAddress(s)));
    expect(answers.filter((a) => !a).length).toBeGreaterThan(150);
  });

  test("uses the hash it is given", () => {
    const seen: HexString[] = [];
    const hash = (data: HexString) => {
      seen.push(data);
      return keccak256(data) as HexString;
    };
    expect(isAddress(addresses[0]!, hash)).toBe(true);
    // The ASCII of the lowercase digits is what EIP-55 hashes.
    expect(seen).toEqual([`0x${Buffer.from(addresses[0]!.slice(2).toLowerCase()).toString("hex")}`]);
    expect(isAddress(addresses[0]!.toLowerCase(), hash)).toBe(true);
    expect(seen.length).toBe(1);
  });

  test("refuses what is not 40 hex digits after 0x", () => {
    for (const value of ["", "0x", `0x${"a".repeat(39)}`, `0x${"a".repeat(41)}`, `${"a".repeat(42)}`, `0X${"a".repeat(40)}`, `0x${"g".repeat(40)}`, 42, null, undefined]) {
      expect(isAddress(value)).toBe(false);
    }
  });
});
