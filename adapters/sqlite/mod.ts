/** Storage in one SQLite file (bun:sqlite): the default for a single instance. */
export { createSqliteAccountStore, createSqliteWriteLedger } from "./sqlite_accounts.ts";
export { openSqlite } from "./sqlite_database.ts";
export { createSqliteIdempotency, IDEMPOTENCY_TABLE, toIdempotencyRecord } from "./sqlite_idempotency.ts";
export { createSqliteSubmissionRecords, outcomeValues, SUBMISSION_RECORDS_ADDED_COLUMNS, SUBMISSION_RECORDS_AFTER_COLUMNS, SUBMISSION_RECORDS_TABLES, toSubmissionRecord } from "./sqlite_submission_records.ts";
export { toFactoryCall } from "./sqlite_factory_calls.ts";
export { type GasBudgetTable } from "./sqlite_gas_budget.ts";
export { CHECKPOINT_HISTORY, CONFIRM_TAIL, createSqliteIndexStore, INDEX_ADDED_COLUMNS, indexTables, OUTBOX_INSERTS, OUTBOX_SELECTS, type OutboxCandidate, outboxSkip, outboxTables, type RecordRow, toStoredAttestation } from "./sqlite_index_store.ts";
export { firstBlockAtSql, INDEX_QUERY_INDEXES, indexQuerySql, type SqlDialect, type SqlStatement, type TimeBlocks } from "./index_query_sql.ts";
export {
  contiguousPeriod,
  paymentTables,
  storedValidBefore,
  toPaymentRecord,
  withinBalance,
} from "./sqlite_payments.ts";
export {
  ACCESS_TOKEN_LIFE_MS,
  clientValues,
  createSqliteOAuth,
  type OAuthClientRow,
  oauthTables,
  toAuthorizedClient,
  toGrant,
  toOAuthClient,
  toOAuthSigningKey,
  toStoredCode,
} from "./sqlite_oauth.ts";
export { createSqliteMcpSessions } from "./sqlite_mcp_sessions.ts";
export { bucketUpdate, createSqliteRateCounter, freshBucket, refillPerMs } from "./sqlite_rate_counter.ts";
export { createSqliteReplayStore, type ReplayRow, toReplayRecord } from "./sqlite_replay_store.ts";
export { openSqliteStorage } from "./sqlite_storage.ts";
export { subjectTables, toSubject } from "./sqlite_subjects.ts";
export { createSqliteSigningKeys, signingKeyTables, type SigningKeyRow, toSigningKey } from "./sqlite_signing_keys.ts";
export { toReplacement } from "./sqlite_tx_replacements.ts";
export { type ClaimCandidate, CLAIMED_COLUMNS, createSqliteWebhooks, deliveryId, endpointDueSql, fairClaims, leasedLoadSql, toClaimCandidate, toClaimedDelivery, toClaimLoad, toDeliveryRecord, toOutboxRow, toTargets, toWebhookEndpoint, webhookTables, type WebhookRow } from "./sqlite_webhooks.ts";
