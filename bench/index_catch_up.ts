/**
 * A new deployment catching up (issue 45 item 6): a synthetic history of `multiAttest` batches on Anvil (EAS as
 * deployed by the devnet, `START_BLOCK=0`), indexed by a fresh store on SQLite (a file) and on PostgreSQL (a fresh
 * server), one after the other for each size, through the service's own pieces: the viem chain reads, the follower
 * (`createIndexFollower`, with the stored subject and the webhook boundary as the service sets them) and the store.
 * Prints, per size and engine: seconds, attestations a second, `eth_call`s per 1,000 attestations, the process's peak
 * RSS above what it was before the run (sampled every 50 ms and after each step), database bytes per attestation, and
 * PostgreSQL's rate as a ratio to SQLite's measured in the same run.
 *
 *   bun run bench/index_catch_up.ts [attestations ...]   default 10000; e.g. 10000 100000 1000000
 *
 * Sizes are cumulative: the chain grows to each size in turn (the 1,000,000 history takes a while to write).
 * `INDEX_STEP_BLOCKS` as the service's default (10,000); `BATCH` attestations a transaction, one transaction a block
 * (Anvil's block gas limit raised to 1e9 for them).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, type Hex, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createViemAttestationIndex } from "../adapters/chain/mod.ts";
import { startDevnet } from "../adapters/devnet/mod.ts";
import { openPostgresStorage } from "../adapters/postgres/mod.ts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { didToAddress } from "../domain/did.ts";
import { createIndexFollower, createSubjectOf } from "../domain/index/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { postgresUnavailableReason, startPostgres } from "../e2e/support/postgres.ts";
import type { Storage } from "../ports/storage.ts";

const SIZES = (process.argv.length > 2 ? process.argv.slice(2) : ["10000"]).map(Number).sort((a, b) => a - b);
const BATCH = 200;
const STEP_BLOCKS = 10_000n;
/** Transactions sent before their receipts are awaited. */
const IN_FLIGHT = 16;

const dir = mkdtempSync(join(tmpdir(), "ats-catch-up-"));
const devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false });
const review = findSchemaByName("user-review")!;
const schemaUid = devnet.schemaUids[review.name]! as Hex;
const WRITE_ABI = parseAbi([
  "struct AttestationRequestData { address recipient; uint64 expirationTime; bool revocable; bytes32 refUID; bytes data; uint256 value; }",
  "struct MultiAttestationRequest { bytes32 schema; AttestationRequestData[] data; }",
  "function multiAttest(MultiAttestationRequest[] multiRequests) payable returns (bytes32[])",
]);
const client = createPublicClient({ transport: http(devnet.rpcUrl, { timeout: 120_000 }), pollingInterval: 20 });
const account = privateKeyToAccount(devnet.keys.users[0]! as Hex);
const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl, { timeout: 120_000 }) });

/** A batch of reviews of 40 subjects (each review names its subject; the recipient is the subject's address). */
function batch(n: number) {
  return Array.from({ length: BATCH }, (_, i) => {
    const subject = `did:web:app${(n + i) % 40}.bench.example`;
    const data = (encodeSchemaData(review.schema, {
      subject, version: "1.0.0", ratingValue: 1 + ((n + i) % 5), reviewBody: `Review ${n + i}`,
      screenshotUrls: [], proofs: [],
    }) as { value: Hex }).value;
    return { recipient: (didToAddress(subject) as { value: Hex }).value, expirationTime: 0n, revocable: review.revocable, refUID: `0x${"0".repeat(64)}` as Hex, data, value: 0n };
  });
}

// Blocks of 200 attestations (about 110M gas): a block gas limit far above them keeps the base fee falling.
await client.request({ method: "evm_setBlockGasLimit" as never, params: ["0x3b9aca00"] as never });
let written = 0;
let nonce = await client.getTransactionCount({ address: account.address });
/** Writes `multiAttest` transactions until the chain holds `target` attestations. */
async function grow(target: number) {
  const started = performance.now();
  const from = written;
  while (written < target) {
    const hashes: Hex[] = [];
    for (let i = 0; i < IN_FLIGHT && written < target; i++, written += BATCH) {
      hashes.push(await wallet.writeContract({
        chain: null, address: devnet.easAddress, abi: WRITE_ABI, functionName: "multiAttest", nonce: nonce++, gas: 500_000_000n,
        args: [[{ schema: schemaUid, data: batch(written) }]],
      }));
    }
    for (const hash of hashes) {
      const receipt = await client.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error("multiAttest reverted");
    }
  }
  const seconds = (performance.now() - started) / 1000;
  console.error(`history: ${written} attestations (${written - from} written in ${seconds.toFixed(0)} s), head ${await client.getBlockNumber()}`);
}

type Run = { engine: string; size: number; seconds: number; rate: number; calls: number; peakMb: number; bytesPer: number; steps: number };

/** Indexes the whole chain into a fresh store and measures it. */
async function catchUp(engine: string, storage: Storage, size: number, databaseBytes: () => Promise<number>): Promise<Run> {
  let ethCalls = 0;
  const chain = createViemAttestationIndex({
    rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, easAddress: devnet.easAddress, startBlock: 0n, timeoutMs: 60_000,
    fetchFn: Object.assign(async (input: RequestInfo | URL, init?: RequestInit) => {
      const body = typeof init?.body === "string" ? init.body : "";
      ethCalls += body.split('"eth_call"').length - 1;
      return await fetch(input, init);
    }, { preconnect: fetch.preconnect }) as typeof fetch,
  });
  const store = await storage.indexStore({ chainId: devnet.chainId, easAddress: devnet.easAddress });
  const step = createIndexFollower({
    chain, store, startBlock: 0n, confirmations: 0, stepBlocks: STEP_BLOCKS, webhookConfirmations: 0,
    subjectOf: createSubjectOf(devnet.schemaUids),
  });
  Bun.gc(true);
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
  const held = (await store.counts()).attestations;
  if (held !== size) throw new Error(`${engine}: the index holds ${held} attestations, the chain ${size}`);
  return {
    engine, size, seconds, rate: size / seconds, calls: (ethCalls * 1000) / size, peakMb: (peakRss - baseRss) / 2 ** 20,
    bytesPer: (await databaseBytes()) / size, steps,
  };
}

const runs: Run[] = [];
const unavailable = postgresUnavailableReason();
if (unavailable !== undefined) console.error(`PostgreSQL skipped: ${unavailable}`);
try {
  for (const size of SIZES) {
    await grow(size);
    const file = join(dir, `index-${size}.sqlite`);
    const sqlite = openSqliteStorage(file);
    try {
      runs.push(await catchUp("SQLite", sqlite, size, () => Promise.resolve(statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0))));
    } finally {
      await sqlite.close();
      rmSync(file, { force: true });
      rmSync(`${file}-wal`, { force: true });
      rmSync(`${file}-shm`, { force: true });
    }
    if (unavailable === undefined) {
      const pg = await startPostgres();
      const postgres = await openPostgresStorage(pg.url);
      try {
        const sql = new Bun.SQL(pg.url, { max: 1 });
        const bytes = async () => {
          const [row] = await sql`SELECT pg_total_relation_size('index_attestations') AS n`;
          return Number((row as { n: unknown }).n);
        };
        runs.push(await catchUp("PostgreSQL", postgres, size, bytes));
        await sql.close();
      } finally {
        await postgres.close();
        await pg.stop();
      }
    }
    const last = runs.filter((r) => r.size === size);
    for (const r of last) console.error(`${r.engine} ${size}: ${r.rate.toFixed(0)} attestations/s, peak RSS +${r.peakMb.toFixed(0)} MB`);
  }
} finally {
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`Catch-up of a fresh index, START_BLOCK=0, multiAttest of ${BATCH} per block, INDEX_STEP_BLOCKS ${STEP_BLOCKS}.`);
console.log("| attestations | database | steps | seconds | attestations/s | PostgreSQL / SQLite rate | eth_call per 1,000 | peak RSS above start (MB) | database bytes per attestation |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of runs) {
  const sqliteRate = runs.find((s) => s.size === r.size && s.engine === "SQLite")?.rate;
  const ratio = r.engine === "PostgreSQL" && sqliteRate !== undefined ? (r.rate / sqliteRate).toFixed(2) : "";
  console.log(
    `| ${r.size.toLocaleString("en")} | ${r.engine} | ${r.steps} | ${r.seconds.toFixed(1)} | ${r.rate.toFixed(0)} | ${ratio} | ${r.calls.toFixed(1)} | ` +
      `${r.peakMb.toFixed(0)} | ${r.bytesPer.toFixed(0)} |`,
  );
}
