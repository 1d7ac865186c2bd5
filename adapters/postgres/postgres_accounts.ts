import type { SQL } from "bun";
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
import { GIVEN_BACK_WATCH_MS, type ReleaseCause, UNPROVEN_RELEASES } from "../../ports/submissions.ts";

/**
 * Advisory lock spaces (two-key form) of sign-in challenge creation: one lock per client, then one per wallet. The
 * client's lock serializes its rate, its live cap and its eviction; the wallet's lock serializes the wallet's rate,
 * which every client's creations count. Every creation takes them in that order (client, then wallet) and nothing else
 * takes the wallet's, so two creations never wait on each other in a cycle. The client's rate is counted before the
 * wallet's lock is taken (it cannot change while the client's lock is held), so a refused client never waits on it.
 * (7_240_003 is also SUBJECTS_LOCK's space, postgres_subjects.ts: a shared key only makes the two wait on each other,
 * never in a cycle, as neither takes another lock of the other's while holding it. It is kept, not moved: instances of
 * two versions during a rolling restart must count one client under one lock.)
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
  ...(row.chain_id === null || row.chain_id === undefined ? {} : { chainId: num(row.chain_id) }),
  ...(row.release_cause == null ? {} : { releaseCause: String(row.release_cause) as ReleaseCause }),
});

/** Accounts, sign-in challenges and sessions in PostgreSQL; challenge creations counted under per-client and per-wallet advisory locks. */
export function createPostgresAccountStore(sql: SQL): AccountStore {
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
        // The `limit`-th newest creation inside the window: while it exists the limit is reached. Refused before the
        // wallet's lock is asked for: a client past its rate never queues behind another's creation for the wallet.
        const [byClient]: Row[] = await tx`
          SELECT created_at_ms FROM challenges WHERE client_key = ${limits.client} AND created_at_ms > ${since}
           ORDER BY created_at_ms DESC LIMIT 1 OFFSET ${limits.perClient - 1}`;
        if (byClient !== undefined) {
          return { ok: false, limit: "client", retryAfterMs: num(byClient.created_at_ms) + limits.windowMs - now };
        }
        await tx`SELECT pg_advisory_xact_lock(${CHALLENGE_WALLET_LOCK}, hashtext(${address}))`;
        // The wallet's rate counts every client's challenges for it, but refuses only a client already holding one
        // created in the window (ports/accounts.ts ChallengeLimits.perWallet).
        const [byWallet]: Row[] = await tx`
          SELECT created_at_ms FROM challenges WHERE address = ${address} AND created_at_ms > ${since}
           ORDER BY created_at_ms DESC LIMIT 1 OFFSET ${limits.perWallet - 1}`;
        if (byWallet !== undefined) {
          const [held]: Row[] = await tx`
            SELECT created_at_ms FROM challenges WHERE address = ${address} AND client_key = ${limits.client}
               AND created_at_ms > ${since}
             ORDER BY created_at_ms DESC LIMIT 1`;
          if (held !== undefined) {
            const next = Math.min(num(byWallet.created_at_ms), num(held.created_at_ms));
            return { ok: false, limit: "wallet", retryAfterMs: next + limits.windowMs - now };
          }
        }
        const evicted = await tx`
          UPDATE challenges SET used_at_ms = ${now}
           WHERE address = ${address} AND client_key = ${limits.client} AND used_at_ms IS NULL AND expires_at_ms > ${now}
             AND id NOT IN (SELECT id FROM challenges WHERE address = ${address} AND client_key = ${limits.client}
                             AND used_at_ms IS NULL AND expires_at_ms > ${now}
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
      // RETURNING answers only for the row this statement inserted: a concurrent insert of the same address (another
      // instance's) makes this one wait for it and do nothing, and the row is then read as it committed.
      const inserted: Row[] = await sql`INSERT INTO accounts (id, address, plan, created_at_ms, updated_at_ms)
                VALUES (${newId}, ${lower}, 'free', ${nowMs}, ${nowMs}) ON CONFLICT (address) DO NOTHING RETURNING *`;
      if (inserted[0] !== undefined) return { account: toAccount(inserted[0]), created: true };
      const rows: Row[] = await sql`SELECT * FROM accounts WHERE address = ${lower}`;
      return { account: toAccount(rows[0]!), created: false };
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
  return accounts;
}

/** The sponsored-write quota in PostgreSQL: a reservation under a per-account advisory lock, across every instance. */
export function createPostgresWriteLedger(sql: SQL): SponsoredWriteLedger {
  const unproven = () => sql.array([...UNPROVEN_RELEASES], "TEXT");
  // A write given back unproven since `since` may still land and be charged: its quota is held until then.
  const usage = async (db: SQL, accountId: string, year: number, nowMs: number | undefined) => {
    const since = nowMs === undefined ? Number.MAX_SAFE_INTEGER : nowMs - GIVEN_BACK_WATCH_MS;
    const [row]: Row[] = await db`
      SELECT COUNT(*) FILTER (WHERE state = 'committed') AS used,
             COUNT(*) FILTER (WHERE state IN ('reserved', 'signed', 'broadcast')
                              OR (state = 'released' AND release_cause = ANY(${unproven()}) AND updated_at_ms >= ${since})) AS reserved
        FROM sponsored_writes WHERE account_id = ${accountId} AND year = ${year}`;
    return { used: num(row!.used), reserved: num(row!.reserved) };
  };

  const ledger: SponsoredWriteLedger = {
    usage: (accountId, year, options) => usage(sql, accountId, year, options?.nowMs),
    async reserve(r, limit) {
      return await sql.begin(async (tx) => {
        // One reservation at a time per account, across every instance.
        await tx`SELECT pg_advisory_xact_lock(hashtext(${r.accountId}))`;
        const now = await usage(tx, r.accountId, r.year, r.createdAtMs);
        if (now.used + now.reserved >= limit) return false;
        await tx`INSERT INTO sponsored_writes (id, account_id, year, fingerprint, state, created_at_ms, updated_at_ms, chain_id)
                 VALUES (${r.id}, ${r.accountId}, ${r.year}, ${r.fingerprint}, 'reserved', ${r.createdAtMs}, ${r.createdAtMs}, ${r.chainId ?? null})`;
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
    // A write given back on an unproven cause is charged once found mined (it landed after all); a proven one never is.
    async commit(id, outcome, nowMs) {
      await sql`UPDATE sponsored_writes SET state = 'committed', tx_hash = ${outcome.txHash}, uid = ${outcome.uid},
                       block_number = ${outcome.blockNumber.toString()}, updated_at_ms = ${nowMs}
                 WHERE id = ${id} AND (state IN ('reserved', 'signed', 'broadcast')
                       OR (state = 'released' AND release_cause = ANY(${unproven()})
                           AND updated_at_ms >= ${nowMs - GIVEN_BACK_WATCH_MS}))`;
    },
    // An open write is given back with its cause; one given back unproven takes a proven cause found later.
    async release(id, nowMs, cause) {
      const proven = cause !== undefined && !UNPROVEN_RELEASES.includes(cause);
      await sql`UPDATE sponsored_writes SET state = 'released', release_cause = ${cause ?? null}, updated_at_ms = ${nowMs}
                WHERE id = ${id} AND (state IN ('reserved', 'signed', 'broadcast')
                      OR (${proven ? 1 : 0} = 1 AND state = 'released' AND release_cause = ANY(${unproven()})))`;
    },
    async givenBackUnproven(releasedSinceMs) {
      const rows: Row[] = await sql`SELECT * FROM sponsored_writes WHERE release_cause = ANY(${unproven()}) AND state = 'released'
                                     AND updated_at_ms >= ${releasedSinceMs} ORDER BY updated_at_ms, id`;
      return rows.map(toWrite);
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
  return ledger;
}
