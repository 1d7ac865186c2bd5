/** Random bytes from a counter: deterministic, never repeating within a test. */
export function fakeRandom() {
  let counter = 0;
  return {
    bytes(length: number) {
      const out = new Uint8Array(length);
      let n = ++counter;
      for (let i = length - 1; i >= 0 && n > 0; i--, n = Math.floor(n / 256)) out[i] = n % 256;
      out[0] = 0x5a;
      return out;
    },
  } satisfies import("../random.ts").Random;
}
