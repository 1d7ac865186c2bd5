/**
 * Freshness of public reads (issue 34, decisions §21): every answer says the index head it was computed at
 * (`asOf`); a write through the service is in the next read at once (its instance polls before answering); with
 * no poll completed for INDEX_STALL_SECONDS (the follower dead, the provider unreachable) reads are 503
 * INDEX_STALE with Retry-After and /readyz is not ready, never an old answer presented as current; an idle chain
 * whose head does not move stays fresh as long as polls complete.
 *
 * The harness's follower polls only at start, on a mined write and when a test asks (`stack.sync()`), so the only
 * clock in play is the stall time: a read comes more than STALL seconds after the last poll, or well within it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { easWriter } from "./support/eas_writer.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { inFrontOf, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

const STALL_SECONDS = 3;
const SUBJECT = "did:web:fresh.test";
let stack: Stack;
let proxy: RpcProxy;

beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({ env: { INDEX_STALL_SECONDS: String(STALL_SECONDS) }, rpcUrlFor: inFrontOf(proxy) });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

async function list() {
  const res = await fetch(`${stack.baseUrl}/v1/attestations?subject=${SUBJECT}&schema=user-review`);
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() as Record<string, any> };
}
async function ready() {
  const res = await fetch(`${stack.baseUrl}/readyz`);
  return { status: res.status, body: await res.json() as { checks: { index: boolean }; index: { stale: boolean; checkedAt: number | null } } };
}
/** Waits until more than the stall time has passed since `sinceMs` (the index's last poll came before it). */
const pastStall = async (sinceMs: number) => await Bun.sleep(Math.max(0, sinceMs + STALL_SECONDS * 1000 + 200 - Date.now()));

describe("freshness of public reads", () => {
  test("a write through the service is in the next read, as of a block at or after it, with no poll of its own", async () => {
    const body = await signedReviewBody(stack.devnet, generatePrivateKey(), {
      data: { subject: SUBJECT, version: "1", ratingValue: 4, reviewBody: "fresh", screenshotUrls: [], proofs: [] },
    });
    const written = await fetch(`${stack.baseUrl}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(written.status).toBe(200);
    const { uid, blockNumber } = await written.json() as { uid: Hex; blockNumber: number };
    const page = await list();
    expect(page.status).toBe(200);
    expect(page.body.items.map((i: { attestation: { uid: string } }) => i.attestation.uid.toLowerCase())).toEqual([uid.toLowerCase()]);
    expect(page.body.asOf.blockNumber).toBeGreaterThanOrEqual(Number(blockNumber));
    expect(page.body.asOf).toEqual({ blockNumber: expect.any(Number), blockHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), timestamp: expect.any(Number), checkedAt: expect.any(Number) });
  });

  test("no poll completed for INDEX_STALL_SECONDS: 503 INDEX_STALE with Retry-After, /readyz not ready; a completed poll of the idle chain is fresh again", async () => {
    await stack.sync();
    const synced = Date.now();
    const fresh = await list();
    expect(fresh.status).toBe(200);
    expect((await ready()).body.index.stale).toBe(false);

    // No poll since (the follower polls only when asked here): stale, whatever the chain does.
    await pastStall(synced);
    const stale = await list();
    expect(stale).toEqual({
      status: 503,
      retryAfter: "5",
      body: { code: "INDEX_STALE", error: "The attestation index is not keeping up with the chain; try again shortly" },
    });
    const notReady = await ready();
    expect([notReady.status, notReady.body.checks.index, notReady.body.index.stale]).toEqual([503, false, true]);
    // Every public read, not only the list.
    const trust = await fetch(`${stack.baseUrl}/v1/artifact-trust?artifactDid=did:artifact:bafkreig3u6rjsrfxhvl36rfx4ojtq64cmaaslcf5ntbs4oqljq4wzc2lcu`);
    expect([trust.status, trust.headers.get("retry-after"), (await trust.json() as { code: string }).code]).toEqual([503, "5", "INDEX_STALE"]);

    // The chain has not moved; a poll completes all the same: fresh, at the same head, checked later.
    expect(await stack.sync().then(() => true)).toBe(true);
    const idle = await list();
    expect(idle.status).toBe(200);
    expect(idle.body.asOf.blockNumber).toBe(fresh.body.asOf.blockNumber);
    expect(idle.body.asOf.blockHash).toBe(fresh.body.asOf.blockHash);
    expect(idle.body.asOf.checkedAt).toBeGreaterThan(fresh.body.asOf.checkedAt);
    expect((await ready()).status).toBe(200);
  });

  test("the provider unreachable: polls fail, and once the stall time has passed reads are 503 INDEX_STALE without the provider's words", async () => {
    await stack.sync();
    const synced = Date.now();
    proxy.onHttp = () => new Response("upstream 127.0.0.1 exploded", { status: 502 });
    try {
      await expect(stack.sync()).rejects.toThrow();
      // Within the stall time the index's answer stands, and says what it stands on.
      const standing = await list();
      expect(standing.status).toBe(200);
      await pastStall(synced);
      const stale = await list();
      expect([stale.status, stale.retryAfter, stale.body.code]).toEqual([503, "5", "INDEX_STALE"]);
      expect(JSON.stringify(stale.body)).not.toMatch(/127\.0\.0\.1|exploded|502/);
      expect((await ready()).status).toBe(503);
    } finally {
      proxy.onHttp = undefined;
    }
    await stack.sync();
    expect((await list()).status).toBe(200);
  });
});

describe("RPC_WS_URL: newHeads over the node's WebSocket", () => {
  let ws: Stack;
  beforeAll(async () => {
    ws = await startStack({ env: { INDEX_CONFIRMATIONS: "0" } });
  }, 60_000);
  afterAll(async () => await ws?.stop());

  test("an attestation written straight to the chain is listed without a poll being asked for", async () => {
    // The harness's follower polls only when asked (INDEX_POLL_MS of an hour), and this instance has an index of its
    // own: only a head announced over the WebSocket can make it see a write that did not go through it.
    const service = await ws.restartService({ RPC_WS_URL: ws.devnet.rpcUrl.replace(/^http/, "ws"), DATABASE_PATH: `${ws.dir}/ws.sqlite` });
    const writer = easWriter({ rpcUrl: ws.devnet.rpcUrl, easAddress: ws.devnet.easAddress });
    const review = findSchemaByName("user-review")!;
    const subject = "did:web:ws.test";
    const data = encodeSchemaData(review.schema, { subject, version: "1", ratingValue: 5, reviewBody: "pushed", screenshotUrls: [], proofs: [] }) as { value: Hex };
    const { uid } = await writer.attest(ws.devnet.keys.users[0] as Hex, ws.devnet.schemaUids["user-review"] as Hex, {
      recipient: (didToAddress(subject) as { value: Hex }).value,
      data: data.value,
      revocable: review.revocable,
    });
    const mined = Number(await writer.client.getBlockNumber({ cacheTime: 0 }));
    // Until the answer stands on the write's block, however long a loaded machine takes (the test's time limit stops
    // a broken run); the notification arrives in milliseconds.
    let page: Record<string, any> = {};
    for (;;) {
      page = await (await fetch(`${service.url}/v1/attestations?subject=${subject}&schema=user-review`)).json() as Record<string, any>;
      if ((page.asOf?.blockNumber ?? 0) >= mined) break;
      await Bun.sleep(25);
    }
    expect(page.asOf.blockNumber).toBeGreaterThanOrEqual(mined);
    expect(page.items.map((i: { attestation: { uid: string } }) => i.attestation.uid.toLowerCase())).toEqual([uid.toLowerCase()]);
  });
});
