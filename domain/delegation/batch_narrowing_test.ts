import { describe, expect, test } from "bun:test";
import { leastAttestationGas } from "./_batch_narrowing.ts";

describe("leastAttestationGas()", () => {
  test("four fixed slots, and a slot for every 32-byte word of data that is not all zeros", () => {
    expect(leastAttestationGas("0x")).toBe(80_000n);
    // Fewer than 32 bytes share the length's slot.
    expect(leastAttestationGas(`0x${"ff".repeat(31)}`)).toBe(80_000n);
    expect(leastAttestationGas(`0x${"ff".repeat(32)}`)).toBe(100_000n);
    // 33 bytes: two words, the second right-padded.
    expect(leastAttestationGas(`0x${"ff".repeat(33)}`)).toBe(120_000n);
    // Words of zeros cost a store that changes nothing: not counted.
    expect(leastAttestationGas(`0x${"00".repeat(64)}${"01".repeat(32)}`)).toBe(100_000n);
    expect(leastAttestationGas(`${"ab".repeat(2500)}`)).toBe(80_000n + 79n * 20_000n);
  });
});
