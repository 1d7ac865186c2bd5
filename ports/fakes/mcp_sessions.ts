/** MCP session records in memory, with the stores' rules: idle by last use, least recently used pushed out first. */
export function fakeMcpSessions() {
  // Map order is insertion order and every use re-inserts: the first entries are the least recently used.
  const sessions = new Map<string, number>();
  const dropIdle = (nowMs: number, idleMs: number) => {
    let gone = 0;
    for (const [id, usedAtMs] of sessions) if (usedAtMs <= nowMs - idleMs && sessions.delete(id)) gone++;
    return gone;
  };
  const store = {
    sessions,
    open(id: string, { maxSessions, idleMs, nowMs }: { maxSessions: number; idleMs: number; nowMs: number }) {
      const idle = dropIdle(nowMs, idleMs);
      let full = 0;
      while (sessions.size >= maxSessions) {
        sessions.delete(sessions.keys().next().value!);
        full++;
      }
      sessions.set(id, nowMs);
      return Promise.resolve({ idle, full });
    },
    touch(id: string, { nowMs, idleMs }: { nowMs: number; idleMs: number }) {
      const usedAtMs = sessions.get(id);
      if (usedAtMs === undefined || usedAtMs <= nowMs - idleMs) return Promise.resolve(false);
      sessions.delete(id);
      sessions.set(id, Math.max(usedAtMs, nowMs));
      return Promise.resolve(true);
    },
    close: (id: string) => Promise.resolve(sessions.delete(id)),
    sweep: ({ nowMs, idleMs }: { nowMs: number; idleMs: number }) => Promise.resolve(dropIdle(nowMs, idleMs)),
    count: ({ nowMs, idleMs }: { nowMs: number; idleMs: number }) =>
      Promise.resolve([...sessions.values()].filter((usedAtMs) => usedAtMs > nowMs - idleMs).length),
  };
  return store satisfies import("../mcp_sessions.ts").McpSessionStore;
}
