import type { SQL } from "bun";
import { oauthTables } from "../sql/oauth.ts";
import { paymentTables } from "../sql/payments.ts";
import { signingKeyTables } from "../sql/signing_keys.ts";
import { subjectTables } from "../sql/subjects.ts";
import { DEPLOYMENT_SECRETS_TABLE } from "./postgres_deployment_secrets.ts";
import { FACTORY_CALLS_TABLE } from "./postgres_factory_calls.ts";
import { PRIVATE_RELAY_GAS_TABLE, RELAY_GAS_SHARE_TABLES, RELAY_GAS_TABLE } from "./postgres_gas_budget.ts";
import { IDEMPOTENCY_TABLES } from "./postgres_idempotency.ts";
import { MCP_SESSIONS_TABLES } from "./postgres_mcp_sessions.ts";
import { PREMIUM_READS_TABLE } from "./postgres_premium_reads.ts";
import { RATE_BUCKETS_TABLES } from "./postgres_rate_counter.ts";
import { SUBMISSION_RECORDS_TABLES } from "./postgres_submission_records.ts";
import { TX_REPLACEMENTS_TABLE } from "./postgres_tx_replacements.ts";
import { WEBHOOK_TABLES } from "./postgres_webhooks.ts";
import { migrate } from "./postgres_migrate.ts";

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS replay (
     key TEXT PRIMARY KEY,
     chain_id BIGINT NOT NULL,
     attester TEXT NOT NULL,
     nonce TEXT NOT NULL,
     deadline BIGINT NOT NULL,
     state TEXT NOT NULL,
     tx_hash TEXT,
     uid TEXT,
     block_number TEXT,
     created_at_ms BIGINT NOT NULL
   )`,
  // Submissions before decisions §15 had states claimed/broadcast/done/failed.
  `UPDATE replay SET state = CASE state WHEN 'claimed' THEN 'checked' WHEN 'broadcast' THEN 'sent'
     WHEN 'done' THEN 'mined' WHEN 'failed' THEN 'reverted' ELSE state END
     WHERE state IN ('claimed', 'broadcast', 'done', 'failed')`,
  `DROP INDEX IF EXISTS replay_live_nonce`,
  // One live submission per attester nonce, as in SQLite.
  `CREATE UNIQUE INDEX IF NOT EXISTS replay_live_nonce_v2 ON replay (chain_id, attester, nonce)
     WHERE state IN ('checked', 'signed', 'sent', 'mined')`,
  `CREATE INDEX IF NOT EXISTS replay_open ON replay (state, created_at_ms)`,
  // The stored transaction of a submission (decisions §15).
  `ALTER TABLE replay ADD COLUMN IF NOT EXISTS raw_tx TEXT`,
  `ALTER TABLE replay ADD COLUMN IF NOT EXISTS wallet TEXT`,
  `ALTER TABLE replay ADD COLUMN IF NOT EXISTS tx_nonce BIGINT`,
  `CREATE INDEX IF NOT EXISTS replay_deadline ON replay (deadline)`,
  `CREATE TABLE IF NOT EXISTS accounts (
     id TEXT PRIMARY KEY,
     address TEXT NOT NULL UNIQUE,
     plan TEXT NOT NULL,
     created_at_ms BIGINT NOT NULL,
     updated_at_ms BIGINT NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS challenges (
     id TEXT PRIMARY KEY,
     address TEXT NOT NULL,
     chain_id BIGINT NOT NULL,
     nonce TEXT NOT NULL,
     message TEXT NOT NULL,
     created_at_ms BIGINT NOT NULL,
     expires_at_ms BIGINT NOT NULL,
     used_at_ms BIGINT
   )`,
  `CREATE INDEX IF NOT EXISTS challenges_expiry ON challenges (expires_at_ms)`,
  // Who asked for a sign-in challenge: creations are rate-limited per client and per wallet (decisions §15).
  `ALTER TABLE challenges ADD COLUMN IF NOT EXISTS client_key TEXT`,
  `CREATE INDEX IF NOT EXISTS challenges_client ON challenges (client_key, created_at_ms)`,
  `CREATE INDEX IF NOT EXISTS challenges_wallet ON challenges (address, created_at_ms)`,
  `CREATE TABLE IF NOT EXISTS sessions (
     token_hash TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts (id),
     created_at_ms BIGINT NOT NULL,
     expires_at_ms BIGINT NOT NULL,
     revoked_at_ms BIGINT
   )`,
  `CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at_ms)`,
  `CREATE TABLE IF NOT EXISTS sponsored_writes (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts (id),
     year INTEGER NOT NULL,
     fingerprint TEXT NOT NULL,
     state TEXT NOT NULL,
     tx_hash TEXT,
     uid TEXT,
     block_number TEXT,
     created_at_ms BIGINT NOT NULL,
     updated_at_ms BIGINT NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS sponsored_writes_usage ON sponsored_writes (account_id, year, state)`,
  `CREATE INDEX IF NOT EXISTS sponsored_writes_state ON sponsored_writes (state, created_at_ms)`,
  `ALTER TABLE sponsored_writes ADD COLUMN IF NOT EXISTS raw_tx TEXT`,
  `ALTER TABLE sponsored_writes ADD COLUMN IF NOT EXISTS wallet TEXT`,
  `ALTER TABLE sponsored_writes ADD COLUMN IF NOT EXISTS tx_nonce BIGINT`,
  // Accounts and sessions as the accounts API shows them (decisions §12).
  `ALTER TABLE accounts ADD COLUMN IF NOT EXISTS display_name TEXT`,
  RELAY_GAS_TABLE,
  // The private relay's gas budget and the ERC-6492 factory calls sent (issue 23).
  PRIVATE_RELAY_GAS_TABLE,
  // Each client address's and attester's part of the relays' budgets (issue 43).
  ...RELAY_GAS_SHARE_TABLES,
  FACTORY_CALLS_TABLE,
  TX_REPLACEMENTS_TABLE,
  PREMIUM_READS_TABLE,
  ...subjectTables("BIGINT"),
  // Signing keys accounts registered (decisions §17).
  ...signingKeyTables("BIGINT"),
  // x402 payments and the paid-plan periods they bought (decisions §13).
  ...paymentTables("BIGINT"),
  // OAuth for registered software (decisions §19).
  ...oauthTables("BIGINT"),
  `ALTER TABLE sessions ADD COLUMN IF NOT EXISTS wallet_provider_id TEXT`,
  `ALTER TABLE sessions ADD COLUMN IF NOT EXISTS execution_mode TEXT`,
  // The next transaction nonce of each service wallet, shared by every instance (see wallet nonces below).
  `CREATE TABLE IF NOT EXISTS wallet_nonces (
     chain_id BIGINT NOT NULL,
     address TEXT NOT NULL,
     next_nonce BIGINT NOT NULL,
     PRIMARY KEY (chain_id, address)
   )`,
  // Limits counted once for the deployment, and MCP sessions any instance answers (decisions §21).
  ...RATE_BUCKETS_TABLES,
  ...MCP_SESSIONS_TABLES,
  // Idempotency keys of writes, beside the submission records (decisions §23).
  ...IDEMPOTENCY_TABLES,
  // Relay submissions tracked by id (decisions §23).
  ...SUBMISSION_RECORDS_TABLES,
  // Webhooks (decisions §22): endpoints, the outbox, messages and deliveries.
  ...WEBHOOK_TABLES,
  DEPLOYMENT_SECRETS_TABLE,
];

/** Advisory lock key that serializes migrations of instances starting together. */
const MIGRATION_LOCK = 7_240_001;

/** Brings the database's tables up to this version's (once per deployment and version, see migrate). */
export function migratePostgres(sql: SQL): Promise<void> {
  return migrate(sql, { name: "storage", lock: MIGRATION_LOCK, statements: MIGRATIONS });
}
