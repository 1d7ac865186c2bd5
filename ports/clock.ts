/** Tells the time; the domain never reads the clock itself. */
export interface Clock {
  readonly nowMs: () => number;
}
