/**
 * Keyset pages of the index's queries (issue 37, decisions §24): the time per page of `GET /v1/attestations`'s use
 * case (the store's page query, the page's records, decoding) at page 1 and at page 1,000 of one attester's list of
 * 30,000 attestations (25 a page), on SQLite (a file) and on PostgreSQL, with 60,000 attestations of other attesters
 * and schemas beside them. Prints p50 per page for both pages and their ratio (1.0: a deep page costs what the first
 * costs), newest and oldest first.
 *
 *   bun run bench/query_pages.ts [timed reads per page, default 50]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPostgresStorage } from "../adapters/postgres/mod.ts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { createIndexAnswers, createListAttestations } from "../domain/index/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { postgresUnavailableReason, startPostgres } from "../e2e/support/postgres.ts";
import type { EasEvent, IndexedAttestation, IndexStore } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import type { Storage } from "../ports/storage.ts";

const READS = Number(process.argv[2] ?? 50);
const LIMIT = 25;
const DEEP = 1_000;
const LISTED = 30_000;
const OTHERS = 60_000;
const PER_BLOCK = 3;

const hex = (n: number, width: number) => `0x${n.toString(16).padStart(width, "0")}` as HexString;
const REVIEW = findSchemaByName("user-review")!;
const REVIEW_UID = hex(0x5e11, 64);
const OTHER_UID = hex(0x0e11, 64);
const ATTESTER = hex(0xa77e, 40);
const DATA = (encodeSchemaData(REVIEW.schema, {
  subject: "did:web:bench.example", version: "1.0.0", ratingValue: 5, reviewBody: "Fast and friendly", screenshotUrls: [], proofs: [],
}) as { value: HexString }).value;

/** One attester's 30,000 reviews interleaved with 60,000 others' attestations, three per block, written in steps. */
async function fill(store: IndexStore): Promise<bigint> {
  const total = LISTED + OTHERS;
  let checkpoint: bigint | undefined;
  for (let start = 0; start < total; start += 5_000) {
    const events: EasEvent[] = [];
    const attestations: IndexedAttestation[] = [];
    for (let n = start; n < Math.min(total, start + 5_000); n++) {
      const listed = n % 3 === 0;
      const block = BigInt(1 + Math.floor(n / PER_BLOCK));
      const a: IndexedAttestation = {
        uid: hex(1_000_000 + n, 64), schema: listed ? REVIEW_UID : OTHER_UID, time: 1_700_000_000n + block * 2n, expirationTime: 0n,
        revocationTime: 0n, refUID: hex(0, 64), recipient: hex(n % 500, 40), attester: listed ? ATTESTER : hex(0xb000 + (n % 200), 40),
        revocable: true, data: DATA,
      };
      events.push({ kind: "attested", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: block, logIndex: n % PER_BLOCK });
      attestations.push(a);
    }
    const next = events.at(-1)!.blockNumber;
    if (!await store.append(checkpoint, events, { blockNumber: next, blockHash: hex(Number(next), 64), timestamp: 1_700_000_000n + next * 2n }, { attestations })) {
      throw new Error("append refused");
    }
    checkpoint = next;
  }
  return checkpoint!;
}

const p50 = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(name: string, storage: Storage) {
  const store = await storage.indexStore({ chainId: 31337, easAddress: hex(0xea5, 40) });
  const head = await fill(store);
  await store.checked(Date.now(), head);
  const answers = createIndexAnswers({
    store, chainId: 31337, easAddress: hex(0xea5, 40), startBlock: 0n, clock: systemClock, stallSeconds: 3_600,
    schemas: { schemaRecords: () => Promise.reject(new Error("not read by the list")) },
  });
  const list = (query: Record<string, string>) =>
    answers.answer((reads) => createListAttestations({ reads, store, schemaUids: { "user-review": REVIEW_UID }, startBlock: 0n, cursorKey: new Uint8Array(32).fill(1) })(query));
  const rows: string[] = [];
  for (const order of ["newest", "oldest"] as const) {
    const query = { attester: ATTESTER, schema: "user-review", order, limit: String(LIMIT) };
    // Walk to page 1,000 once to hold its cursor (every page full, each item once).
    let cursor: string | undefined;
    let seen = 0;
    for (let page = 1; page < DEEP; page++) {
      const answer = await list({ ...query, ...(cursor === undefined ? {} : { cursor }) });
      if (!answer.ok || answer.value.items.length !== LIMIT || answer.value.nextCursor === null) throw new Error(`page ${page} short`);
      seen += answer.value.items.length;
      cursor = answer.value.nextCursor;
    }
    const time = async (q: Record<string, string>) => {
      const ms: number[] = [];
      for (let i = 0; i < READS; i++) {
        const started = performance.now();
        const answer = await list(q);
        ms.push(performance.now() - started);
        if (!answer.ok || answer.value.items.length !== LIMIT) throw new Error("page short");
      }
      return p50(ms);
    };
    // Alternate so that neither page has the warmer cache.
    const first: number[] = [];
    const deep: number[] = [];
    for (let round = 0; round < 4; round++) {
      first.push(await time(query));
      deep.push(await time({ ...query, cursor: cursor! }));
    }
    const [a, b] = [p50(first), p50(deep)];
    rows.push(`| ${name} | ${order} | ${seen + LIMIT} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(b / a).toFixed(2)} |`);
  }
  return rows;
}

const rows: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "ats-query-pages-"));
const sqlite = openSqliteStorage(join(dir, "ats.sqlite"));
try {
  rows.push(...await measure("SQLite", sqlite));
} finally {
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });
}
const unavailable = postgresUnavailableReason();
if (unavailable === undefined) {
  const pg = await startPostgres();
  const postgres = await openPostgresStorage(pg.url);
  try {
    rows.push(...await measure("PostgreSQL", postgres));
  } finally {
    await postgres.close();
    await pg.stop();
  }
} else {
  console.error(`PostgreSQL skipped: ${unavailable}`);
}
console.log(`Pages of ${LIMIT} of one attester's ${LISTED} reviews among ${LISTED + OTHERS} attestations; p50 of ${READS} reads, 4 alternating rounds.`);
console.log("| database | order | items walked to page 1,000 | page 1 (ms) | page 1,000 (ms) | page 1,000 / page 1 |");
console.log("|---|---|---|---|---|---|");
for (const row of rows) console.log(row);
