import type { Database } from "bun:sqlite";
import type { McpSessionStore } from "../../ports/mcp_sessions.ts";
import { mcpSessionsTables } from "../sql/mcp_sessions.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/**
 * MCP session records in the SQLite file (one instance). `used_seq` orders uses exactly (two uses in one millisecond
 * stay in order), so "least recently used" is never a tie; `used_at_ms` decides idleness.
 */
export function createSqliteMcpSessions(db: Database): McpSessionStore {
  for (const statement of mcpSessionsTables(SQLITE_WORDS)) db.exec(statement);
  const next = "(SELECT IFNULL(MAX(used_seq), 0) + 1 FROM mcp_sessions)";
  const dropIdle = db.query("DELETE FROM mcp_sessions WHERE used_at_ms <= ?");
  const count = db.query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM mcp_sessions WHERE used_at_ms > ?");
  const all = db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM mcp_sessions");
  const dropOldest = db.query("DELETE FROM mcp_sessions WHERE id IN (SELECT id FROM mcp_sessions ORDER BY used_seq LIMIT ?)");
  const insert = db.query(`INSERT INTO mcp_sessions (id, created_at_ms, used_at_ms, used_seq) VALUES (?1, ?2, ?2, ${next})`);
  const touch = db.query(`UPDATE mcp_sessions SET used_at_ms = MAX(used_at_ms, ?2), used_seq = ${next} WHERE id = ?1 AND used_at_ms > ?3`);
  const close = db.query("DELETE FROM mcp_sessions WHERE id = ?");
  const open = db.transaction((id: string, maxSessions: number, idleMs: number, nowMs: number) => {
    const idle = dropIdle.run(nowMs - idleMs).changes;
    const surplus = Math.max(0, all.get()!.n - (maxSessions - 1));
    const full = surplus === 0 ? 0 : dropOldest.run(surplus).changes;
    insert.run(id, nowMs);
    return { idle, full };
  });
  return {
    open: (id, { maxSessions, idleMs, nowMs }) => Promise.resolve(open.immediate(id, maxSessions, idleMs, nowMs)),
    touch: (id, { nowMs, idleMs }) => Promise.resolve(touch.run(id, nowMs, nowMs - idleMs).changes === 1),
    close: (id) => Promise.resolve(close.run(id).changes === 1),
    sweep: ({ nowMs, idleMs }) => Promise.resolve(dropIdle.run(nowMs - idleMs).changes),
    count: ({ nowMs, idleMs }) => Promise.resolve(count.get(nowMs - idleMs)!.n),
  };
}
