import { describe, expect, test } from "bun:test";
import type { ExplorerTx, ExplorerTxList, TxReceiptFacts, TxReceiptReader } from "../../ports/interactions.ts";
import { budgetedExplorers, createFindInteraction, createTxProofs, keptReceipts, readInteractionQuery } from "./interactions.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { clientShareOf } from "../discovery/mod.ts";
import { fakeClock } from "../../ports/fakes/mod.ts";

const WALLET = "0x14dc79964da2c08b23698b3d3cc7ca32193d9955";
const CONTRACT = "0x1111111111111111111111111111111111111111";
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

function reader(receipts: Record<string, TxReceiptFacts | null>, options: { failing?: boolean; head?: () => number; time?: (blockNumber: number) => number } = {}) {
  const asked: string[] = [];
  const head = options.head;
  const r: TxReceiptReader = {
    chainId: 31337,
    receipt(txHash) {
      asked.push(txHash);
      if (options.failing) return Promise.resolve({ ok: false, reason: "rpc-error" });
      return Promise.resolve({ ok: true, value: receipts[txHash] ?? null });
    },
    blockTime: (blockNumber) =>
      Promise.resolve(options.failing ? { ok: false, reason: "rpc-error" } : { ok: true, value: options.time?.(blockNumber) ?? 1_700_000_000 + blockNumber }),
    ...(head === undefined ? {} : { head: () => Promise.resolve({ ok: true as const, value: head() }) }),
  };
  return { reader: r, asked };
}

function explorer(txs: readonly ExplorerTx[] | "down") {
  const asked: { apiUrl: string; source: string }[] = [];
  const e: ExplorerTxList = {
    txlist(apiUrl, _address, source) {
      asked.push({ apiUrl, source });
      return Promise.resolve(txs === "down" ? { ok: false, reason: "unavailable" } : { ok: true, value: txs });
    },
  };
  return { explorer: e, asked };
}

const tx = (n: number, extra: Partial<ExplorerTx> = {}): ExplorerTx => ({ hash: hash(n), from: WALLET, to: CONTRACT, failed: false, blockNumber: n, ...extra });
const good = (n: number): TxReceiptFacts => ({ from: WALLET, to: CONTRACT, status: "success", blockNumber: n });
const query = { chainId: 31337, wallet: WALLET, contract: CONTRACT };

describe("findInteraction", () => {
  test("the newest candidate the chain confirms: verified with its hash and block; the explorer's word alone is not enough", async () => {
    // The explorer lists 3 (newest first after sorting): 9 is not mined, 7 reverted on chain, 5 is good.
    const chain = reader({ [hash(9)]: null, [hash(7)]: { ...good(7), status: "reverted" }, [hash(5)]: good(5) });
    const find = createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => "https://api.explorer.example/api", explorers: explorer([tx(5), tx(9), tx(7)]).explorer });
    expect(await find(query)).toEqual({ status: "verified", txHash: hash(5), blockNumber: 5 });
    expect(chain.asked).toEqual([hash(9), hash(7), hash(5)]);
  });

  test("candidates to another contract, from another sender or failed are not asked about; a receipt naming another sender does not count", async () => {
    const chain = reader({ [hash(4)]: { ...good(4), from: CONTRACT } });
    const list = [tx(1, { to: WALLET }), tx(2, { from: CONTRACT }), tx(3, { failed: true }), tx(4)];
    const find = createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => "https://x.example", explorers: explorer(list).explorer });
    expect(await find(query)).toEqual({ status: "none" });
    expect(chain.asked).toEqual([hash(4)]);
  });

  test("not-checked, never an error: a chain not read, no explorer, an explorer down, a chain that fails", async () => {
    const chain = reader({});
    const any = explorer([tx(1)]).explorer;
    expect(await createFindInteraction({ readerFor: () => undefined, operatorExplorer: () => "https://x.example", explorers: any })(query))
      .toEqual({ status: "not-checked", reason: "chain-not-read" });
    expect(await createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => undefined, explorers: any })(query))
      .toEqual({ status: "not-checked", reason: "no-explorer" });
    expect(await createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => "https://x.example", explorers: explorer("down").explorer })(query))
      .toEqual({ status: "not-checked", reason: "explorer-failed" });
    expect(await createFindInteraction({ readerFor: () => reader({}, { failing: true }).reader, operatorExplorer: () => "https://x.example", explorers: any })(query))
      .toEqual({ status: "not-checked", reason: "chain-failed" });
  });

  test("the operator's explorer wins; the embed's is used, as untrusted, only when the operator named none", async () => {
    const chain = reader({});
    const e = explorer([]);
    await createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => "https://op.example/api", explorers: e.explorer })({ ...query, explorer: "https://embed.example/api" });
    await createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => undefined, explorers: e.explorer })({ ...query, explorer: "https://embed.example/api" });
    expect(e.asked).toEqual([{ apiUrl: "https://op.example/api", source: "operator" }, { apiUrl: "https://embed.example/api", source: "embed" }]);
  });

  test("the query: chain as an id or CAIP-2, addresses, an https explorer", () => {
    expect(readInteractionQuery({ chain: "eip155:8453", wallet: WALLET, contract: CONTRACT })).toEqual({ ok: true, value: { chainId: 8453, wallet: WALLET, contract: CONTRACT, explorer: undefined } });
    expect(readInteractionQuery({ chain: "0", wallet: WALLET, contract: CONTRACT }).ok).toBe(false);
    expect(readInteractionQuery({ chain: "1", wallet: "x", contract: CONTRACT }).ok).toBe(false);
    expect(readInteractionQuery({ chain: "1", wallet: WALLET, contract: CONTRACT, explorer: "http://x.example" }).ok).toBe(false);
  });
});

describe("txProofs", () => {
  test("a receipt is read once and kept; not mined is NOT_FOUND and asked again; other chains UNSUPPORTED_CHAIN", async () => {
    const chain = reader({ [hash(1)]: good(3) });
    const kept = keptReceipts(chain.reader);
    const proofs = createTxProofs({ readerFor: (id) => id === 31337 ? kept : undefined });
    const first = await proofs(31337, hash(1).toUpperCase().replace("0X", "0x"));
    expect(first).toEqual({ ok: true, value: { chain: "eip155:31337", txHash: hash(1), from: WALLET, to: CONTRACT, status: "success", blockNumber: 3, blockTime: 1_700_000_003 } });
    await proofs(31337, hash(1));
    expect(chain.asked).toEqual([hash(1)]);
    expect((await proofs(31337, hash(2))).ok).toBe(false);
    await proofs(31337, hash(2));
    expect(chain.asked).toEqual([hash(1), hash(2), hash(2)]);
    expect(await proofs(1, hash(1))).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    expect(await proofs(31337, "0x12")).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await createTxProofs({ readerFor: () => reader({}, { failing: true }).reader })(31337, hash(1))).toMatchObject({ ok: false, code: "RPC_ERROR" });
  });

  test("a receipt less deep than the chain's confirmations is answered but not kept: a reorganisation that takes it back is NOT_FOUND at the next ask", async () => {
    let head = 10;
    const receipts: Record<string, TxReceiptFacts | null> = { [hash(1)]: good(3) };
    const chain = reader(receipts, { head: () => head });
    const proofs = createTxProofs({ readerFor: () => keptReceipts(chain.reader, { confirmations: 12 }) });
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: true, value: { blockNumber: 3, status: "success" } });
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: true, value: { blockNumber: 3 } });
    expect(chain.asked).toEqual([hash(1), hash(1)]);
    // Taken back before it was 12 deep: the service says so (before, it was kept at first sight and still answered).
    receipts[hash(1)] = null;
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: false, code: "NOT_FOUND" });
    // Mined again, now 12 under the head: read once more, then kept.
    receipts[hash(1)] = good(4);
    head = 16;
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: true, value: { blockNumber: 4 } });
    await proofs(31337, hash(1));
    expect(chain.asked).toEqual([hash(1), hash(1), hash(1), hash(1)]);
  });

  test("a block's time read less deep than the confirmations is not kept: a block reorganised at the same height lends the proof its own time", async () => {
    // The time was kept at first sight by block number: after a reorganisation re-mined the transaction at the same
    // height a day later, the settled proof kept the old block's time for good (and a review's "mined after" check with it).
    let head = 10;
    let shift = 0;
    const chain = reader({ [hash(1)]: good(3) }, { head: () => head, time: (n) => 1_700_000_000 + n + shift });
    const kept = keptReceipts(chain.reader, { confirmations: 12 });
    const proofs = createTxProofs({ readerFor: () => kept });
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: true, value: { blockNumber: 3, blockTime: 1_700_000_003 } });
    shift = 86_400;
    head = 16;
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: true, value: { blockNumber: 3, blockTime: 1_700_086_403 } });
    // Settled now: kept, with the chain's time.
    shift = 0;
    expect(await proofs(31337, hash(1))).toMatchObject({ ok: true, value: { blockTime: 1_700_086_403 } });
    expect(chain.asked).toEqual([hash(1), hash(1)]);
  });

  test("a proof costs one head read: the block's time takes the receipt's judgement, settled or not", async () => {
    let heads = 0;
    let head = 10;
    const chain = reader({ [hash(1)]: good(3) }, { head: () => (heads++, head) });
    const kept = keptReceipts(chain.reader, { confirmations: 12 });
    const proofs = createTxProofs({ readerFor: () => kept });
    await proofs(31337, hash(1));
    expect(heads).toBe(1);
    head = 16;
    await proofs(31337, hash(1));
    expect(heads).toBe(2);
  });

  test("with confirmations but a reader that cannot tell the head, no receipt is kept", async () => {
    const chain = reader({ [hash(1)]: good(1) });
    const kept = keptReceipts(chain.reader, { confirmations: 1 });
    expect(await kept.receipt(hash(1))).toEqual({ ok: true, value: { ...good(1), settled: false } });
    await kept.receipt(hash(1));
    expect(chain.asked).toEqual([hash(1), hash(1)]);
  });
});

describe("what is kept", () => {
  test("answers are kept for freshMs (not-checked a sixth of it); asking again spends neither the explorer nor the chain", async () => {
    let now = 1_000_000;
    const chain = reader({ [hash(5)]: good(5) });
    const e = explorer([tx(5)]);
    const find = createFindInteraction({
      readerFor: () => keptReceipts(chain.reader),
      operatorExplorer: () => "https://x.example",
      explorers: e.explorer,
      keep: { clock: { nowMs: () => now }, freshMs: 60_000 },
    });
    await find(query);
    await find(query);
    expect([e.asked.length, chain.asked.length]).toEqual([1, 1]);
    now += 60_001;
    await find(query);
    expect(e.asked.length).toBe(2);
    const down = explorer("down");
    const failing = createFindInteraction({ readerFor: () => chain.reader, operatorExplorer: () => "https://x.example", explorers: down.explorer, keep: { clock: { nowMs: () => now }, freshMs: 60_000 } });
    await failing(query);
    now += 10_001;
    await failing(query);
    expect(down.asked.length).toBe(2);
  });

  test("answers that asked nothing are not kept: a flood of chains not read takes no turn and pushes out no kept answer", async () => {
    const chain = reader({ [hash(5)]: good(5) });
    const e = explorer([tx(5)]);
    let turns = 0;
    const find = createFindInteraction({
      readerFor: (chainId) => (chainId === 31337 ? keptReceipts(chain.reader) : undefined),
      operatorExplorer: () => "https://x.example",
      explorers: e.explorer,
      keep: { clock: { nowMs: () => 0 }, freshMs: 60_000, maxEntries: 2 },
      admit: () => (turns++, { allowed: true }),
    });
    expect(await find(query)).toMatchObject({ status: "verified" });
    for (let i = 0; i < 10; i++) expect(await find({ ...query, chainId: 900_000 + i })).toEqual({ status: "not-checked", reason: "chain-not-read" });
    // Before, each of those was kept (two entries here, 10,000 in the service) and the verified answer was gone.
    expect(await find(query)).toMatchObject({ status: "verified" });
    expect([e.asked.length, turns]).toEqual([1, 1]);
  });

  test("the embed's explorer is not part of the key when the operator's is the one asked", async () => {
    const chain = reader({ [hash(5)]: good(5) });
    const e = explorer([tx(5)]);
    const find = createFindInteraction({ readerFor: () => keptReceipts(chain.reader), operatorExplorer: () => "https://x.example", explorers: e.explorer, keep: { clock: { nowMs: () => 0 }, freshMs: 60_000 } });
    for (let i = 0; i < 5; i++) await find({ ...query, explorer: `https://embed${i}.example/api` });
    expect(e.asked).toEqual([{ apiUrl: "https://x.example", source: "operator" }]);
  });

  test("a verified answer on a receipt not yet deep enough is not kept: once a reorganisation takes it back, the next ask says none", async () => {
    const receipts: Record<string, TxReceiptFacts | null> = { [hash(5)]: good(5) };
    const chain = reader(receipts, { head: () => 6 });
    const e = explorer([tx(5)]);
    const find = createFindInteraction({ readerFor: () => keptReceipts(chain.reader, { confirmations: 12 }), operatorExplorer: () => "https://x.example", explorers: e.explorer, keep: { clock: { nowMs: () => 0 }, freshMs: 3_600_000 } });
    expect(await find(query)).toMatchObject({ status: "verified", txHash: hash(5) });
    receipts[hash(5)] = null;
    expect(await find(query)).toEqual({ status: "none" });
  });

  test("keptReceipts: a mined receipt and a block time are read once; a transaction not mined is asked again", async () => {
    const chain = reader({ [hash(1)]: good(1) });
    const kept = keptReceipts(chain.reader);
    await kept.receipt(hash(1));
    await kept.receipt(hash(1));
    await kept.receipt(hash(2));
    await kept.receipt(hash(2));
    expect(chain.asked).toEqual([hash(1), hash(2), hash(2)]);
    expect(await kept.blockTime(4)).toEqual({ ok: true, value: 1_700_000_004 });
  });
});

describe("the embed's explorers under the discovery budget", () => {
  test("counted per registrable domain: subdomains and a trailing dot share one budget; the operator's are not counted", async () => {
    const e = explorer([]);
    const budget = budgetedExplorers(e.explorer, { domainRate: createRateLimiter({ nowMs: () => 0 }, { capacity: 2, perMinute: 2 }) });
    const asks = ["https://a0.victim.example/api", "https://a0.victim.example./api", "https://a1.victim.example/api", "https://victim.example/api"];
    const answers = [];
    for (const url of asks) answers.push(await budget.txlist(url, WALLET, "embed"));
    // Before, each of the four host names had a budget of its own: all four were fetched.
    expect(answers.map((a) => a.ok)).toEqual([true, true, false, false]);
    expect(e.asked.map((a) => a.apiUrl)).toEqual(asks.slice(0, 2));
    expect((await budget.txlist("https://other.example/api", WALLET, "embed")).ok).toBe(true);
    for (let i = 0; i < 5; i++) expect((await budget.txlist("https://a0.victim.example/api", WALLET, "operator")).ok).toBe(true);
  });

  test("each client may spend a third of a domain's budget: one client's flood of made-up wallets and subdomains leaves it to the others", async () => {
    const clock = fakeClock(0);
    const share = clientShareOf(30);
    const asked: string[] = [];
    // The real explorer lists the real user's transaction; any other wallet has none.
    const upstream: ExplorerTxList = {
      txlist(apiUrl, address) {
        asked.push(apiUrl);
        return Promise.resolve({ ok: true, value: address === WALLET ? [tx(7)] : [] });
      },
    };
    const find = createFindInteraction({
      readerFor: (chainId) => (chainId === 31337 ? reader({ [hash(7)]: good(7) }).reader : undefined),
      operatorExplorer: () => undefined,
      explorers: budgetedExplorers(upstream, {
        domainRate: createRateLimiter(clock, { capacity: 30, perMinute: 30 }),
        clientShare: createRateLimiter(clock, { capacity: share, perMinute: share }),
      }),
      keep: { clock, freshMs: 3_600_000 },
      admit: createRateLimiter(clock, { capacity: 60, perMinute: 60 }).take,
    });
    const madeUp = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
    // One client, well under its 60 proof reads a minute: 30 made-up wallets at 30 made-up subdomains of the explorer.
    const flood = [];
    for (let i = 1; i <= 30; i++) flood.push(await find({ ...query, wallet: madeUp(i), explorer: `https://x${i}.scan.example/api` }, "203.0.113.7"));
    // Its share (10) was asked; the rest refused to it alone, with nothing fetched (before: all 30, the domain's whole budget).
    expect(flood.filter((a) => a.status === "none")).toHaveLength(10);
    expect(flood.slice(10).every((a) => a.status === "not-checked" && a.reason === "explorer-failed")).toBe(true);
    expect(asked).toHaveLength(10);
    // Its own check of the real user is refused as well (its share is spent), and that refusal is its alone: not kept.
    const real = { ...query, explorer: "https://api.scan.example/api" };
    expect(await find(real, "203.0.113.7")).toEqual({ status: "not-checked", reason: "explorer-failed" });
    // Another client is still served by the real explorer (before: not-checked, the domain's budget spent by the flood).
    expect(await find(real, "198.51.100.9")).toEqual({ status: "verified", txHash: hash(7), blockNumber: 7 });
    expect(asked).toHaveLength(11);
  });
});
