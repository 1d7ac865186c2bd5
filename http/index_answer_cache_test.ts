import { describe, expect, test } from "bun:test";
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { type AsOf, asOfHead, INDEX_STALE_MESSAGE, isFresh, type ListAttestations } from "../domain/index/mod.ts";
import type { KeyStatus } from "../domain/keys/mod.ts";
import { createRateLimiter } from "../domain/rate_limit.ts";
import type { IndexHead } from "../ports/attestation_index.ts";
import { fakeClock } from "../ports/fakes/mod.ts";
import { createApp } from "./app.ts";
import { createIndexAnswerCache, type IndexAnswerCacheDeps } from "./index_answer_cache.ts";
import { minimalAppDeps } from "./testing.ts";

const ARTIFACT = `did:artifact:${"ab".repeat(32)}`;
const SUBJECT = "did:web:shop.example";
const KEY = "did:pkh:eip155:31337:0x00000000000000000000000000000000000000aa";
const STALL_SECONDS = 120;
const POLL_MS = 1_000;
type Fail = { ok: false; code: string; message: string };

/**
 * An app over fake reads that count their calls and, as the store-backed reads do, answer at the shared index's head
 * with its `asOf`, or INDEX_STALE once no poll completed within the stall time.
 */
function setup(options: { cache?: Partial<IndexAnswerCacheDeps> | null; failing?: string | undefined } = {}) {
  const clock = fakeClock(1_800_000_000_000);
  let head: IndexHead = { blockNumber: 100n, blockHash: `0x${"01".repeat(32)}`, timestamp: 1_799_999_990n, checkedAtMs: clock.nowMs(), chainHead: 100n };
  const calls = { artifactTrust: 0, keyStatus: 0, list: 0, heads: 0 };
  let failing = options.failing;
  /** Runs inside the domain's read, before it answers (a poll completing meanwhile). */
  let during: (() => void) | undefined;
  /** The domain's answer at the head, as createIndexAnswers gives it. */
  const atHead = <T extends object>(value: T): { ok: true; value: T & { asOf: AsOf } } | Fail => {
    during?.();
    if (!isFresh(head, { nowMs: clock.nowMs(), stallSeconds: STALL_SECONDS })) return { ok: false, code: "INDEX_STALE", message: INDEX_STALE_MESSAGE };
    if (failing !== undefined) return { ok: false, code: failing, message: "failed" };
    return { ok: true, value: { ...value, asOf: asOfHead(head) } };
  };
  const artifactTrust = (async (did: string | undefined) => {
    calls.artifactTrust++;
    return atHead({ artifactDid: did!, assessments: Number(head.blockNumber) });
  }) as unknown as ArtifactTrust;
  const keyStatus = (async (subjectDid: string, keyDid: string, at?: number | string) => {
    calls.keyStatus++;
    return atHead({ subjectDid, keyDid, at: at ?? Math.floor(clock.nowMs() / 1000), status: "active" });
  }) as unknown as KeyStatus;
  const list = (async (query: { subject?: string; limit?: string }) => {
    calls.list++;
    return atHead({ subject: query.subject!, items: Array.from({ length: Number(query.limit ?? 1) }, (_, i) => `item ${i}`) });
  }) as unknown as ListAttestations;
  const cache = options.cache === null ? null : createIndexAnswerCache({
    head: async () => {
      calls.heads++;
      return head;
    },
    clock,
    stallSeconds: STALL_SECONDS,
    pollMs: POLL_MS,
    discoverySeconds: 60,
    ...options.cache,
  });
  const app = createApp({
    ...minimalAppDeps(),
    artifactTrust,
    attestations: { list },
    keyStatus: { keyStatus, clientRate: createRateLimiter(clock, { capacity: 1_000, perMinute: 1_000 }), maxInFlight: 10 },
    indexAnswers: cache,
  });
  const get = (path: string, headers: Record<string, string> = {}) => app.handle(new Request(`http://localhost${path}`, { headers }));
  return {
    clock,
    calls,
    cache,
    get,
    /** A completed poll of the follower (the head unchanged unless given). */
    poll(next: Partial<IndexHead> = {}) {
      head = { ...head, ...next, checkedAtMs: clock.nowMs() };
    },
    fail(code: string | undefined) {
      failing = code;
    },
    during(run: (() => void) | undefined) {
      during = run;
    },
  };
}

const trustPath = (did = ARTIFACT) => `/v1/artifact-trust?artifactDid=${encodeURIComponent(did)}`;
const statusPath = `/v1/key-status?subjectDid=${encodeURIComponent(SUBJECT)}&keyDid=${encodeURIComponent(KEY)}`;
const listPath = (limit = 3) => `/v1/attestations?subject=${encodeURIComponent(SUBJECT)}&schema=user-review&limit=${limit}`;

describe("the answer cache of the index reads (decisions §21, issue 34)", () => {
  test("a second identical read, on either path, is answered without the domain: the same bytes and ETag, and its 304", async () => {
    const s = setup();
    const first = await s.get(trustPath());
    const body = await first.text();
    expect(first.status).toBe(200);
    expect(JSON.parse(body).asOf.blockNumber).toBe(100);
    const again = await s.get(trustPath().replace("/v1/", "/api/public/"));
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(body);
    expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(again.headers.get("cache-control")).toBe(first.headers.get("cache-control"));
    expect(again.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(again.headers.get("access-control-allow-origin")).toBe("*");
    const conditional = await s.get(trustPath(), { "if-none-match": first.headers.get("etag")! });
    expect(conditional.status).toBe(304);
    // Parameters the route does not read are not part of the key either.
    expect((await s.get(`${trustPath()}&ignored=1`)).status).toBe(200);
    expect(s.calls.artifactTrust).toBe(1);

    for (let i = 0; i < 3; i++) expect((await s.get(statusPath)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await s.get(listPath())).status).toBe(200);
    expect(s.calls.keyStatus).toBe(1);
    expect(s.calls.list).toBe(1);
    // Another query is another answer.
    expect((await s.get(listPath(4))).status).toBe(200);
    expect(s.calls.list).toBe(2);
    // A parameter given as \u0001 is not the parameter left out: computed, never the kept answer of the query without it.
    const withoutSchema = `/v1/attestations?subject=${encodeURIComponent(SUBJECT)}&limit=3`;
    expect((await s.get(withoutSchema)).status).toBe(200);
    const lists = s.calls.list;
    await s.get(`${withoutSchema}&schema=%01`);
    expect(s.calls.list).toBe(lists + 1);
  });

  test("concurrent identical reads within one generation are one lookup", async () => {
    const s = setup();
    const answers = await Promise.all(Array.from({ length: 8 }, () => s.get(listPath())));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(await Promise.all(answers.map((a) => a.text()))).size).toBe(1);
    expect(s.calls.list).toBe(1);
    // Their head reads are batched too: fewer than one a request.
    expect(s.calls.heads).toBeLessThan(8);
  });

  test("a new poll generation recomputes: a completed poll with the same head, a new block, a rewind to another hash", async () => {
    const s = setup();
    await s.get(trustPath());
    s.clock.set(s.clock.nowMs() + 10);
    s.poll();
    const samehead = await (await s.get(trustPath())).json();
    expect(s.calls.artifactTrust).toBe(2);
    expect(samehead.asOf.blockNumber).toBe(100);
    s.poll({ blockNumber: 101n, blockHash: `0x${"02".repeat(32)}` });
    const moved = await (await s.get(trustPath())).json();
    expect(moved.asOf).toMatchObject({ blockNumber: 101, blockHash: `0x${"02".repeat(32)}` });
    expect(moved.assessments).toBe(101);
    s.poll({ blockNumber: 101n, blockHash: `0x${"03".repeat(32)}` });
    expect((await (await s.get(trustPath())).json()).asOf.blockHash).toBe(`0x${"03".repeat(32)}`);
    expect(s.calls.artifactTrust).toBe(4);
    // Only the current generation's answers are kept.
    expect(s.cache!.size().entries).toBe(1);
  });

  test("an answer computed at a newer head than the request read is served, not kept under the older generation", async () => {
    const s = setup();
    s.during(() => {
      s.during(undefined);
      s.poll({ blockNumber: 101n, blockHash: `0x${"02".repeat(32)}` });
    });
    expect((await (await s.get(listPath())).json()).asOf.blockNumber).toBe(101);
    expect(s.cache!.size().entries).toBe(0);
    expect((await (await s.get(listPath())).json()).asOf.blockNumber).toBe(101);
    expect((await (await s.get(listPath())).json()).asOf.blockNumber).toBe(101);
    expect(s.calls.list).toBe(2);
  });

  test("a stalled index is 503 INDEX_STALE even with a kept answer, and serves from the cache again once a poll completes", async () => {
    const s = setup();
    expect((await s.get(statusPath)).status).toBe(200);
    s.clock.set(s.clock.nowMs() + (STALL_SECONDS + 1) * 1000);
    const stale = await s.get(statusPath);
    expect(stale.status).toBe(503);
    expect((await stale.json()).code).toBe("INDEX_STALE");
    expect(stale.headers.get("cache-control")).toBe("no-store");
    expect(s.calls.keyStatus).toBe(2);
    s.poll();
    expect((await s.get(statusPath)).status).toBe(200);
    expect((await s.get(statusPath)).status).toBe(200);
    expect(s.calls.keyStatus).toBe(3);
  });

  test("errors are not kept: each read asks the domain again", async () => {
    const s = setup({ failing: "NETWORK_ERROR" });
    expect((await s.get(trustPath())).status).toBe(502);
    expect((await s.get(trustPath())).status).toBe(502);
    expect(s.calls.artifactTrust).toBe(2);
    s.fail(undefined);
    expect((await s.get(trustPath())).status).toBe(200);
    expect((await s.get(trustPath())).status).toBe(200);
    expect(s.calls.artifactTrust).toBe(3);
    // A refused request never reaches the cache nor the domain.
    expect((await s.get("/v1/attestations?limit=5")).status).toBe(400);
    expect(s.calls.list).toBe(0);
  });

  test("the bound evicts the oldest answer first, and an answer above the entry cap is not kept", async () => {
    // The bytes each answer counts (two a character), measured on an unbounded cache.
    const sizes: Record<number, number> = {};
    for (const limit of [1, 2, 3]) {
      const probe = setup();
      await probe.get(listPath(limit));
      sizes[limit] = probe.cache!.size().bytes;
    }
    // Room for the answers of limit 2 and 3 together, not for all three; none larger than limit 3's.
    const s = setup({ cache: { maxBytes: sizes[2]! + sizes[3]!, maxEntryBytes: sizes[3]! } });
    for (const limit of [1, 2, 3]) expect((await s.get(listPath(limit))).status).toBe(200);
    expect(s.cache!.size()).toEqual({ entries: 2, bytes: sizes[2]! + sizes[3]! });
    await s.get(listPath(3));
    await s.get(listPath(2));
    expect(s.calls.list).toBe(3);
    // The oldest (limit 1) went first.
    await s.get(listPath(1));
    expect(s.calls.list).toBe(4);
    for (let i = 0; i < 2; i++) expect((await s.get(listPath(20))).status).toBe(200);
    expect(s.calls.list).toBe(6);
    expect(s.cache!.size().bytes).toBeLessThanOrEqual(sizes[2]! + sizes[3]!);
  });

  test("a kept answer lives at most one poll interval by the clock, even when no poll completes (answers evaluated at now)", async () => {
    const s = setup();
    const first = await (await s.get(statusPath)).json();
    s.clock.set(s.clock.nowMs() + POLL_MS - 1);
    await s.get(statusPath);
    expect(s.calls.keyStatus).toBe(1);
    s.clock.set(s.clock.nowMs() + 1);
    const later = await (await s.get(statusPath)).json();
    expect(s.calls.keyStatus).toBe(2);
    expect(later.at).toBe(first.at + 1);
  });

  test("reads with live evidence are not kept when DISCOVERY_CACHE_SECONDS is 0; the list still is", async () => {
    const s = setup({ cache: { discoverySeconds: 0 } });
    for (let i = 0; i < 2; i++) await s.get(trustPath());
    for (let i = 0; i < 2; i++) await s.get(listPath());
    expect(s.calls.artifactTrust).toBe(2);
    expect(s.calls.list).toBe(1);
  });

  test("indexAnswers: null turns it off: every read computed", async () => {
    const s = setup({ cache: null });
    for (let i = 0; i < 3; i++) expect((await s.get(trustPath())).status).toBe(200);
    expect(s.calls.artifactTrust).toBe(3);
    expect(s.calls.heads).toBe(0);
  });

  test("INDEX_HEAD_REUSE_MS: one head read serves the requests after it for that long; this instance's poll ends it at once", async () => {
    const s = setup({ cache: { headReuseMs: 100 } });
    for (let i = 0; i < 5; i++) expect((await s.get(listPath())).status).toBe(200);
    expect(s.calls.heads).toBe(1);
    expect(s.calls.list).toBe(1);

    // Another instance's poll (the store moved, nothing told this one): seen once the reuse time has passed.
    s.poll({ blockNumber: 101n, blockHash: `0x${"02".repeat(32)}` });
    const within = await (await s.get(listPath())).json();
    expect(within.asOf.blockNumber).toBe(100);
    s.clock.set(s.clock.nowMs() + 100);
    const after = await (await s.get(listPath())).json();
    expect(after.asOf.blockNumber).toBe(101);
    expect(s.calls.heads).toBe(2);

    // This instance's own follower step: the next request reads the head again, whatever the time.
    s.poll({ blockNumber: 102n, blockHash: `0x${"03".repeat(32)}` });
    s.cache!.headChanged();
    const told = await (await s.get(listPath())).json();
    expect(told.asOf.blockNumber).toBe(102);
    expect(s.calls.heads).toBe(3);
  });

  test("INDEX_HEAD_REUSE_MS never hides a stall: a reused head past INDEX_STALL_SECONDS is 503 INDEX_STALE", async () => {
    const s = setup({ cache: { headReuseMs: 1_000 } });
    expect((await s.get(trustPath())).status).toBe(200);
    s.clock.set(s.clock.nowMs() + (STALL_SECONDS + 1) * 1000);
    const stale = await s.get(trustPath());
    expect(stale.status).toBe(503);
    expect((await stale.json()).code).toBe("INDEX_STALE");
  });
});

describe("revalidation across polls (decisions §21 amended, issue 43 item 1)", () => {
  const paths = { trust: trustPath(), status: statusPath, list: listPath() };

  for (const cache of [undefined, null] as const) {
    test(`${cache === null ? "without" : "with"} the answer cache: the weak ETag of an earlier poll is 304 while the answer is unchanged, 200 with a new one once it changes`, async () => {
      const s = setup({ cache });
      const first: Record<string, { etag: string; body: string }> = {};
      for (const [name, path] of Object.entries(paths)) {
        const answer = await s.get(path);
        expect(answer.status).toBe(200);
        first[name] = { etag: answer.headers.get("etag")!, body: await answer.text() };
        expect(first[name]!.etag).toMatch(/^W\/"[A-Za-z0-9_-]{43}"$/);
      }
      // Two more polls, seconds apart: asOf.checkedAt moves, and so does key status's `at` (now).
      for (let i = 0; i < 2; i++) {
        s.clock.set(s.clock.nowMs() + 2_000);
        s.poll();
      }
      for (const [name, path] of Object.entries(paths)) {
        const fresh = await s.get(path);
        const body = await fresh.text();
        expect(body).not.toBe(first[name]!.body);
        expect({ name, etag: fresh.headers.get("etag") }).toEqual({ name, etag: first[name]!.etag });
        const conditional = await s.get(path, { "if-none-match": first[name]!.etag });
        expect({ name, status: conditional.status, body: await conditional.text() }).toEqual({ name, status: 304, body: "" });
        expect(conditional.headers.get("etag")).toBe(first[name]!.etag);
      }
      // A new block changes artifact trust's answer (here: its count of assessments): 200 and a new ETag.
      s.clock.set(s.clock.nowMs() + 1_000);
      s.poll({ blockNumber: 101n, blockHash: `0x${"02".repeat(32)}` });
      const changed = await s.get(paths.trust, { "if-none-match": first.trust!.etag });
      expect(changed.status).toBe(200);
      expect(changed.headers.get("etag")).not.toBe(first.trust!.etag);
      expect((await changed.json()).assessments).toBe(101);
      // The list's answer did not change with the block: still 304.
      expect((await s.get(paths.list, { "if-none-match": first.list!.etag })).status).toBe(304);
      // A stale index is 503 whatever the validator.
      s.clock.set(s.clock.nowMs() + (STALL_SECONDS + 1) * 1000);
      expect((await s.get(paths.list, { "if-none-match": first.list!.etag })).status).toBe(503);
    });
  }
});
