/**
 * The index follower against a provider whose backends are out of step, on the real chain through a proxy that
 * rewrites single answers (e2e/support/rpc_proxy.ts `onAnswer`). The index answers every public read, so a log it
 * misses is a wrong answer for good: a lagging backend's one empty `eth_getLogs` moved the checkpoint past a
 * revocation, and key status said `active` for a revoked binding from then on; a head one block behind wiped
 * confirmed rows; logs out of order lost a revocation; a log of a dropped fork marked a live attestation revoked.
 * Now each such poll fails (`inconsistent`), writes nothing, and the next honest poll reads the range again. A head
 * below the index (a backend behind, or a chain rolled back) completes no poll, and makes reads 503 only once the
 * follower has seen it for INDEX_BEHIND_GRACE_SECONDS (the grace itself: app/index_test.ts, on a fake clock).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createTestClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Service } from "../app/service.ts";
import { REVOKED_TOPIC } from "../domain/eas_abi.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { easWriter } from "./support/eas_writer.ts";
import { inFrontOf, type RpcAnswer, type RpcCall, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

const LINKED = findSchemaByName("linked-identifier")!;
const proxy = startRpcProxy("");
let stack: Stack;
let writer: ReturnType<typeof easWriter>;
let key: Hex;
let n = 0;
const running: Service[] = [];

beforeAll(async () => {
  stack = await startStack({ env: { INDEX_FOLLOW: "false" }, rpcUrlFor: inFrontOf(proxy) });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress as Hex });
  key = stack.devnet.keys.users[0] as Hex;
}, 180_000);
afterAll(async () => {
  for (const s of running) await s.stop();
  await stack?.stop();
  await proxy.stop();
});

const schema = () => stack.devnet.schemaUids["linked-identifier"] as Hex;
const mine = (blocks: number) => createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) }).mine({ blocks });
const head = () => writer.client.getBlockNumber({ cacheTime: 0 });
const recipientOf = (subject: string) => (didToAddress(subject) as { value: Hex }).value;
async function attest(subject: string): Promise<Hex> {
  const data = (encodeSchemaData(LINKED.schema, { subject, linkedId: `did:web:l${n++}.example`, proofs: [], issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n }) as { value: Hex }).value;
  return (await writer.attest(key, schema(), { recipient: recipientOf(subject), data, revocable: true })).uid;
}
/** A service of its own (its own SQLite file) that polls only when told, with 3 unconfirmed blocks unless said. */
async function service(name: string, extra: Record<string, string> = {}) {
  const s = await stack.restartService({ DATABASE_PATH: join(stack.dir, `${name}.sqlite`), INDEX_FOLLOW: "false", INDEX_CONFIRMATIONS: "3", ...extra });
  running.push(s);
  return s;
}
async function listed(s: Service, subject: string, filter = "") {
  const answer = await (await fetch(`${s.url}/v1/attestations?subject=${encodeURIComponent(subject)}${filter}`)).json() as {
    items: { attestation: { uid: string }; revoked: boolean }[];
    asOf: { blockNumber: number };
  };
  return { items: answer.items.map((i) => ({ uid: i.attestation.uid, revoked: i.revoked })), asOf: answer.asOf.blockNumber };
}
/** Rewrites answers while `during` runs, then answers honestly again. */
async function lying<T>(rewrite: (call: RpcCall, answer: RpcAnswer) => RpcAnswer, during: () => Promise<T>): Promise<T> {
  proxy.onAnswer = rewrite;
  try {
    return await during();
  } finally {
    proxy.onAnswer = undefined;
  }
}
const logRange = (call: RpcCall) => call.params[0] as { fromBlock?: Hex; toBlock?: Hex; blockHash?: Hex };
const rangeHolds = (call: RpcCall, block: bigint) => {
  const { fromBlock, toBlock } = logRange(call);
  return fromBlock !== undefined && toBlock !== undefined && BigInt(fromBlock) <= block && block <= BigInt(toBlock);
};

describe("the index follower against a provider whose backends are out of step", () => {
  test("an empty eth_getLogs for the range holding a revocation fails the poll; the next honest poll indexes it", async () => {
    const subject = "did:web:lagging-revoke.example";
    const s = await service("lagging-revoke");
    const uid = await attest(subject);
    expect(await s.index.catchUp()).toBe(true);
    const { blockNumber: revokedAt } = await writer.revoke(key, schema(), uid);
    // The logs backend is behind: the range holding the revocation comes back empty, the blocks are read as they are.
    const caught = await lying((call, answer) => (call.method === "eth_getLogs" && rangeHolds(call, revokedAt) ? { ...answer, result: [] } : answer), () => s.index.catchUp());
    expect(caught).toBe(false);
    expect((await listed(s, subject)).items).toEqual([{ uid: uid.toLowerCase(), revoked: false }]);
    await mine(5);
    expect(await s.index.catchUp()).toBe(true);
    expect((await listed(s, subject)).items).toEqual([{ uid: uid.toLowerCase(), revoked: true }]);
  }, 120_000);

  test("an empty eth_getLogs for the range holding an attestation fails the poll; the next honest poll lists it", async () => {
    const subject = "did:web:lagging-attest.example";
    const s = await service("lagging-attest");
    expect(await s.index.catchUp()).toBe(true);
    const uid = await attest(subject);
    const at = await head();
    expect(await lying((call, answer) => (call.method === "eth_getLogs" && rangeHolds(call, at) ? { ...answer, result: [] } : answer), () => s.index.catchUp())).toBe(false);
    expect((await listed(s, subject)).items).toEqual([]);
    expect(await s.index.catchUp()).toBe(true);
    expect((await listed(s, subject)).items).toEqual([{ uid: uid.toLowerCase(), revoked: false }]);
  }, 120_000);

  test("logs out of order in one answer (the revocation before its attestation): the revocation still applies", async () => {
    const subject = "did:web:reversed.example";
    const s = await service("reversed");
    expect(await s.index.catchUp()).toBe(true);
    const uid = await attest(subject);
    await writer.revoke(key, schema(), uid);
    const reversed = (call: RpcCall, answer: RpcAnswer) =>
      call.method === "eth_getLogs" && Array.isArray(answer.result) ? { ...answer, result: [...answer.result].reverse() } : answer;
    expect(await lying(reversed, () => s.index.catchUp())).toBe(true);
    expect((await listed(s, subject)).items).toEqual([{ uid: uid.toLowerCase(), revoked: true }]);
  }, 120_000);

  test("a head one block behind the checkpoint (and no block above it): the poll fails, nothing is rewound", async () => {
    const subject = "did:web:behind.example";
    const s = await service("behind", { INDEX_CONFIRMATIONS: "0" });
    const uid = await attest(subject);
    await writer.revoke(key, schema(), uid);
    await mine(3);
    expect(await s.index.catchUp()).toBe(true);
    const before = await listed(s, subject);
    expect(before.items).toEqual([{ uid: uid.toLowerCase(), revoked: true }]);
    const lag = (await head()) - 1n;
    const behind = (call: RpcCall, answer: RpcAnswer) => {
      if (call.method === "eth_blockNumber") return { ...answer, result: `0x${lag.toString(16)}` };
      if (call.method === "eth_getBlockByNumber" && typeof call.params[0] === "string" && BigInt(call.params[0]) > lag) return { ...answer, result: null };
      return answer;
    };
    expect(await lying(behind, () => s.index.catchUp())).toBe(false);
    // It used to rewind (a node that does not know a block read as a fork) and answer the revocation undone.
    expect(await listed(s, subject)).toEqual(before);
    expect(await s.index.catchUp()).toBe(true);
    expect((await listed(s, subject)).items).toEqual(before.items);
  }, 120_000);

  test("a Revoked log of a block the chain does not have (another hash, the attestation live): the poll fails, nothing is marked revoked", async () => {
    const subject = "did:web:phantom.example";
    const s = await service("phantom");
    const uid = await attest(subject);
    expect(await s.index.catchUp()).toBe(true);
    await mine(2);
    const attester = privateKeyToAccount(key).address;
    const phantom = (call: RpcCall, answer: RpcAnswer) => {
      if (call.method !== "eth_getLogs" || !Array.isArray(answer.result) || logRange(call).fromBlock === undefined) return answer;
      const log = {
        address: stack.devnet.easAddress,
        topics: [REVOKED_TOPIC, `0x${recipientOf(subject).slice(2).toLowerCase().padStart(64, "0")}`, `0x${attester.slice(2).toLowerCase().padStart(64, "0")}`, schema().toLowerCase()],
        data: uid,
        blockNumber: logRange(call).fromBlock,
        logIndex: "0x0",
        transactionHash: `0x${"ab".repeat(32)}`,
        blockHash: `0x${"cd".repeat(32)}`,
        removed: false,
      };
      return { ...answer, result: [...answer.result, log] };
    };
    expect(await lying(phantom, () => s.index.catchUp())).toBe(false);
    expect(await s.index.catchUp()).toBe(true);
    expect((await listed(s, subject)).items).toEqual([{ uid: uid.toLowerCase(), revoked: false }]);
    expect((await listed(s, subject, "&revoked=false")).items).toHaveLength(1);
    expect((await listed(s, subject, "&revoked=true")).items).toEqual([]);
  }, 120_000);
});

describe("the index follower when the chain is rolled back to a shorter one", () => {
  const anvil = () => createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) });
  async function get(s: Service, path: string) {
    const res = await fetch(`${s.url}${path}`);
    return { status: res.status, body: (await res.json()) as { code?: string; count?: number; index?: { stale: boolean; doubted: boolean; indexedBlock: number } } };
  }
  /** What the service answers of `subject` and of `uid`: the list's uids (or its error code), the count, the record's status, `/readyz`. */
  async function answers(s: Service, subject: string, uid: Hex) {
    const list = await fetch(`${s.url}/v1/attestations?subject=${encodeURIComponent(subject)}`);
    const body = (await list.json()) as { items?: { attestation: { uid: string } }[]; code?: string };
    const count = await get(s, `/v1/attestations/count?subject=${encodeURIComponent(subject)}`);
    const one = await get(s, `/v1/attestations/${uid}`);
    const ready = await get(s, "/readyz");
    return {
      list: list.status === 200 ? body.items!.map((i) => i.attestation.uid) : [list.status, body.code],
      count: count.status === 200 ? count.body.count : [count.status, count.body.code],
      one: one.status === 200 ? 200 : [one.status, one.body.code],
      ready: [ready.status, ready.body.index?.stale],
    };
  }

  /**
   * An attestation mined after an `evm_snapshot`, two blocks more, indexed; then `evm_revert`: the node's head is below
   * the checkpoint and its blocks up to there are the index's. The attacker's repro served the dropped attestation as
   * current (200, `/readyz` fresh) until the chain grew back and a backed-off follower looked again, up to
   * INDEX_STALL_SECONDS if it did not grow. Polls are driven by `catchUp`, so nothing here races a timer: a grace of
   * 0 (INDEX_BEHIND_GRACE_SECONDS) doubts at the first such poll, after its second look at the head.
   */
  async function rolledBack(name: string, confirmations: string) {
    const subject = `did:web:${name}.example`;
    const s = await service(name, { INDEX_CONFIRMATIONS: confirmations, INDEX_BEHIND_GRACE_SECONDS: "0" });
    const kept = (await attest(subject)).toLowerCase() as Hex;
    expect(await s.index.catchUp()).toBe(true);
    const snapshot = await anvil().snapshot();
    const forkPoint = await head();
    const dropped = (await attest(subject)).toLowerCase() as Hex;
    await mine(2);
    expect(await s.index.catchUp()).toBe(true);
    expect(await answers(s, subject, dropped)).toEqual({ list: [dropped, kept], count: 2, one: 200, ready: [200, false] });

    await anvil().revert({ id: snapshot });
    expect(await head()).toBe(forkPoint);
    // The poll that finds the head below the index: not a completed poll, nothing rewound (a backend behind looks the
    // same); past the grace, every read 503 INDEX_STALE, not ready, the dropped attestation no answer any more.
    expect(await s.index.catchUp()).toBe(false);
    const stale = [503, "INDEX_STALE"];
    expect(await answers(s, subject, dropped)).toEqual({ list: stale, count: stale, one: stale, ready: [503, true] });
    expect((await get(s, "/readyz")).body.index).toMatchObject({ stale: true, doubted: true });
    // The operator's view says why: the last completed poll is doubted.
    const { runOps } = await import("../app/ops.ts");
    const lines: string[] = [];
    const env = { RPC_URL: stack.devnet.rpcUrl, TRUST_ANCHORS_PATH: stack.devnet.trustAnchorsPath, DATABASE_PATH: join(stack.dir, `${name}.sqlite`), DATA_DIR: stack.dir };
    expect(await runOps(["index", "status"], env, (l) => lines.push(l))).toBe(0);
    expect(JSON.parse(lines[0]!)).toMatchObject({ stale: true, doubted: true });
    return { s, subject, kept, dropped, forkPoint };
  }

  test("with an unconfirmed tail (its blocks' hashes kept): reads fail closed, and the next block, another at the dropped one's height, rewinds to the fork point", async () => {
    const { s, subject, kept, dropped, forkPoint } = await rolledBack("rolled-back-tail", "3");
    await mine(1);
    expect(await s.index.catchUp()).toBe(true);
    expect(await answers(s, subject, dropped)).toEqual({ list: [kept], count: 1, one: [404, "NOT_FOUND"], ready: [200, false] });
    expect((await get(s, "/readyz")).body.index?.indexedBlock).toBe(Number(forkPoint) + 1);
  }, 120_000);

  test("with no tail kept (INDEX_CONFIRMATIONS 0): reads stay failed closed while the chain is below the index, and its block at the index's height rewinds", async () => {
    const { s, subject, kept, dropped } = await rolledBack("rolled-back-no-tail", "0");
    // A block where the dropped attestation was, but no stored hash between the fork point and the checkpoint to tell.
    await mine(1);
    expect(await s.index.catchUp()).toBe(false);
    const stale = [503, "INDEX_STALE"];
    expect(await answers(s, subject, dropped)).toEqual({ list: stale, count: stale, one: stale, ready: [503, true] });
    // Back at the checkpoint's height under another hash: a fork, rewound, and the answers are the chain's again.
    await mine(2);
    expect(await s.index.catchUp()).toBe(true);
    expect(await answers(s, subject, dropped)).toEqual({ list: [kept], count: 1, one: [404, "NOT_FOUND"], ready: [200, false] });
  }, 120_000);
});
