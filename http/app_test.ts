import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { silentLogger } from "../adapters/json_logger.ts";
import { buildAttestTypedData, ZERO_UID } from "../domain/attest_typed_data.ts";
import { createDelegatedAttest } from "../domain/delegated_attest.ts";
import { createReadNonce } from "../domain/nonce.ts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeReplayStore, fakeWriteLedger } from "../ports/fakes.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { createApp } from "./app.ts";

const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: { "eip155:31337": { name: "ATS Devnet", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3", schemas: { "user-review": SCHEMA } } },
  registries: [],
};
const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");

function setup(options: { mainnet?: boolean; rpcDown?: boolean } = {}) {
  const clock = fakeClock(Date.now());
  const eas = fakeEasReader({ failing: options.rpcDown });
  const delegate = fakeDelegate();
  const app = createApp({
    readNonce: createReadNonce(eas),
    delegatedAttest: createDelegatedAttest({
      clock,
      eas,
      delegate,
      replay: fakeReplayStore(),
      mainnet: options.mainnet ?? false,
      subsidized: new Map([[SCHEMA, { name: "user-review", revocable: false }]]),
    }),
    chainName: "ATS Devnet",
    chainId: eas.chainId,
    easAddress: eas.easAddress,
    trustAnchors: anchors,
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: { rpc: true } }),
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      init.headers = { "content-type": "application/json" };
    }
    const response = await app.handle(new Request(`http://localhost${path}`, init));
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
  return { call, eas, delegate, clock };
}

async function signedBody(eas: { chainId: number; easAddress: `0x${string}` }) {
  const message = {
    attester: account.address,
    schema: SCHEMA as `0x${string}`,
    recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n,
    revocable: false,
    refUID: ZERO_UID,
    data: "0x1234" as `0x${string}`,
    value: 0n,
    nonce: 0n,
    deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
  };
  const typedData = buildAttestTypedData(eas, message);
  const signature = await account.signTypedData(typedData);
  const strings = JSON.parse(JSON.stringify(message, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
  return { attester: account.address, signature, prepared: { delegatedRequest: strings, typedData: { ...typedData, message: strings } } };
}

describe("nonce routes", () => {
  test("GET /api/eas/nonce and /v1/nonce answer the nonce record with elapsed", async () => {
    const env = setup();
    env.eas.nonces.set(account.address.toLowerCase(), 42n);
    for (const path of ["/api/eas/nonce", "/v1/nonce"]) {
      const res = await env.call("GET", `${path}?attester=${account.address}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ nonce: "42", chain: "ATS Devnet", chainId: 31337, easAddress: env.eas.easAddress });
      expect(res.body.elapsed).toMatch(/^\d+ms$/);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    }
  });

  test("a missing or invalid attester is 400 INVALID_INPUT with elapsed", async () => {
    const env = setup();
    for (const q of ["", "?attester=", "?attester=0x123", "?attester=0xaBc0000000000000000000000000000000001234"]) {
      const res = await env.call("GET", `/api/eas/nonce${q}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: "INVALID_INPUT" });
      expect(res.body.elapsed).toMatch(/^\d+ms$/);
    }
    expect(env.eas.calls).toBe(0);
  });

  test("RPC down is 500 RPC_ERROR without upstream text", async () => {
    const env = setup({ rpcDown: true });
    const res = await env.call("GET", `/v1/nonce?attester=${account.address}`);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ code: "RPC_ERROR", error: "Failed to fetch nonce from RPC" });
  });
});

describe("delegated-attest routes", () => {
  test("a signed request is 200 with the success record on both paths", async () => {
    const env = setup();
    const res = await env.call("POST", "/v1/delegated-attest", await signedBody(env.eas));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, chain: "ATS Devnet", blockNumber: 1 });
    expect(res.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    expect(res.body.elapsed).toMatch(/^\d+ms$/);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    const again = await env.call("POST", "/api/eas/delegated-attest", await signedBody(env.eas));
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "DUPLICATE" });
  });

  test("bad JSON is 400 INVALID_JSON, missing fields 400 INVALID_INPUT, both with elapsed and no RPC", async () => {
    const env = setup();
    for (const [body, code] of [["{nope", "INVALID_JSON"], ["", "INVALID_JSON"], [{}, "INVALID_INPUT"], [[], "INVALID_INPUT"], ["null", "INVALID_INPUT"]] as const) {
      const res = await env.call("POST", "/api/eas/delegated-attest", body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe(code);
      expect(res.body.elapsed).toMatch(/^\d+ms$/);
    }
    expect(env.eas.calls).toBe(0);
  });

  test("mainnet setting is 501 MAINNET_NOT_SUPPORTED", async () => {
    const env = setup({ mainnet: true });
    const res = await env.call("POST", "/v1/delegated-attest", await signedBody(env.eas));
    expect(res.status).toBe(501);
    expect(res.body.code).toBe("MAINNET_NOT_SUPPORTED");
  });
});

describe("conventions", () => {
  test("trust anchors are served on three paths, OPTIONS is 204, other methods 405 with Allow", async () => {
    const env = setup();
    for (const path of ["/v1/trust-anchors", "/v1/trust-policy", "/api/public/trust-anchors"]) {
      const res = await env.call("GET", `${path}?chain=1`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(anchors as never);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      const options = await env.call("OPTIONS", path);
      expect(options.status).toBe(204);
      expect(options.headers.get("access-control-allow-origin")).toBe("*");
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const res405 = await env.call(method, path);
        expect(res405.status).toBe(405);
        expect(res405.body).toEqual({ error: "Method not allowed", code: "METHOD_NOT_ALLOWED" });
        expect(res405.headers.get("allow")).toContain("GET");
        expect(res405.headers.get("access-control-allow-origin")).toBe("*");
      }
    }
  });

  test("an unknown path is 404 NOT_FOUND with CORS", async () => {
    const env = setup();
    const res = await env.call("GET", "/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Not found", code: "NOT_FOUND" });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("healthz and readyz answer", async () => {
    const env = setup();
    expect((await env.call("GET", "/healthz")).status).toBe(200);
    expect((await env.call("GET", "/readyz")).body).toMatchObject({ status: "ready" });
  });
});

describe("openapi.json", () => {
  test("documents every route the app serves, and the API page lists them", async () => {
    const env = setup();
    const doc = (await env.call("GET", "/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    const app = createApp({
      readNonce: createReadNonce(fakeEasReader()),
      delegatedAttest: () => Promise.resolve({ ok: false, code: "INTERNAL_ERROR", message: "" }) as never,
      chainName: "x",
      chainId: 1,
      easAddress: "0x0000000000000000000000000000000000000000",
      trustAnchors: anchors,
      log: silentLogger,
      ready: () => Promise.resolve({ ready: true, checks: {} }),
      controller: { discover: () => Promise.reject(new Error("unused")), confirm: () => Promise.reject(new Error("unused")) },
      artifactTrust: () => Promise.reject(new Error("unused")),
      metricsText: () => Promise.resolve(""),
      session: {
        sessions: {} as never,
        witness: () => Promise.reject(new Error("unused")),
        ledger: fakeWriteLedger(),
        plans: { free: { annualWrites: 1, schemas: [] }, paid: { annualWrites: 1, schemas: [] } },
        clock: fakeClock(),
        secureCookies: false,
      },
    });
    const served = app.routes
      .filter((r) => !["/openapi.json", "/docs"].includes(r.path) && r.method !== "OPTIONS")
      .map((r) => `${r.method.toLowerCase()} ${r.path}`);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(served.filter((r) => !documented.includes(r))).toEqual([]);
    const page = await app.handle(new Request("http://localhost/docs"));
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("/v1/delegated-attest");
  });
});
