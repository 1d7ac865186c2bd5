/**
 * The MCP sessions one process keeps (decisions §20), bounded so that clients cannot exhaust memory: at most
 * `maxSessions` at once and none idle for longer than `idleMs`. A session that a client abandons (the usual end:
 * clients rarely send DELETE) goes at its idle deadline; when the table is full, a new session pushes out the least
 * recently used one, whose client gets 404 on its next request and, as the transport's specification says, starts a
 * new session. Refusing new sessions instead would let anyone who opens `maxSessions` of them shut everyone else out.
 */
import type { Clock } from "../../../ports/clock.ts";

/** Why a session left the table. */
export type SessionEnd = "idle" | "full" | "closed" | "stopped";

/** What {@link createSessionTable} needs. */
export type SessionTableOptions<S> = {
  readonly maxSessions: number;
  readonly idleMs: number;
  readonly clock: Clock;
  /** Releases a session pushed out (idle or full); called once per session, never for `remove`. */
  readonly close: (session: S) => void;
  /** Told each time a session leaves the table. */
  readonly onEnd?: ((reason: SessionEnd) => void) | undefined;
};

/** The live sessions, least recently used first. */
export type SessionTable<S> = {
  /** The session of `id`, marked used now; undefined when unknown or idle past its deadline (then closed). */
  readonly get: (id: string) => S | undefined;
  /** Adds a session, first dropping the idle ones and, when still full, the least recently used. */
  readonly add: (id: string, session: S) => void;
  /** Forgets a session its client closed (nothing else to release). */
  readonly remove: (id: string) => void;
  /** Closes the sessions idle past their deadline; returns how many went. */
  readonly sweep: () => number;
  readonly size: () => number;
  /** Closes every session (the service stops). */
  readonly closeAll: () => void;
};

/** Builds the table. Map order is insertion order and every use re-inserts, so the first entries are the least recently used. */
export function createSessionTable<S>(options: SessionTableOptions<S>): SessionTable<S> {
  const entries = new Map<string, { readonly session: S; usedMs: number }>();
  const drop = (id: string, reason: SessionEnd) => {
    const entry = entries.get(id);
    if (entry === undefined) return;
    entries.delete(id);
    options.onEnd?.(reason);
    if (reason !== "closed") options.close(entry.session);
  };
  const sweep = () => {
    const oldest = options.clock.nowMs() - options.idleMs;
    let gone = 0;
    for (const [id, entry] of entries) {
      if (entry.usedMs > oldest) break;
      drop(id, "idle");
      gone++;
    }
    return gone;
  };
  return {
    get(id) {
      const entry = entries.get(id);
      if (entry === undefined) return undefined;
      const now = options.clock.nowMs();
      if (entry.usedMs <= now - options.idleMs) {
        drop(id, "idle");
        return undefined;
      }
      entries.delete(id);
      entry.usedMs = now;
      entries.set(id, entry);
      return entry.session;
    },
    add(id, session) {
      sweep();
      while (entries.size >= options.maxSessions) drop(entries.keys().next().value!, "full");
      entries.set(id, { session, usedMs: options.clock.nowMs() });
    },
    remove: (id) => drop(id, "closed"),
    sweep,
    size: () => entries.size,
    closeAll() {
      for (const id of [...entries.keys()]) drop(id, "stopped");
    },
  };
}
