/**
 * `waiting`, unless `signal` aborts first: then its reason, at once, and `waiting` goes on for whoever else waits on
 * it (`late`, when given, gets what it resolves to after that: a connection made too late is closed). The listener
 * is removed once either settles.
 */
export async function untilAborted<T>(waiting: Promise<T>, signal: AbortSignal | null | undefined, late?: (value: T) => void): Promise<T> {
  if (signal === undefined || signal === null) return await waiting;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([waiting, aborted]);
  } catch (error) {
    if (signal.aborted && late !== undefined) void waiting.then(late, () => {});
    throw error;
  } finally {
    signal.removeEventListener("abort", onAbort!);
  }
}
