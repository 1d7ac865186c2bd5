/**
 * The attestation index on a real Anvil (issue 16): a chain mined 100 provider windows long, behind a JSON-RPC
 * proxy that refuses log ranges wider than 20 blocks (the window), is backfilled once; an artifact-trust request then
 * costs at most 6 JSON-RPC calls; a restart half-way resumes from the checkpoint; a reorg removes an
 * attestation from answers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestClient, type Hex, http, sha256, stringToBytes } from "viem";
import { openSqlite } from "../adapters/sqlite/mod.ts";
import { createSqliteIndexStore } from "../adapters/sqlite/mod.ts";
import { artifactDidFromDigest, didToAddress } from "../domain/did.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import type { Service } from "../app/service.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { writeAnchorsWithIssuers } from "./support/devnet_fixtures.ts";
import { easWriter } from "./support/eas_writer.ts";
import { type RpcCall, type RpcProxy, inFrontOf, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

// Anvil mines a few hundred empty blocks a second, so the provider's window is small and the chain 100 of them long.
const WINDOW = 20n;
const LONG = 2_000;
const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("ats index artifact")));
let proxy: RpcProxy;
let stack: Stack;
let writer: ReturnType<typeof easWriter>;
let auditor: Hex;
let anchorsPath: string;
const running: Service[] = [];
let longService: Service | undefined;

const width = (call: RpcCall) => {
  const filter = call.params[0] as { fromBlock: string; toBlock: string };
  return BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n;
};
const logCalls = () => proxy.calls.filter((c) => c.method === "eth_getLogs");

beforeAll(async () => {
  proxy = startRpcProxy("");
  // A provider window: wider log ranges are refused with the text providers use.
  proxy.onCall = (call) =>
    call.method === "eth_getLogs" && width(call) > WINDOW ? { code: -32005, message: "query exceeds max block range 20" } : undefined;
  stack = await startStack({
    rpcUrlFor: inFrontOf(proxy),
  });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  auditor = stack.devnet.keys.users[0] as Hex;
  anchorsPath = writeAnchorsWithIssuers(stack.devnet.trustAnchorsPath, join(stack.dir, "index-anchors.json"), [
    { key: auditor, label: "Index Audits", schemas: ["security-assessment"] },
  ]);
  // A long history: an assessment near the start, 100 provider windows of empty blocks, another at the end.
  await assess("early");
  for (let mined = 0; mined < LONG; mined += 250) await testClient().mine({ blocks: 250 });
  await assess("late");
}, 120_000);
afterAll(async () => {
  for (const service of running) await service.stop();
  await stack?.stop();
  await proxy?.stop();
});

const testClient = () => createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) });

async function assess(label: string): Promise<Hex> {
  const now = (await writer.client.getBlock({ blockTag: "latest" })).timestamp;
  const data = encodeSchemaData(findSchemaByName("security-assessment")!.schema, {
    subject: ARTIFACT,
    organization: "Index Audits",
    version: label,
    versionHW: "",
    payload: "{}",
    payloadVersion: "1",
    payloadSpecURI: "",
    payloadSpecDigest: "",
    issuedAt: now,
    effectiveAt: 0n,
    expiresAt: 0n,
  }) as { value: Hex };
  const { uid } = await writer.attest(auditor, stack.devnet.schemaUids["security-assessment"] as Hex, {
    recipient: (didToAddress(ARTIFACT) as { value: Hex }).value,
    data: data.value,
    revocable: findSchemaByName("security-assessment")!.revocable,
  });
  return uid;
}

/** A service with the follower on, on its own database file. */
async function indexedService(name: string, extra: Record<string, string> = {}) {
  const service = await stack.restartService({
    TRUST_ANCHORS_PATH: anchorsPath,
    DATABASE_PATH: join(stack.dir, `${name}.sqlite`),
    INDEX_FOLLOW: "true",
    INDEX_CONFIRMATIONS: "0",
    INDEX_POLL_MS: "60000",
    INDEX_STEP_BLOCKS: "400",
    INDEX_LEASE_SECONDS: "2",
    ...extra,
  });
  running.push(service);
  return service;
}

async function readyz(service: Service) {
  const res = await fetch(`${service.url}/readyz`);
  return { status: res.status, body: await res.json() as { index?: { indexedBlock: number | null; head: number; lagBlocks: number; catchingUp: boolean } } };
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await Bun.sleep(50);
  }
}

async function trust(service: Service) {
  const res = await fetch(`${service.url}/v1/artifact-trust?artifactDid=${encodeURIComponent(ARTIFACT)}`);
  return { status: res.status, body: await res.json() as { securityAssessments: { attestation: { uid: string; data: { version: string } } }[] } };
}
const versions = (body: { securityAssessments: { attestation: { data: { version: string } } }[] }) =>
  body.securityAssessments.map((a) => a.attestation.data.version).sort();

describe("the attestation index on a long chain behind a 20-block provider window", () => {
  test("without the index a request scans every window; with it, at most 6 JSON-RPC calls, the same answer", async () => {
    const scanning = await stack.restartService({ TRUST_ANCHORS_PATH: anchorsPath, DATABASE_PATH: join(stack.dir, "none.sqlite") });
    running.push(scanning);
    proxy.calls.length = 0;
    const scanned = await trust(scanning);
    expect(scanned.status).toBe(200);
    expect(versions(scanned.body)).toEqual(["early", "late"]);
    const scanCalls = proxy.calls.length;
    expect(logCalls().filter((c) => width(c) <= WINDOW).length).toBeGreaterThanOrEqual(LONG / Number(WINDOW));

    // A long lease: the follower's rounds (one per half lease) stay out of the counted requests.
    const indexed = await indexedService("long", { INDEX_LEASE_SECONDS: "120" });
    longService = indexed;
    const ready = await waitFor(() => readyz(indexed), (r) => r.body.index?.catchingUp === false && (r.body.index.lagBlocks ?? 1) === 0);
    expect(ready.status).toBe(200);
    expect(ready.body.index).toMatchObject({ catchingUp: false, lagBlocks: 0 });
    for (let i = 0; i < 3; i++) {
      proxy.calls.length = 0;
      const answer = await trust(indexed);
      expect(answer.body).toEqual(scanned.body);
      expect(proxy.calls.length).toBeLessThanOrEqual(6);
    }
    const indexedCalls = proxy.calls.length;
    // New blocks the follower has not reached yet (it sleeps a minute): read live as the tail, in one call.
    await assess("tail");
    await testClient().mine({ blocks: 5 });
    proxy.calls.length = 0;
    expect(versions((await trust(indexed)).body)).toEqual(["early", "late", "tail"]);
    expect(proxy.calls.length).toBeLessThanOrEqual(6);
    expect(logCalls()).toHaveLength(1);
    console.log(
      `[attestation_index_test] JSON-RPC calls per artifact-trust request: ${scanCalls} scanning, ${indexedCalls} indexed, ${proxy.calls.length} with a live tail`,
    );
  }, 120_000);

  test("a restart half-way through the backfill resumes from the checkpoint: no gap, no duplicate", async () => {
    const first = await indexedService("resume", { INDEX_STEP_BLOCKS: "100" });
    const half = await waitFor(() => readyz(first), (r) => (r.body.index?.indexedBlock ?? 0) >= LONG / 2);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    const stoppedAt = BigInt(half.body.index!.indexedBlock!);
    const db = openSqlite(join(stack.dir, "resume.sqlite"));
    const store = createSqliteIndexStore(db, { chainId: stack.devnet.chainId, easAddress: stack.devnet.easAddress });
    const checkpoint = (await store.checkpoint())!;
    expect(checkpoint.blockNumber).toBeGreaterThanOrEqual(stoppedAt);
    expect(checkpoint.blockNumber).toBeLessThan(BigInt(LONG));

    proxy.calls.length = 0;
    const second = await indexedService("resume", { INDEX_STEP_BLOCKS: "100" });
    await waitFor(() => readyz(second), (r) => r.body.index?.catchingUp === false && r.body.index.lagBlocks === 0);
    // The follower's first range starts right after the stored checkpoint (the probe for the chain id aside).
    const firstScan = logCalls()[0]!;
    expect(BigInt((firstScan.params[0] as { fromBlock: string }).fromBlock)).toBe(checkpoint.blockNumber + 1n);
    const recipient = (didToAddress(ARTIFACT) as { value: Hex }).value;
    const head = (await store.checkpoint())!.blockNumber;
    const rows = await store.attested({ recipients: [recipient], schemaUids: [stack.devnet.schemaUids["security-assessment"] as Hex], fromBlock: 0n, toBlock: head });
    expect(rows.length).toBe(3);
    expect(new Set(rows.map((r) => r.uid)).size).toBe(3);
    db.close();
    expect(versions((await trust(second)).body)).toEqual(["early", "late", "tail"]);
  }, 120_000);

  test("a reorg that drops an attestation removes it from answers", async () => {
    const service = await indexedService("reorg", { INDEX_POLL_MS: "100" });
    await waitFor(() => readyz(service), (r) => r.body.index?.catchingUp === false && r.body.index.lagBlocks === 0);
    const snapshot = await testClient().snapshot();
    await assess("reorged-out");
    await testClient().mine({ blocks: 3 });
    const head = await writer.client.getBlockNumber();
    await waitFor(() => readyz(service), (r) => (r.body.index?.indexedBlock ?? 0) >= Number(head));
    expect(versions((await trust(service)).body)).toEqual(["early", "late", "reorged-out", "tail"]);

    // Another branch from the snapshot, longer than the dropped one, without the attestation.
    await testClient().revert({ id: snapshot });
    await testClient().mine({ blocks: 6 });
    const newHead = await writer.client.getBlockNumber();
    await waitFor(() => readyz(service), (r) => (r.body.index?.indexedBlock ?? 0) >= Number(newHead));
    expect(versions((await trust(service)).body)).toEqual(["early", "late", "tail"]);
    const db = openSqlite(join(stack.dir, "reorg.sqlite"));
    const store = createSqliteIndexStore(db, { chainId: stack.devnet.chainId, easAddress: stack.devnet.easAddress });
    const recipient = (didToAddress(ARTIFACT) as { value: Hex }).value;
    const rows = await store.attested({ recipients: [recipient], schemaUids: [stack.devnet.schemaUids["security-assessment"] as Hex], fromBlock: 0n, toBlock: newHead });
    expect(rows.length).toBe(3);
    db.close();
  }, 120_000);

  test("ops: index status reports the checkpoint and the lag; index rebuild --from rewinds, and the follower re-ingests", async () => {
    const { runOps } = await import("../app/ops.ts");
    const env = { RPC_URL: stack.devnet.rpcUrl, TRUST_ANCHORS_PATH: anchorsPath, DATABASE_PATH: join(stack.dir, "long.sqlite"), DATA_DIR: stack.dir };
    const lines: string[] = [];
    expect(await runOps(["index", "status"], env, (l) => lines.push(l))).toBe(0);
    const status = JSON.parse(lines[0]!);
    expect(status).toMatchObject({ chainId: stack.devnet.chainId, easContract: stack.devnet.easAddress });
    expect(status.indexedBlock).toBeGreaterThan(LONG);
    expect(status.head).toBeGreaterThanOrEqual(status.indexedBlock);
    expect(await runOps(["index", "rebuild", "--from", "oops"], env, () => {})).toBe(2);
    lines.length = 0;
    expect(await runOps(["index", "rebuild", "--from", String(LONG)], env, (l) => lines.push(l))).toBe(0);
    const rebuilt = JSON.parse(lines[0]!);
    expect(rebuilt.rebuildFrom).toBeLessThanOrEqual(LONG);
    lines.length = 0;
    await runOps(["index", "status"], env, (l) => lines.push(l));
    expect(JSON.parse(lines[0]!).indexedBlock).toBe(rebuilt.rebuildFrom - 1);
    // A restart of the service on that file (stopping hands its lease back) re-ingests and answers the same.
    await longService?.stop();
    running.splice(running.indexOf(longService!), 1);
    const again = await indexedService("long");
    await waitFor(() => readyz(again), (r) => r.body.index?.catchingUp === false && r.body.index.lagBlocks === 0);
    expect(versions((await trust(again)).body)).toEqual(["early", "late", "tail"]);
  }, 120_000);

  test("a node whose chain id is not the trust anchors' stops the start-up with a clear message", async () => {
    const anchors = JSON.parse(readFileSync(anchorsPath, "utf8")) as TrustAnchors;
    const wrong = join(stack.dir, "other-chain-anchors.json");
    writeFileSync(wrong, JSON.stringify({ ...anchors, chains: { "eip155:1": anchors.chains[`eip155:${stack.devnet.chainId}`] } }));
    let message = "";
    try {
      running.push(await stack.restartService({ TRUST_ANCHORS_PATH: wrong, INDEX_FOLLOW: "true" }));
    } catch (error) {
      message = error instanceof Error ? error.message : String(error);
    }
    expect(message).toBe(`Chain eip155:${stack.devnet.chainId} is not in the trust anchors (TRUST_ANCHORS_PATH)`);
  });
});
