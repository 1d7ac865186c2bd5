/**
 * Issue 43 item 12: a follower step larger than one HTTP response can hold shrinks and goes on. A real history of
 * `multiAttest` batches on Anvil, read through a loopback JSON-RPC proxy that refuses (HTTP 413) any response over
 * its limit, as a provider does, and through the adapter's own response limit (viem's, configured smaller): one
 * follower step over the whole history finishes with every attestation and its record. Before, every attestation
 * read of the step travelled in one HTTP request, its response was refused, and the same range was retried forever.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import type { Hex } from "viem";
import { createIndexFollower } from "../../domain/index/mod.ts";
import { easWriter } from "../../e2e/support/eas_writer.ts";
import { fakeIndexStore } from "../../ports/fakes/mod.ts";
import type { HexString } from "../../ports/eas.ts";
import { type Devnet, startDevnet } from "../devnet/mod.ts";
import { createViemAttestationIndex } from "./viem_attestation_index.ts";

/** The history: this many transactions of `multiAttest`, each of this many attestations. */
const BATCHES = 8;
const PER_BATCH = 60;
/** The proxy's limit on a response body, in bytes: the history's logs and records are several times this. */
const PROXY_LIMIT = 100_000;

let dir: string;
let devnet: Devnet;
let uids: Hex[] = [];
let head: bigint;

/** A loopback proxy in front of the node that answers 413 instead of any response over `limit` bytes. */
function sizeLimitedProxy(upstream: string, limit: number) {
  const seen = { refused: 0, largestServed: 0, requests: 0 };
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      seen.requests++;
      const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body: await request.text() });
      const text = await answer.text();
      if (text.length > limit) {
        seen.refused++;
        return new Response("response size exceeded", { status: 413 });
      }
      seen.largestServed = Math.max(seen.largestServed, text.length);
      return new Response(text, { headers: { "content-type": "application/json" } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, seen, stop: () => server.stop(true) };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ats-index-size-"));
  devnet = await startDevnet({ dataDir: dir, persist: false });
  const writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress });
  const schema = devnet.schemaUids["linked-identifier"] as Hex;
  for (let b = 0; b < BATCHES; b++) {
    const inputs = Array.from({ length: PER_BATCH }, (_, i) => ({
      recipient: `0x${(b * PER_BATCH + i + 1).toString(16).padStart(40, "0")}` as Hex,
      data: `0x${(b * PER_BATCH + i).toString(16).padStart(128, "0")}` as Hex,
      revocable: true,
    }));
    uids.push(...await writer.multiAttest(devnet.keys.users[0]!, schema, inputs));
  }
  uids = uids.map((u) => u.toLowerCase() as Hex);
  // Not the client's cached block number (kept for its polling interval): the head after the last batch was mined.
  head = await writer.client.getBlockNumber({ cacheTime: 0 });
}, 120_000);
afterAll(async () => {
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Follower steps (each over the whole history at most) until the index holds the head; the steps that failed. */
async function followToHead(chain: ReturnType<typeof createViemAttestationIndex>) {
  const store = fakeIndexStore();
  const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 1_000_000n });
  const steps = [];
  // A bound far above what the shrinking needs (one ingesting step), so a regression fails instead of hanging.
  for (let n = 0; n < 20; n++) {
    const s = await step();
    steps.push(s);
    if (s.ok && s.caughtUp) break;
  }
  return { store, steps };
}

describe("a follower step larger than one response (issue 43)", () => {
  test("behind a provider that refuses responses over its size: the reads shrink, the step finishes with every record", async () => {
    const proxy = sizeLimitedProxy(devnet.rpcUrl, PROXY_LIMIT);
    const events: string[] = [];
    try {
      const chain = createViemAttestationIndex({
        rpcUrl: proxy.url,
        chainId: devnet.chainId,
        easAddress: devnet.easAddress as HexString,
        startBlock: 0n,
        retryDelayMs: 1,
        log: (event) => void events.push(event),
      });
      const { store, steps } = await followToHead(chain);
      const last = steps.at(-1)!;
      expect(last).toMatchObject({ ok: true, caughtUp: true, indexedBlock: head });
      // One step held the whole history, and it needed no second try.
      expect(steps.filter((s) => !s.ok)).toEqual([]);
      expect(steps[0]).toMatchObject({ ok: true, ingested: { from: 0n, to: head, events: BATCHES * PER_BATCH } });
      expect(store.rows().map((r) => r.uid.toLowerCase()).sort()).toEqual([...uids].sort());
      expect((await store.records(uids as HexString[])).length).toBe(uids.length);
      // The proxy did refuse what was too large, and the reads shrank to fit.
      expect(proxy.seen.refused).toBeGreaterThan(0);
      expect(proxy.seen.largestServed).toBeLessThanOrEqual(PROXY_LIMIT);
      expect(events).toContain("rpc_batch_shrunk");
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test("with the adapter's own response limit smaller than the step's records: sized to fit, no response over it", async () => {
    const responses: { methods: string[]; bytes: number }[] = [];
    const chain = createViemAttestationIndex({
      rpcUrl: devnet.rpcUrl,
      chainId: devnet.chainId,
      easAddress: devnet.easAddress as HexString,
      startBlock: 0n,
      retryDelayMs: 1,
      maxResponseBytes: PROXY_LIMIT,
      fetchFn: (async (input: RequestInfo | URL, init?: RequestInit) => {
        const body = JSON.parse(String(init?.body)) as { method: string } | { method: string }[];
        const response = await fetch(input, init);
        const text = await response.text();
        responses.push({ methods: (Array.isArray(body) ? body : [body]).map((c) => c.method), bytes: text.length });
        return new Response(text, { status: response.status, headers: response.headers });
      }) as typeof fetch,
    });
    const { store, steps } = await followToHead(chain);
    expect(steps.at(-1)).toMatchObject({ ok: true, caughtUp: true, indexedBlock: head });
    expect(steps[0]).toMatchObject({ ok: true, ingested: { from: 0n, to: head, events: BATCHES * PER_BATCH } });
    expect((await store.records(uids as HexString[])).length).toBe(uids.length);
    // The step's records took several responses, none of them over the limit.
    const reads = responses.filter((r) => r.methods.includes("eth_call"));
    expect(reads.length).toBeGreaterThan(1);
    expect(reads.filter((r) => r.bytes > PROXY_LIMIT)).toEqual([]);
    expect(reads.reduce((sum, r) => sum + r.bytes, 0)).toBeGreaterThan(PROXY_LIMIT);
  }, 120_000);
});
