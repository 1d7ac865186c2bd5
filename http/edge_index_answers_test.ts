/**
 * Kept answers of artifact trust and the attestation list answered at the server's edge (issue 34): the edge answers
 * a request only when the answer cache holds its answer now, and then exactly as the app would. Two servers on
 * loopback, each the service's edge (`instrumentedHandler`) over an app with its own answer cache: one whose edge
 * routes are on, one handed to the edge without them, so every request goes through Elysia. Each request goes to
 * both, twice (the first computes and keeps, the second is the kept answer); status, headers (all but `date`),
 * bodies, the access-log lines and the request metrics must be the same.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createJsonLogger, createPrometheusMetrics } from "../adapters/observability/mod.ts";
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import type { KeyStatus } from "../domain/keys/mod.ts";
import type { RateLimiter } from "../domain/rate_limit.ts";
import { asOfHead, type ListAttestations } from "../domain/index/mod.ts";
import type { IndexHead } from "../ports/attestation_index.ts";
import { createApp } from "./app.ts";
import { createIndexAnswerCache, type IndexAnswerCache } from "./index_answer_cache.ts";
import { instrumentedHandler, requestClientAddress, requestLogContext } from "./instrument.ts";
import { ROUTE_DOCS } from "./route_docs.ts";
import { minimalAppDeps } from "./testing.ts";

const ARTIFACT = `did:artifact:${"ab".repeat(32)}`;
const KEY_STATUS_TURNS = 3;
const clock = { nowMs: () => Date.now() };
const head: IndexHead = { blockNumber: 100n, blockHash: `0x${"01".repeat(32)}`, timestamp: 1_799_999_990n, checkedAtMs: Date.now(), chainHead: 100n };

/** One side: an app with fake index reads and its own answer cache, behind the edge, served by Bun. */
function side(withEdgeRoutes: boolean) {
  const lines: Record<string, unknown>[] = [];
  const log = createJsonLogger("debug", { context: requestLogContext, out: (line) => lines.push(JSON.parse(line)) });
  const metrics = createPrometheusMetrics();
  const calls = { computed: 0, peeked: 0, kept: 0, turns: 0 };
  const at = <T extends object>(value: T) => {
    calls.computed++;
    return Promise.resolve({ ok: true as const, value: { ...value, asOf: asOfHead(head) } });
  };
  const artifactTrust = ((did: string) => did === ARTIFACT ? at({ artifactDid: did, claims: ["a", "b"] }) : Promise.resolve({ ok: false, code: "INVALID_DID", message: "Invalid artifact DID" })) as unknown as ArtifactTrust;
  const list = ((query: { subject?: string; limit?: string }) => at({ subject: query.subject, items: Array.from({ length: Number(query.limit ?? 2) }, (_, i) => `item ${i}`) })) as unknown as ListAttestations;
  const cache = createIndexAnswerCache({ head: () => Promise.resolve(head), clock, stallSeconds: 3_600, pollMs: 3_600_000, discoverySeconds: 3_600, headReuseMs: 3_600_000 });
  const counted: IndexAnswerCache = {
    ...cache,
    peek(key, headers) {
      calls.peeked++;
      const answer = cache.peek(key, headers);
      if (answer !== undefined) calls.kept++;
      return answer;
    },
  };
  const keyStatus = ((subjectDid: string, keyDid: string) => at({ subjectDid, keyDid, status: "active" })) as unknown as KeyStatus;
  // Three lookups per client, then 429 (the route's KEY_STATUS_RATE_PER_MINUTE): every turn counted.
  const taken = new Map<string, number>();
  const clientRate: RateLimiter = {
    take(key) {
      calls.turns++;
      const used = (taken.get(key) ?? 0) + 1;
      taken.set(key, used);
      return used <= KEY_STATUS_TURNS ? { allowed: true } : { allowed: false, retryAfterSeconds: 20 };
    },
  };
  const clientAddress = () => requestClientAddress();
  const app = createApp({
    ...minimalAppDeps(),
    artifactTrust,
    attestations: { list },
    indexAnswers: counted,
    log,
    keyStatus: { keyStatus, clientRate, maxInFlight: 4, clientAddress },
  });
  const served = withEdgeRoutes ? app : { routes: app.routes, handle: (request: Request) => app.handle(request) };
  const handler = instrumentedHandler(served, { metrics, log });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request, s) => handler(request, s) });
  return { app, lines, metrics, calls, server, base: `http://127.0.0.1:${server.port}` };
}

const edge = side(true);
const elysia = side(false);
afterAll(() => {
  edge.server.stop(true);
  elysia.server.stop(true);
});

type Answer = { status: number; headers: Record<string, string>; body: string };

async function answerOf(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== "date") headers[name] = name === "x-request-id" ? "(fresh)" : value;
  });
  return { status: response.status, headers, body: await response.text() };
}

/** Sends the same request to both servers, twice; the answers must agree. */
async function both(method: string, path: string, headers: Record<string, string> = {}) {
  const answers: Answer[] = [];
  for (let i = 0; i < 2; i++) {
    const viaEdge = await answerOf(await fetch(`${edge.base}${path}`, { method, headers }));
    const viaElysia = await answerOf(await fetch(`${elysia.base}${path}`, { method, headers }));
    expect({ method, path, ...viaEdge }).toEqual({ method, path, ...viaElysia });
    answers.push(viaEdge);
  }
  return answers;
}

const trust = (did = ARTIFACT) => `/v1/artifact-trust?artifactDid=${encodeURIComponent(did)}`;
const list = (extra = "") => `/v1/attestations?subject=${encodeURIComponent("did:web:shop.example")}&schema=user-review${extra}`;

describe("kept index answers at the edge (issue 34)", () => {
  test("the edge routes include the two index reads once an answer cache is given", () => {
    const paths = [...edge.app.edge.keys()];
    expect(paths).toEqual(expect.arrayContaining(["/v1/artifact-trust", "/api/public/artifact-trust", "/v1/attestations", "/api/public/attestations"]));
    expect(paths).toEqual(expect.arrayContaining(["/v1/key-status", "/api/public/key-status"]));
    expect(paths).not.toContain("/v1/attestations/count");
  });

  test("the edge's table is the declarations that say so: every path of a route declared `edge`, and no other", () => {
    const declared = ROUTE_DOCS.filter((doc) => doc.edge !== undefined).flatMap((doc) => doc.paths);
    expect(declared.length).toBeGreaterThan(8);
    expect([...edge.app.edge.keys()].sort()).toEqual([...declared].sort());
  });

  test("a kept answer is served at the edge with the app's bytes, headers, ETag and 304, on both paths", async () => {
    const before = { ...edge.calls };
    const [first, second] = await both("GET", trust());
    expect(first!.status).toBe(200);
    expect(second!.headers.etag).toBe(first!.headers.etag);
    // Weak, over the answer without asOf (decisions §21 amended): the edge's kept answer carries the same one.
    expect(first!.headers.etag).toMatch(/^W\/"/);
    expect(edge.calls.kept - before.kept).toBe(1);
    await both("GET", trust().replace("/v1/", "/api/public/"));
    const [revalidated] = await both("GET", trust(), { "if-none-match": first!.headers.etag! });
    expect(revalidated!.status).toBe(304);
    await both("GET", list(), { "if-none-match": `"other", ${first!.headers.etag!}` });
    await both("GET", trust(), { origin: "https://widget.example", "x-request-id": "req-1" });
    for (const extra of ["", "&limit=3", "&limit=3&order=oldest", "&ignored=1"]) await both("GET", list(extra));
    // Computed once per key on each side: the edge served the repeats.
    expect(edge.calls.computed).toBe(elysia.calls.computed);
    expect(edge.calls.kept).toBeGreaterThan(5);
  });

  test("what the edge does not hold goes to the app and answers the same: refusals, misses, other methods", async () => {
    const cases: [string, string][] = [
      ["GET", "/v1/artifact-trust"],
      ["GET", `${trust()}&artifactDid=${ARTIFACT}`],
      ["GET", trust("did:artifact:nope")],
      ["GET", "/v1/attestations"],
      ["GET", list("&limit=0")],
      ["GET", list("&limit=3&limit=4")],
      ["GET", list("&cursor=%ZZ")],
      ["GET", `${list()}+`],
      ["HEAD", trust()],
      ["POST", trust()],
      ["OPTIONS", trust()],
      ["DELETE", list()],
      ["GET", `${trust()}#frag`],
      ["GET", trust().replace("artifact-trust", "artifact-trust/")],
    ];
    for (const [method, path] of cases) await both(method, path);
  });

  test("key status is served at the edge behind the route's per-client limit: one turn a lookup, the same 429", async () => {
    const status = `/v1/key-status?subjectDid=${encodeURIComponent("did:web:shop.example")}&keyDid=${encodeURIComponent("did:pkh:eip155:1:0x0000000000000000000000000000000000000001")}`;
    const before = { edge: { ...edge.calls }, elysia: { ...elysia.calls } };
    // Refused queries go to the route on both sides and take no turn.
    await both("GET", "/v1/key-status?subjectDid=did:web:shop.example");
    // Each side: the first lookup computes and keeps, the second is kept (at the edge on one side), then two 429s.
    const answers = await both("GET", status);
    const limited = await both("GET", status);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(limited.map((a) => a.status)).toEqual([200, 429]);
    expect(limited[1]!.headers["retry-after"]).toBe("20");
    expect(edge.calls.kept - before.edge.kept).toBe(3);
    // The same turns on both sides: the edge took the route's turn only when it answered.
    expect(edge.calls.turns - before.edge.turns).toBe(4);
    expect(elysia.calls.turns - before.elysia.turns).toBe(4);
    expect(edge.calls.computed - before.edge.computed).toBe(elysia.calls.computed - before.elysia.computed);
    await both("HEAD", status);
    await both("OPTIONS", status);
  });

  test("the access log and the request metrics are the same on both", async () => {
    const strip = (l: Record<string, unknown>) => ({ ...l, time: undefined, ms: undefined, requestId: undefined });
    expect(edge.lines.map(strip)).toEqual(elysia.lines.map(strip));
    const counts = (text: string) => text.split("\n").filter((l) => l.startsWith("ats_http_requests_total")).sort();
    const edgeCounts = counts(await edge.metrics.render());
    expect(edgeCounts.some((l) => l.includes('route="/v1/artifact-trust"') && l.includes('status="304"'))).toBe(true);
    expect(edgeCounts).toEqual(counts(await elysia.metrics.render()));
    expect(edge.lines.length).toBeGreaterThan(40);
  });
});
