import { describe, expect, test } from "bun:test";
import { createJsonLogger } from "./json_logger.ts";
import { createPrometheusMetrics, meteredRpcFetch } from "./prometheus_metrics.ts";
import { withRequestContext, currentRequestContext, requestIdFrom } from "./request_context.ts";

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

  test("a caller's plain X-Request-Id is kept; anything else gets a fresh id", () => {
    expect(requestIdFrom("abc-123")).toBe("abc-123");
    expect(requestIdFrom("bad id\n")).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdFrom(null)).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdFrom("x".repeat(65))).not.toBe("x".repeat(65));
  });
});
