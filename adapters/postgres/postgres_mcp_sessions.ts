import type { SQL } from "bun";
import type { McpSessionStore } from "../../ports/mcp_sessions.ts";
import { mcpSessionsTables } from "../sql/mcp_sessions.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";

/** The table and the sequence ordering uses, created with the storage's migrations. */
export const MCP_SESSIONS_TABLES: readonly string[] = [
  `CREATE SEQUENCE IF NOT EXISTS mcp_session_uses`,
  ...mcpSessionsTables(POSTGRES_WORDS),
];

/**
 * Advisory lock of session opening: the bound holds exactly when instances open sessions together. Its own key (found
 * by review): it was 7_240_010, OAuth registration's, so every MCP initialize waited behind every registration.
 */
const MCP_SESSIONS_LOCK = 7_240_040;

const toNumber = (rows: { n: unknown }[]) => Number(rows[0]?.n ?? 0);

/**
 * MCP session records in PostgreSQL, shared by every instance (decisions §21): a session opened at one instance is
 * used at any other. Opening drops idle and least recently used records under one lock; a use is one update.
 */
export function createPostgresMcpSessions(sql: SQL): McpSessionStore {
  return {
    open: (id, { maxSessions, idleMs, nowMs }) =>
      sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${MCP_SESSIONS_LOCK})`;
        const idle = (await tx`DELETE FROM mcp_sessions WHERE used_at_ms <= ${nowMs - idleMs} RETURNING id`).length;
        const surplus = Math.max(0, toNumber(await tx`SELECT COUNT(*) AS n FROM mcp_sessions`) - (maxSessions - 1));
        const full = surplus === 0 ? 0 : (await tx`
          DELETE FROM mcp_sessions WHERE id IN (SELECT id FROM mcp_sessions ORDER BY used_seq LIMIT ${surplus}) RETURNING id`).length;
        await tx`INSERT INTO mcp_sessions (id, created_at_ms, used_at_ms, used_seq)
                 VALUES (${id}, ${nowMs}, ${nowMs}, nextval('mcp_session_uses'))`;
        return { idle, full };
      }),
    async touch(id, { nowMs, idleMs }) {
      const rows = await sql`UPDATE mcp_sessions SET used_at_ms = GREATEST(used_at_ms, ${nowMs}), used_seq = nextval('mcp_session_uses')
                              WHERE id = ${id} AND used_at_ms > ${nowMs - idleMs} RETURNING id`;
      return rows.length === 1;
    },
    async close(id) {
      return (await sql`DELETE FROM mcp_sessions WHERE id = ${id} RETURNING id`).length === 1;
    },
    async sweep({ nowMs, idleMs }) {
      return (await sql`DELETE FROM mcp_sessions WHERE used_at_ms <= ${nowMs - idleMs} RETURNING id`).length;
    },
    async count({ nowMs, idleMs }) {
      return toNumber(await sql`SELECT COUNT(*) AS n FROM mcp_sessions WHERE used_at_ms > ${nowMs - idleMs}`);
    },
  };
}
