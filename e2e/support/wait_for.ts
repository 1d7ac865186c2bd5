/** Waits until `find` returns something (not undefined), polling every 50 ms; fails after a generous deadline. */
export async function waitFor<T>(what: string, find: () => T | undefined | Promise<T | undefined>, deadlineMs = 45_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}
