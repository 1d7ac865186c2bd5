import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPostgresStorage } from "./postgres/mod.ts";
import { createSqliteIndexStore, createSqliteSubmissionRecords, openSqlite, openSqliteStorage } from "./sqlite/mod.ts";
import { firstBlockAtSql, indexQuerySql } from "./sql/index_query.ts";
import type { IndexQuery } from "../ports/attestation_index.ts";
import { SQL } from "bun";
import { deploymentLimitsContract, deploymentSecretsContract, oauthStorageContract, storageContract, webhookStorageContract } from "./test_support/mod.ts";
import type { Storage } from "../ports/storage.ts";
import { UNUSED_CLIENT_GRACE_MS } from "../ports/oauth.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "../e2e/support/postgres.ts";
import { Database } from "bun:sqlite";
import { createSubmissionStatus, createSubmissionSweep, createSubmissionTracker, RELAY_BOOK } from "../domain/submissions/mod.ts";
import { createSubmissionReconciler, replayBook } from "../domain/delegation/mod.ts";
import type { SignedTx, TxStatus, TxStatusReader } from "../ports/submissions.ts";
import { NO_BLOCK_READS } from "../ports/fakes/mod.ts";
import { SUBMISSION_RECORDS_CHAIN_BACKFILL } from "./sql/submission_records.ts";
import { TX_REPLACEMENTS_CHAIN_BACKFILL } from "./sql/tx_replacements.ts";

const sqlite = openSqliteStorage(":memory:");
storageContract("sqlite", () => Promise.resolve(sqlite));
oauthStorageContract("sqlite", () => Promise.resolve(sqlite));
// One SQLite file opened twice: two connections, as two processes on one machine would have.
const sqliteDir = mkdtempSync(join(tmpdir(), "ats-storage-"));
const sqlitePair = [openSqliteStorage(join(sqliteDir, "ats.sqlite")), openSqliteStorage(join(sqliteDir, "ats.sqlite"))] as const;
deploymentLimitsContract("sqlite", () => Promise.resolve(sqlitePair));
webhookStorageContract("sqlite", () => Promise.resolve(sqlitePair));
deploymentSecretsContract("sqlite", () => Promise.resolve(sqlitePair));

const pgSkip = postgresUnavailableReason();
if (pgSkip !== undefined) console.warn(`[storage_test] ${pgSkip}`);
let pg: TestPostgres | undefined;
let postgres: Storage | undefined;
let second: Storage | undefined;
beforeAll(async () => {
  if (pgSkip !== undefined) return;
  pg = await startPostgres();
  postgres = await openPostgresStorage(pg.url);
  second = await openPostgresStorage(pg.url);
});
afterAll(async () => {
  await postgres?.close();
  await second?.close();
  await pg?.stop();
  await sqlite.close();
  for (const storage of sqlitePair) await storage.close();
  rmSync(sqliteDir, { recursive: true, force: true });
});
storageContract("postgres", () => Promise.resolve(postgres!), { skip: pgSkip });
oauthStorageContract("postgres", () => Promise.resolve(postgres!), { skip: pgSkip });
deploymentLimitsContract("postgres", () => Promise.resolve([postgres!, second!] as const), { skip: pgSkip });
webhookStorageContract("postgres", () => Promise.resolve([postgres!, second!] as const), { skip: pgSkip });
deploymentSecretsContract("postgres", () => Promise.resolve([postgres!, second!] as const), { skip: pgSkip });

describe.skipIf(pgSkip !== undefined)("postgres across instances", () => {
  test("two pools (two instances) racing for the last writes of one account share the limit exactly", async () => {
    const { account } = await postgres!.accounts.findOrCreateAccount("0xshared", "shared-account", 0);
    const reserve = (storage: Storage, i: number) =>
      storage.ledger.reserve({ id: `shared-${i}`, accountId: account.id, year: 2026, fingerprint: "f", createdAtMs: 1 }, 7);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => reserve(i % 2 === 0 ? postgres! : second!, i)));
    expect(results.filter(Boolean)).toHaveLength(7);
  });

  test("two pools (two instances) creating one new wallet's account at once: exactly one of them created it", async () => {
    const made = await Promise.all(Array.from({ length: 16 }, (_, i) =>
      (i % 2 === 0 ? postgres! : second!).accounts.findOrCreateAccount("0xraced", `raced-${i}`, i)));
    expect(made.filter((m) => m.created)).toHaveLength(1);
    expect(new Set(made.map((m) => m.account.id)).size).toBe(1);
  });

  test("an instance that freezes holding a wallet's nonce lock holds the others no longer than WALLET_LOCK_SECONDS", async () => {
    // It held them until PostgreSQL noticed the dead connection (hours): every instance's writes waited. Here the
    // holder never lets go until the other instance has the lock, which it gets once the database ends the idle hold.
    const [frozen, other] = [await openPostgresStorage(pg!.url, { max: 1, walletLockSeconds: 1 }), await openPostgresStorage(pg!.url, { max: 1, walletLockSeconds: 1 })];
    try {
      let otherHadIt!: () => void;
      const otherHasIt = new Promise<void>((resolve) => (otherHadIt = resolve));
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const stuck = frozen.walletNonces!.withLock(31337, "0xfrozen", async (next) => {
        holding();
        await otherHasIt;
        return { used: next, value: "late" };
      }).catch(() => "ended by the database");
      await held;
      const got = await other.walletNonces!.withLock(31337, "0xfrozen", async (next) => {
        otherHadIt();
        return { used: next, value: next };
      });
      expect(got).toBe(0);
      expect(await stuck).toBe("ended by the database");
    } finally {
      await frozen.close().catch(() => undefined);
      await other.close();
    }
  }, 30_000);

  test("an instance whose clock is more than a minute off the database's does not open (its writes' ages would be misjudged)", async () => {
    // One 10 minutes behind had its writes under way released by the other instances' reconcilers as abandoned.
    await expect(openPostgresStorage(pg!.url, { max: 1, nowMs: () => Date.now() - 10 * 60_000 })).rejects.toThrow(/clock is \d+ s behind the database's/);
    await expect(openPostgresStorage(pg!.url, { max: 1, nowMs: () => Date.now() + 10 * 60_000 })).rejects.toThrow(/clock is \d+ s ahead of the database's/);
    const close = await openPostgresStorage(pg!.url, { max: 1, nowMs: () => Date.now() + 5_000 });
    await close.close();
  });

  test("a replay key claimed through one instance is a duplicate through the other", async () => {
    const base = { chainId: 1, attester: "0xcross", nonce: 3n, deadline: 2_000_000_000n, createdAtMs: 1 };
    const outcomes = await Promise.all([postgres!.replay.claim({ ...base, key: "0xcross1" }), second!.replay.claim({ ...base, key: "0xcross1" })]);
    expect(outcomes.sort()).toEqual(["claimed", "duplicate-signature"]);
  });

  test("two instances racing payments of one payer hold them against its balance exactly (issue 23)", async () => {
    const held = (i: number) => ({
      key: `eip155:31337:0xtoken:0xcross-held-${i}`, purpose: "witness" as const, network: "eip155:31337", asset: "0xtoken", payer: "0xcrosspayer",
      payTo: "0xq", amount: "10000", accountId: null, createdAtMs: 1_000, validBefore: 1_000,
    });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      (i % 2 === 0 ? postgres! : second!).payments.reserveWithin(held(i), { balance: 30_000n, readAtMs: 1_000 })));
    expect(results.filter((r) => r === "reserved")).toHaveLength(3);
    expect(results.filter((r) => r === "over_balance")).toHaveLength(27);
  });

  test("two instances storing authorization codes of one account and one client hold the live-code bounds exactly (issue 26), evicting instead of refusing", async () => {
    const code = (i: number, accountId: string, clientId: string) => ({
      codeHash: `cross-code-${accountId}-${i}`, clientId, accountId, redirectUri: "https://app.test/cb", redirectUriGiven: true, scope: "account:read",
      codeChallenge: "c".repeat(43), resource: null, createdAtMs: 5_000, expiresAtMs: 65_000,
    });
    // Every code is stored (attack review, finding 2: the bounds evict, never refuse); what stays live is the bound exactly.
    const stillLive = async (hashes: string[]) => (await Promise.all(hashes.map((h) => postgres!.oauth.findCode(h)))).filter((x) => x !== undefined).length;
    const perAccount = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      (i % 2 === 0 ? postgres! : second!).oauth.saveCode(code(i, "cross-acct", "cross-client-a"), { perAccount: 7, perClient: 1_000 })));
    expect(perAccount.reduce((n, o) => n + o.evicted, 0)).toBe(23);
    expect(await stillLive(Array.from({ length: 30 }, (_, i) => code(i, "cross-acct", "cross-client-a").codeHash))).toBe(7);
    const perClient = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      (i % 2 === 0 ? postgres! : second!).oauth.saveCode(code(i, `cross-acct-${i}`, "cross-client-b"), { perAccount: 1_000, perClient: 9 })));
    expect(perClient.reduce((n, o) => n + o.evicted, 0)).toBe(21);
    expect(await stillLive(Array.from({ length: 30 }, (_, i) => code(i, `cross-acct-${i}`, "cross-client-b").codeHash))).toBe(9);
  });

  /**
   * Runs `hold` in a transaction of its own, on a connection of its own, and keeps it open until `end`. `waiting(q)`
   * says whether a statement starting with `q` waits on a lock now (pg_stat_activity).
   */
  async function heldOpen(hold: (tx: SQL) => Promise<unknown>) {
    const holder = new SQL({ url: pg!.url, max: 2 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const transaction = holder.begin(async (tx) => {
      await hold(tx);
      held();
      await released;
    });
    await holding;
    return {
      async waiting(statement: string): Promise<boolean> {
        const [row] = await holder`SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${`${statement}%`}`;
        return Number(row.n) > 0;
      },
      async end(): Promise<void> {
        release();
        await transaction;
        await holder.close();
      },
    };
  }

  /**
   * Holds `hold` in a transaction of its own until a statement starting with `waiter` waits on a lock (polled: no
   * timing assumed), then commits it: the interleaving of a race, made deterministic.
   */
  async function whileWaitedOn(hold: (tx: SQL) => Promise<unknown>, waiter: string, run: () => Promise<unknown>) {
    const held = await heldOpen(hold);
    const running = run();
    while (!(await held.waiting(waiter))) await Bun.sleep(5);
    await held.end();
    return await running;
  }

  test("a registration's eviction whose client an exchange granted meanwhile keeps the client and its codes (review finding 4: its codes were deleted, the client kept)", async () => {
    const at = 4_100_000_000_000;
    const now = at + 2 * UNUSED_CLIENT_GRACE_MS;
    const old = { clientId: "race-evict-old", accountId: null, secretHash: null, name: "Bot", redirectUris: ["https://app.test/cb"], grantTypes: ["authorization_code"], scope: "account:read", authMethod: "none" as const, createdAtMs: at };
    const limits = { client: "race-evict", perClient: 100, total: 1, windowMs: 3_600_000 };
    expect(await postgres!.oauth.registerClient(old, limits, at)).toEqual({ ok: true, evicted: 0 });
    // Another account's code of it, expired unexchanged: an evictable client holds no live code.
    const lapsed = { codeHash: "race-evict-code", clientId: old.clientId, accountId: "race-acct", redirectUri: "https://app.test/cb", redirectUriGiven: true, scope: "account:read", codeChallenge: "c".repeat(43), resource: null, createdAtMs: at, expiresAtMs: at + 60_000 };
    await postgres!.oauth.saveCode(lapsed, { perAccount: 1_000, perClient: 1_000 });
    // The exchange's last step (the client's first grant) holds the client's row while the eviction's update waits on it.
    const outcome = await whileWaitedOn(
      (tx) => tx`UPDATE oauth_clients SET granted_at_ms = ${now} WHERE client_id = ${old.clientId}`,
      "UPDATE oauth_clients SET evicted_at_ms",
      () => second!.oauth.registerClient({ ...old, clientId: "race-evict-new", createdAtMs: now }, { ...limits, client: "race-evict-2" }, now));
    expect(outcome).toEqual({ ok: true, evicted: 0 });
    expect(await postgres!.oauth.findClient(old.clientId)).toBeDefined();
    expect(await postgres!.oauth.findCode(lapsed.codeHash)).toBeDefined();
  });

  test("a code evicted past the client's bound but exchanged while the eviction waited on it: another is evicted, the bound holds (review finding 5)", async () => {
    const clientId = "race-code-client";
    const code = (hash: string, accountId: string, createdAtMs: number) => ({
      codeHash: hash, clientId, accountId, redirectUri: "https://app.test/cb", redirectUriGiven: true, scope: "account:read",
      codeChallenge: "c".repeat(43), resource: null, createdAtMs, expiresAtMs: 65_000,
    });
    // Three live codes where two are the bound (a bound lowered since, or passed before): two of A's, one of B's.
    for (const c of [code("race-a1", "race-A", 5_000), code("race-a2", "race-A", 5_001), code("race-b1", "race-B", 5_002)]) await postgres!.oauth.saveCode(c, { perAccount: 1_000, perClient: 1_000 });
    // An exchange holds A's oldest code (the first one evicted) while the eviction's delete waits on it.
    const outcome = await whileWaitedOn(
      (tx) => tx`UPDATE oauth_codes SET used_at_ms = 5005, grant_id = 'race-grant' WHERE code_hash = 'race-a1'`,
      "DELETE FROM oauth_codes WHERE used_at_ms IS NULL AND code_hash",
      () => second!.oauth.saveCode(code("race-c1", "race-C", 5_010), { perAccount: 1_000, perClient: 2 }));
    // Before: the loop stopped at the delete that found the code exchanged, and the new code made 3 live codes.
    expect(outcome).toEqual({ evicted: 1 });
    expect((await postgres!.oauth.findCode("race-a1"))?.usedAtMs).toBe(5_005);
    expect(await postgres!.oauth.findCode("race-a2")).toBeUndefined();
    for (const kept of ["race-b1", "race-c1"]) expect(await postgres!.oauth.findCode(kept)).toBeDefined();
  });

  test("a client past its challenge rate is refused without waiting on the wallet's lock (a flood on one wallet queued every connection behind it)", async () => {
    const wallet = "0x00000000000000000000000000000000000f100d";
    const at = 4_200_000_000_000;
    const limits = { client: "flooding-client", windowMs: 60_000, perClient: 1, perWallet: 1_000, livePerWallet: 1_000 };
    const challenge = (id: string) => ({ id, address: wallet, chainId: 31337, nonce: id, message: "m", createdAtMs: at, expiresAtMs: at + 600_000, usedAtMs: null });
    expect(await postgres!.accounts.createChallenge(challenge("flood-1"), limits)).toEqual({ ok: true, evicted: 0 });
    // Another creation for the wallet holds its lock (7_240_004, taken by every client's creation for it).
    const held = await heldOpen((tx) => tx`SELECT pg_advisory_xact_lock(7240004, hashtext(${wallet}))`);
    let settled: unknown;
    const running = second!.accounts.createChallenge(challenge("flood-2"), limits).then((outcome) => (settled = outcome));
    // Either the refusal comes back, or the creation is seen waiting on a lock (the defect): polled, no timing assumed.
    let waited = false;
    while (settled === undefined && !waited) {
      waited = await held.waiting("SELECT pg_advisory_xact_lock");
      if (!waited) await Bun.sleep(5);
    }
    await held.end();
    await running;
    expect(waited).toBe(false);
    expect(settled).toMatchObject({ ok: false, limit: "client" });
  });

  test("an instance starting beside running ones runs no DDL: it opens while another transaction holds a table", async () => {
    // An ALTER TABLE (even IF NOT EXISTS) waits for every open transaction on its table; a start-up that ran its DDL
    // again could deadlock with a running instance's transaction, and PostgreSQL aborted it (a multi-instance start
    // failed so). With the schema's digest on record the new instance takes no table lock, so this open completes
    // while the table is held; a start-up that ran DDL would wait here until the test's time limit.
    const scope = { chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" };
    await postgres!.indexStore(scope);
    const holder = new SQL({ url: pg!.url, max: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const transaction = holder.begin(async (tx) => {
      await tx`LOCK TABLE replay, index_attestations IN SHARE MODE`;
      held();
      await released;
    });
    await holding;
    const storage = await openPostgresStorage(pg!.url);
    const index = await storage.indexStore(scope);
    release();
    await transaction;
    expect(await storage.ping()).toBe(true);
    expect(await index.checkpoint()).toBeUndefined();
    await storage.close();
    await holder.close();
  });

  test("migrations are idempotent: opening again keeps the data", async () => {
    const again = await openPostgresStorage(pg!.url);
    expect(await again.replay.find(1, "0xcross1")).toBeDefined();
    expect(await again.ping()).toBe(true);
    await again.close();
  });

  test("a database of the schema before issue 36 is upgraded in place: the idempotency and submission tables are made, the data kept", async () => {
    const admin = new SQL(pg!.url);
    await admin.unsafe("DROP TABLE idempotency_keys; DROP TABLE submission_records");
    await admin`UPDATE schema_migrations SET digest = 'before-issue-36' WHERE name = 'storage'`;
    await admin.close();
    const upgraded = await openPostgresStorage(pg!.url);
    expect(await upgraded.replay.find(1, "0xcross1")).toBeDefined();
    const begin = { scope: "account:upgrade", key: "k", fingerprint: "f", createdAtMs: 1, expiresAtMs: 2, leaseUntilMs: 2 };
    expect(await upgraded.idempotency.begin(begin)).toEqual({ kind: "started", submissionId: null });
    await upgraded.submissions.create({ id: "upgrade-sub", chainId: 1, scope: "account:upgrade", ref: "0xr", createdAtMs: 1 });
    expect(await upgraded.submissions.find("upgrade-sub")).toBeDefined();
    await upgraded.close();
  });
});

/** A new, empty database `name` on the test server (dropped first if an earlier run left it), and its URL. */
async function emptyPostgresDatabase(name: string): Promise<string> {
  const admin = new SQL(pg!.url);
  await admin.unsafe(`DROP DATABASE IF EXISTS ${name}`);
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.close();
  return pg!.url.replace(/\/postgres$/, `/${name}`);
}

describe.skipIf(pgSkip !== undefined)("postgres replay records keyed by (chain, signature) (decisions §30)", () => {
  test("a database whose replay table was keyed by the signature alone is re-keyed in place: rows and submissions keep working, the same signature is claimed on another chain", async () => {
    const url = await emptyPostgresDatabase("replay_rekey");
    const old = new SQL(url);
    // The tables as they were before: `key` the replay table's primary key, submissions naming no chain.
    await old.unsafe(`CREATE TABLE replay (key TEXT PRIMARY KEY, chain_id BIGINT NOT NULL, attester TEXT NOT NULL, nonce TEXT NOT NULL,
      deadline BIGINT NOT NULL, state TEXT NOT NULL, tx_hash TEXT, uid TEXT, block_number TEXT, created_at_ms BIGINT NOT NULL,
      raw_tx TEXT, wallet TEXT, tx_nonce BIGINT)`);
    await old.unsafe(`INSERT INTO replay VALUES ('0xsig', 31337, '0xabc', '0', 2000000000, 'mined', '0xt', '0xuida', '5', 1, NULL, NULL, NULL),
                                             ('0xopen', 31337, '0xabc', '1', 2000000000, 'sent', '0xt2', NULL, NULL, 2, NULL, NULL, NULL)`);
    await old.unsafe(`CREATE TABLE submission_records (id TEXT PRIMARY KEY, scope TEXT NOT NULL, ref TEXT NOT NULL, state TEXT NOT NULL,
      tx_hash TEXT, uid TEXT, block_number TEXT, error TEXT, fee_bumps INTEGER NOT NULL DEFAULT 0,
      created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL)`);
    await old.unsafe(`INSERT INTO submission_records (id, scope, ref, state, created_at_ms, updated_at_ms)
      VALUES ('sub-open', 'account:a', '0xopen', 'open', 2, 2), ('sub-gone', 'account:a', '0xgone', 'open', 3, 3)`);
    await old.close();
    const upgraded = await openPostgresStorage(url);
    try {
      expect(await upgraded.replay.find(31337, "0xsig")).toMatchObject({ state: "mined", uid: "0xuida" });
      expect(await upgraded.replay.claim({ key: "0xsig", chainId: 8453, attester: "0xabc", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("claimed");
      expect(await upgraded.replay.claim({ key: "0xsig", chainId: 31337, attester: "0xdef", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("duplicate-signature");
      expect((await upgraded.replay.find(8453, "0xsig"))?.state).toBe("checked");
      await upgraded.replay.finish(31337, "0xopen", { state: "mined", txHash: "0xt2", uid: "0xu2", blockNumber: 6n });
      expect((await upgraded.replay.find(31337, "0xopen"))?.uid).toBe("0xu2");
      expect((await upgraded.submissions.find("sub-open"))?.chainId).toBe(31337);
      expect((await upgraded.submissions.find("sub-gone"))?.chainId).toBeNull();
      expect(await upgraded.submissions.settleRef(31337, "0xopen", { state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps: 0 }, 9)).toEqual(["sub-open"]);
    } finally {
      await upgraded.close();
    }
    // Opened again with the schema's digest cleared: the re-keying runs again and changes nothing.
    const admin2 = new SQL(url);
    await admin2`DELETE FROM schema_migrations`;
    await admin2.close();
    const again = await openPostgresStorage(url);
    expect((await again.replay.find(8453, "0xsig"))?.state).toBe("checked");
    expect((await again.replay.find(31337, "0xsig"))?.state).toBe("mined");
    await again.close();
  });

  test("the old key is dropped by the name PostgreSQL has for it, not by the default name (a table made under another name and renamed)", async () => {
    const url = await emptyPostgresDatabase("replay_rekey_named");
    const old = new SQL(url);
    // Made as `replay_v1` and renamed: its primary key keeps the name `replay_v1_pkey`.
    await old.unsafe(`CREATE TABLE replay_v1 (key TEXT PRIMARY KEY, chain_id BIGINT NOT NULL, attester TEXT NOT NULL, nonce TEXT NOT NULL,
      deadline BIGINT NOT NULL, state TEXT NOT NULL, tx_hash TEXT, uid TEXT, block_number TEXT, created_at_ms BIGINT NOT NULL,
      raw_tx TEXT, wallet TEXT, tx_nonce BIGINT)`);
    await old.unsafe("ALTER TABLE replay_v1 RENAME TO replay");
    await old.unsafe(`INSERT INTO replay VALUES ('0xsig', 31337, '0xabc', '0', 2000000000, 'mined', '0xt', '0xuida', '5', 1, NULL, NULL, NULL)`);
    await old.close();
    const upgraded = await openPostgresStorage(url);
    try {
      expect(await upgraded.replay.claim({ key: "0xsig", chainId: 8453, attester: "0xabc", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("claimed");
      expect(await upgraded.replay.claim({ key: "0xsig", chainId: 31337, attester: "0xdef", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("duplicate-signature");
      const check = new SQL(url);
      const keys = await check`SELECT conname FROM pg_constraint WHERE conrelid = 'replay'::regclass AND contype = 'p'` as { conname: string }[];
      await check.close();
      expect(keys.map((k) => k.conname)).toEqual(["replay_chain_key"]);
    } finally {
      await upgraded.close();
    }
  });
});

/**
 * A submission the previous version opens after this version migrated (a rolling restart of PostgreSQL, decisions §28:
 * the old instances serve on beside the new) has no chain on its record. It is followed as that version followed it:
 * its replay record found by key, read as where it stands, never swept as failed while in flight, and settled by the
 * reconciler of its chain, which names the chain on it.
 */
async function previousVersionsSubmission(storage: Storage, insertAsPreviousVersion: (id: string, ref: string) => Promise<void>) {
  const [id, ref] = [`AAAAAAAAAAAAAAAAAA${Math.random().toString(36).slice(2, 6).padEnd(4, "0")}`, `0xprev-${Math.random()}`];
  expect(await storage.replay.claim({ key: ref, chainId: 31337, attester: `0x${ref}`, nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 1 })).toBe("claimed");
  await insertAsPreviousVersion(id, ref);
  expect((await storage.submissions.find(id))?.chainId).toBeNull();
  await storage.replay.markSigned(31337, ref, { txHash: "0xt", raw: "0xraw", wallet: "0xw", nonce: 1 });
  await storage.replay.markSent(31337, ref);
  const status = createSubmissionStatus({ records: storage.submissions, replay: storage.replay, head: () => Promise.resolve(10n), confirmations: 1 });
  expect(await status.read(id)).toMatchObject({ ok: true, value: { state: "sent", txHash: "0xt" } });
  const sweep = createSubmissionSweep({ records: storage.submissions, replay: storage.replay, clock: { nowMs: () => 1_000_000 }, minAgeMs: 0 });
  await sweep(0);
  expect((await storage.submissions.find(id))?.outcome).toBeNull();
  await storage.replay.finish(31337, ref, { state: "mined", txHash: "0xt", uid: "0xuid", blockNumber: 5n });
  const mined = { state: "mined" as const, txHash: "0xt", uid: "0xuid", blockNumber: 5n, feeBumps: 0 };
  expect(await storage.submissions.settleRef(31337, ref, mined, 2)).toEqual([id]);
  expect(await storage.submissions.find(id)).toMatchObject({ chainId: 31337, outcome: mined });
  expect((await storage.replay.findAnyChain(ref))?.chainId).toBe(31337);
  expect(await storage.replay.findAnyChain(`${ref}-never`)).toBeUndefined();
}

describe("a submission a previous version opened beside this one (no chain on its record)", () => {
  test("sqlite: followed by its replay record found by key, not swept as failed, settled by its chain's reconciler", async () => {
    const path = join(sqliteDir, "previous-version.sqlite");
    const storage = openSqliteStorage(path);
    const raw = new Database(path);
    try {
      await previousVersionsSubmission(storage, (id, ref) => Promise.resolve(void raw.run(
        "INSERT INTO submission_records (id, scope, ref, items, state, created_at_ms, updated_at_ms) VALUES (?, 'account:a', ?, NULL, 'open', 1, 1)",
        [id, ref],
      )));
    } finally {
      raw.close();
      await storage.close();
    }
  });

  test.skipIf(pgSkip !== undefined)("postgres: followed by its replay record found by key, not swept as failed, settled by its chain's reconciler", async () => {
    const raw = new SQL(pg!.url);
    try {
      await previousVersionsSubmission(postgres!, async (id, ref) => {
        await raw`INSERT INTO submission_records (id, scope, ref, items, state, created_at_ms, updated_at_ms)
                  VALUES (${id}, 'account:a', ${ref}, NULL, 'open', 1, 1)`;
      });
    } finally {
      await raw.close();
    }
  });
});

/** SQLite's plan of a naming statement on `db`, checked to have no correlated subquery. */
function uncorrelatedSqlitePlan(db: Database, statement: string): string[] {
  const plan = db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${statement}`).all().map((row) => row.detail);
  expect(plan.length).toBeGreaterThan(0);
  expect(plan.filter((detail) => /CORRELATED/i.test(detail))).toEqual([]);
  return plan;
}

/** PostgreSQL's plan of a naming statement has no subplan run per row. */
async function expectNoPostgresSubplan(statement: string): Promise<void> {
  const raw = new SQL(pg!.url);
  try {
    const plan = (await raw.unsafe(`EXPLAIN ${statement}`) as { "QUERY PLAN": string }[]).map((row) => row["QUERY PLAN"]);
    expect(plan.length).toBeGreaterThan(0);
    expect(plan.filter((line) => /SubPlan/i.test(line))).toEqual([]);
  } finally {
    await raw.close();
  }
}

describe("naming the chain of submissions kept before records named it: one join, not a lookup per row", () => {
  test("sqlite: the statement's plan has no correlated subquery", () => {
    const db = openSqlite(":memory:");
    createSqliteSubmissionRecords(db);
    uncorrelatedSqlitePlan(db, SUBMISSION_RECORDS_CHAIN_BACKFILL);
    db.close();
  });

  test.skipIf(pgSkip !== undefined)("postgres: the statement's plan has no subplan run per row", async () => {
    await expectNoPostgresSubplan(SUBMISSION_RECORDS_CHAIN_BACKFILL);
  });
});

describe("sqlite idempotency keys at start", () => {
  test("endLeases ends every running key's lease (a request that died with the last process): its retry takes the key over at once; a finished key is left as it is", async () => {
    const storage = openSqliteStorage(":memory:");
    const record = (key: string, createdAtMs: number) => ({ scope: "s", key, fingerprint: "f", createdAtMs, expiresAtMs: createdAtMs + 86_400_000, leaseUntilMs: createdAtMs + 300_000 });
    await storage.idempotency.begin(record("dead", 1_000));
    await storage.idempotency.attach("s", "dead", "sub-1");
    await storage.idempotency.begin(record("done", 1_000));
    await storage.idempotency.complete("s", "done", { status: 200, headers: {}, body: "{}" });
    // Before the start: still held.
    expect(await storage.idempotency.begin(record("dead", 2_000))).toMatchObject({ kind: "exists", record: { state: "running" } });
    expect(await storage.idempotency.endLeases!(2_000)).toBe(1);
    expect(await storage.idempotency.begin(record("dead", 2_001))).toEqual({ kind: "started", submissionId: "sub-1" });
    expect(await storage.idempotency.begin(record("done", 2_001))).toMatchObject({ kind: "exists", record: { state: "done" } });
    await storage.close();
  });
});

describe("sqlite upgrade in place", () => {
  test("a file of the schema before issue 36 gets the idempotency and submission tables at open, its data kept", async () => {
    const path = join(sqliteDir, "before-36.sqlite");
    const before = openSqliteStorage(path);
    await before.replay.claim({ key: "0xkept", chainId: 1, attester: "0xa", nonce: 1n, deadline: 2_000_000_000n, createdAtMs: 1 });
    await before.close();
    const db = openSqlite(path);
    db.exec("DROP TABLE idempotency_keys; DROP TABLE submission_records");
    db.close();
    const upgraded = openSqliteStorage(path);
    expect(await upgraded.replay.find(1, "0xkept")).toBeDefined();
    expect(await upgraded.idempotency.begin({ scope: "s", key: "k", fingerprint: "f", createdAtMs: 1, expiresAtMs: 2, leaseUntilMs: 2 })).toEqual({ kind: "started", submissionId: null });
    await upgraded.submissions.create({ id: "sub", chainId: 1, scope: "s", ref: "0xr", createdAtMs: 1 });
    expect(await upgraded.submissions.find("sub")).toBeDefined();
    await upgraded.close();
  });
});

/** The index's tables as the follower before issue 34 made them (no records, no tail mark, no block times, no polls). */
const OLD_INDEX_TABLES = (bigint: string) => [
  `CREATE TABLE index_attestations (chain_id ${bigint} NOT NULL, eas TEXT NOT NULL, uid TEXT NOT NULL, recipient TEXT NOT NULL,
     attester TEXT NOT NULL, schema_uid TEXT NOT NULL, block_number ${bigint} NOT NULL, log_index INTEGER NOT NULL, revoked_block ${bigint},
     PRIMARY KEY (chain_id, eas, uid))`,
  `CREATE TABLE index_checkpoints (chain_id ${bigint} NOT NULL, eas TEXT NOT NULL, block_number ${bigint} NOT NULL, block_hash TEXT NOT NULL,
     PRIMARY KEY (chain_id, eas, block_number))`,
  `CREATE TABLE index_lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at_ms ${bigint} NOT NULL)`,
  `INSERT INTO index_attestations VALUES (31337, '0xeas', '0x${"1".repeat(64)}', '0xaa', '0xbb', '0x${"7".repeat(64)}', 5, 0, NULL)`,
  `INSERT INTO index_checkpoints VALUES (31337, '0xeas', 9, '0x${"9".repeat(64)}')`,
];

/** What an upgraded index must show: the old row and checkpoint kept, the row listed as lacking its record, which it then takes. */
async function expectUpgraded(store: import("../ports/attestation_index.ts").IndexStore) {
  expect(await store.checkpoint()).toEqual({ blockNumber: 9n, blockHash: `0x${"9".repeat(64)}` });
  expect(await store.head()).toMatchObject({ blockNumber: 9n, checkedAtMs: null });
  expect(await store.counts()).toEqual({ attestations: 1, tail: 0 });
  const uid = `0x${"1".repeat(64)}` as const;
  expect(await store.incomplete(10)).toEqual([uid]);
  expect(await store.records([uid])).toEqual([]);
  await store.complete([{ uid, schema: `0x${"7".repeat(64)}`, time: 1n, expirationTime: 0n, revocationTime: 0n, refUID: `0x${"0".repeat(64)}`, recipient: "0xaa", attester: "0xbb", revocable: true, data: "0x12" }]);
  expect(await store.incomplete(10)).toEqual([]);
  expect(await store.records([uid])).toMatchObject([{ uid, data: "0x12", blockNumber: 5n }]);
  // The completed record's time is queryable (issue 37).
  expect(await store.count({ recipient: "0xaa", since: 1n, toBlock: 9n })).toBe(1);
  expect(await store.count({ recipient: "0xaa", since: 2n, toBlock: 9n })).toBe(0);
}

/**
 * The queries of decisions §24, each with the indexes that may serve it: the plan must seek one of them (no table scan,
 * no sort: the index gives the page's order, so a deep page costs what the first costs).
 */
const PLAN_CASES: [string, Omit<IndexQuery, "toBlock" | "limit" | "order">, string[]][] = [
  ["recipient (and subject)", { recipient: address(3) }, ["index_attestations_recipient_order"]],
  ["attester", { attester: address(4) }, ["index_attestations_attester"]],
  ["schema", { schemaUid: bytes32(2) }, ["index_attestations_schema"]],
  ["attester and schema", { attester: address(4), schemaUid: bytes32(2) }, ["index_attestations_attester", "index_attestations_schema"]],
  // revoked=true seeks the revoked rows only (a page walked every row of its filter before).
  ["recipient, revoked", { recipient: address(3), revoked: true }, ["index_attestations_revoked_recipient"]],
  ["attester, revoked", { attester: address(4), revoked: true }, ["index_attestations_revoked_attester"]],
  ["schema, revoked", { schemaUid: bytes32(2), revoked: true }, ["index_attestations_revoked_schema"]],
  // A narrow window may be read from the time index and its few rows sorted (PostgreSQL does for 100 blocks of 3,000).
  ["schema since until", { schemaUid: bytes32(2), since: 1_100n, until: 1_200n }, ["index_attestations_schema", "index_attestations_time"]],
  ["attester, keyset position", { attester: address(4), after: { blockNumber: 1_500n, logIndex: 1 } }, ["index_attestations_attester"]],
];

function address(n: number): `0x${string}` {
  return `0x${n.toString(16).padStart(40, "0")}`;
}
function bytes32(n: number): `0x${string}` {
  return `0x${n.toString(16).padStart(64, "0")}`;
}

/** 6,000 attestations of 60 attesters, 120 recipients and 12 schemas, two per block. */
async function fillForPlans(store: import("../ports/attestation_index.ts").IndexStore) {
  const events = Array.from({ length: 6_000 }, (_, n) => ({
    kind: "attested" as const, uid: bytes32(1_000_000 + n), recipient: address(n % 120), attester: address(1_000 + (n % 60)), schemaUid: bytes32(n % 12),
    blockNumber: BigInt(1 + Math.floor(n / 2)), logIndex: n % 2,
  }));
  const attestations = events.map((e) => ({
    uid: e.uid, schema: e.schemaUid, time: 1_000n + e.blockNumber, expirationTime: 0n, revocationTime: 0n, refUID: bytes32(0),
    recipient: e.recipient, attester: e.attester, revocable: true, data: "0x01" as const,
  }));
  await store.append(undefined, events, { blockNumber: 3_000n, blockHash: bytes32(3_000) }, { attestations });
}

const plannedQuery = (q: (typeof PLAN_CASES)[number][1], order: "newest" | "oldest") => ({ ...q, toBlock: 3_000n, order, limit: 26 });

describe("the index's queries use an index, never a scan or a sort (issue 37)", () => {
  test("sqlite: EXPLAIN QUERY PLAN", async () => {
    const db = openSqlite(":memory:");
    await fillForPlans(createSqliteIndexStore(db, { chainId: 31337, easAddress: "0xeas" }));
    db.exec("ANALYZE");
    for (const [name, q, indexes] of PLAN_CASES) {
      for (const order of ["newest", "oldest"] as const) {
        const scope = { chainId: 31337, eas: "0xeas" };
        const blocks = { since: q.since === undefined ? undefined : 100n, until: q.until === undefined ? undefined : 200n };
        for (const statement of [indexQuerySql("sqlite", scope, plannedQuery(q, order), blocks), indexQuerySql("sqlite", scope, { ...plannedQuery(q, order), count: true }, blocks)]) {
          const plan = db.query<{ detail: string }, (string | number)[]>(`EXPLAIN QUERY PLAN ${statement.text}`).all(...statement.params).map((r) => r.detail);
          const text = plan.join("\n");
          const context = `${name} (${order}):\n${text}`;
          expect({ context, scan: /\bSCAN index_attestations\b/.test(text) }).toEqual({ context, scan: false });
          expect({ context, sort: text.includes("TEMP B-TREE") }).toEqual({ context, sort: false });
          expect({ context, seeks: indexes.some((i) => new RegExp(`SEARCH index_attestations USING (COVERING )?INDEX ${i} `).test(text)) }).toEqual({ context, seeks: true });
        }
      }
    }
    // Where since and until fall: one seek in the time index.
    const first = firstBlockAtSql("sqlite", { chainId: 31337, eas: "0xeas" }, 1_100n);
    const plan = db.query<{ detail: string }, (string | number)[]>(`EXPLAIN QUERY PLAN ${first.text}`).all(...first.params).map((r) => r.detail).join("\n");
    expect(plan).toMatch(/^SEARCH index_attestations USING COVERING INDEX index_attestations_time \(chain_id=\? AND eas=\? AND time_seconds>\?\)$/);
    db.close();
  });

  test.skipIf(pgSkip !== undefined)("postgres: EXPLAIN", async () => {
    const eas = "0xplans";
    await fillForPlans(await postgres!.indexStore({ chainId: 31337, easAddress: eas }));
    const sql = new SQL(pg!.url);
    try {
      await sql.unsafe("ANALYZE index_attestations");
      for (const [name, q, indexes] of PLAN_CASES) {
        for (const order of ["newest", "oldest"] as const) {
          const blocks = { since: q.since === undefined ? undefined : 100n, until: q.until === undefined ? undefined : 200n };
          const statement = indexQuerySql("postgres", { chainId: 31337, eas }, plannedQuery(q, order), blocks);
          const rows: { "QUERY PLAN": string }[] = await sql.unsafe(`EXPLAIN ${statement.text}`, statement.params);
          const text = rows.map((r) => r["QUERY PLAN"]).join("\n");
          const context = `${name} (${order}):\n${text}`;
          expect({ context, scan: text.includes("Seq Scan") }).toEqual({ context, scan: false });
          const windowed = /using index_attestations_time on index_attestations/.test(text) && q.since !== undefined && q.until !== undefined;
          expect({ context, sort: /^\s*(->\s*)?Sort\b/m.test(text) && !windowed }).toEqual({ context, sort: false });
          expect({ context, seeks: indexes.some((i) => new RegExp(`Index (Only )?Scan( Backward)? using ${i} on index_attestations`).test(text)) }).toEqual({ context, seeks: true });
        }
      }
      const first = firstBlockAtSql("postgres", { chainId: 31337, eas }, 1_100n);
      const plan = (await sql.unsafe(`EXPLAIN ${first.text}`, first.params) as { "QUERY PLAN": string }[]).map((r) => r["QUERY PLAN"]).join("\n");
      expect(plan).toMatch(/Index (Only )?Scan using index_attestations_time on index_attestations/);
      expect(plan).not.toContain("Seq Scan");
    } finally {
      await sql.close();
    }
  });
});

describe("the index's tables of an existing database upgrade in place (issue 34)", () => {
  test("sqlite", async () => {
    const db = openSqlite(":memory:");
    for (const statement of OLD_INDEX_TABLES("INTEGER")) db.exec(statement);
    await expectUpgraded(createSqliteIndexStore(db, { chainId: 31337, easAddress: "0xEAS" }));
    // Opening again changes nothing.
    expect(await createSqliteIndexStore(db, { chainId: 31337, easAddress: "0xeas" }).counts()).toEqual({ attestations: 1, tail: 0 });
    db.close();
  });

  test.skipIf(pgSkip !== undefined)("postgres", async () => {
    const admin = new SQL(pg!.url);
    await admin.unsafe("CREATE DATABASE index_upgrade");
    await admin.close();
    const url = pg!.url.replace(/\/[^/?]+(\?|$)/, "/index_upgrade$1");
    const old = new SQL(url);
    for (const statement of OLD_INDEX_TABLES("BIGINT")) await old.unsafe(statement);
    await old.close();
    const storage = await openPostgresStorage(url);
    try {
      await expectUpgraded(await storage.indexStore({ chainId: 31337, easAddress: "0xEAS" }));
    } finally {
      await storage.close();
    }
  });
});

describe("payments reserved before they named their Idempotency-Key record (decisions §23 with §13)", () => {
  // The payments table as the version before the column made it (valid_before already added), one open payment in it.
  const oldPayments = (int: string) => [
    `CREATE TABLE x402_payments (key TEXT PRIMARY KEY, purpose TEXT NOT NULL, network TEXT NOT NULL, asset TEXT NOT NULL, payer TEXT NOT NULL,
       pay_to TEXT NOT NULL, amount TEXT NOT NULL, account_id TEXT, state TEXT NOT NULL, work_ref TEXT, settlement_tx TEXT, failure_reason TEXT,
       period_start_ms ${int}, period_end_ms ${int}, created_at_ms ${int} NOT NULL, updated_at_ms ${int} NOT NULL, valid_before ${int})`,
    `INSERT INTO x402_payments (key, purpose, network, asset, payer, pay_to, amount, state, created_at_ms, updated_at_ms)
       VALUES ('eip155:1:0xt:0xold', 'witness', 'eip155:1', '0xt', '0xp', '0xq', '10', 'reserved', 1, 1)`,
  ];
  const expectUpgradedPayments = async (storage: Storage) => {
    expect(await storage.payments.find("eip155:1:0xt:0xold")).toMatchObject({ state: "reserved", idempotencyRef: null });
    const reservation = { key: "eip155:1:0xt:0xnew", purpose: "witness" as const, network: "eip155:1", asset: "0xt", payer: "0xp", payTo: "0xq", amount: "10", accountId: null, createdAtMs: 2 };
    expect(await storage.payments.reserve({ ...reservation, idempotencyRef: "ab".repeat(32) })).toBe(true);
    expect((await storage.payments.find(reservation.key))?.idempotencyRef).toBe("ab".repeat(32));
  };

  test("sqlite: the column is added at open, the old row naming none", async () => {
    const path = join(sqliteDir, "payments-before-ref.sqlite");
    const db = new Database(path, { create: true });
    for (const statement of oldPayments("INTEGER")) db.exec(statement);
    db.close();
    const storage = openSqliteStorage(path);
    try {
      await expectUpgradedPayments(storage);
    } finally {
      await storage.close();
    }
  });

  test.skipIf(pgSkip !== undefined)("postgres: the column is added by the migration, the old row naming none", async () => {
    const url = await emptyPostgresDatabase("payments_before_ref");
    const old = new SQL(url);
    for (const statement of oldPayments("BIGINT")) await old.unsafe(statement);
    await old.close();
    const storage = await openPostgresStorage(url);
    try {
      await expectUpgradedPayments(storage);
    } finally {
      await storage.close();
    }
  });
});

/**
 * One signature live on two served chains (decisions §30): its replay records are two, and so are their fee bumps. Chain
 * A's reconciler replaces A's stuck transaction; chain B's transaction of the same signature was dropped from B's pool.
 * B's submission shows B's transaction, never A's replacement; B's reconciler sends B's transaction again (it does not
 * take A's replacement for B's newest, which B's node refuses, and give B's write back), and bumps B's own.
 */
async function oneSignatureOnTwoChains(storage: Storage) {
  const [chainA, chainB] = [31337, 31338];
  const key = `0xtwo-chains-${Math.random()}`;
  const wallet = "0x00000000000000000000000000000000000000aa" as const;
  const signed = (name: string, nonce: number) => ({ txHash: `0x${name.padEnd(64, "0")}` as `0x${string}`, raw: `0x02${name}` as `0x${string}`, wallet, nonce });
  const [txA, txB] = [signed("a0", 5), signed("b0", 9)];
  for (const [chainId, tx] of [[chainA, txA], [chainB, txB]] as const) {
    expect(await storage.replay.claim({ key, chainId, attester: "0xatt", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 0 })).toBe("claimed");
    await storage.replay.markSigned(chainId, key, tx);
    await storage.replay.markSent(chainId, key);
  }
  let now = 0;
  const clock = { nowMs: () => now };
  const tracker = createSubmissionTracker({ records: storage.submissions, random: { bytes: (n: number) => crypto.getRandomValues(new Uint8Array(n)) }, clock });
  const onB = await tracker.open("account:a", chainB, key);
  const status = createSubmissionStatus({ records: storage.submissions, replay: storage.replay, replacements: storage.txReplacements, head: () => Promise.resolve(10n), confirmations: 1 });
  /** One chain's node: the statuses it knows (anything else unknown, its nonce free), the bytes it takes back. */
  const node = (name: string, statuses: Map<string, TxStatus>, ours: (tx: SignedTx) => boolean) => {
    const asked: string[] = [];
    const reader: TxStatusReader = {
      ...NO_BLOCK_READS,
      status: (hash) => Promise.resolve(statuses.get(hash) ?? { status: "not-found" }),
      // Another chain's bytes are refused (their chain id is not this node's).
      rebroadcast: (tx) => Promise.resolve(ours(tx) ? (statuses.set(tx.txHash, { status: "pending" }), "accepted") : "refused"),
      replacement: (tx) => Promise.resolve(void asked.push(tx.txHash)).then(() => signed(`${name}${asked.length}`, tx.nonce)),
    };
    return { reader, asked };
  };
  const a = node("a", new Map([[txA.txHash, { status: "pending" }]]), (tx) => tx.raw.startsWith("0x02a"));
  const b = node("b", new Map(), (tx) => tx.raw.startsWith("0x02b"));
  const reconciler = (chainId: number, txStatus: TxStatusReader) =>
    createSubmissionReconciler({
      chainId, books: [replayBook(storage.replay, chainId)], txStatus, clock, graceMs: 0, lostAfterMs: 600_000,
      replacements: storage.txReplacements, bumpAfterMs: 120_000,
    });
  now = 120_000;
  expect(await reconciler(chainA, a.reader)()).toMatchObject({ bumped: 1, released: 0 });
  expect(a.asked).toEqual([txA.txHash]);
  expect(await status.read(onB)).toMatchObject({ ok: true, value: { state: "sent", txHash: txB.txHash, feeBumps: 0 } });
  // B's transaction, dropped from B's pool with its nonce free, is sent again: B's write is not given back.
  expect(await reconciler(chainB, b.reader)()).toMatchObject({ rebroadcast: 1, released: 0, bumped: 0 });
  expect((await storage.replay.find(chainB, key))?.state).toBe("sent");
  // Pending past the threshold on B: B's own transaction is replaced, once, whatever A's count says.
  now = 240_000;
  expect(await reconciler(chainB, b.reader)()).toMatchObject({ bumped: 1, released: 0 });
  expect(b.asked).toEqual([txB.txHash]);
  expect(await status.read(onB)).toMatchObject({ ok: true, value: { state: "replaced", txHash: signed("b1", 9).txHash, feeBumps: 1 } });
}

describe("one signature live on two chains: each chain's fee bumps are its own (decisions §30)", () => {
  test("sqlite", async () => {
    const storage = openSqliteStorage(":memory:");
    try {
      await oneSignatureOnTwoChains(storage);
    } finally {
      await storage.close();
    }
  });

  test.skipIf(pgSkip !== undefined)("postgres", async () => {
    await oneSignatureOnTwoChains(postgres!);
  });
});

/**
 * Fee bumps stored before they named their chain: the relays' take the chain of the one replay record of their key,
 * wallet and nonce; one two records match, and the sponsored writes' (ids one chain's each), stay unnamed and are
 * listed for every chain, as before.
 */
const OLD_TX_REPLACEMENTS = `CREATE TABLE tx_replacements (book TEXT NOT NULL, id TEXT NOT NULL, tx_hash TEXT NOT NULL, raw_tx TEXT NOT NULL,
  wallet TEXT NOT NULL, tx_nonce BIGINT NOT NULL, created_at_ms BIGINT NOT NULL, PRIMARY KEY (book, id, tx_hash))`;
const OLD_BUMPS = `INSERT INTO tx_replacements VALUES
  ('delegated_attestations', '0xone', '0xbump-one', '0x02', '0xw', 4, 1),
  ('delegated_attestations', '0xboth', '0xbump-both', '0x02', '0xw', 6, 2),
  ('sponsored_writes', 'w-1', '0xbump-w', '0x02', '0xw', 8, 3)`;
const OLD_REPLAY_ROWS = `INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, tx_hash, created_at_ms, raw_tx, wallet, tx_nonce) VALUES
  ('0xone', 31338, '0xa', '0', 2000000000, 'sent', '0xt1', 1, '0x02', '0xw', 4),
  ('0xboth', 31337, '0xa', '1', 2000000000, 'sent', '0xt2', 1, '0x02', '0xw', 6),
  ('0xboth', 31338, '0xa', '1', 2000000000, 'sent', '0xt3', 1, '0x02', '0xw', 6)`;

async function expectBumpsNamed(storage: Storage) {
  const hashes = async (book: string, chainId: number, id: string) => (await storage.txReplacements.list(book, chainId, id)).map((r) => r.tx.txHash);
  expect([await hashes("delegated_attestations", 31338, "0xone"), await hashes("delegated_attestations", 31337, "0xone")]).toEqual([["0xbump-one"], []]);
  expect([await hashes("delegated_attestations", 31337, "0xboth"), await hashes("delegated_attestations", 31338, "0xboth")]).toEqual([["0xbump-both"], ["0xbump-both"]]);
  expect(await hashes("sponsored_writes", 8453, "w-1")).toEqual(["0xbump-w"]);
}

describe("fee bumps stored before they named their chain (decisions §30)", () => {
  test("sqlite: named at the upgrade from their replay record; the ambiguous and the sponsored writes' listed for every chain", async () => {
    const path = join(sqliteDir, "bumps-before-chains.sqlite");
    const db = openSqlite(path);
    db.exec(OLD_TX_REPLACEMENTS);
    db.exec(OLD_BUMPS);
    db.exec(OLD_REPLAY_ROWS);
    db.close();
    const storage = openSqliteStorage(path);
    try {
      await expectBumpsNamed(storage);
    } finally {
      await storage.close();
    }
  });

  test.skipIf(pgSkip !== undefined)("postgres: named at the upgrade from their replay record; the ambiguous and the sponsored writes' listed for every chain", async () => {
    const url = await emptyPostgresDatabase("bumps_before_chains");
    const made = await openPostgresStorage(url);
    await made.close();
    const old = new SQL(url);
    await old.unsafe("DROP TABLE tx_replacements");
    await old.unsafe(OLD_TX_REPLACEMENTS);
    await old.unsafe(OLD_BUMPS);
    await old.unsafe(OLD_REPLAY_ROWS);
    await old`DELETE FROM schema_migrations`;
    await old.close();
    const upgraded = await openPostgresStorage(url);
    try {
      await expectBumpsNamed(upgraded);
      // An old instance still running in the rolling restart writes and reads without the column: its statements work,
      // and its bump, naming no chain, is listed for every chain, as the old version lists it.
      const stillOld = new SQL(url);
      try {
        await stillOld`INSERT INTO tx_replacements (book, id, tx_hash, raw_tx, wallet, tx_nonce, created_at_ms)
          VALUES ('delegated_attestations', '0xone', '0xbump-old', '0x02', '0xw', 4, 9) ON CONFLICT DO NOTHING`;
        expect((await stillOld`SELECT tx_hash FROM tx_replacements WHERE book = 'delegated_attestations' AND id = '0xone'
          ORDER BY created_at_ms, tx_hash`).map((r: { tx_hash: string }) => r.tx_hash)).toEqual(["0xbump-one", "0xbump-old"]);
      } finally {
        await stillOld.close();
      }
      for (const chainId of [31337, 31338]) {
        expect((await upgraded.txReplacements.list("delegated_attestations", chainId, "0xone")).map((r) => r.tx.txHash)).toContain("0xbump-old");
      }
    } finally {
      await upgraded.close();
    }
  });

  test("sqlite: the naming statement's plan has no correlated subquery and reads replay by its key", () => {
    const db = openSqlite(":memory:");
    db.exec(OLD_TX_REPLACEMENTS);
    db.exec("ALTER TABLE tx_replacements ADD COLUMN chain_id INTEGER");
    const plan = uncorrelatedSqlitePlan(db, TX_REPLACEMENTS_CHAIN_BACKFILL);
    // It runs again at every later upgrade (PostgreSQL): the replay records of unnamed bumps' keys only, by its index.
    expect(plan.filter((detail) => /SCAN replay/i.test(detail))).toEqual([]);
    db.close();
  });

  test("the naming statement names the relays' bumps only: the book the relays' reconciler stores them under", () => {
    expect([...new Set([...TX_REPLACEMENTS_CHAIN_BACKFILL.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]))]).toEqual([RELAY_BOOK]);
  });

  test.skipIf(pgSkip !== undefined)("postgres: the naming statement's plan has no subplan run per row", async () => {
    await expectNoPostgresSubplan(TX_REPLACEMENTS_CHAIN_BACKFILL);
  });
});
