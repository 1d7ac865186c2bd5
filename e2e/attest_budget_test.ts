/**
 * What one delegated attestation costs, counted (never timed; issue 43): JSON-RPC calls by method and SQL statements
 * per write, against the budgets below, with the default configuration (index follower, reconciler, webhooks,
 * submission records and metrics on). N sequential writes of the public relay, each from a fresh attester and each
 * followed by the read that must list it (decisions §21), on a real Anvil with the real EAS: a chain mining a block a
 * second (`--block-time 1`) and one mining on arrival. Both are counted: the follower's poll that takes the write into
 * the index comes with that read.
 *
 * The follower does not poll on a timer here (the harness's `INDEX_POLL_MS`), so every call counted is one the writes
 * and their reads caused. The webhook round's timer is set to its longest: a round then runs only when the index
 * ingests. What the machine's speed could move is held still: the fees the relay keeps age by a clock the test moves
 * one second a write ({@link FEE_AGE_PER_WRITE_MS}), not by the wall clock (a write-and-read cycle slower than the fees'
 * 2 s broke all four budgets before: a fee read every write), expired rows are pruned hourly, not every minute, and the
 * node that mines on arrival has its sync sends waited for, not given up on after 100 ms. What is left to the chain is
 * when a block of the 1 s chain comes: a block later than its cadence said costs one more receipt read, and the budgets
 * keep room for it. The submissions' minute of housekeeping (a few statements) is covered by the SQL budgets' room.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";
import { postDelegatedAttest, signedReviewBody } from "./support/review_signer.ts";

/** Writes counted per chain. */
const WRITES = 8;

/**
 * How much older the relay's kept fees get with each write (the test's fee clock): at 1 s blocks, what a write and its
 * read take (a block); on a node mining on arrival, a quarter second, more than they take (about 15 ms here), so its
 * counts are bounds.
 */
const FEE_AGE_PER_WRITE_MS = { blockTime: 1_000, automine: 250 } as const;

/** The clock the service's kept fees age by; {@link countWrites} moves it `perWriteMs` a write. */
function feeClock(perWriteMs: number) {
  let now = 0;
  return { now: () => now, advance: () => void (now += perWriteMs) };
}

/** The service's options that hold still what the machine's speed would move (see above). */
function stackOptions(fees: ReturnType<typeof feeClock>) {
  return { feeClock: fees.now, pruneIntervalMs: 3_600_000, env: { WEBHOOK_POLL_MS: "60000" } };
}

/**
 * The budgets, per write (averages over {@link WRITES}). Measured at their introduction (issue 43), each write read
 * back: 1 s blocks 11.3 calls (the write's own 6.3: the nonce and balance reads and the simulation in one batch, the
 * fees when their 2 s are up, the send, one receipt read when its block is due; the follower's poll for the read 5) and
 * 56–59 statements; on arrival 9.0 calls (the send answered with its receipt) and 56. Writes in a row, then one read:
 * 7.75 and 5.5 calls, 34–35 statements. Before: 19.4 and 10 calls a write, 43–44 statements without the read. The room
 * above them was what the clock may move: the fees read again every 2 s (two calls), a block later than its cadence said
 * (one more receipt read), a minute's pruning (statements); since the fees age by the test's clock and pruning is
 * hourly here, only the late block is left to it. The second pass (issue 43) took out the
 * webhook round a write's poll set off twice (the step that reached the head and the poll it completed each nudged it)
 * the read of the submission record its `submission.settled` made, and the public relay's "told" mark (nobody is told
 * of its submissions): 44–46 and 43.75 statements read back, 25.75 and 24.5 in a row (a write alone 15–16). The
 * fourth pass took out the fee bumps' read when none can have been made (a relay settling within half the bump delay):
 * a write alone 14 statements, 23–24 in a row with the read, 43–45 read back. The tenth look: the follower's SQLite
 * append stores an attestation with its record in one statement (44, 41.75; 23, 22), and a poll with new blocks checks
 * its checkpoint by the parent hash of a block it reads anyway (one `eth_getBlockByNumber` fewer a poll): 10.25 calls
 * read back at 1 s blocks, 8 on arrival; 7.5 and 5.375 in a row. The eleventh: the write's block, seen mined in its
 * receipt, stands for the head of the poll its read sets off (no `eth_blockNumber`): 9.25 and 7 read back, 7.375 and
 * 5.25 in a row; the write's record is taken from what the relay sent (no `getAttestation` `eth_call` for it): 8.25 and
 * 6; the fees' gas price is renewed by each receipt's `effectiveGasPrice` (only the priority fee is read every 2 s):
 * 7.75 read back at 1 s blocks, 6.75 in a row. Issue 43's goal (at most 8 at 1 s blocks, the write listed by its
 * instance's next read) holds; the budgets keep the room they had for a block later than its cadence. A webhook round
 * on SQLite consumes its outbox rows in one statement: 22.375 and 21.125 statements a write in a row (23 and 22). The
 * twelfth look: SQLite's gas charge adds to the window and the shares by conditional upserts, without reading them
 * first (as PostgreSQL's does): 43 and 40.75 read back, 21.375 and 20.125 in a row (a write alone 13); each SQL
 * budget one lower, the same room.
 */
const BUDGET = {
  blockTime: { rpcCalls: 8.5, sql: 49 },
  automine: { rpcCalls: 7, sql: 47 },
  /** Writes in a row, then one read: the follower's poll is shared (issue 28 left a write at 5 calls on a devnet). */
  blockTimeInARow: { rpcCalls: 8, sql: 25 },
  automineInARow: { rpcCalls: 6, sql: 25 },
} as const;

/**
 * What each block beyond one a write adds, when the machine is slower than the chain (a write and its read spanning
 * more than a block): the follower reads each new block within the confirmations' depth for its hash and time (one
 * call, in its poll's batch) and keeps it, then lets it go (statements); a write that waits longer reads its receipt
 * once more a block. Measured with 2.1 s and 4.2 s held before each write: 1.17 and 1.06 calls, 3.2 and 2.4 statements
 * a block beyond one a write. The budgets grow by these per such block the chain made while the writes were counted, so
 * a count never depends on the machine's speed; at this suite's pace the chain makes about one block a write.
 */
const PER_EXTRA_BLOCK = { rpcCalls: 1.25, sql: 3.5 } as const;

/** A budget, grown by what the blocks beyond one a write add ({@link PER_EXTRA_BLOCK}). */
function allowed(budget: { readonly rpcCalls: number; readonly sql: number }, counted: Counted) {
  const extra = Math.max(0, counted.blocks - WRITES) / WRITES;
  return { rpcCalls: budget.rpcCalls + extra * PER_EXTRA_BLOCK.rpcCalls, sql: budget.sql + extra * PER_EXTRA_BLOCK.sql };
}

type Counted = { rpcCalls: number; byMethod: Record<string, number>; sql: number; perWriteSql: number[]; blocks: number };

/** The devnet's newest block, asked past the service (not counted). */
async function head(stack: Stack): Promise<number> {
  const answer = await fetch(stack.devnet.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
  });
  return Number(((await answer.json()) as { result: string }).result);
}

/** Sends {@link WRITES} delegated reviews one after the other and counts what they cost; each is listed right after. */
async function countWrites(stack: Stack, fees: ReturnType<typeof feeClock>, subject: string, readEach = true): Promise<Counted> {
  const target = { chainId: stack.service.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids };
  const bodies = await Promise.all(Array.from({ length: WRITES }, () =>
    signedReviewBody(target, generatePrivateKey() as Hex, {
      data: { subject, version: "1", ratingValue: 5, reviewBody: "counted", screenshotUrls: [], proofs: [] },
    })));
  // Three writes first: their one-off work (the fee cache, the schema reads, learning when blocks come) is not what a
  // write costs.
  for (let i = 0; i < 3; i++) {
    fees.advance();
    expect((await postDelegatedAttest(stack.baseUrl, await signedReviewBody(target, generatePrivateKey() as Hex))).status).toBe(200);
  }
  await stack.sync();
  stack.rpc.reset();
  const sqlNow = () => stack.service.sqlStatements() ?? Number.NaN;
  const sql0 = sqlNow();
  const perWriteSql: number[] = [];
  const uidsWritten: string[] = [];
  const listedBefore = await listed(stack, subject);
  const head0 = await head(stack);
  for (const [i, body] of bodies.entries()) {
    const before = sqlNow();
    fees.advance();
    const written = await postDelegatedAttest(stack.baseUrl, body);
    expect(written.status).toBe(200);
    uidsWritten.push(String(written.body.uid).toLowerCase());
    if (!readEach && i < WRITES - 1) {
      perWriteSql.push(sqlNow() - before);
      continue;
    }
    // The writer's next read lists the write (decisions §21): the poll that takes the write into the index comes with
    // it (issue 43), so the write is counted with the read.
    const list = await fetch(`${stack.baseUrl}/v1/attestations?subject=${encodeURIComponent(subject)}&schema=user-review&limit=50`);
    expect(list.status).toBe(200);
    const uids = ((await list.json()) as { items: { attestation: { uid: string } }[] }).items.map((i) => i.attestation.uid);
    expect(uids).toEqual(expect.arrayContaining(uidsWritten));
    expect(uids.length).toBe(uidsWritten.length + listedBefore);
    perWriteSql.push(sqlNow() - before);
  }
  const blocks = await head(stack) - head0;
  const calls = [...stack.rpc.trips(), ...stack.rpc.followerTrips()].flat();
  const byMethod: Record<string, number> = {};
  for (const method of calls) byMethod[method] = (byMethod[method] ?? 0) + 1;
  return { rpcCalls: calls.length / WRITES, byMethod, sql: (sqlNow() - sql0) / WRITES, perWriteSql, blocks };
}

/** How many attestations the list names for `subject` now. */
async function listed(stack: Stack, subject: string): Promise<number> {
  const list = await fetch(`${stack.baseUrl}/v1/attestations?subject=${encodeURIComponent(subject)}&schema=user-review&limit=50`);
  return ((await list.json()) as { items: unknown[] }).items.length;
}

function report(name: string, counted: Counted) {
  const perWrite = Object.entries(counted.byMethod).sort((a, b) => b[1] - a[1]).map(([m, n]) => `${m} ${n / WRITES}`).join(", ");
  console.log(`${name}: ${counted.rpcCalls} JSON-RPC calls per write (${perWrite}); ${counted.sql} SQL statements per write (${counted.perWriteSql.join(" ")}); ${counted.blocks} blocks`);
}

describe("a chain with a block a second", () => {
  let stack: Stack;
  const fees = feeClock(FEE_AGE_PER_WRITE_MS.blockTime);
  beforeAll(async () => {
    stack = await startStack({ devnet: { blockTime: 1 }, ...stackOptions(fees) });
  });
  afterAll(async () => await stack?.stop());

  test(`a delegated attestation costs at most ${BUDGET.blockTime.rpcCalls} JSON-RPC calls and ${BUDGET.blockTime.sql} SQL statements`, async () => {
    const counted = await countWrites(stack, fees, "did:web:budget-blocks.example");
    report("1 s blocks", counted);
    const limit = allowed(BUDGET.blockTime, counted);
    expect(counted.rpcCalls).toBeLessThanOrEqual(limit.rpcCalls);
    expect(counted.sql).toBeLessThanOrEqual(limit.sql);
  }, 120_000);

  test(`writes in a row, then one read that lists them all: at most ${BUDGET.blockTimeInARow.rpcCalls} JSON-RPC calls and ${BUDGET.blockTimeInARow.sql} SQL statements a write`, async () => {
    const counted = await countWrites(stack, fees, "did:web:budget-blocks-row.example", false);
    report("1 s blocks, in a row", counted);
    const limit = allowed(BUDGET.blockTimeInARow, counted);
    expect(counted.rpcCalls).toBeLessThanOrEqual(limit.rpcCalls);
    expect(counted.sql).toBeLessThanOrEqual(limit.sql);
  }, 120_000);
});

describe("a chain mining on arrival", () => {
  let stack: Stack;
  const fees = feeClock(FEE_AGE_PER_WRITE_MS.automine);
  beforeAll(async () => {
    // Sync sends are waited for: on a loaded machine an answer later than the 100 ms grace would send the write down
    // another path (the hash asked about first), and the count would depend on the machine's speed.
    stack = await startStack({ ...stackOptions(fees), sendSyncGraceMs: 30_000 });
  });
  afterAll(async () => await stack?.stop());

  test(`a delegated attestation costs at most ${BUDGET.automine.rpcCalls} JSON-RPC calls and ${BUDGET.automine.sql} SQL statements`, async () => {
    const counted = await countWrites(stack, fees, "did:web:budget-automine.example");
    report("automine", counted);
    const limit = allowed(BUDGET.automine, counted);
    expect(counted.rpcCalls).toBeLessThanOrEqual(limit.rpcCalls);
    expect(counted.sql).toBeLessThanOrEqual(limit.sql);
  }, 120_000);

  test(`writes in a row, then one read that lists them all: at most ${BUDGET.automineInARow.rpcCalls} JSON-RPC calls and ${BUDGET.automineInARow.sql} SQL statements a write`, async () => {
    const counted = await countWrites(stack, fees, "did:web:budget-automine-row.example", false);
    report("automine, in a row", counted);
    const limit = allowed(BUDGET.automineInARow, counted);
    expect(counted.rpcCalls).toBeLessThanOrEqual(limit.rpcCalls);
    expect(counted.sql).toBeLessThanOrEqual(limit.sql);
  }, 120_000);
});
