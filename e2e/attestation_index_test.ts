/**
 * The attestation index on a real Anvil (issues 16 and 34): a chain mined 100 provider windows long, behind a
 * JSON-RPC proxy that refuses log ranges wider than 20 blocks (the window), is backfilled once; an artifact-trust
 * request then costs no JSON-RPC call at all; a restart half-way resumes from the checkpoint; a reorg in the
 * unconfirmed tail removes an attestation from answers and leaves the confirmed rows alone.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestClient, type Hex, http, sha256, stringToBytes } from "viem";
import { openSqlite } from "../adapters/sqlite/mod.ts";
import { createSqliteIndexStore } from "../adapters/sqlite/mod.ts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
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
  return { status: res.status, body: await res.json() as { index?: { indexedBlock: number | null; head: number; lagBlocks: number; catchingUp: boolean; stale: boolean } } };
}

async function trust(service: Service) {
  const res = await fetch(`${service.url}/v1/artifact-trust?artifactDid=${encodeURIComponent(ARTIFACT)}`);
  return {
    status: res.status,
    body: await res.json() as { asOf: { blockNumber: number }; securityAssessments: { attestation: { uid: string; data: { version: string } } }[] },
  };
}
const versions = (body: { securityAssessments: { attestation: { data: { version: string } } }[] }) =>
  body.securityAssessments.map((a) => a.attestation.data.version).sort();

describe("the attestation index on a long chain behind a 20-block provider window", () => {
  test("the follower reads the 100 windows once; a request then costs no JSON-RPC call, and answers as of the index's head", async () => {
    proxy.calls.length = 0;
    // No follower loop: only the polls the test asks for read the chain, so nothing else is counted.
    const indexed = await indexedService("long", { INDEX_FOLLOW: "false" });
    longService = indexed;
    expect(await indexed.index.catchUp()).toBe(true);
    expect(logCalls().filter((c) => width(c) <= WINDOW).length).toBeGreaterThanOrEqual(LONG / Number(WINDOW));
    const ready = await readyz(indexed);
    expect(ready.status).toBe(200);
    expect(ready.body.index).toMatchObject({ catchingUp: false, lagBlocks: 0, stale: false });
    await trust(indexed); // the schema strings, once per run
    const answers = [];
    proxy.calls.length = 0;
    for (let i = 0; i < 3; i++) answers.push(await trust(indexed));
    expect(proxy.calls.length).toBe(0);
    expect(versions(answers[0]!.body)).toEqual(["early", "late"]);
    for (const answer of answers) expect(answer.body).toEqual(answers[0]!.body);

    // New blocks the follower has not polled yet: the answer stays the index's, and says so (asOf), never fresher.
    await assess("tail");
    await testClient().mine({ blocks: 5 });
    // Not viem's cached block number (kept for 4 s): the chain's, now.
    const head = await writer.client.getBlockNumber({ cacheTime: 0 });
    const behind = await trust(indexed);
    expect(versions(behind.body)).toEqual(["early", "late"]);
    expect(behind.body.asOf.blockNumber).toBeLessThan(Number(head));
    expect(proxy.calls.length).toBe(0);
    // One poll later: there, as of the head.
    expect(await indexed.index.catchUp()).toBe(true);
    const caught = await trust(indexed);
    expect(versions(caught.body)).toEqual(["early", "late", "tail"]);
    expect(caught.body.asOf.blockNumber).toBe(Number(head));
    console.log(`[attestation_index_test] JSON-RPC calls per artifact-trust request on a ${LONG}-block chain: 0 (was at most 6, and one per window without the index)`);
  }, 120_000);

  test("a restart half-way through the backfill resumes from the checkpoint: no gap, no duplicate", async () => {
    // The provider fails every log read past the middle: the first instance stops there.
    const middle = BigInt(LONG / 2);
    const windowed = proxy.onCall;
    proxy.onCall = (call) =>
      call.method === "eth_getLogs" && BigInt((call.params[0] as { fromBlock: string }).fromBlock) > middle ? { code: -32603, message: "internal error" } : windowed?.(call);
    const first = await indexedService("resume", { INDEX_STEP_BLOCKS: "100", INDEX_FOLLOW: "false" });
    expect(await first.index.catchUp()).toBe(false);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    proxy.onCall = windowed;
    const db = openSqlite(join(stack.dir, "resume.sqlite"));
    const store = createSqliteIndexStore(db, { chainId: stack.devnet.chainId, easAddress: stack.devnet.easAddress });
    const checkpoint = (await store.checkpoint())!;
    expect(checkpoint.blockNumber).toBeGreaterThanOrEqual(middle - 100n);
    expect(checkpoint.blockNumber).toBeLessThanOrEqual(middle);

    proxy.calls.length = 0;
    const second = await indexedService("resume", { INDEX_STEP_BLOCKS: "100" });
    // The follower's first range starts right after the stored checkpoint.
    const firstScan = logCalls()[0]!;
    expect(BigInt((firstScan.params[0] as { fromBlock: string }).fromBlock)).toBe(checkpoint.blockNumber + 1n);
    const recipient = (didToAddress(ARTIFACT) as { value: Hex }).value;
    const head = (await store.checkpoint())!.blockNumber;
    const rows = await store.attested({ recipients: [recipient], schemaUids: [stack.devnet.schemaUids["security-assessment"] as Hex], fromBlock: 0n, toBlock: head });
    expect(rows.length).toBe(3);
    expect(new Set(rows.map((r) => r.uid)).size).toBe(3);
    expect(await store.incomplete(10)).toEqual([]);
    db.close();
    expect(versions((await trust(second)).body)).toEqual(["early", "late", "tail"]);
  }, 120_000);

  test("a reorg in the unconfirmed tail removes a reorged-out attestation from answers; confirmed rows are untouched", async () => {
    const service = await indexedService("reorg", { INDEX_CONFIRMATIONS: "5" });
    const db = openSqlite(join(stack.dir, "reorg.sqlite"));
    const store = createSqliteIndexStore(db, { chainId: stack.devnet.chainId, easAddress: stack.devnet.easAddress });
    const recipient = (didToAddress(ARTIFACT) as { value: Hex }).value;
    const schema = stack.devnet.schemaUids["security-assessment"] as Hex;
    const confirmedRows = async () => {
      const checkpoint = (await store.checkpoint())!.blockNumber;
      const rows = await store.attested({ recipients: [recipient], schemaUids: [schema], fromBlock: 0n, toBlock: checkpoint });
      return rows.filter((r) => r.blockNumber <= checkpoint - 5n);
    };
    const before = await confirmedRows();
    expect(before).toHaveLength(3);
    expect(await store.counts()).toEqual({ attestations: 3, tail: 0 });

    const snapshot = await testClient().snapshot();
    const dropped = await assess("reorged-out");
    await testClient().mine({ blocks: 2 });
    expect(await service.index.catchUp()).toBe(true);
    expect(versions((await trust(service)).body)).toEqual(["early", "late", "reorged-out", "tail"]);
    // The new attestation is in the last five blocks: a tail row.
    expect(await store.counts()).toEqual({ attestations: 4, tail: 1 });

    // Another branch from the snapshot, longer than the dropped one, without the attestation.
    await testClient().revert({ id: snapshot });
    await testClient().mine({ blocks: 4 });
    const newHead = await writer.client.getBlockNumber({ cacheTime: 0 });
    expect(await service.index.catchUp()).toBe(true);
    const after = await trust(service);
    expect(versions(after.body)).toEqual(["early", "late", "tail"]);
    expect(after.body.asOf.blockNumber).toBe(Number(newHead));
    expect((await store.records([dropped])).length).toBe(0);
    expect(await store.counts()).toEqual({ attestations: 3, tail: 0 });
    // The confirmed rows are the same rows, with the same records.
    expect(await confirmedRows()).toEqual(before);
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
    expect(status).toMatchObject({ stale: false, attestations: expect.any(Number), tailAttestations: 0 });
    expect(Date.parse(status.checkedAt)).toBeGreaterThan(0);
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
