import { describe, expect, test } from "bun:test";
import type { Elysia } from "elysia";
import { instrumentedHandler } from "../../http/instrument.ts";
import { createJsonLogger } from "./json_logger.ts";
import { createPrometheusMetrics, meteredRpcFetch } from "./prometheus_metrics.ts";
import { withRequestContext, currentRequestContext, requestIdFrom } from "../../http/request_context.ts";

describe("createPrometheusMetrics()", () => {
  test("renders counters, histograms with cumulative buckets, and scrape-time gauges", async () => {
    const m = createPrometheusMetrics();
    m.describe("x_total", "counter", "Things");
    m.increment("x_total", { route: "/a", status: "200" });
    m.increment("x_total", { status: "200", route: "/a" }, 2);
    m.increment("x_total", { route: "/b", status: "500" });
    m.observe("lat_seconds", 0.02, { route: "/a" });
    m.observe("lat_seconds", 3, { route: "/a" });
    m.gauge("bal_wei", "Balance", () => Promise.resolve([{ labels: { wallet: "delegate" }, value: 10n ** 20n }]));
    m.gauge("broken", "Fails", () => Promise.reject(new Error("rpc down")));
    const text = await m.render();
    expect(text).toContain('# HELP x_total Things\n# TYPE x_total counter\nx_total{route="/a",status="200"} 3\nx_total{route="/b",status="500"} 1');
    expect(text).toContain('lat_seconds_bucket{route="/a",le="0.01"} 0');
    expect(text).toContain('lat_seconds_bucket{route="/a",le="0.025"} 1');
    expect(text).toContain('lat_seconds_bucket{route="/a",le="5"} 2');
    expect(text).toContain('lat_seconds_bucket{route="/a",le="+Inf"} 2');
    expect(text).toContain('lat_seconds_count{route="/a"} 2');
    expect(text).toContain('bal_wei{wallet="delegate"} 100000000000000000000');
    expect(text).not.toContain("broken{");
    expect(await m.render()).toContain('ats_metrics_gauge_failures_total{gauge="broken"}');
  });

  test("escapes backslashes, quotes and newlines in label values and leaves others as they are", async () => {
    const m = createPrometheusMetrics();
    m.increment("x_total", { route: 'a\\b"c\nd' });
    m.increment("x_total", { route: "/v1/nonce" });
    const text = await m.render();
    expect(text).toContain('x_total{route="a\\\\b\\"c\\nd"} 1');
    expect(text).toContain('x_total{route="/v1/nonce"} 1');
  });

  test("meteredRpcFetch counts methods and failures without keeping URLs", async () => {
    const m = createPrometheusMetrics();
    const ok = meteredRpcFetch((() => Promise.resolve(new Response("{}"))) as unknown as typeof fetch, m);
    await ok("http://secret-rpc.example/key", { method: "POST", body: JSON.stringify([{ method: "eth_call" }, { method: "eth_getLogs" }]) });
    const bad = meteredRpcFetch((() => Promise.resolve(new Response("no", { status: 503 }))) as unknown as typeof fetch, m);
    await bad("http://secret-rpc.example/key", { method: "POST", body: JSON.stringify({ method: "eth_call" }) });
    const down = meteredRpcFetch((() => Promise.reject(new TypeError("connect refused"))) as unknown as typeof fetch, m);
    await expect(down("http://x", { method: "POST", body: "{}" })).rejects.toThrow();
    const text = await m.render();
    expect(text).toContain('ats_rpc_calls_total{method="eth_call"} 2');
    expect(text).toContain('ats_rpc_calls_total{method="eth_getLogs"} 1');
    expect(text).toContain('ats_rpc_failures_total{reason="http_503"} 1');
    expect(text).toContain('ats_rpc_failures_total{reason="network"} 1');
    expect(text).not.toContain("secret-rpc");
  });

  test("meteredRpcFetch counts JSON-RPC errors inside a 200 answer by code and method; the caller still reads the body", async () => {
    const m = createPrometheusMetrics();
    const answer = (body: unknown) => meteredRpcFetch((() => Promise.resolve(Response.json(body))) as unknown as typeof fetch, m);
    const refusal = { jsonrpc: "2.0", id: 7, error: { code: -32005, message: "query returned more than 10000 results; see https://secret-rpc.example/key" } };
    const single = await answer(refusal)("http://secret-rpc.example/key", {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_getLogs", params: [] }),
    });
    expect(await single.json()).toEqual(refusal);
    const batch = await answer([
      { jsonrpc: "2.0", id: 1, result: "0x1" },
      { jsonrpc: "2.0", id: 2, error: { code: 3, message: "execution reverted", data: "0xdeadbeef" } },
      { jsonrpc: "2.0", id: 3, error: { code: -32603, message: "Internal error" } },
    ])("http://x", {
      method: "POST",
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_chainId" },
        { jsonrpc: "2.0", id: 2, method: "eth_call" },
        { jsonrpc: "2.0", id: 3, method: "eth_getBalance" },
      ]),
    });
    expect(((await batch.json()) as unknown[]).length).toBe(3);
    await answer({ jsonrpc: "2.0", id: 1, result: "0x2a" })("http://x", { method: "POST", body: JSON.stringify({ id: 1, method: "eth_blockNumber" }) });
    await answer({ jsonrpc: "2.0", id: 1, error: { code: "weird", message: "x" } })("http://x", { method: "POST", body: JSON.stringify({ id: 1, method: "eth_call" }) });
    const text = await m.render();
    expect(text).toContain('ats_rpc_failures_total{code="-32005",method="eth_getLogs",reason="rpc_error"} 1');
    expect(text).toContain('ats_rpc_failures_total{code="3",method="eth_call",reason="rpc_error"} 1');
    expect(text).toContain('ats_rpc_failures_total{code="-32603",method="eth_getBalance",reason="rpc_error"} 1');
    expect(text).toContain('ats_rpc_failures_total{code="other",method="eth_call",reason="rpc_error"} 1');
    expect(text).not.toMatch(/ats_rpc_failures_total\{[^}]*method="eth_(chainId|blockNumber)"/);
    expect(text).not.toContain("secret-rpc");
    expect(text).not.toContain("deadbeef");
    expect(text).not.toContain("reverted");
  });

  test("meteredRpcFetch leaves a streamed answer whole for the caller", async () => {
    const m = createPrometheusMetrics();
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, result: Array.from({ length: 5000 }, (_, i) => ({ data: `0x${i.toString(16).padStart(64, "0")}` })) });
    const chunks = [big.slice(0, 1000), big.slice(1000, 200_000), big.slice(200_000)];
    const streamed = () =>
      Promise.resolve(new Response(new ReadableStream({
        async pull(controller) {
          const next = chunks.shift();
          if (next === undefined) return controller.close();
          await Bun.sleep(1);
          controller.enqueue(new TextEncoder().encode(next));
        },
      })));
    const res = await meteredRpcFetch(streamed as unknown as typeof fetch, m)("http://x", { method: "POST", body: JSON.stringify({ id: 1, method: "eth_getLogs" }) });
    expect(await res.text()).toBe(big);
    expect(await m.render()).not.toContain("ats_rpc_failures_total{");
  });
});

describe("instrumentedHandler()", () => {
  const throwing = (paths: string[]) =>
    ({
      routes: paths.map((path) => ({ path, method: "GET" })),
      handle: () => Promise.reject(new Error("boom\n    at secretFrame (/srv/ats/http/routes/eas.ts:12:3)")),
    }) as unknown as Elysia;

  test("a route that throws is 500 INTERNAL_ERROR with CORS * on public paths, no error text, counted with its status", async () => {
    const m = createPrometheusMetrics();
    const lines: string[] = [];
    const handler = instrumentedHandler(throwing(["/v1/trust-anchors", "/v1/nonce"]), {
      metrics: m,
      log: createJsonLogger("debug", { context: () => currentRequestContext(), out: (l) => lines.push(l) }),
    });
    const res = await handler(new Request("http://ats.test/v1/trust-anchors?x=1", { headers: { "x-request-id": "boom-1" } }));
    expect(res.status).toBe(500);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("x-request-id")).toBe("boom-1");
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: "Internal error", code: "INTERNAL_ERROR" });
    expect(text).not.toContain("secretFrame");
    expect(text).not.toContain("boom");

    const nonce = await handler(new Request("http://ats.test/v1/nonce?attester=0x1"));
    expect(nonce.headers.get("access-control-allow-origin")).toBe("*");
    expect(await nonce.json()).toMatchObject({ code: "INTERNAL_ERROR", elapsed: expect.stringMatching(/^\d+ms$/) });

    const metrics = await m.render();
    expect(metrics).toContain('ats_http_requests_total{method="GET",route="/v1/trust-anchors",status="500"} 1');
    expect(metrics).toContain('ats_http_request_duration_seconds_count{route="/v1/trust-anchors",status="500"} 1');
    expect(lines.some((l) => JSON.parse(l).event === "request_failed" && JSON.parse(l).requestId === "boom-1")).toBe(true);
  });

  test("a session path that throws gets no wildcard CORS (its origin allowlist lives in the app)", async () => {
    const handler = instrumentedHandler(throwing(["/v1/session/me"]), { metrics: createPrometheusMetrics(), log: createJsonLogger("silent") });
    const res = await handler(new Request("http://ats.test/v1/session/me", { headers: { origin: "https://evil.test" } }));
    expect(res.status).toBe(500);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(await res.json()).toEqual({ error: "Internal error", code: "INTERNAL_ERROR" });
  });
});

describe("structured logs", () => {
  test("every line of a request carries its id; secrets and full signatures never appear", () => {
    const lines: string[] = [];
    const log = createJsonLogger("debug", { context: () => currentRequestContext(), out: (l) => lines.push(l) });
    const signature = `0x${"ab".repeat(65)}`;
    withRequestContext({ requestId: "req-1" }, () => {
      log.info("submitted", { txHash: `0x${"1".repeat(64)}`, signature, privateKey: "0xdeadbeef", cookie: "ats_session=x" });
    });
    log.warn("outside");
    const [inside, outside] = lines.map((l) => JSON.parse(l));
    expect(inside).toMatchObject({ level: "info", event: "submitted", requestId: "req-1", privateKey: "[redacted]", cookie: "[redacted]" });
    expect(inside.signature).toBe(`0x${"ab".repeat(4)}…`);
    expect(lines[0]).not.toContain("deadbeef");
    expect(outside.requestId).toBeUndefined();
  });

  test("upstream error text loses URL paths, queries and passwords, and long hex runs", () => {
    const lines: string[] = [];
    const log = createJsonLogger("debug", { out: (l) => lines.push(l) });
    const calldata = `0x3c042715${"00".repeat(32)}${"ab".repeat(65)}`;
    log.error("send_failed", {
      error: `HTTP request failed.\n\nURL: https://eth.example.io/v3/0123456789abcdef?apikey=s3cret\nRequest body: {"method":"eth_call","params":[{"data":"${calldata}"}]}`,
      reason: "connect to postgres://ats:hunter2@db.internal:5432/ats refused",
      txHash: `0x${"1".repeat(64)}`,
      note: "listening on http://127.0.0.1:8080",
    });
    const line = JSON.parse(lines[0]!);
    expect(lines[0]).not.toContain("0123456789abcdef");
    expect(lines[0]).not.toContain("s3cret");
    expect(lines[0]).not.toContain("hunter2");
    expect(lines[0]).not.toContain("ab".repeat(65));
    expect(line.error).toContain("URL: https://eth.example.io/…");
    expect(line.error).toContain("0x3c042715…(101 bytes)");
    expect(line.reason).toBe("connect to postgres://db.internal:5432/… refused");
    // A transaction hash (one 32-byte word) and an origin without a path stay whole.
    expect(line.txHash).toBe(`0x${"1".repeat(64)}`);
    expect(line.note).toBe("listening on http://127.0.0.1:8080");
  });

  test("a caller's plain X-Request-Id is kept; anything else gets a fresh id", () => {
    expect(requestIdFrom("abc-123")).toBe("abc-123");
    expect(requestIdFrom("bad id\n")).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdFrom(null)).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdFrom("x".repeat(65))).not.toBe("x".repeat(65));
  });
});
