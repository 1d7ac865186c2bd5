import type { Database } from "bun:sqlite";
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
import { UNPROVEN_RELEASE_LIST } from "../sql/accounts.ts";

type AccountRow = { id: string; address: string; plan: string; created_at_ms: number; display_name: string | null };
type ChallengeRow = {
  id: string;
  address: string;
  chain_id: number;
  nonce: string;
  message: string;
  created_at_ms: number;
  expires_at_ms: number;
  used_at_ms: number | null;
};
type SessionRow = {
  token_hash: string;
  account_id: string;
  created_at_ms: number;
  expires_at_ms: number;
  revoked_at_ms: number | null;
  wallet_provider_id: string | null;
  execution_mode: string | null;
};
type WriteRow = {
  id: string;
  account_id: string;
  year: number;
  fingerprint: string;
  state: string;
  tx_hash: string | null;
  uid: string | null;
  block_number: string | null;
  raw_tx: string | null;
  wallet: string | null;
  tx_nonce: number | null;
  chain_id?: number | null;
  release_cause?: string | null;
  created_at_ms: number;
  updated_at_ms: number;
};

const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  address: row.address,
  plan: row.plan as Plan,
  createdAtMs: row.created_at_ms,
  displayName: row.display_name,
});

const toChallenge = (row: ChallengeRow): Challenge => ({
  id: row.id,
  address: row.address,
  chainId: row.chain_id,
  nonce: row.nonce,
  message: row.message,
  createdAtMs: row.created_at_ms,
  expiresAtMs: row.expires_at_ms,
  usedAtMs: row.used_at_ms,
});

const toSession = (row: SessionRow): Session => ({
  tokenHash: row.token_hash,
  accountId: row.account_id,
  createdAtMs: row.created_at_ms,
  expiresAtMs: row.expires_at_ms,
  revokedAtMs: row.revoked_at_ms,
  walletProviderId: row.wallet_provider_id,
  executionMode: row.execution_mode as Session["executionMode"],
});

const toWrite = (row: WriteRow): WriteRecord => ({
  id: row.id,
  accountId: row.account_id,
  year: row.year,
  fingerprint: row.fingerprint,
  state: row.state as WriteState,
  tx: row.raw_tx === null || row.tx_hash === null || row.wallet === null || row.tx_nonce === null
    ? null
    : { txHash: row.tx_hash as HexString, raw: row.raw_tx as HexString, wallet: row.wallet as HexString, nonce: Number(row.tx_nonce) },
  txHash: row.tx_hash,
  uid: row.uid,
  blockNumber: row.block_number === null ? null : BigInt(row.block_number),
  createdAtMs: row.created_at_ms,
  updatedAtMs: row.updated_at_ms,
  ...(row.chain_id === null || row.chain_id === undefined ? {} : { chainId: Number(row.chain_id) }),
  ...(row.release_cause == null ? {} : { releaseCause: row.release_cause as ReleaseCause }),
});

/** Accounts, challenges and sessions in the service's SQLite file. */
export function createSqliteAccountStore(db: Database): AccountStore {
  const insertChallenge = db.query(
    `INSERT INTO challenges (id, address, chain_id, nonce, message, created_at_ms, expires_at_ms, used_at_ms, client_key)
     VALUES ($id, $address, $chainId, $nonce, $message, $createdAtMs, $expiresAtMs, NULL, $client)`,
  );
  // The `limit`-th newest creation inside the window: while it exists the limit is reached, and the
  // window has room again once it leaves.
  const nthNewestOfClient = db.query<{ created_at_ms: number }, [string, number, number]>(
    "SELECT created_at_ms FROM challenges WHERE client_key = ? AND created_at_ms > ? ORDER BY created_at_ms DESC LIMIT 1 OFFSET ?",
  );
  // The wallet's rate counts every client's challenges for it, but refuses only a client already holding one created
  // in the window (ports/accounts.ts ChallengeLimits.perWallet): by index, at most `perWallet` rows and then one.
  const nthNewestOfWallet = db.query<{ created_at_ms: number }, [string, number, number]>(
    "SELECT created_at_ms FROM challenges WHERE address = ? AND created_at_ms > ? ORDER BY created_at_ms DESC LIMIT 1 OFFSET ?",
  );
  const newestOfClientForWallet = db.query<{ created_at_ms: number }, [string, string, number]>(
    `SELECT created_at_ms FROM challenges WHERE address = ? AND client_key = ? AND created_at_ms > ?
      ORDER BY created_at_ms DESC LIMIT 1`,
  );
  // The live cap counts, and evicts, one client's challenges for the wallet (ports/accounts.ts ChallengeLimits).
  const evictChallenges = db.query(
    `UPDATE challenges SET used_at_ms = $now
      WHERE address = $address AND client_key = $client AND used_at_ms IS NULL AND expires_at_ms > $now
        AND id NOT IN (SELECT id FROM challenges WHERE address = $address AND client_key = $client AND used_at_ms IS NULL
                        AND expires_at_ms > $now ORDER BY created_at_ms DESC, id DESC LIMIT $keep)`,
  );
  const findChallenge = db.query<ChallengeRow, [string]>("SELECT * FROM challenges WHERE id = ?");
  const consumeChallenge = db.query("UPDATE challenges SET used_at_ms = ? WHERE id = ? AND used_at_ms IS NULL");
  const insertAccount = db.query(
    `INSERT INTO accounts (id, address, plan, created_at_ms, updated_at_ms) VALUES (?, ?, 'free', ?, ?)
     ON CONFLICT (address) DO NOTHING`,
  );
  const accountById = db.query<AccountRow, [string]>("SELECT * FROM accounts WHERE id = ?");
  const accountByAddress = db.query<AccountRow, [string]>("SELECT * FROM accounts WHERE address = ?");
  const listAccounts = db.query<AccountRow, []>("SELECT * FROM accounts ORDER BY created_at_ms, id");
  const setPlan = db.query("UPDATE accounts SET plan = ?, updated_at_ms = ? WHERE id = ?");
  const setDisplayName = db.query("UPDATE accounts SET display_name = ?, updated_at_ms = ? WHERE id = ?");
  const insertSession = db.query(
    `INSERT INTO sessions (token_hash, account_id, created_at_ms, expires_at_ms, revoked_at_ms, wallet_provider_id, execution_mode)
     VALUES ($tokenHash, $accountId, $createdAtMs, $expiresAtMs, NULL, $walletProviderId, $executionMode)`,
  );
  const findSession = db.query<SessionRow, [string]>("SELECT * FROM sessions WHERE token_hash = ?");
  const revokeSession = db.query("UPDATE sessions SET revoked_at_ms = ? WHERE token_hash = ? AND revoked_at_ms IS NULL");
  const pruneChallenges = db.query("DELETE FROM challenges WHERE expires_at_ms < ?");
  const pruneSessions = db.query("DELETE FROM sessions WHERE expires_at_ms < ?");

  const account = (idOrAddress: string): Account | undefined => {
    const row = accountById.get(idOrAddress) ?? accountByAddress.get(idOrAddress.toLowerCase());
    return row === null ? undefined : toAccount(row);
  };

  return {
    createChallenge(challenge, limits) {
      const now = challenge.createdAtMs;
      const since = now - limits.windowMs;
      const address = challenge.address.toLowerCase();
      // BEGIN IMMEDIATE: another process on the same file waits for the whole count-and-insert.
      const outcome = db.transaction((): ChallengeCreation => {
        const byClient = nthNewestOfClient.get(limits.client, since, limits.perClient - 1);
        if (byClient !== null) return { ok: false, limit: "client", retryAfterMs: byClient.created_at_ms + limits.windowMs - now };
        const byWallet = nthNewestOfWallet.get(address, since, limits.perWallet - 1);
        const held = byWallet === null ? null : newestOfClientForWallet.get(address, limits.client, since);
        if (byWallet !== null && held !== null) {
          // The next fits once the wallet's rate has room again or this client's last one for it left the window.
          return { ok: false, limit: "wallet", retryAfterMs: Math.min(byWallet.created_at_ms, held.created_at_ms) + limits.windowMs - now };
        }
        const evicted = evictChallenges.run({ now, address, client: limits.client, keep: Math.max(0, limits.livePerWallet - 1) }).changes;
        insertChallenge.run({
          id: challenge.id,
          address,
          chainId: challenge.chainId,
          nonce: challenge.nonce,
          message: challenge.message,
          createdAtMs: challenge.createdAtMs,
          expiresAtMs: challenge.expiresAtMs,
          client: limits.client,
        });
        return { ok: true, evicted };
      }).immediate();
      return Promise.resolve(outcome);
    },
    findChallenge(id) {
      const row = findChallenge.get(id);
      return Promise.resolve(row === null ? undefined : toChallenge(row));
    },
    consumeChallenge: (id, nowMs) => Promise.resolve(consumeChallenge.run(nowMs, id).changes === 1),
    findOrCreateAccount(address, newId, nowMs) {
      const lower = address.toLowerCase();
      const created = insertAccount.run(newId, lower, nowMs, nowMs).changes === 1;
      return Promise.resolve({ account: toAccount(accountByAddress.get(lower)!), created });
    },
    findAccount: (idOrAddress) => Promise.resolve(account(idOrAddress)),
    listAccounts: () => Promise.resolve(listAccounts.all().map(toAccount)),
    setDisplayName(id, displayName, nowMs) {
      if (setDisplayName.run(displayName, nowMs, id).changes === 0) return Promise.resolve(undefined);
      const row = accountById.get(id);
      return Promise.resolve(row === null ? undefined : toAccount(row));
    },
    setPlan(idOrAddress, plan, nowMs) {
      const found = account(idOrAddress);
      if (found === undefined) return Promise.resolve(undefined);
      setPlan.run(plan, nowMs, found.id);
      return Promise.resolve({ ...found, plan });
    },
    saveSession(session: Session) {
      insertSession.run({
        tokenHash: session.tokenHash,
        accountId: session.accountId,
        createdAtMs: session.createdAtMs,
        expiresAtMs: session.expiresAtMs,
        walletProviderId: session.walletProviderId ?? null,
        executionMode: session.executionMode ?? null,
      });
      return Promise.resolve();
    },
    findSession(tokenHash) {
      const row = findSession.get(tokenHash);
      if (row === null) return Promise.resolve(undefined);
      const owner = accountById.get(row.account_id);
      return Promise.resolve(owner === null ? undefined : { session: toSession(row), account: toAccount(owner) });
    },
    revokeSession(tokenHash, nowMs) {
      revokeSession.run(nowMs, tokenHash);
      return Promise.resolve();
    },
    prune(nowMs) {
      const removed = db.transaction(() => pruneChallenges.run(nowMs).changes + pruneSessions.run(nowMs).changes)();
      return Promise.resolve(removed);
    },
  };
}

/**
 * The sponsored-write quota in SQLite. A reservation counts and inserts in one `BEGIN IMMEDIATE`
 * transaction, so parallel requests (in this process or another on the same file) cannot both take
 * the last write.
 */
export function createSqliteWriteLedger(db: Database): SponsoredWriteLedger {
  // A write given back unproven since `$since` may still land and be charged: its quota is held until then.
  const count = db.query<{ used: number; reserved: number }, { accountId: string; year: number; since: number }>(
    `SELECT COALESCE(SUM(state = 'committed'), 0) AS used,
            COALESCE(SUM(state IN ('reserved', 'signed', 'broadcast')
                         OR (state = 'released' AND release_cause IN (${UNPROVEN_RELEASE_LIST}) AND updated_at_ms >= $since)), 0) AS reserved
       FROM sponsored_writes WHERE account_id = $accountId AND year = $year`,
  );
  const held = (accountId: string, year: number, nowMs: number | undefined) =>
    count.get({ accountId, year, since: nowMs === undefined ? Number.MAX_SAFE_INTEGER : nowMs - GIVEN_BACK_WATCH_MS })!;
  const insert = db.query(
    `INSERT INTO sponsored_writes (id, account_id, year, fingerprint, state, created_at_ms, updated_at_ms, chain_id)
     VALUES ($id, $accountId, $year, $fingerprint, 'reserved', $createdAtMs, $createdAtMs, $chainId)`,
  );
  const signed = db.query(
    `UPDATE sponsored_writes SET state = 'signed', tx_hash = $txHash, raw_tx = $raw, wallet = $wallet, tx_nonce = $nonce,
            updated_at_ms = $nowMs
      WHERE id = $id AND state = 'reserved'`,
  );
  const sent = db.query(
    "UPDATE sponsored_writes SET state = 'broadcast', updated_at_ms = ? WHERE id = ? AND state IN ('reserved', 'signed')",
  );
  // A write given back on an unproven cause is charged once found mined (it landed after all); a proven one never is.
  const commit = db.query(
    `UPDATE sponsored_writes SET state = 'committed', tx_hash = $txHash, uid = $uid, block_number = $blockNumber,
            updated_at_ms = $nowMs
      WHERE id = $id AND (state IN ('reserved', 'signed', 'broadcast')
            OR (state = 'released' AND release_cause IN (${UNPROVEN_RELEASE_LIST}) AND updated_at_ms >= $since))`,
  );
  // An open write is given back with its cause; one given back unproven takes a proven cause found later.
  const release = db.query(
    `UPDATE sponsored_writes SET state = 'released', release_cause = $cause, updated_at_ms = $nowMs
      WHERE id = $id AND (state IN ('reserved', 'signed', 'broadcast')
            OR ($proven = 1 AND state = 'released' AND release_cause IN (${UNPROVEN_RELEASE_LIST})))`,
  );
  const givenBackUnproven = db.query<WriteRow, [number]>(
    `SELECT * FROM sponsored_writes WHERE release_cause IN (${UNPROVEN_RELEASE_LIST}) AND state = 'released' AND updated_at_ms >= ?
      ORDER BY updated_at_ms, id`,
  );
  const unsettled = db.query<WriteRow, [number]>(
    `SELECT * FROM sponsored_writes WHERE state IN ('reserved', 'signed', 'broadcast') AND created_at_ms < ?
      ORDER BY created_at_ms, tx_nonce`,
  );
  const find = db.query<WriteRow, [string]>("SELECT * FROM sponsored_writes WHERE id = ?");

  const reserve = db.transaction((reservation: Parameters<SponsoredWriteLedger["reserve"]>[0], limit: number) => {
    const usage = held(reservation.accountId, reservation.year, reservation.createdAtMs);
    if (usage.used + usage.reserved >= limit) return false;
    insert.run({
      id: reservation.id,
      accountId: reservation.accountId,
      year: reservation.year,
      fingerprint: reservation.fingerprint,
      createdAtMs: reservation.createdAtMs,
      chainId: reservation.chainId ?? null,
    });
    return true;
  });

  return {
    usage(accountId, year, options) {
      const row = held(accountId, year, options?.nowMs);
      return Promise.resolve({ used: row.used, reserved: row.reserved });
    },
    reserve: (reservation, limit) => Promise.resolve(reserve.immediate(reservation, limit)),
    markSigned(id, tx, nowMs) {
      const changed = signed.run({ id, txHash: tx.txHash, raw: tx.raw, wallet: tx.wallet.toLowerCase(), nonce: tx.nonce, nowMs });
      return Promise.resolve(changed.changes === 1);
    },
    markSent(id, nowMs) {
      sent.run(nowMs, id);
      return Promise.resolve();
    },
    commit(id, outcome, nowMs) {
      const since = nowMs - GIVEN_BACK_WATCH_MS;
      commit.run({ id, txHash: outcome.txHash, uid: outcome.uid, blockNumber: outcome.blockNumber.toString(), nowMs, since });
      return Promise.resolve();
    },
    release(id, nowMs, cause) {
      const proven = cause !== undefined && !UNPROVEN_RELEASES.includes(cause);
      release.run({ id, nowMs, cause: cause ?? null, proven: proven ? 1 : 0 });
      return Promise.resolve();
    },
    unsettled: (createdBeforeMs) => Promise.resolve(unsettled.all(createdBeforeMs).map(toWrite)),
    givenBackUnproven: (releasedSinceMs) => Promise.resolve(givenBackUnproven.all(releasedSinceMs).map(toWrite)),
    find(id) {
      const row = find.get(id);
      return Promise.resolve(row === null ? undefined : toWrite(row));
    },
  };
}
