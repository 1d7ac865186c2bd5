import type { Clock } from "../clock.ts";

/** A clock that stands still until told otherwise. */
export function fakeClock(startMs = 1_800_000_000_000): Clock & { set: (ms: number) => void } {
  let now = startMs;
  return { nowMs: () => now, set: (ms) => void (now = ms) };
}
