/** What SQLite and PostgreSQL share for the MCP sessions store: its table and indexes. */
import type { SqlWords } from "./schema.ts";

/** MCP session records (decisions §21): the order of use in `used_seq`, idle ones found by `used_at_ms`. */
export const mcpSessionsTables = (w: SqlWords): readonly string[] => [
  `CREATE TABLE IF NOT EXISTS mcp_sessions (
     id TEXT PRIMARY KEY, created_at_ms ${w.int} NOT NULL, used_at_ms ${w.int} NOT NULL, used_seq ${w.int} NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS mcp_sessions_used ON mcp_sessions (used_seq)`,
  `CREATE INDEX IF NOT EXISTS mcp_sessions_idle ON mcp_sessions (used_at_ms)`,
];
