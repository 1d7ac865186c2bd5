/** The deadlines of the requests in flight (one timer for all), and the drain of a server on shutdown (issue 33). */

/**
 * Drains a server on shutdown (issue 33): answers every request that comes 503 `SHUTTING_DOWN`, stops listening (after
 * one turn of the event loop) and cuts the bodies still arriving at once
 * ({@link InstrumentedHandler.drain}), lets the requests under way finish for up to `options.graceMs`, then answers
 * those still running with their deadline answer ({@link InstrumentedHandler.cut}) and closes every connection, at
 * most {@link CUT_FLUSH_MS} later. A submission cut there is answered 503 `OUTCOME_UNKNOWN`; it was recorded before each
 * of its steps, so the next start's reconciler settles it (decisions §15). Resolves once every connection is closed.
 */
export async function drainServer(
  server: { stop(closeActiveConnections?: boolean): Promise<void> },
  handler: { readonly drain: () => void; readonly cut: () => void },
  options: { readonly graceMs: number },
): Promise<void> {
  handler.drain();
  // A poll of the sockets first, so a request already arrived on a kept-alive connection is read and answered 503
  // SHUTTING_DOWN. Bun's stop closes a connection with no request under way at once, unread bytes and all: its client
  // got a reset for a request it had sent. Two timer turns, not one: Bun runs a timer already due before it polls the
  // sockets, so after a stall of a millisecond or two (a collection, the other core busy) one turn stopped the server
  // before it read what had arrived (review: reset 1 time in 15 under load); the second timer is due only after that
  // poll. Best effort still: a request that arrives just as the stop comes gets a reset (HTTP/1.1 tells a client that
  // an idle connection closes only by closing it); the `Connection: close` of every answer since SIGTERM
  // (SHUTDOWN_DELAY_MS) leaves no such connection to a client that sent a request during the delay.
  await new Promise<void>((resolve) => setTimeout(() => setTimeout(resolve, 0), 0));
  // Stops listening and closes idle connections; resolves once the last connection is closed.
  const stopped = server.stop(false);
  if (await settlesWithin(stopped, options.graceMs)) return;
  handler.cut();
  if (await settlesWithin(stopped, CUT_FLUSH_MS)) return;
  await server.stop(true);
}

/** How long the answers given at the grace's end have to be written before the connections are closed regardless. */
export const CUT_FLUSH_MS = 1_000;

/** Whether `promise` settles within `ms` (its timer cleared either way). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([promise.then(() => true, () => true), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The deadlines of the requests in flight, all `deadlineMs` long, watched by one timer instead of a timer and a
 * `Promise.race` per request (issue 28: those were the largest part of the edge's own work on the cheap routes). Since
 * every deadline has the same length, the requests expire in the order they came, so a check stops at the first
 * one still in time. The timer ticks every tenth of the deadline (between 10 ms and 1 s), so an answer comes at most
 * that much after the deadline, and runs only while a request is waiting.
 */
export function createDeadlines(deadlineMs: number) {
  type Waiting = { readonly at: number; readonly expire: () => void };
  const waiting = new Set<Waiting>();
  const tickMs = Math.min(1_000, Math.max(10, Math.floor(deadlineMs / 10)));
  let timer: ReturnType<typeof setInterval> | undefined;
  const check = () => {
    const now = performance.now();
    for (const entry of waiting) {
      if (entry.at > now) break;
      waiting.delete(entry);
      entry.expire();
    }
    if (waiting.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  return {
    /** `answer`, or `expired()` once the deadline passed first (the answer's work goes on, unobserved). */
    race<T>(answer: Promise<T>, expired: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        let settled = false;
        const entry: Waiting = {
          at: performance.now() + deadlineMs,
          expire: () => {
            if (settled) return;
            settled = true;
            try {
              resolve(expired());
            } catch (error) {
              reject(error);
            }
          },
        };
        waiting.add(entry);
        timer ??= setInterval(check, tickMs);
        const settle = (finish: () => void) => {
          waiting.delete(entry);
          if (settled) return;
          settled = true;
          finish();
        };
        answer.then((value) => settle(() => resolve(value)), (error: unknown) => settle(() => reject(error)));
      });
    },
    /** Expires every answer awaited now, whatever its time left (a server shutting down). */
    expireAll: () => {
      for (const entry of [...waiting]) {
        waiting.delete(entry);
        entry.expire();
      }
    },
    /** How many answers are awaited now (tests). */
    size: () => waiting.size,
  };
}
