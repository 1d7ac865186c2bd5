import { SQL } from "bun";
import type {
  Account,
  AccountStore,
  Challenge,
  ChallengeCreation,
  Plan,
  Session,
  SponsoredWriteLedger,
  WriteRecord,
  WriteState,
} from "../../ports/accounts.ts";
import type { HexString } from "../../ports/eas.ts";
import type { ClaimOutcome, ReplayStore } from "../../ports/replay_store.ts";
import type { Storage, WalletNonces } from "../../ports/storage.ts";
import { type ReplayRow, toReplayRecord } from "../sql/replay_store.ts";
import { createPostgresIndexStore } from "./postgres_index_store.ts";
import { migrate } from "./postgres_migrate.ts";
import { FACTORY_CALLS_TABLE, createPostgresFactoryCalls } from "./postgres_factory_calls.ts";
import { createPostgresGasBudget, PRIVATE_RELAY_GAS_TABLE, RELAY_GAS_SHARE_TABLES, RELAY_GAS_TABLE } from "./postgres_gas_budget.ts";
import { createPostgresTxReplacements, TX_REPLACEMENTS_TABLE } from "./postgres_tx_replacements.ts";
import { createPostgresPremiumReads, PREMIUM_READS_TABLE } from "./postgres_premium_reads.ts";
import { createPostgresSubjects } from "./postgres_subjects.ts";
import { createPostgresSigningKeys } from "./postgres_signing_keys.ts";
import { signingKeyTables } from "../sql/signing_keys.ts";
import { subjectTables } from "../sql/subjects.ts";
import { paymentTables } from "../sql/payments.ts";
import { createPostgresPayments } from "./postgres_payments.ts";
import { createPostgresOAuth } from "./postgres_oauth.ts";
import { oauthTables } from "../sql/oauth.ts";
import { createPostgresRateCounter, RATE_BUCKETS_TABLES } from "./postgres_rate_counter.ts";
import { createPostgresMcpSessions, MCP_SESSIONS_TABLES } from "./postgres_mcp_sessions.ts";
import { createPostgresIdempotency, IDEMPOTENCY_TABLES } from "./postgres_idempotency.ts";
import { createPostgresSubmissionRecords, SUBMISSION_RECORDS_TABLES } from "./postgres_submission_records.ts";
import { createPostgresWebhooks, WEBHOOK_TABLES } from "./postgres_webhooks.ts";
import { createPostgresDeploymentSecrets, DEPLOYMENT_SECRETS_TABLE } from "./postgres_deployment_secrets.ts";

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

/**
 * Advisory lock spaces (two-key form) of sign-in challenge creation: one lock per client, then one per
 * wallet. Every creation takes them in that order, so two creations never wait on each other in a cycle.
 */
const CHALLENGE_CLIENT_LOCK = 7_240_003;
const CHALLENGE_WALLET_LOCK = 7_240_004;

const num = (value: unknown): number => Number(value);
const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

type Row = Record<string, unknown>;

const toAccount = (row: Row): Account => ({
  id: String(row.id),
  address: String(row.address),
  plan: row.plan as Plan,
  createdAtMs: num(row.created_at_ms),
  displayName: (row.display_name as string | null | undefined) ?? null,
});

const toChallenge = (row: Row): Challenge => ({
  id: String(row.id),
  address: String(row.address),
  chainId: num(row.chain_id),
  nonce: String(row.nonce),
  message: String(row.message),
  createdAtMs: num(row.created_at_ms),
  expiresAtMs: num(row.expires_at_ms),
  usedAtMs: numOrNull(row.used_at_ms),
});

const toSession = (row: Row): Session => ({
  tokenHash: String(row.token_hash),
  accountId: String(row.account_id),
  createdAtMs: num(row.created_at_ms),
  expiresAtMs: num(row.expires_at_ms),
  revokedAtMs: numOrNull(row.revoked_at_ms),
  walletProviderId: (row.wallet_provider_id as string | null | undefined) ?? null,
  executionMode: ((row.execution_mode as string | null | undefined) ?? null) as Session["executionMode"],
});

const toWrite = (row: Row): WriteRecord => ({
  id: String(row.id),
  accountId: String(row.account_id),
  year: num(row.year),
  fingerprint: String(row.fingerprint),
  state: row.state as WriteState,
  tx: row.raw_tx == null || row.tx_hash == null || row.wallet == null || row.tx_nonce == null ? null : {
    txHash: String(row.tx_hash) as HexString,
    raw: String(row.raw_tx) as HexString,
    wallet: String(row.wallet) as HexString,
    nonce: num(row.tx_nonce),
  },
  txHash: (row.tx_hash as string | null) ?? null,
  uid: (row.uid as string | null) ?? null,
  blockNumber: row.block_number === null || row.block_number === undefined ? null : BigInt(String(row.block_number)),
  createdAtMs: num(row.created_at_ms),
  updatedAtMs: num(row.updated_at_ms),
});

/**
 * The service's storage in PostgreSQL, for several instances behind a load balancer. Same rules as
 * SQLite: uniqueness by constraints, the quota reservation under a per-account advisory lock.
 */
export async function openPostgresStorage(url: string, options: { max?: number } = {}): Promise<Storage> {
  const sql = new SQL({ url, max: options.max ?? 10, idleTimeout: 30, connectionTimeout: 10 });
  await migrate(sql, { name: "storage", lock: MIGRATION_LOCK, statements: MIGRATIONS });

  const findReplay = async (key: string) => {
    const rows: ReplayRow[] = await sql`SELECT * FROM replay WHERE key = ${key}`;
    return rows[0] === undefined ? undefined : toReplayRecord(rows[0]);
  };
  const replay: ReplayStore = {
    find: findReplay,
    async claim(claim): Promise<ClaimOutcome> {
      // ON CONFLICT without a target covers the key and the live-nonce index alike.
      const inserted = await sql`
        INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, created_at_ms)
        VALUES (${claim.key}, ${claim.chainId}, ${claim.attester.toLowerCase()}, ${claim.nonce.toString()},
                ${Number(claim.deadline)}, 'checked', ${claim.createdAtMs})
        ON CONFLICT DO NOTHING RETURNING key`;
      if (inserted.length === 1) return "claimed";
      return (await findReplay(claim.key)) !== undefined ? "duplicate-signature" : "nonce-in-flight";
    },
    async markSigned(key, tx) {
      const rows = await sql`UPDATE replay SET state = 'signed', tx_hash = ${tx.txHash}, raw_tx = ${tx.raw},
                                    wallet = ${tx.wallet.toLowerCase()}, tx_nonce = ${tx.nonce}
                              WHERE key = ${key} AND state = 'checked' RETURNING key`;
      return rows.length === 1;
    },
    async markSent(key) {
      await sql`UPDATE replay SET state = 'sent' WHERE key = ${key} AND state IN ('checked', 'signed')`;
    },
    async finish(key, final) {
      const uid = final.state === "mined" ? final.uid : null;
      await sql`UPDATE replay SET state = ${final.state}, tx_hash = ${final.txHash}, uid = ${uid},
                       block_number = ${final.blockNumber.toString()}
                 WHERE key = ${key} AND state IN ('checked', 'signed', 'sent')`;
    },
    async release(key) {
      await sql`DELETE FROM replay WHERE key = ${key} AND state IN ('checked', 'signed', 'sent')`;
    },
    async open(createdBeforeMs) {
      const rows: ReplayRow[] = await sql`SELECT * FROM replay WHERE state IN ('checked', 'signed', 'sent')
                                           AND created_at_ms < ${createdBeforeMs} ORDER BY created_at_ms, tx_nonce`;
      return rows.map(toReplayRecord);
    },
    async prune(nowSeconds) {
      const rows = await sql`DELETE FROM replay WHERE deadline < ${Number(nowSeconds)} AND state IN ('mined', 'reverted')
                             RETURNING key`;
      return rows.length;
    },
  };

  const findAccount = async (idOrAddress: string): Promise<Account | undefined> => {
    const rows: Row[] = await sql`SELECT * FROM accounts WHERE id = ${idOrAddress} OR address = ${idOrAddress.toLowerCase()}
                                   ORDER BY (id = ${idOrAddress}) DESC LIMIT 1`;
    return rows[0] === undefined ? undefined : toAccount(rows[0]);
  };

  const accounts: AccountStore = {
    async createChallenge(c, limits) {
      const now = c.createdAtMs;
      const since = now - limits.windowMs;
      const address = c.address.toLowerCase();
      return await sql.begin(async (tx): Promise<ChallengeCreation> => {
        // Counted under the locks, so no instance inserts between another's count and insert.
        await tx`SELECT pg_advisory_xact_lock(${CHALLENGE_CLIENT_LOCK}, hashtext(${limits.client}))`;
        await tx`SELECT pg_advisory_xact_lock(${CHALLENGE_WALLET_LOCK}, hashtext(${address}))`;
        // The `limit`-th newest creation inside the window: while it exists the limit is reached.
        const [byClient]: Row[] = await tx`
          SELECT created_at_ms FROM challenges WHERE client_key = ${limits.client} AND created_at_ms > ${since}
           ORDER BY created_at_ms DESC LIMIT 1 OFFSET ${limits.perClient - 1}`;
        if (byClient !== undefined) {
          return { ok: false, limit: "client", retryAfterMs: num(byClient.created_at_ms) + limits.windowMs - now };
        }
        const [byWallet]: Row[] = await tx`
          SELECT created_at_ms FROM challenges WHERE address = ${address} AND created_at_ms > ${since}
           ORDER BY created_at_ms DESC LIMIT 1 OFFSET ${limits.perWallet - 1}`;
        if (byWallet !== undefined) {
          return { ok: false, limit: "wallet", retryAfterMs: num(byWallet.created_at_ms) + limits.windowMs - now };
        }
        const evicted = await tx`
          UPDATE challenges SET used_at_ms = ${now}
           WHERE address = ${address} AND used_at_ms IS NULL AND expires_at_ms > ${now}
             AND id NOT IN (SELECT id FROM challenges WHERE address = ${address} AND used_at_ms IS NULL AND expires_at_ms > ${now}
                             ORDER BY created_at_ms DESC, id DESC LIMIT ${Math.max(0, limits.livePerWallet - 1)})
          RETURNING id`;
        await tx`INSERT INTO challenges (id, address, chain_id, nonce, message, created_at_ms, expires_at_ms, used_at_ms, client_key)
                 VALUES (${c.id}, ${address}, ${c.chainId}, ${c.nonce}, ${c.message}, ${c.createdAtMs}, ${c.expiresAtMs}, NULL,
                         ${limits.client})`;
        return { ok: true, evicted: evicted.length };
      });
    },
    async findChallenge(id) {
      const rows: Row[] = await sql`SELECT * FROM challenges WHERE id = ${id}`;
      return rows[0] === undefined ? undefined : toChallenge(rows[0]);
    },
    async consumeChallenge(id, nowMs) {
      const rows = await sql`UPDATE challenges SET used_at_ms = ${nowMs} WHERE id = ${id} AND used_at_ms IS NULL RETURNING id`;
      return rows.length === 1;
    },
    async findOrCreateAccount(address, newId, nowMs) {
      const lower = address.toLowerCase();
      await sql`INSERT INTO accounts (id, address, plan, created_at_ms, updated_at_ms)
                VALUES (${newId}, ${lower}, 'free', ${nowMs}, ${nowMs}) ON CONFLICT (address) DO NOTHING`;
      const rows: Row[] = await sql`SELECT * FROM accounts WHERE address = ${lower}`;
      return toAccount(rows[0]!);
    },
    findAccount,
    async listAccounts() {
      const rows: Row[] = await sql`SELECT * FROM accounts ORDER BY created_at_ms, id`;
      return rows.map(toAccount);
    },
    async setDisplayName(id, displayName, nowMs) {
      const rows: Row[] = await sql`UPDATE accounts SET display_name = ${displayName}, updated_at_ms = ${nowMs}
                                     WHERE id = ${id} RETURNING *`;
      return rows[0] === undefined ? undefined : toAccount(rows[0]);
    },
    async setPlan(idOrAddress, plan, nowMs) {
      const found = await findAccount(idOrAddress);
      if (found === undefined) return undefined;
      await sql`UPDATE accounts SET plan = ${plan}, updated_at_ms = ${nowMs} WHERE id = ${found.id}`;
      return { ...found, plan };
    },
    async saveSession(s) {
      await sql`INSERT INTO sessions (token_hash, account_id, created_at_ms, expires_at_ms, revoked_at_ms, wallet_provider_id, execution_mode)
                VALUES (${s.tokenHash}, ${s.accountId}, ${s.createdAtMs}, ${s.expiresAtMs}, NULL,
                        ${s.walletProviderId ?? null}, ${s.executionMode ?? null})`;
    },
    async findSession(tokenHash) {
      const rows: Row[] = await sql`
        SELECT s.token_hash, s.account_id, s.created_at_ms AS s_created, s.expires_at_ms, s.revoked_at_ms,
               s.wallet_provider_id, s.execution_mode, a.id, a.address, a.plan, a.created_at_ms, a.display_name
          FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ${tokenHash}`;
      const row = rows[0];
      if (row === undefined) return undefined;
      return { session: toSession({ ...row, created_at_ms: row.s_created }), account: toAccount(row) };
    },
    async revokeSession(tokenHash, nowMs) {
      await sql`UPDATE sessions SET revoked_at_ms = ${nowMs} WHERE token_hash = ${tokenHash} AND revoked_at_ms IS NULL`;
    },
    async prune(nowMs) {
      return await sql.begin(async (tx) => {
        const challenges = await tx`DELETE FROM challenges WHERE expires_at_ms < ${nowMs} RETURNING id`;
        const sessions = await tx`DELETE FROM sessions WHERE expires_at_ms < ${nowMs} RETURNING token_hash`;
        return challenges.length + sessions.length;
      });
    },
  };

  const usage = async (db: SQL, accountId: string, year: number) => {
    const [row]: Row[] = await db`
      SELECT COUNT(*) FILTER (WHERE state = 'committed') AS used,
             COUNT(*) FILTER (WHERE state IN ('reserved', 'signed', 'broadcast')) AS reserved
        FROM sponsored_writes WHERE account_id = ${accountId} AND year = ${year}`;
    return { used: num(row!.used), reserved: num(row!.reserved) };
  };

  const ledger: SponsoredWriteLedger = {
    usage: (accountId, year) => usage(sql, accountId, year),
    async reserve(r, limit) {
      return await sql.begin(async (tx) => {
        // One reservation at a time per account, across every instance.
        await tx`SELECT pg_advisory_xact_lock(hashtext(${r.accountId}))`;
        const now = await usage(tx, r.accountId, r.year);
        if (now.used + now.reserved >= limit) return false;
        await tx`INSERT INTO sponsored_writes (id, account_id, year, fingerprint, state, created_at_ms, updated_at_ms)
                 VALUES (${r.id}, ${r.accountId}, ${r.year}, ${r.fingerprint}, 'reserved', ${r.createdAtMs}, ${r.createdAtMs})`;
        return true;
      });
    },
    async markSigned(id, tx, nowMs) {
      const rows = await sql`UPDATE sponsored_writes SET state = 'signed', tx_hash = ${tx.txHash}, raw_tx = ${tx.raw},
                                    wallet = ${tx.wallet.toLowerCase()}, tx_nonce = ${tx.nonce}, updated_at_ms = ${nowMs}
                              WHERE id = ${id} AND state = 'reserved' RETURNING id`;
      return rows.length === 1;
    },
    async markSent(id, nowMs) {
      await sql`UPDATE sponsored_writes SET state = 'broadcast', updated_at_ms = ${nowMs}
                WHERE id = ${id} AND state IN ('reserved', 'signed')`;
    },
    async commit(id, outcome, nowMs) {
      await sql`UPDATE sponsored_writes SET state = 'committed', tx_hash = ${outcome.txHash}, uid = ${outcome.uid},
                       block_number = ${outcome.blockNumber.toString()}, updated_at_ms = ${nowMs}
                 WHERE id = ${id} AND state IN ('reserved', 'signed', 'broadcast')`;
    },
    async release(id, nowMs) {
      await sql`UPDATE sponsored_writes SET state = 'released', updated_at_ms = ${nowMs}
                WHERE id = ${id} AND state IN ('reserved', 'signed', 'broadcast')`;
    },
    async unsettled(createdBeforeMs) {
      const rows: Row[] = await sql`SELECT * FROM sponsored_writes WHERE state IN ('reserved', 'signed', 'broadcast')
                                     AND created_at_ms < ${createdBeforeMs} ORDER BY created_at_ms, tx_nonce`;
      return rows.map(toWrite);
    },
    async find(id) {
      const rows: Row[] = await sql`SELECT * FROM sponsored_writes WHERE id = ${id}`;
      return rows[0] === undefined ? undefined : toWrite(rows[0]);
    },
  };

  const walletNonces: WalletNonces = {
    withLock: (chainId, address, send) =>
      sql.begin(async (tx) => {
        const wallet = address.toLowerCase();
        await tx`INSERT INTO wallet_nonces (chain_id, address, next_nonce) VALUES (${chainId}, ${wallet}, 0)
                 ON CONFLICT DO NOTHING`;
        const [row]: Row[] = await tx`SELECT next_nonce FROM wallet_nonces WHERE chain_id = ${chainId} AND address = ${wallet}
                                      FOR UPDATE`;
        const result = await send(num(row!.next_nonce));
        if (result.used !== undefined) {
          await tx`UPDATE wallet_nonces SET next_nonce = ${result.used + 1} WHERE chain_id = ${chainId} AND address = ${wallet}`;
        }
        return result.value;
      }),
  };

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
