import { describe, expect, test } from "bun:test";
import { leastAttestationGas } from "./_batch_narrowing.ts";

describe("leastAttestationGas()", () => {
  test("four fixed slots; a slot for every 32-byte word of data (20,000, or 2,100 for a word of zeros); 16 gas a byte of call data, 4 a zero byte", () => {
    expect(leastAttestationGas("0x")).toBe(80_000n);
    // Fewer than 32 bytes share the length's slot.
    expect(leastAttestationGas(`0x${"ff".repeat(31)}`)).toBe(80_000n + 31n * 16n);
    expect(leastAttestationGas(`0x${"ff".repeat(32)}`)).toBe(80_000n + 32n * 16n + 20_000n);
    // 33 bytes: two words, the second right-padded.
    expect(leastAttestationGas(`0x${"ff".repeat(33)}`)).toBe(80_000n + 33n * 16n + 40_000n);
    // Words of zeros still cost their store (an unchanged cold slot) and their call data: data of zeros is not free.
    expect(leastAttestationGas(`0x${"00".repeat(64)}${"01".repeat(32)}`)).toBe(80_000n + 64n * 4n + 32n * 16n + 2n * 2_100n + 20_000n);
    expect(leastAttestationGas(`0x${"00".repeat(20_000)}`)).toBe(80_000n + 20_000n * 4n + 625n * 2_100n);
    expect(leastAttestationGas(`${"ab".repeat(2500)}`)).toBe(80_000n + 2500n * 16n + 79n * 20_000n);
  });
});
