import { describe, expect, test } from "bun:test";
import { normalizeSignature } from "./signature.ts";

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const hex32 = (n: bigint) => n.toString(16).padStart(64, "0");
const R = 0x1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff00n;
const S = 0x2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081n;
const sig = (r: bigint, s: bigint, v: number) => `0x${hex32(r)}${hex32(s)}${v.toString(16).padStart(2, "0")}`;

describe("normalizeSignature()", () => {
  test("keeps a low-s signature with v 27/28 as it is, in lower case", () => {
    const result = normalizeSignature(sig(R, S, 28).toUpperCase().replace("0X", "0x"));
    expect(result).toEqual({
      ok: true,
      value: { r: `0x${hex32(R)}`, s: `0x${hex32(S)}`, v: 28, hex: sig(R, S, 28) as `0x${string}` },
    });
  });

  test("maps v 0/1 and the high-s twin to one key", () => {
    const canonical = normalizeSignature(sig(R, S, 27));
    expect(canonical.ok).toBe(true);
    const key = canonical.ok ? canonical.value.hex : undefined;
    for (const variant of [sig(R, S, 0), sig(R, N - S, 28), sig(R, N - S, 1)]) {
      const normalized = normalizeSignature(variant);
      expect(normalized.ok && normalized.value.hex).toBe(key!);
    }
  });

  test("refuses anything but 65 bytes of hex, a v other than 0, 1, 27, 28, and r or s outside the curve order", () => {
    const refused = [
      undefined,
      42,
      "",
      "0x",
      sig(R, S, 27).slice(0, -2),
      `${sig(R, S, 27)}00`,
      sig(R, S, 27).slice(2),
      `0x${"zz".repeat(65)}`,
      sig(R, S, 2),
      sig(R, S, 29),
      sig(0n, S, 27),
      sig(R, 0n, 27),
      sig(N, S, 27),
      sig(R, N, 27),
    ];
    for (const input of refused) {
      expect({ input, result: normalizeSignature(input) }).toMatchObject({ input, result: { ok: false, code: "INVALID_SIGNATURE" } });
    }
  });
});
