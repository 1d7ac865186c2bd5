/**
 * Every route answers with its error body before the server's idle timeout cuts the connection (issue 15): a GET
 * whose RPC hung got no HTTP answer at all when Bun's default idle timeout (10 s) reset the connection.
 *
 * - With the defaults, the bounded lookups (a nonce read, artifact trust, discovery) end below the route deadline,
 *   and the deadline below the server's idle timeout.
 * - The real server, its idle timeout scaled down: without the deadline a hanging route is cut with no answer;
 *   with it the route's error body arrives first.
 * - The service on a devnet behind an RPC that hangs: the nonce read (default RPC timeout, 10 s and one retry) and
 *   artifact trust (three attempts of 4 s) answer 500 RPC_ERROR and 502 NETWORK_ERROR after more than 10 s.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Elysia } from "elysia";
import { sha256, stringToBytes } from "viem";
import { silentLogger } from "../adapters/observability/mod.ts";
import { createPrometheusMetrics } from "../adapters/observability/mod.ts";
import { readConfig } from "../app/config.ts";
import { artifactDidFromDigest } from "../domain/did/mod.ts";
import { instrumentedHandler, ROUTE_DEADLINE_MS } from "../http/instrument.ts";
import { SERVER_IDLE_TIMEOUT_SECONDS } from "../app/service.ts";
import { type RpcProxy, inFrontOf, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

describe("budgets of the default settings", () => {
  test("bounded lookups end below the route deadline, the deadline below the server's idle timeout", () => {
    const config = readConfig({});
    const deadline = ROUTE_DEADLINE_MS / 1000;
    // adapters/chain/viem_eas.ts: 10 s per request and one retry, viem's first retry after 150 ms.
    const rpcExchange = 2 * 10 + 0.15;
    // Seven dependent chain lookups, each three attempts of ARTIFACT_TRUST_RPC_TIMEOUT_MS with 150 + 300 ms of backoff.
    const artifactTrust = 7 * ((3 * config.chains.artifactTrustRpcTimeoutMs) / 1000 + 0.45);
    // adapters/dns/dns_packet_resolver.ts: two attempts of 1.5 s over UDP and 1.5 s over TCP; did.json 5 s in all.
    const discovery = Math.max(2 * (1.5 + 1.5), 5);
    expect(SERVER_IDLE_TIMEOUT_SECONDS).toBe(255);
    // Time left to write the answer before the idle timeout (whose checks run every few seconds).
    expect(deadline + 5).toBeLessThanOrEqual(SERVER_IDLE_TIMEOUT_SECONDS);
    for (const [name, worst] of [["nonce", rpcExchange], ["artifact trust", artifactTrust], ["discovery", discovery]] as const) {
      expect({ name, below: worst < deadline }).toEqual({ name, below: true });
    }
    // A submission may wait longer (its receipt alone for 120 s, after up to eight exchanges): the deadline answers it.
    expect(120 + 8 * rpcExchange).toBeGreaterThan(deadline);
  });
});

describe("the real server with its idle timeout scaled down to 2 s", () => {
  const hanging = { routes: [], handle: () => new Promise<Response>(() => {}) } as unknown as Elysia;
  const serve = (fetch: (request: Request) => Response | Promise<Response>) => Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 2, fetch });

  test("without a deadline a route that never answers is cut with no HTTP answer", async () => {
    const server = serve(() => new Promise<Response>(() => {}));
    try {
      const outcome = await fetch(`http://127.0.0.1:${server.port}/v1/artifact-trust`).then((r) => r.status, () => "reset");
      expect(outcome).toBe("reset");
    } finally {
      server.stop(true);
    }
  });

  test("with the deadline it gets the route's error body before the cut", async () => {
    const server = serve(instrumentedHandler(hanging, { metrics: createPrometheusMetrics(), log: silentLogger, deadlineMs: 1_000 }));
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const [trust, nonce, attest] = await Promise.all([
        fetch(`${base}/v1/artifact-trust?artifactDid=x`),
        fetch(`${base}/v1/nonce?attester=0x0000000000000000000000000000000000000001`),
        fetch(`${base}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
      ]);
      expect([trust.status, await trust.json()]).toMatchObject([502, { code: "NETWORK_ERROR" }]);
      expect(trust.headers.get("access-control-allow-origin")).toBe("*");
      expect([nonce.status, await nonce.json()]).toMatchObject([500, { code: "RPC_ERROR", elapsed: expect.stringMatching(/^\d+ms$/) }]);
      expect([attest.status, await attest.json()]).toMatchObject([503, { code: "OUTCOME_UNKNOWN", elapsed: expect.stringMatching(/^\d+ms$/) }]);
    } finally {
      server.stop(true);
    }
  });
});

describe("the service behind an RPC that hangs", () => {
  let proxy: RpcProxy;
  let stack: Stack;
  beforeAll(async () => {
    proxy = startRpcProxy("");
    stack = await startStack({
      env: { ARTIFACT_TRUST_RPC_TIMEOUT_MS: "4000" },
      rpcUrlFor: inFrontOf(proxy),
    });
  });
  afterAll(async () => {
    // Nothing is forwarded while the devnet stops (a forward to a stopped node would fail inside the proxy).
    if (proxy) proxy.onHttp = () => new Response("stopping", { status: 503 });
    await stack?.stop();
    await proxy?.stop();
  });

  test("a nonce read and artifact trust answer their error bodies after more than 10 s, not a reset", async () => {
    const did = artifactDidFromDigest(sha256(stringToBytes("request timeout")));
    proxy.onHttp = () => new Promise<Response>(() => {});
    const timed = async (path: string) => {
      const started = performance.now();
      const res = await fetch(`${stack.baseUrl}${path}`);
      return { status: res.status, body: await res.json() as Record<string, unknown>, seconds: (performance.now() - started) / 1000 };
    };
    const [trust, nonce] = await Promise.all([
      timed(`/v1/artifact-trust?artifactDid=${encodeURIComponent(did)}`),
      timed("/v1/nonce?attester=0x70997970C51812dc3A010C7d01b50e0d17dc79C8"),
    ]);
    proxy.onHttp = undefined;
    expect(trust).toMatchObject({ status: 502, body: { code: "NETWORK_ERROR" } });
    expect(trust.seconds).toBeGreaterThan(10);
    // The default RPC timeout, 10 s, and one retry: about 20 s.
    expect(nonce).toMatchObject({ status: 500, body: { code: "RPC_ERROR", elapsed: expect.stringMatching(/^\d+ms$/) } });
    expect(nonce.seconds).toBeGreaterThan(19);
  }, 60_000);
});
