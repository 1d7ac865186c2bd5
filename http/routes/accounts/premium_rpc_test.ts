/** `POST /api/private/rpc-premium` through the whole app: body checks, session, the private guard, status codes, CORS. */
import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { silentLogger } from "../../../adapters/observability/mod.ts";
import { createPremiumRpc, requestShapeFault } from "../../../domain/accounts/mod.ts";
import { createReadNonce } from "../../../domain/delegation/mod.ts";
import { fail } from "../../../domain/result.ts";
import type { Account } from "../../../ports/accounts.ts";
import { fakeClock, fakeEasReader, fakePremiumReadLedger, fakeRawRpc } from "../../../ports/fakes/mod.ts";
import { createApp } from "../../app.ts";
import { JsonRpcResponseModel, PremiumRpcBody, PremiumRpcResponseModel } from "../../models.ts";
import { MAX_BODY_BYTES } from "../request.ts";

const APP = "https://app.example.com";
const TOKEN = "t".repeat(43);
const PATH = "/api/private/rpc-premium";
const account: Account = { id: "acct", address: "0x173a347faed486bb69081ef673c6e52c03f57f3e", plan: "free", createdAtMs: 0 };

function setup(limit = 3) {
  const ledger = fakePremiumReadLedger();
  const rpc = fakeRawRpc({ head: 0x10n });
  const sessionChecks: (string | undefined)[] = [];
  const app = createApp({
    privateOrigins: [APP],
    eas: {
      readNonce: createReadNonce(fakeEasReader()),
      delegatedAttest: () => Promise.resolve(fail("INTERNAL_ERROR", "unused")) as never,
      chainName: "x",
      chainId: 1,
      easAddress: "0x0000000000000000000000000000000000000000",
    },
    trustAnchors: { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] },
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    premiumRpc: {
      sessions: {
        authenticate(token: string | undefined) {
          sessionChecks.push(token);
          return Promise.resolve(token === TOKEN ? { ok: true, value: { account, session: {} } } : fail("UNAUTHENTICATED", "Unauthenticated"));
        },
      } as never,
      premiumRpc: createPremiumRpc({ ledger, rpc, clock: fakeClock(Date.UTC(2026, 0, 2)), limits: { free: limit, paid: 100 }, maxLogRange: 100n }),
    },
  });
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await app.handle(new Request(`http://localhost${PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: APP, cookie: `ats_session=${TOKEN}`, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }));
    return { status: res.status, headers: res.headers, body: await res.json() as any };
  };
  return { app, post, ledger, rpc, sessionChecks, used: () => ledger.rows.get("acct|2026") ?? 0 };
}
const call = (id: unknown, method: string, params: unknown[] = []) => ({ jsonrpc: "2.0", id, method, params });

describe("POST /api/private/rpc-premium", () => {
  test("a single read and a batch, answered as JSON-RPC with the allowlisted origin's CORS headers", async () => {
    const { post, used } = setup(10);
    const single = await post(call(1, "eth_blockNumber"));
    expect([single.status, single.body]).toEqual([200, { jsonrpc: "2.0", id: 1, result: "0x10" }]);
    expect(single.headers.get("access-control-allow-origin")).toBe(APP);
    expect(single.headers.get("access-control-allow-credentials")).toBe("true");
    const batch = await post([call("a", "eth_chainId"), call("b", "eth_sendRawTransaction", ["0x02"]), call("c", "eth_getLogs", [{ fromBlock: "earliest" }]), 5]);
    expect(batch.status).toBe(200);
    expect(batch.body.map((a: { id: unknown; error?: { code: number } }) => [a.id, a.error?.code])).toEqual([["a", undefined], ["b", -32601], ["c", undefined], [null, -32600]]);
    expect(Value.Check(PremiumRpcResponseModel, single.body) && Value.Check(PremiumRpcResponseModel, batch.body)).toBe(true);
    expect(used()).toBe(3);
  });

  test("no session: 401 UNAUTHENTICATED, nothing forwarded", async () => {
    const { post, rpc } = setup();
    for (const cookie of ["", "ats_session=nope"]) {
      const res = await post(call(1, "eth_chainId"), { cookie });
      expect([res.status, res.body]).toEqual([401, { error: "Unauthenticated", code: "UNAUTHENTICATED" }]);
    }
    expect(rpc.batches).toEqual([]);
  });

  test("bad bodies: 400 with the error body before the session is looked at", async () => {
    const { post, rpc, sessionChecks } = setup();
    const cases: [unknown, string, string][] = [
      ["{not json", "INVALID_JSON", "Invalid JSON body"],
      ["", "INVALID_JSON", "Invalid JSON body"],
      [[], "INVALID_INPUT", "An empty batch"],
      [Array.from({ length: 101 }, (_, i) => call(i, "eth_chainId")), "INVALID_INPUT", "A batch holds at most 100 calls"],
      ["\"eth_chainId\"", "INVALID_INPUT", "Body must be a JSON-RPC request object or a batch (array)"],
      ["null", "INVALID_INPUT", "Body must be a JSON-RPC request object or a batch (array)"],
      [{}, "INVALID_INPUT", 'jsonrpc must be "2.0"'],
      [{ jsonrpc: "2.0", id: 1 }, "INVALID_INPUT", "method must be a method name"],
      [{ jsonrpc: "2.0", id: 1, method: "" }, "INVALID_INPUT", "method must be a method name"],
      [{ jsonrpc: "2.0", id: [1], method: "eth_chainId" }, "INVALID_INPUT", "id must be a string, a number or null"],
      [{ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: "0x1" }, "INVALID_INPUT", "params must be an array"],
    ];
    for (const [body, code, error] of cases) {
      const res = await post(body);
      expect({ body, status: res.status, res: res.body }).toEqual({ body, status: 400, res: { error, code } });
    }
    expect(sessionChecks).toEqual([]);
    expect(rpc.batches).toEqual([]);
  });

  test("the request model and the domain agree on what a single request is", () => {
    const samples: unknown[] = [
      call(1, "eth_chainId"), { jsonrpc: "2.0", method: "eth_chainId" }, call(null, "x"), call("s", "eth_call", [{}, "latest"]),
      {}, { jsonrpc: "2.0" }, { jsonrpc: 2, method: "eth_chainId" }, { jsonrpc: "2.0", method: "" }, { jsonrpc: "2.0", method: "m", id: {} },
      { jsonrpc: "2.0", method: "m", id: true }, { jsonrpc: "2.0", method: "m", params: {} }, { jsonrpc: "2.0", method: "m", params: null },
    ];
    for (const sample of samples) {
      expect({ sample, model: Value.Check(PremiumRpcBody, sample) }).toEqual({ sample, model: requestShapeFault(sample) === undefined });
    }
    expect(Value.Check(JsonRpcResponseModel, { jsonrpc: "2.0", id: 1, error: { code: -32601, message: "m" } })).toBe(true);
  });

  test("past the plan's reads: 403 PREMIUM_READ_LIMIT_EXCEEDED, nothing forwarded", async () => {
    const { post, rpc, used } = setup(2);
    expect((await post([call(1, "eth_chainId"), call(2, "eth_chainId")])).status).toBe(200);
    rpc.batches.length = 0;
    const res = await post(call(3, "eth_chainId"));
    expect([res.status, res.body]).toEqual([403, { error: "Premium read limit exceeded", code: "PREMIUM_READ_LIMIT_EXCEEDED" }]);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(rpc.batches).toEqual([]);
    expect(used()).toBe(2);
  });

  test("a node that cannot be reached: 502 NETWORK_ERROR without upstream text, the reads given back", async () => {
    const { post, rpc, used } = setup();
    rpc.down = true;
    const res = await post([call(1, "eth_chainId"), call(2, "eth_getBalance", ["0x0000000000000000000000000000000000000001", "latest"])]);
    expect([res.status, res.body]).toEqual([502, { error: "The chain did not answer", code: "NETWORK_ERROR" }]);
    expect(used()).toBe(0);
  });

  test("guarded like the other private routes: foreign origin 403, form bodies 415, preflight, GET 405, over 8 MiB 413", async () => {
    const { app, post, rpc } = setup();
    const foreign = await post(call(1, "eth_chainId"), { origin: "https://evil.example" });
    expect([foreign.status, foreign.body.code, foreign.headers.get("access-control-allow-origin")]).toEqual([403, "ORIGIN_NOT_ALLOWED", null]);
    const form = await post(call(1, "eth_chainId"), { "content-type": "text/plain" });
    expect([form.status, form.body.code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    expect(rpc.batches).toEqual([]);
    const preflight = await app.handle(new Request(`http://localhost${PATH}`, { method: "OPTIONS", headers: { origin: APP } }));
    expect([preflight.status, preflight.headers.get("access-control-allow-origin"), preflight.headers.get("access-control-allow-methods")]).toEqual([204, APP, "GET, POST, PATCH, DELETE, OPTIONS"]);
    const foreignPreflight = await app.handle(new Request(`http://localhost${PATH}`, { method: "OPTIONS", headers: { origin: "https://evil.example" } }));
    expect(foreignPreflight.headers.get("access-control-allow-origin")).toBeNull();
    const get = await app.handle(new Request(`http://localhost${PATH}`, { headers: { origin: APP } }));
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST, OPTIONS"]);
    const big = await post(`[${" ".repeat(MAX_BODY_BYTES)}]`);
    expect([big.status, big.body.code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
  });
});
