import { SQL } from "bun";
import type { Storage } from "../../ports/storage.ts";
import { createPostgresAccountStore, createPostgresWriteLedger } from "./postgres_accounts.ts";
import { createPostgresReplayStore } from "./postgres_replay_store.ts";
import { migratePostgres } from "./postgres_schema.ts";
import { createPostgresWalletNonces } from "./postgres_wallet_nonces.ts";
import { createPostgresIndexStore } from "./postgres_index_store.ts";
import { createPostgresFactoryCalls } from "./postgres_factory_calls.ts";
import { createPostgresWalletRefusals } from "./postgres_wallet_refusals.ts";
import { createPostgresGasBudget } from "./postgres_gas_budget.ts";
import { createPostgresTxReplacements } from "./postgres_tx_replacements.ts";
import { createPostgresPremiumReads } from "./postgres_premium_reads.ts";
import { createPostgresSubjects } from "./postgres_subjects.ts";
import { createPostgresSigningKeys } from "./postgres_signing_keys.ts";
import { createPostgresPayments } from "./postgres_payments.ts";
import { createPostgresOAuth } from "./postgres_oauth.ts";
import { createPostgresRateCounter } from "./postgres_rate_counter.ts";
import { createPostgresMcpSessions } from "./postgres_mcp_sessions.ts";
import { createPostgresIdempotency } from "./postgres_idempotency.ts";
import { createPostgresSubmissionRecords } from "./postgres_submission_records.ts";
import { createPostgresWebhooks } from "./postgres_webhooks.ts";
import { createPostgresDeploymentSecrets } from "./postgres_deployment_secrets.ts";

/**
 * The service's storage in PostgreSQL, for several instances behind a load balancer. Same rules as
 * SQLite: uniqueness by constraints, the quota reservation under a per-account advisory lock.
 */
export async function openPostgresStorage(url: string, options: { max?: number; walletLockSeconds?: number; nowMs?: () => number } = {}): Promise<Storage> {
  const sql = new SQL({ url, max: options.max ?? 10, idleTimeout: 30, connectionTimeout: 10 });
  await migratePostgres(sql);
  await checkClock(sql, options.nowMs ?? Date.now).catch(async (error: unknown) => {
    await sql.close();
    throw error;
  });
  const replay = createPostgresReplayStore(sql);
  const accounts = createPostgresAccountStore(sql);
  const ledger = createPostgresWriteLedger(sql);
  const walletNonces = createPostgresWalletNonces(sql, { holdSeconds: options.walletLockSeconds ?? 120 });

  return {
    kind: "postgres",
    replay,
    accounts,
    ledger,
    walletNonces,
    indexStore: (scope) => createPostgresIndexStore(sql, scope),
    secrets: createPostgresDeploymentSecrets(sql),
    gasBudget: createPostgresGasBudget(sql),
    privateGasBudget: createPostgresGasBudget(sql, "private_relay_gas"),
    factoryCalls: createPostgresFactoryCalls(sql),
    walletRefusals: createPostgresWalletRefusals(sql),
    txReplacements: createPostgresTxReplacements(sql),
    premiumReads: createPostgresPremiumReads(sql),
    subjects: createPostgresSubjects(sql),
    signingKeys: createPostgresSigningKeys(sql),
    payments: createPostgresPayments(sql),
    oauth: createPostgresOAuth(sql),
    rateCounter: createPostgresRateCounter(sql),
    mcpSessions: createPostgresMcpSessions(sql),
    idempotency: createPostgresIdempotency(sql),
    submissions: createPostgresSubmissionRecords(sql),
    webhooks: createPostgresWebhooks(sql),
    async ping() {
      try {
        await sql`SELECT 1`;
        return true;
      } catch {
        return false;
      }
    },
    close: () => sql.close({ timeout: 5 }),
  };
}

/** The most an instance's clock may differ from the database's: far below the reconciler's 5-minute grace. */
export const MAX_CLOCK_SKEW_MS = 60_000;

/** An instance whose clock is not the database's (see {@link checkClock}). */
export class ClockSkewError extends Error {}

/**
 * Refuses an instance whose clock differs from the database's by more than {@link MAX_CLOCK_SKEW_MS}. A submission's age
 * is written by the instance that made it and judged by the instance that reconciles it: one 10 minutes behind had its
 * writes under way released by the others as abandoned (its callers answered 500), and one ahead does it to theirs.
 */
async function checkClock(sql: SQL, nowMs: () => number): Promise<void> {
  const before = nowMs();
  const [row]: Record<string, unknown>[] = await sql`SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT AS ms`;
  const local = (before + nowMs()) / 2;
  const skew = Math.round(local - Number(row!.ms));
  if (Math.abs(skew) <= MAX_CLOCK_SKEW_MS) return;
  throw new ClockSkewError(`this instance's clock is ${Math.round(Math.abs(skew) / 1000)} s ${skew > 0 ? "ahead of" : "behind"} the database's; instances must keep time together (NTP)`);
}
