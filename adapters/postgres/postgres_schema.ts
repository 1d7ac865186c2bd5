import type { SQL } from "bun";
import { oauthTables } from "../sql/oauth.ts";
import { paymentTables } from "../sql/payments.ts";
import { signingKeyTables } from "../sql/signing_keys.ts";
import { subjectTables } from "../sql/subjects.ts";
import { DEPLOYMENT_SECRETS_TABLE } from "./postgres_deployment_secrets.ts";
import { FACTORY_CALLS_TABLE } from "./postgres_factory_calls.ts";
import { WALLET_REFUSALS_TABLE } from "./postgres_wallet_refusals.ts";
import { PRIVATE_RELAY_GAS_TABLE, RELAY_GAS_SHARE_TABLES, RELAY_GAS_TABLE } from "./postgres_gas_budget.ts";
import { IDEMPOTENCY_TABLES } from "./postgres_idempotency.ts";
import { MCP_SESSIONS_TABLES } from "./postgres_mcp_sessions.ts";
import { PREMIUM_READS_TABLE } from "./postgres_premium_reads.ts";
import { RATE_BUCKETS_TABLES } from "./postgres_rate_counter.ts";
import { SUBMISSION_RECORDS_TABLES } from "./postgres_submission_records.ts";
import { TX_REPLACEMENTS_TABLES } from "./postgres_tx_replacements.ts";
import { WEBHOOK_TABLES } from "./postgres_webhooks.ts";
import { migrate } from "./postgres_migrate.ts";
import { accountTables } from "../sql/accounts.ts";
import { REKEY_REPLAY_POSTGRES, replayTables } from "../sql/replay_store.ts";
import { POSTGRES_WORDS, postgresStatements } from "../sql/schema.ts";

const MIGRATIONS: readonly string[] = [
  ...postgresStatements(replayTables(POSTGRES_WORDS)),
  // A replay record's identity is (chain, signature) (decisions §30): a table keyed by the signature alone is re-keyed.
  REKEY_REPLAY_POSTGRES,
  ...postgresStatements(accountTables(POSTGRES_WORDS)),
  // The sponsored-write ledger also holds x402 payers (`x402:<address>`, decisions §13), who have no account: the
  // reference to accounts refused every paid witness and paid relay write here (SQLite does not enforce it).
  `ALTER TABLE sponsored_writes DROP CONSTRAINT IF EXISTS sponsored_writes_account_id_fkey`,
  RELAY_GAS_TABLE,
  // The private relay's gas budget and the ERC-6492 factory calls sent (issue 23).
  PRIVATE_RELAY_GAS_TABLE,
  // Each client address's and attester's part of the relays' budgets (issue 43).
  ...RELAY_GAS_SHARE_TABLES,
  FACTORY_CALLS_TABLE,
  // Contract wallets whose signature passed the simulation and reverted on chain.
  WALLET_REFUSALS_TABLE,
  // Fee bumps, with the chain of the transaction they replace (decisions §30).
  ...TX_REPLACEMENTS_TABLES,
  PREMIUM_READS_TABLE,
  ...subjectTables("BIGINT"),
  // Signing keys accounts registered (decisions §17).
  ...signingKeyTables("BIGINT"),
  // x402 payments and the paid-plan periods they bought (decisions §13).
  ...postgresStatements(paymentTables(POSTGRES_WORDS)),
  // OAuth for registered software (decisions §19).
  ...oauthTables("BIGINT"),
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
