/**
 * Reads on several chains through the app (decisions §30): `?chain=` picks a chain's own index reads, every answer
 * names its chain, a chain's stale index fails that chain only, kept answers are kept per chain, and
 * `/v1/trust-anchors` lists the chains served.
 */
import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { buildServedChains } from "../domain/chains/mod.ts";
import { asOfHead, type ListAttestations } from "../domain/index/mod.ts";
import type { KeyStatus } from "../domain/keys/mod.ts";
import type { ControllerAuthorization } from "../domain/controller_authorization/mod.ts";
import type { IndexHead } from "../ports/attestation_index.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { createApp } from "./app.ts";
import { type ChainIndexReads } from "./app_chains.ts";
import { createIndexAnswerCache } from "./index_answer_cache.ts";
import { AttestationPageModel } from "./routes/attestation_list.ts";
import { minimalAppDeps } from "./testing.ts";

const EAS_A = `0x${"a".repeat(40)}`;
const EAS_B = `0x${"b".repeat(40)}`;
const SUBJECT = "did:web:shop.example";
const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: {
    "eip155:31337": { name: "A", easContract: EAS_A, schemas: {} },
    "eip155:31338": { name: "B", easContract: EAS_B, schemas: {} },
  },
  registries: [],
};
const served = buildServedChains([{ caip2: "eip155:31337", role: "attestations" }, { caip2: "eip155:31338", role: "attestations" }, { caip2: "eip155:31339", role: "proofs" }], anchors);
if (!served.ok) throw new Error(served.message);

/** One chain's fake reads, counting calls; `stale`: its follower stopped (503 INDEX_STALE). */
function chainReads(blockNumber: bigint) {
  const calls = { list: 0, keyStatus: 0, authorize: 0, head: 0 };
  const state = { stale: false };
  const head: IndexHead = { blockNumber, blockHash: `0x${"01".repeat(32)}`, timestamp: 1_799_999_990n, checkedAtMs: Date.now(), chainHead: blockNumber };
  const stale = { ok: false as const, code: "INDEX_STALE", message: "The attestation index is not keeping up with the chain; try again shortly" };
  const at = <T extends object>(value: T) => Promise.resolve(state.stale ? stale : { ok: true as const, value: { ...value, asOf: asOfHead(head) } });
  const list = ((query: { subject?: string }) => {
    calls.list++;
    return at({ subject: query.subject, items: [], nextCursor: null });
  }) as unknown as ListAttestations;
  const keyStatus = ((subjectDid: string, keyDid: string) => {
    calls.keyStatus++;
    return at({ subjectDid, keyDid, at: 1_800_000_000, status: "unknown" });
  }) as unknown as KeyStatus;
  const authorize = (() => {
    calls.authorize++;
    return at({ authorized: false });
  }) as unknown as ControllerAuthorization;
  const indexAnswers = createIndexAnswerCache({
    head: () => {
      calls.head++;
      return Promise.resolve(head);
    },
    clock: { nowMs: () => Date.now() },
    stallSeconds: 3_600,
    pollMs: 3_600_000,
    discoverySeconds: 3_600,
    headReuseMs: 3_600_000,
  });
  const reads: ChainIndexReads = { attestationList: list, keyStatus, controllerAuthorization: authorize, indexAnswers };
  return { calls, state, reads };
}

function setup() {
  const a = chainReads(100n);
  const b = chainReads(200n);
  const rate = { take: () => ({ allowed: true as const }) };
  const app = createApp({
    ...minimalAppDeps(),
    eas: { ...minimalAppDeps().eas, chainId: 31337, easAddress: EAS_A as never },
    trustAnchors: anchors,
    servedChains: served.ok ? served.value : undefined,
    chainReads: new Map([[31338, b.reads]]),
    attestations: { list: a.reads.attestationList! },
    keyStatus: { keyStatus: a.reads.keyStatus!, clientRate: rate, maxInFlight: 10 },
    controllerAuthorization: { authorize: a.reads.controllerAuthorization!, clientRate: rate, maxInFlight: 10 },
    indexAnswers: a.reads.indexAnswers,
  });
  const get = async (path: string) => {
    const res = await app.handle(new Request(`http://localhost${path}`));
    return { status: res.status, body: await res.json() as Record<string, unknown>, etag: res.headers.get("etag") };
  };
  const edge = async (path: string) => {
    const route = app.edge.get(new URL(`http://localhost${path}`).pathname)!;
    const answer = await route(new Request(`http://localhost${path}`));
    return answer === undefined ? undefined : { status: answer.status, body: await answer.json() as Record<string, unknown> };
  };
  return { a, b, get, edge };
}

const A = { chainId: 31337, caip2: "eip155:31337", easContract: EAS_A };
const B = { chainId: 31338, caip2: "eip155:31338", easContract: EAS_B };
const KEY = "did:pkh:eip155:1:0x0000000000000000000000000000000000000001";

describe("reads on several chains (decisions §30)", () => {
  test("no chain reads the default chain; ?chain= (CAIP-2 or decimal) reads that chain only, and the answer names it", async () => {
    const env = setup();
    const plain = await env.get(`/v1/attestations?subject=${SUBJECT}`);
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({ chain: A, asOf: { blockNumber: 100 } });
    expect(Value.Check(AttestationPageModel, plain.body)).toBe(true);
    expect(env.b.calls.list).toBe(0);
    for (const chain of ["31338", "eip155:31338"]) {
      const other = await env.get(`/v1/attestations?subject=${SUBJECT}&chain=${chain}`);
      expect(other.status).toBe(200);
      expect(other.body).toMatchObject({ chain: B, asOf: { blockNumber: 200 } });
    }
    // Kept per chain: the second read of chain B is its kept answer, chain A's list was read once.
    expect(env.b.calls.list).toBe(1);
    expect(env.a.calls.list).toBe(1);
    const status = await env.get(`/v1/key-status?subjectDid=${SUBJECT}&keyDid=${KEY}&chain=31338`);
    expect(status.body).toMatchObject({ chain: B });
    expect([env.a.calls.keyStatus, env.b.calls.keyStatus]).toEqual([0, 1]);
    const authorization = await env.get(`/v1/controller-authorization?subjectDid=${SUBJECT}&controllerDid=${KEY}&chain=eip155:31338`);
    expect(authorization.body).toMatchObject({ chain: B });
    expect([env.a.calls.authorize, env.b.calls.authorize]).toEqual([0, 1]);
  });

  test("chainId= is chain='s other spelling, as GET /v1/nonce takes it; the two naming different chains is 400 INVALID_INPUT", async () => {
    // Found by attack: a read given chainId=31338 answered chain A's list while the nonce route answered chain B's nonce.
    const env = setup();
    for (const query of ["chainId=31338", "chainId=eip155:31338", "chain=31338&chainId=eip155:31338"]) {
      const res = await env.get(`/v1/attestations?subject=${SUBJECT}&${query}`);
      expect([res.status, res.body.chain]).toEqual([200, B]);
    }
    const status = await env.get(`/v1/key-status?subjectDid=${SUBJECT}&keyDid=${KEY}&chainId=31338`);
    expect(status.body).toMatchObject({ chain: B });
    const before = [env.a.calls, env.b.calls].map((c) => c.list + c.keyStatus + c.authorize);
    for (const query of ["chain=31337&chainId=31338", "chainId=31338&chainId=31338", "chain=31338&chainId=eth"]) {
      const res = await env.get(`/v1/attestations?subject=${SUBJECT}&${query}`);
      expect([res.status, res.body]).toEqual([400, { code: "INVALID_INPUT", error: expect.any(String) }]);
    }
    expect([env.a.calls, env.b.calls].map((c) => c.list + c.keyStatus + c.authorize)).toEqual(before);
  });

  test("the same read on two chains: two answers, two ETags", async () => {
    const env = setup();
    const onA = await env.get(`/v1/attestations?subject=${SUBJECT}&chain=31337`);
    const onB = await env.get(`/v1/attestations?subject=${SUBJECT}&chain=31338`);
    expect(onA.etag).not.toBe(onB.etag);
  });

  test("a chain not served, or a proof chain, is 400 UNSUPPORTED_CHAIN; a malformed one 400 INVALID_INPUT; no index read", async () => {
    const env = setup();
    for (const [chain, code] of [["eip155:1", "UNSUPPORTED_CHAIN"], ["31339", "UNSUPPORTED_CHAIN"], ["eth", "INVALID_INPUT"], ["-1", "INVALID_INPUT"]]) {
      for (const path of [`/v1/attestations?subject=${SUBJECT}`, `/v1/key-status?subjectDid=${SUBJECT}&keyDid=${KEY}`, `/v1/controller-authorization?subjectDid=${SUBJECT}&controllerDid=${KEY}`]) {
        const res = await env.get(`${path}&chain=${chain}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ code, error: expect.any(String) });
      }
    }
    expect([env.a.calls, env.b.calls].map((c) => c.list + c.keyStatus + c.authorize)).toEqual([0, 0]);
  });

  test("one chain's stale index is 503 INDEX_STALE naming it; the other chain still answers", async () => {
    const env = setup();
    env.b.state.stale = true;
    const onB = await env.get(`/v1/attestations?subject=${SUBJECT}&chain=31338`);
    expect(onB.status).toBe(503);
    expect(onB.body).toMatchObject({ code: "INDEX_STALE" });
    expect(String(onB.body.error)).toContain("eip155:31338");
    const onA = await env.get(`/v1/attestations?subject=${SUBJECT}`);
    expect(onA.status).toBe(200);
  });

  test("the edge answers a kept answer of the chain the request names, and only that chain's", async () => {
    const env = setup();
    await env.get(`/v1/attestations?subject=${SUBJECT}&chain=31338`);
    // Kept on chain B only: the edge answers chain B's read, a read of chain A (named or not) goes to the route.
    expect(await env.edge(`/v1/attestations?subject=${SUBJECT}&chain=eip155:31338`)).toMatchObject({ status: 200, body: { chain: B } });
    expect(await env.edge(`/v1/attestations?subject=${SUBJECT}`)).toBeUndefined();
    expect(await env.edge(`/v1/attestations?subject=${SUBJECT}&chain=31337`)).toBeUndefined();
    expect(await env.edge(`/v1/attestations?subject=${SUBJECT}&chain=eip155:1`)).toBeUndefined();
    await env.get(`/v1/attestations?subject=${SUBJECT}`);
    expect(await env.edge(`/v1/attestations?subject=${SUBJECT}&chain=31337`)).toMatchObject({ status: 200, body: { chain: A } });
    expect([env.a.calls.list, env.b.calls.list]).toEqual([1, 1]);
  });

  test("/v1/trust-anchors lists the chains served and the default", async () => {
    const env = setup();
    const res = await env.get("/v1/trust-anchors");
    expect(res.body.servedChains).toEqual([
      { caip2: "eip155:31337", chainId: 31337, role: "attestations", default: true },
      { caip2: "eip155:31338", chainId: 31338, role: "attestations", default: false },
      { caip2: "eip155:31339", chainId: 31339, role: "proofs", default: false },
    ]);
    expect(res.body.defaultChain).toBe("eip155:31337");
    expect(res.body.chains).toEqual(anchors.chains as never);
  });
});
