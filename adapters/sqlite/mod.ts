/** Storage in one SQLite file (bun:sqlite): the default for a single instance. */
export { createSqliteAccountStore, createSqliteWriteLedger } from "./sqlite_accounts.ts";
export { openSqlite } from "./sqlite_database.ts";
export { createSqliteIdempotency } from "./sqlite_idempotency.ts";
export { createSqliteSubmissionRecords } from "./sqlite_submission_records.ts";
export { createSqliteIndexStore } from "./sqlite_index_store.ts";
export { createSqliteOAuth } from "./sqlite_oauth.ts";
export { createSqliteMcpSessions } from "./sqlite_mcp_sessions.ts";
export { createSqliteRateCounter } from "./sqlite_rate_counter.ts";
export { createSqliteReplayStore } from "./sqlite_replay_store.ts";
export { lockSqliteFile, type SqliteInstanceLock, sqliteLockPath } from "./sqlite_instance_lock.ts";
export { openSqliteStorage } from "./sqlite_storage.ts";
export { createSqliteSigningKeys } from "./sqlite_signing_keys.ts";
export { createSqliteWebhooks } from "./sqlite_webhooks.ts";
