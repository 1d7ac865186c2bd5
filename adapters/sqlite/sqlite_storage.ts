import type { Storage } from "../../ports/storage.ts";
import { createSqliteAccountStore, createSqliteWriteLedger } from "./sqlite_accounts.ts";
import { openSqlite } from "./sqlite_database.ts";
import { createSqliteIndexStore } from "./sqlite_index_store.ts";
import { createSqliteFactoryCalls } from "./sqlite_factory_calls.ts";
import { createSqliteWalletRefusals } from "./sqlite_wallet_refusals.ts";
import { createSqliteGasBudget } from "./sqlite_gas_budget.ts";
import { createSqliteOAuth } from "./sqlite_oauth.ts";
import { createSqliteTxReplacements } from "./sqlite_tx_replacements.ts";
import { createSqlitePremiumReads } from "./sqlite_premium_reads.ts";
import { createSqliteSubjects } from "./sqlite_subjects.ts";
import { createSqliteSigningKeys } from "./sqlite_signing_keys.ts";
import { createSqliteReplayStore } from "./sqlite_replay_store.ts";
import { createSqlitePayments } from "./sqlite_payments.ts";
import { createSqliteMcpSessions } from "./sqlite_mcp_sessions.ts";
import { createSqliteRateCounter } from "./sqlite_rate_counter.ts";
import { createSqliteIdempotency } from "./sqlite_idempotency.ts";
import { createSqliteSubmissionRecords } from "./sqlite_submission_records.ts";
import { createSqliteWebhooks } from "./sqlite_webhooks.ts";
import { createSqliteDeploymentSecrets } from "./sqlite_deployment_secrets.ts";

/** The service's storage in one SQLite file (WAL); the default for a single machine. */
export function openSqliteStorage(path: string): Storage {
  const db = openSqlite(path);
  const subjects = createSqliteSubjects(db);
  return {
    kind: "sqlite",
    statements: () => db.statements,
    replay: createSqliteReplayStore(db),
    accounts: createSqliteAccountStore(db),
    ledger: createSqliteWriteLedger(db),
    ping() {
      try {
        db.query("SELECT 1").get();
        return Promise.resolve(true);
      } catch {
        return Promise.resolve(false);
      }
    },
    indexStore: (scope) => Promise.resolve(createSqliteIndexStore(db, scope)),
    secrets: createSqliteDeploymentSecrets(db),
    gasBudget: createSqliteGasBudget(db),
    privateGasBudget: createSqliteGasBudget(db, "private_relay_gas"),
    factoryCalls: createSqliteFactoryCalls(db),
    walletRefusals: createSqliteWalletRefusals(db),
    txReplacements: createSqliteTxReplacements(db),
    premiumReads: createSqlitePremiumReads(db),
    subjects,
    // After the subjects: its tables index theirs.
    webhooks: createSqliteWebhooks(db),
    signingKeys: createSqliteSigningKeys(db),
    payments: createSqlitePayments(db),
    oauth: createSqliteOAuth(db),
    rateCounter: createSqliteRateCounter(db),
    mcpSessions: createSqliteMcpSessions(db),
    idempotency: createSqliteIdempotency(db),
    submissions: createSqliteSubmissionRecords(db),
    close() {
      db.close();
      return Promise.resolve();
    },
  };
}
