import type { Clock } from "../../ports/clock.ts";

/** The wall clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };
