/**
 * A new deployment catching up (issue 45 item 6): a fresh index reads a history of `multiAttest` batches from block 0
 * (`START_BLOCK=0`) on SQLite (a file) and on PostgreSQL (a fresh server), one after the other for each size, through
 * the service's own follower (`createIndexFollower`, with the stored subject and the webhook boundary as the service
 * sets them) and stores. Prints, per size and engine: steps, seconds, attestations a second, PostgreSQL's rate as a
 * ratio to SQLite's measured in the same run, `eth_call`s per 1,000 attestations, the process's peak RSS above what it
 * was before the run (sampled every 50 ms and after each step), the live heap after it (a full collection) above what
 * it was before (what the catch-up kept), and database bytes per attestation.
 *
 *   bun run bench/index_catch_up.ts [--synthetic] [attestations ...]   default 10000; e.g. --synthetic 10000 100000 1000000
 *
 * The history:
 * - default: on Anvil, EAS as the devnet deploys it, read through the viem chain reads (JSON-RPC included), reviews
 *   (`user-review`, 40 subjects) of 200 a transaction, one transaction a block (Anvil's block gas limit raised for
 *   them). Sizes grow the same chain in turn. Anvil copies its state per block in memory (about 40 MB a block at
 *   45,000 attestations, and slower each block), so this goes to about 40,000.
 * - `--synthetic`: the same history (200 reviews a block, 40 subjects, every 50th attestation revoked 5 blocks later)
 *   from an in-process chain: the follower, the subjects' decoding and the stores without JSON-RPC, up to 1,000,000.
 */
import { heapStats } from "bun:jsc";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, type Hex, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createViemAttestationIndex } from "../adapters/chain/mod.ts";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { openPostgresStorage } from "../adapters/postgres/mod.ts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { createIndexFollower, createSubjectOf } from "../domain/index/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { postgresUnavailableReason, startPostgres } from "../e2e/support/postgres.ts";
import type { ChainHistory, EasEvent, IndexedAttestation } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import type { Storage } from "../ports/storage.ts";

const SYNTHETIC = process.argv.includes("--synthetic");
const sizeArgs = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const SIZES = (sizeArgs.length > 0 ? sizeArgs : ["10000"]).map(Number).sort((a, b) => a - b);
const BATCH = 200;
const SUBJECTS = 40;
const STEP_BLOCKS = 10_000n;
/** Transactions sent before their receipts are awaited. */
const IN_FLIGHT = 16;
const ZERO = `0x${"0".repeat(64)}` as Hex;

const review = findSchemaByName("user-review")!;
const hex = (n: number | bigint, width = 64) => `0x${n.toString(16).padStart(width, "0")}` as HexString;
const subjectOf = (n: number) => `did:web:app${n % SUBJECTS}.bench.example`;
const recipientOf = (n: number) => ((didToAddress(subjectOf(n)) as { value: Hex }).value).toLowerCase() as HexString;
const reviewData = (n: number) =>
  (encodeSchemaData(review.schema, {
    subject: subjectOf(n), version: "1.0.0", ratingValue: 1 + (n % 5), reviewBody: `Review ${n}`, screenshotUrls: [], proofs: [],
  }) as { value: Hex }).value;

const dir = mkdtempSync(join(tmpdir(), "ats-catch-up-"));

/** Where the history comes from: a chain to read, its schema UIDs, and a way to make it hold `n` attestations. */
type Source = {
  readonly chainId: number;
  readonly easAddress: HexString;
  readonly schemaUids: Record<string, string>;
  readonly grow: (n: number) => Promise<void>;
  /** A fresh reader, counting its `eth_call`s. */
  readonly reader: () => { chain: ChainHistory; ethCalls: () => number };
  readonly stop: () => Promise<void>;
};

/** The history on Anvil. */
async function anvilSource(): Promise<Source> {
  const devnet: Devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false });
  const schemaUid = devnet.schemaUids[review.name]! as Hex;
  const abi = parseAbi([
    "struct AttestationRequestData { address recipient; uint64 expirationTime; bool revocable; bytes32 refUID; bytes data; uint256 value; }",
    "struct MultiAttestationRequest { bytes32 schema; AttestationRequestData[] data; }",
    "function multiAttest(MultiAttestationRequest[] multiRequests) payable returns (bytes32[])",
  ]);
  const client = createPublicClient({ transport: http(devnet.rpcUrl, { timeout: 120_000 }), pollingInterval: 20 });
  const account = privateKeyToAccount(devnet.keys.users[0]! as Hex);
  const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl, { timeout: 120_000 }) });
  // Blocks of 200 attestations (about 110M gas): a block gas limit far above them keeps the base fee falling.
  await client.request({ method: "evm_setBlockGasLimit" as never, params: ["0x3b9aca00"] as never });
  let written = 0;
  let nonce = await client.getTransactionCount({ address: account.address });
  const batch = (n: number) =>
    Array.from({ length: BATCH }, (_, i) => ({
      recipient: recipientOf(n + i), expirationTime: 0n, revocable: review.revocable, refUID: ZERO, data: reviewData(n + i), value: 0n,
    }));
  return {
    chainId: devnet.chainId,
    easAddress: devnet.easAddress,
    schemaUids: devnet.schemaUids,
    async grow(target) {
      const started = performance.now();
      while (written < target) {
        const hashes: Hex[] = [];
        for (let i = 0; i < IN_FLIGHT && written < target; i++, written += BATCH) {
          hashes.push(await wallet.writeContract({
            chain: null, address: devnet.easAddress, abi, functionName: "multiAttest", nonce: nonce++, gas: 500_000_000n,
            args: [[{ schema: schemaUid, data: batch(written) }]],
          }));
        }
        for (const hash of hashes) {
          if ((await client.waitForTransactionReceipt({ hash })).status !== "success") throw new Error("multiAttest reverted");
        }
      }
      console.error(`history: ${written} attestations on Anvil (${((performance.now() - started) / 1000).toFixed(0)} s), head ${await client.getBlockNumber()}`);
    },
    reader() {
      let calls = 0;
      const chain = createViemAttestationIndex({
        rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, easAddress: devnet.easAddress, startBlock: 0n, timeoutMs: 60_000,
        fetchFn: Object.assign(async (input: RequestInfo | URL, init?: RequestInit) => {
          calls += (typeof init?.body === "string" ? init.body : "").split('"eth_call"').length - 1;
          return await fetch(input, init);
        }, { preconnect: fetch.preconnect }) as typeof fetch,
      });
      return { chain, ethCalls: () => calls };
    },
    stop: () => devnet.stop(),
  };
}

/** The same history from an in-process chain: attestation n in block 1 + n / 200; every 50th revoked 5 blocks later. */
function syntheticSource(): Source {
  const schemaUid = hex(0x5e11);
  const easAddress = hex(0xea5, 40);
  const attester = hex(0xa77e, 40);
  const datas = Array.from({ length: SUBJECTS * 5 }, (_, n) => reviewData(n));
  let size = 0;
  const last = () => BigInt(Math.ceil(size / BATCH) + 5);
  const blockOf = (n: number) => BigInt(1 + Math.floor(n / BATCH));
  const blockHash = (b: bigint) => hex(b + 0xb000000n);
  const uid = (n: number) => hex(n + 1);
  const numberOf = (u: string) => Number(BigInt(u)) - 1;
  const revokedAt = (n: number) => (n % 50 === 0 ? blockOf(n) + 5n : undefined);
  const event = (kind: EasEvent["kind"], n: number, blockNumber: bigint): EasEvent => ({
    kind, uid: uid(n), recipient: recipientOf(n), attester, schemaUid, blockNumber, logIndex: kind === "attested" ? n % BATCH : BATCH + n % BATCH,
    txHash: hex(blockNumber + 0x7000000n),
  });
  const chain: ChainHistory = {
    head: () => Promise.resolve({ ok: true, value: last() }),
    blockHash: (b) => Promise.resolve({ ok: true, value: b <= last() ? blockHash(b) : null }),
    block: (b) => Promise.resolve({ ok: true, value: b <= last() ? { blockNumber: b, blockHash: blockHash(b), timestamp: 1_700_000_000n + b * 2n } : null }),
    events(from, to) {
      const events: EasEvent[] = [];
      for (let b = from < 1n ? 1n : from; b <= to; b++) {
        const first = Number(b - 1n) * BATCH;
        for (let n = first; n < Math.min(size, first + BATCH); n++) events.push(event("attested", n, b));
        // The revocations of block b: the attestations of block b - 5 whose number is a multiple of 50.
        const revokedFirst = Number(b - 6n) * BATCH;
        for (let n = revokedFirst; n >= 0 && n < Math.min(size, revokedFirst + BATCH); n++) if (revokedAt(n) === b) events.push(event("revoked", n, b));
      }
      return Promise.resolve({ ok: true, value: { events, toHash: blockHash(to), toTimestamp: 1_700_000_000n + to * 2n } });
    },
    attestations(uids, block) {
      return Promise.resolve({
        ok: true,
        value: uids.map((u): IndexedAttestation => {
          const n = numberOf(u);
          const revoked = revokedAt(n);
          return {
            uid: u.toLowerCase() as HexString, schema: schemaUid, time: 1_700_000_000n + blockOf(n) * 2n, expirationTime: 0n,
            revocationTime: revoked !== undefined && revoked <= block ? 1_700_000_000n + revoked * 2n : 0n, refUID: ZERO as HexString,
            recipient: recipientOf(n), attester, revocable: true, data: datas[n % datas.length]!,
          };
        }),
      });
    },
  };
  return {
    chainId: 31337,
    easAddress,
    schemaUids: { [review.name]: schemaUid },
    grow: (n) => Promise.resolve(void (size = n)),
    reader: () => ({ chain, ethCalls: () => 0 }),
    stop: () => Promise.resolve(),
  };
}

type Run = { engine: string; size: number; seconds: number; rate: number; calls: number; peakMb: number; heapMb: number; bytesPer: number; steps: number };

/** Indexes the whole chain into a fresh store and measures it. */
async function catchUp(source: Source, engine: string, storage: Storage, size: number, databaseBytes: () => Promise<number>): Promise<Run> {
  const { chain, ethCalls } = source.reader();
  const store = await storage.indexStore({ chainId: source.chainId, easAddress: source.easAddress });
  const step = createIndexFollower({
    chain, store, startBlock: 0n, confirmations: 0, stepBlocks: STEP_BLOCKS, webhookConfirmations: 0,
    subjectOf: createSubjectOf(source.schemaUids),
  });
  Bun.gc(true);
  const baseHeap = heapStats().heapSize;
  const baseRss = process.memoryUsage().rss;
  let peakRss = baseRss;
  const sample = () => void (peakRss = Math.max(peakRss, process.memoryUsage().rss));
  const sampler = setInterval(sample, 50);
  const started = performance.now();
  let steps = 0;
  try {
    for (;;) {
      const s = await step();
      steps++;
      sample();
      if (!s.ok) throw new Error(`${engine}: a step failed (${s.reason})`);
      if (s.caughtUp) break;
    }
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  Bun.gc(true);
  const heapMb = (heapStats().heapSize - baseHeap) / 2 ** 20;
  const held = (await store.counts()).attestations;
  if (held !== size) throw new Error(`${engine}: the index holds ${held} attestations, the chain ${size}`);
  return {
    engine, size, seconds, rate: size / seconds, calls: (ethCalls() * 1000) / size, peakMb: (peakRss - baseRss) / 2 ** 20, heapMb,
    bytesPer: (await databaseBytes()) / size, steps,
  };
}

const runs: Run[] = [];
const unavailable = postgresUnavailableReason();
if (unavailable !== undefined) console.error(`PostgreSQL skipped: ${unavailable}`);
const source = SYNTHETIC ? syntheticSource() : await anvilSource();
try {
  for (const size of SIZES) {
    await source.grow(size);
    const file = join(dir, `index-${size}.sqlite`);
    const sqlite = openSqliteStorage(file);
    try {
      const bytes = () => Promise.resolve(statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0));
      runs.push(await catchUp(source, "SQLite", sqlite, size, bytes));
    } finally {
      await sqlite.close();
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true });
    }
    if (unavailable === undefined) {
      const pg = await startPostgres();
      const postgres = await openPostgresStorage(pg.url);
      const sql = new Bun.SQL(pg.url, { max: 1 });
      try {
        const bytes = async () => Number(((await sql`SELECT pg_total_relation_size('index_attestations') AS n`)[0] as { n: unknown }).n);
        runs.push(await catchUp(source, "PostgreSQL", postgres, size, bytes));
      } finally {
        await sql.close();
        await postgres.close();
        await pg.stop();
      }
    }
    for (const r of runs.filter((r) => r.size === size)) console.error(`${r.engine} ${size}: ${r.rate.toFixed(0)} attestations/s, peak RSS +${r.peakMb.toFixed(0)} MB`);
  }
} finally {
  await source.stop();
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `Catch-up of a fresh index from block 0, ${BATCH} reviews a block, INDEX_STEP_BLOCKS ${STEP_BLOCKS}; history ` +
    (SYNTHETIC ? "from an in-process chain (no JSON-RPC; every 50th attestation revoked)." : "on Anvil, read over JSON-RPC."),
);
console.log("| attestations | database | steps | seconds | attestations/s | PostgreSQL / SQLite rate | eth_call per 1,000 | peak RSS above start (MB) | live heap after, above start (MB) | database bytes per attestation |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const r of runs) {
  const sqliteRate = runs.find((s) => s.size === r.size && s.engine === "SQLite")?.rate;
  const ratio = r.engine === "PostgreSQL" && sqliteRate !== undefined ? (r.rate / sqliteRate).toFixed(2) : "";
  console.log(
    `| ${r.size.toLocaleString("en")} | ${r.engine} | ${r.steps} | ${r.seconds.toFixed(1)} | ${r.rate.toFixed(0)} | ${ratio} | ` +
      `${SYNTHETIC ? "–" : r.calls.toFixed(1)} | ${r.peakMb.toFixed(0)} | ${r.heapMb.toFixed(1)} | ${r.bytesPer.toFixed(0)} |`,
  );
}
