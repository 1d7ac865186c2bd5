/**
 * The routes the server's edge answers ahead of Elysia (http/edge_routes.ts, issue 28) answer exactly as the app
 * does. Two servers on loopback, each the service's edge (`instrumentedHandler`) with main's body limit: one over
 * an app whose edge routes are on, one over the same app built again and handed to the edge without them, so every
 * request goes through Elysia. A corpus of requests (generated identifier lists, every method, odd paths, odd
 * content types, oversized and chunked bodies, preflights, request ids, and over a raw socket odd methods, Hosts
 * and absolute-form targets) goes to both; status, headers (all but `date`), bodies, the access-log lines and the
 * request metrics must be the same.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { Elysia } from "elysia";
import { createJsonLogger, createPrometheusMetrics } from "../adapters/observability/mod.ts";
import { createApp } from "./app.ts";
import { type EdgeAnswer, publicEdgeRoutes } from "./edge_routes.ts";
import { instrumentedHandler, requestLogContext } from "./instrument.ts";
import { MAX_BODY_BYTES } from "./routes/request.ts";
import { minimalAppDeps } from "./testing.ts";

const EDGE_PATHS = ["/v1/trust-anchors", "/v1/trust-policy", "/api/public/trust-anchors", "/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"];

const anchors = {
  version: 1,
  updatedAt: "2026-05-04T00:00:00Z",
  widgetOrigins: ["https://widget.example"],
  chains: { "eip155:66238": { name: "OMAChain Testnet", easContract: "0x8835AF90f1537777F52E482C8630cE4e947eCa32", schemas: { "user-review": `0x${"7a".repeat(32)}` } } },
  registries: [],
};

/** One side: an app behind the edge, served by Bun, with its log lines and metrics. */
function side(withEdgeRoutes: boolean) {
  const lines: Record<string, unknown>[] = [];
  const log = createJsonLogger("debug", { context: requestLogContext, out: (line) => lines.push(JSON.parse(line)) });
  const metrics = createPrometheusMetrics();
  const app = createApp({ ...minimalAppDeps(), trustAnchors: anchors, log });
  // Without its edge the server sees a plain app: every request goes to Elysia.
  const served = withEdgeRoutes ? app : { routes: app.routes, handle: (request: Request) => app.handle(request) };
  const handler = instrumentedHandler(served, { metrics, log });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, maxRequestBodySize: 16 * 1024 * 1024, fetch: (request, s) => handler(request, s) });
  return { app, lines, metrics, server, base: `http://127.0.0.1:${server.port}` };
}

const edge = side(true);
const elysia = side(false);
afterAll(() => {
  edge.server.stop(true);
  elysia.server.stop(true);
});

type Answer = { status: number; headers: Record<string, string>; body: string };

async function answerOf(response: Response, sentId: string | undefined): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== "date") headers[name] = value;
  });
  // A request id the client sent plainly is echoed; otherwise each side makes a fresh one.
  const plain = sentId !== undefined && /^[A-Za-z0-9._-]{1,64}$/.test(sentId);
  expect(headers["x-request-id"]).toMatch(plain ? sentId : /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  if (!plain) headers["x-request-id"] = "(fresh)";
  return { status: response.status, headers, body: await response.text() };
}

/** Sends the same request to both servers (a body factory, since a stream is read once). */
async function both(method: string, path: string, init: { headers?: Record<string, string>; body?: () => BodyInit | null } = {}) {
  const send = async (base: string) => {
    const response = await fetch(`${base}${path}`, { method, headers: init.headers, body: init.body?.() ?? null, duplex: "half" } as RequestInit);
    return answerOf(response, init.headers?.["x-request-id"]);
  };
  const viaEdge = await send(edge.base);
  const viaElysia = await send(elysia.base);
  expect({ method, path, ...viaEdge }).toEqual({ method, path, ...viaElysia });
  return viaEdge;
}

/** Sends one raw HTTP/1.1 request to a server and returns the answer as text, its date and request id masked. */
function raw(port: number, head: string, body = ""): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("error", reject);
    socket.on("end", () => resolve(text.replace(/^date: .*$/gim, "date: -").replace(/^x-request-id: [0-9a-f-]{36}\r?$/gim, "x-request-id: (fresh)")));
    socket.write(`${head}\r\nConnection: close\r\n\r\n${body}`);
  });
}

async function rawBoth(head: string, body = "") {
  const viaEdge = await raw(edge.server.port!, head, body);
  const viaElysia = await raw(elysia.server.port!, head, body);
  expect({ head, answer: viaEdge }).toEqual({ head, answer: viaElysia });
  return viaEdge;
}

/** Identifier lists like the generated-input test of identity-resolve, from a seeded generator. */
function generatedLists(count: number): string[][] {
  let seed = 28;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const prefixes = ["", "did:", "did:web:", "did:pkh:eip155:1:", "did:jwk:", "did:key:", "did:handle:github:", "did:ethr:", "eip155:66238:", "0x", "::::", "did:artifact:"];
  const pieces = ["a", "Z", ":", "/", "#", ".", "%3A", "\u0000", "\n", "😀", "www.", "0xAbC", "-", " ", "é", "\u202e", "\"", "\\"];
  return Array.from({ length: count }, (_, n) =>
    Array.from({ length: [0, 1, 2, 7, 50, 99, 100][n % 7]! }, () => {
      let s = prefixes[Math.floor(rand() * prefixes.length)]!;
      const length = Math.floor(rand() * (rand() < 0.05 ? 600 : 24));
      for (let i = 0; i < length; i++) s += pieces[Math.floor(rand() * pieces.length)];
      return s;
    }));
}

describe("the routes answered at the edge", () => {
  test("are the RPC-free public routes, and only those", () => {
    expect([...edge.app.edge.keys()].sort()).toEqual([...EDGE_PATHS].sort());
  });

  test("a path the app serves with another method too, or not at all, is left to the app", () => {
    const answers = new Map<string, EdgeAnswer>([
      ["/a", { method: "GET", answer: () => new Response("a") }],
      ["/b", { method: "POST", answer: () => new Response("b") }],
      ["/c", { method: "GET", answer: () => new Response("c") }],
      ["/d", { method: "POST", answer: () => new Response("d") }],
    ]);
    const routes = [{ path: "/a", method: "GET" }, { path: "/b", method: "POST" }, { path: "/b", method: "PUT" }, { path: "/c", method: "POST" }];
    expect([...publicEdgeRoutes(answers, {}, routes).keys()]).toEqual(["/a"]);
  });

  test("answer generated identifier lists, with every content type, exactly as the app", async () => {
    const types = [undefined, "application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/octet-stream"];
    const lists = generatedLists(140);
    for (let i = 0; i < lists.length; i++) {
      const path = EDGE_PATHS[3 + (i % 3)]!;
      const type = types[i % types.length];
      const body = JSON.stringify({ identifiers: lists[i] });
      const answer = await both("POST", path, { headers: type === undefined ? {} : { "content-type": type }, body: () => body });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).identities).toHaveLength(lists[i]!.length);
    }
  });

  test("refuse invalid bodies exactly as the app", async () => {
    const bodies = [
      "", "{oops", "null", "[]", "{}", "1", '"x"', "\uFEFF{\"identifiers\":[]}", ' \n {"identifiers":["a.com"]} \n',
      '{"identifiers":"a.com"}', '{"identifiers":[1]}', '{"identifiers":[null]}', '{"identifiers":[["a"]]}', '{"identifiers":{}}',
      '{"identifiers":["a.com"],"extra":true}', '{"identifiers":["a.com"]', '{"identifiers":["\\ud800"]}',
      JSON.stringify({ identifiers: Array(101).fill("a.com") }),
      JSON.stringify({ identifiers: Array(1000).fill(1) }),
      JSON.stringify({ identifiers: Array.from({ length: 100 }, (_, i) => `did:web:${i}.${"\u0001".repeat(10 * 1024)}`) }),
    ];
    for (const body of bodies) {
      for (const path of ["/v1/identity-resolve", "/api/public/identity-resolve"]) {
        await both("POST", path, { headers: { "content-type": "application/json", "x-request-id": "req-1" }, body: () => body });
      }
    }
    // No body at all.
    await both("POST", "/v1/identity/resolve");
  });

  test("every method, preflights, origins and request ids, exactly as the app", async () => {
    const methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];
    const headerSets: Record<string, string>[] = [
      {},
      { origin: "https://evil.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
      { "x-request-id": "client.id-42" },
      { "x-request-id": "not plain!" },
      { "x-request-id": "x".repeat(65) },
      { cookie: "ats_session=abc", authorization: "Bearer t" },
    ];
    for (const path of EDGE_PATHS) {
      for (const method of methods) {
        for (const headers of headerSets) {
          const body = method === "GET" || method === "HEAD" || method === "OPTIONS" ? undefined : () => '{"identifiers":["did:web:example.com"]}';
          await both(method, path, { headers, body });
        }
      }
    }
  });

  test("odd paths go to the app and answer the same", async () => {
    const paths = EDGE_PATHS.flatMap((p) => [`${p}/`, `${p}?`, `${p}?q=1&q=2`, `${p}#x`, p.toUpperCase(), `/${p}`, `${p}%2F`, `${p}/.`, `${p}.json`]);
    for (const path of [...paths, "/", "/v1", "/v1/identity", "/v1/trust", "/nope"]) {
      await both("GET", path);
      await both("POST", path, { body: () => '{"identifiers":[]}' });
      await both("OPTIONS", path);
    }
  });

  test("oversized bodies: a declared length and a chunked body over the limit are 413, as the app", async () => {
    const big = "x".repeat(MAX_BODY_BYTES + 1024);
    const declared = await both("POST", "/v1/identity-resolve", { headers: { "content-type": "application/json" }, body: () => big });
    expect(declared.status).toBe(413);
    const chunked = () =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          const chunk = new Uint8Array(1024 * 1024).fill(0x20);
          for (let i = 0; i < 9; i++) controller.enqueue(chunk);
          controller.close();
        },
      });
    const streamed = await both("POST", "/v1/identity-resolve", { headers: { "content-type": "application/json" }, body: chunked });
    expect(streamed.status).toBe(413);
    // On a GET route a body is not read, whatever its size.
    await both("PUT", "/v1/trust-anchors", { body: () => big });
  });

  test("odd methods, Hosts and absolute-form targets over a raw socket answer the same", async () => {
    const body = '{"identifiers":["did:web:Example.com","0xabc"]}';
    const post = (target: string, host: string) =>
      rawBoth(`POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}`, body);
    for (const host of ["a", "ab", "abc", "127.0.0.1", "example.com:8080", "[::1]", "a/b", "x@y"]) {
      for (const path of ["/v1/identity-resolve", "/v1/identity-resolve/", "/api/public/identity-resolve?x=1"]) await post(path, host);
      for (const path of ["/v1/trust-anchors", "/v1/trust-policy/", "/api/public/trust-anchors?x"]) {
        await rawBoth(`GET ${path} HTTP/1.1\r\nHost: ${host}`);
      }
    }
    for (const target of ["http://a/v1/identity-resolve", "http://example.com/v1/identity/resolve", "https://a:1/api/public/identity-resolve"]) await post(target, "b");
    for (const target of ["http://a/v1/trust-anchors", "http://a/v1/trust-policy?x=1", "http://a"]) await rawBoth(`GET ${target} HTTP/1.1\r\nHost: b`);
    for (const method of ["get", "post", "FOO", "PROPFIND", "TRACE", "PURGE", "OPTIONS", "HEAD"]) {
      for (const path of ["/v1/trust-anchors", "/v1/identity-resolve"]) {
        await rawBoth(`${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${Buffer.byteLength(body)}`, body);
      }
    }
    // A GET with a body, and a request id on the raw path.
    await rawBoth(`GET /v1/trust-anchors HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: raw-1\r\nContent-Length: 5`, "hello");
  });

  test("wrote the same access-log lines and request metrics", async () => {
    const logged = (lines: Record<string, unknown>[]) =>
      lines.map(({ time: _, ms, requestId, ...line }) => ({
        ...line,
        ms: typeof ms,
        requestId: typeof requestId === "string" && /^[0-9a-f-]{36}$/.test(requestId) ? "(fresh)" : requestId,
      }));
    expect(edge.lines.length).toBeGreaterThan(600);
    expect(logged(edge.lines)).toEqual(logged(elysia.lines));
    // The counters, and the histograms' counts (their buckets and sums are timings).
    const counts = async (metrics: ReturnType<typeof createPrometheusMetrics>) =>
      (await metrics.render()).split("\n").filter((line) => line.startsWith("ats_http_requests_total") || line.startsWith("ats_http_request_duration_seconds_count"));
    const viaEdge = await counts(edge.metrics);
    expect(viaEdge.length).toBeGreaterThan(20);
    expect(viaEdge).toEqual(await counts(elysia.metrics));
  });
});

describe("the edge's deadline", () => {
  test("a body still coming at the body's deadline gets the app's answer: 408 REQUEST_TIMEOUT, the connection closed", async () => {
    const answers = [];
    for (const withEdgeRoutes of [true, false]) {
      const app = createApp({ ...minimalAppDeps(), trustAnchors: anchors });
      const served = withEdgeRoutes ? app : { routes: app.routes, handle: (request: Request) => app.handle(request) };
      const handler = instrumentedHandler(served, { metrics: createPrometheusMetrics(), log: minimalAppDeps().log, bodyTimeoutMs: 100 });
      // A body that starts and never ends.
      const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(new TextEncoder().encode('{"identifiers":[')) });
      const init = { method: "POST", body, duplex: "half", headers: { "transfer-encoding": "chunked" } };
      const response = await handler(new Request("http://ats.test/v1/identity-resolve", init as RequestInit));
      const headers = response.headers;
      answers.push({ status: response.status, cors: headers.get("access-control-allow-origin"), connection: headers.get("connection"), body: await response.json() });
    }
    expect(answers[0]).toEqual({ status: 408, cors: "*", connection: "close", body: { error: "The request body did not arrive in time", code: "REQUEST_TIMEOUT" } });
    expect(answers[1]).toEqual(answers[0]);
  });
});

describe("an edge answer that throws", () => {
  test("is 500 INTERNAL_ERROR with CORS and the request id, logged once, whether it threw at once or after the body", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createJsonLogger("debug", { context: requestLogContext, out: (line) => lines.push(JSON.parse(line)) });
    const app = new Elysia().get("/v1/trust-anchors", () => "unused").post("/v1/identity-resolve", () => "unused");
    const boom = () => {
      throw new Error("secret http://rpc.internal/key");
    };
    const answers = new Map<string, EdgeAnswer>([["/v1/trust-anchors", { method: "GET", answer: boom }], ["/v1/identity-resolve", { method: "POST", answer: boom }]]);
    const edge = publicEdgeRoutes(answers, { "access-control-allow-origin": "*" }, app.routes);
    const handler = instrumentedHandler({ routes: app.routes, handle: (request) => app.handle(request), edge }, { metrics: createPrometheusMetrics(), log });
    for (const [method, path, id] of [["GET", "/v1/trust-anchors", "sync-1"], ["POST", "/v1/identity-resolve", "after-body-1"]] as const) {
      const init: RequestInit = { method, headers: { "x-request-id": id } };
      if (method === "POST") init.body = '{"identifiers":[]}';
      const response = await handler(new Request(`http://ats.test${path}`, init));
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: "Internal error", code: "INTERNAL_ERROR" });
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("x-request-id")).toBe(id);
      expect(lines.filter((line) => line.event === "request_failed" && line.requestId === id)).toHaveLength(1);
      expect(lines.filter((line) => line.event === "request" && line.requestId === id && line.status === 500)).toHaveLength(1);
    }
    expect(JSON.stringify(lines)).not.toContain("rpc.internal/key");
  });
});
