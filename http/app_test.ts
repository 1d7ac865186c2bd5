import { describe, expect, test } from "bun:test";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { privateKeyToAccount } from "viem/accounts";
import { silentLogger } from "../adapters/observability/mod.ts";
import { buildAttestTypedData, ZERO_UID } from "../domain/delegation/mod.ts";
import { createDelegatedAttest, type DelegatedAttest } from "../domain/delegation/mod.ts";
import { createReadNonce, type ReadNonce } from "../domain/delegation/mod.ts";
import { fail } from "../domain/result.ts";
import type { Submission } from "../ports/eas.ts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeReplayStore, fakeWriteLedger } from "../ports/fakes/mod.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { createApp } from "./app.ts";
import { type RequestModels, REQUEST_MODELS } from "./models.ts";
import { buildOpenApi } from "./openapi.ts";
import { ROUTE_DOCS } from "./route_docs.ts";
import { MAX_BODY_BYTES } from "./routes/request.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: { "eip155:31337": { name: "ATS Devnet", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3", schemas: { "user-review": SCHEMA } } },
  registries: [],
};
const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");

type SetupOptions = {
  mainnet?: boolean;
  rpcDown?: boolean;
  /** No delegate key configured. */
  noDelegate?: boolean;
  submission?: Submission;
  readNonce?: ReadNonce;
  delegatedAttest?: DelegatedAttest;
};

function setup(options: SetupOptions = {}) {
  const clock = fakeClock(Date.now());
  const eas = fakeEasReader({ failing: options.rpcDown });
  const delegate = fakeDelegate(options.submission ? { submission: options.submission } : {});
  const app = createApp({
    eas: {
      readNonce: options.readNonce ?? createReadNonce(eas),
      delegatedAttest: options.delegatedAttest ?? createDelegatedAttest({
        clock,
        eas,
        delegate: options.noDelegate ? undefined : delegate,
        replay: fakeReplayStore(),
        mainnet: options.mainnet ?? false,
        subsidized: new Map([[SCHEMA, { name: "user-review", revocable: false }]]),
      }),
      chainName: "ATS Devnet",
      chainId: eas.chainId,
      easAddress: eas.easAddress,
    },
    trustAnchors: anchors,
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: { rpc: true } }),
  });
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      init.body = typeof body === "string" || body instanceof ReadableStream ? body : JSON.stringify(body);
      init.headers = { "content-type": "application/json", ...headers };
      if (body instanceof ReadableStream) (init as { duplex?: string }).duplex = "half";
    }
    const response = await app.handle(new Request(`http://localhost${path}`, init));
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
  };
  return { app, call, eas, delegate, clock };
}

/**
 * One deadline for the whole file: a test that sends the same request twice (the DUPLICATE case) must sign the same
 * message twice, and a deadline read from the clock per body changed when a second passed between the two.
 */
const DEADLINE = BigInt(Math.floor(Date.now() / 1000) + 3600);

async function signedBody(eas: { chainId: number; easAddress: `0x${string}` }) {
  const message = {
    attester: account.address,
    schema: SCHEMA as `0x${string}`,
    recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n,
    revocable: false,
    refUID: ZERO_UID,
    data: REVIEW_DATA,
    value: 0n,
    nonce: 0n,
    deadline: DEADLINE,
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
  test("trust anchors are served on two paths and the trust policy on its own, OPTIONS is 204, other methods 405 with Allow", async () => {
    const env = setup();
    for (const path of ["/v1/trust-anchors", "/v1/trust-policy", "/api/public/trust-anchors"]) {
      const res = await env.call("GET", `${path}?chain=1`);
      expect(res.status).toBe(200);
      // Decisions §29: the trust policy is the reference's document (chains by decimal id, schemas an array).
      expect(res.body).toEqual(path === "/v1/trust-policy"
        ? { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: { "31337": { name: "ATS Devnet", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3", schemas: [SCHEMA] } } } as never
        // Decisions §30: the anchors' record plus the chains served.
        : { ...anchors, servedChains: [{ caip2: "eip155:31337", chainId: 31337, role: "attestations", default: true }], defaultChain: "eip155:31337" } as never);
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
      eas: {
        readNonce: createReadNonce(fakeEasReader()),
        delegatedAttest: () => Promise.resolve({ ok: false, code: "INTERNAL_ERROR", message: "" }) as never,
        chainName: "x",
        chainId: 1,
        easAddress: "0x0000000000000000000000000000000000000000",
      },
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

const ELAPSED = /^\d+ms$/;
const IDENTITY_PATHS = ["/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"];
const NONCE_PATHS = ["/api/eas/nonce", "/v1/nonce"];
const DELEGATED_PATHS = ["/api/eas/delegated-attest", "/v1/delegated-attest"];

describe("delegated-attest failures through the app", () => {
  test("no delegate key is 500 NO_DELEGATE_KEY with elapsed", async () => {
    const env = setup({ noDelegate: true });
    for (const path of DELEGATED_PATHS) {
      const res = await env.call("POST", path, await signedBody(env.eas));
      expect([res.status, res.body.code]).toEqual([500, "NO_DELEGATE_KEY"]);
      expect(res.body.elapsed).toMatch(ELAPSED);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    }
  });

  test("a transaction that reverted after broadcast is 500 SUBMISSION_FAILED with elapsed", async () => {
    const env = setup({ submission: { ok: false, reason: "reverted", txHash: `0x${"cd".repeat(32)}`, blockNumber: 7n } });
    const res = await env.call("POST", "/v1/delegated-attest", await signedBody(env.eas));
    expect([res.status, res.body.code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect(Object.keys(res.body).sort()).toEqual(["code", "details", "elapsed", "error"]);
    expect(res.body.details).toBe(`0x${"cd".repeat(32)}`);
    expect(res.body.elapsed).toMatch(ELAPSED);
  });

  test("a use case that throws is 500 INTERNAL_ERROR with elapsed, CORS and no text of its own", async () => {
    const boom = () => Promise.reject(new Error("secret http://rpc.internal/key"));
    const env = setup({ readNonce: boom, delegatedAttest: boom });
    const answers = [
      ...NONCE_PATHS.map((path) => env.call("GET", `${path}?attester=${account.address}`)),
      ...DELEGATED_PATHS.map(async (path) => env.call("POST", path, await signedBody(env.eas))),
    ];
    for (const res of await Promise.all(answers)) {
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: "Internal error", code: "INTERNAL_ERROR", elapsed: expect.stringMatching(ELAPSED) });
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    }
  });
});

describe("public conventions of identity-resolve, nonce and delegated-attest", () => {
  const cases = [
    ...IDENTITY_PATHS.map((path) => ({ path, method: "POST", elapsed: false })),
    ...NONCE_PATHS.map((path) => ({ path, method: "GET", elapsed: true })),
    ...DELEGATED_PATHS.map((path) => ({ path, method: "POST", elapsed: true })),
  ];

  test("answers carry CORS *, OPTIONS is 204 with CORS, and every other method is 405 with Allow and the error body", async () => {
    const env = setup();
    for (const { path, method, elapsed } of cases) {
      const served = method === "GET" ? await env.call("GET", `${path}?attester=${account.address}`) : await env.call("POST", path, { identifiers: [] });
      expect({ path, status: served.status < 500, cors: served.headers.get("access-control-allow-origin") }).toEqual({ path, status: true, cors: "*" });
      const options = await env.call("OPTIONS", path);
      expect({ path, status: options.status, cors: options.headers.get("access-control-allow-origin"), text: options.text })
        .toEqual({ path, status: 204, cors: "*", text: "" });
      expect(options.headers.get("access-control-allow-methods")).toContain(method);
      for (const wrong of ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"].filter((m) => m !== method)) {
        const res = await env.call(wrong, path);
        expect({ path, wrong, status: res.status, allow: res.headers.get("allow"), cors: res.headers.get("access-control-allow-origin") })
          .toEqual({ path, wrong, status: 405, allow: `${method}, OPTIONS`, cors: "*" });
        if (wrong === "HEAD") continue;
        const expected = { error: "Method not allowed", code: "METHOD_NOT_ALLOWED", ...(elapsed ? { elapsed: expect.stringMatching(ELAPSED) } : {}) };
        expect(res.body).toEqual(expected);
      }
    }
  });

  test("HEAD is 405 with Allow on every GET path, the trust anchors' three included", async () => {
    const env = setup();
    const paths = ["/v1/trust-anchors", "/v1/trust-policy", "/api/public/trust-anchors", ...NONCE_PATHS, "/healthz", "/readyz", "/openapi.json", "/docs"];
    for (const path of paths) {
      const res = await env.call("HEAD", path);
      expect({ path, status: res.status, allow: res.headers.get("allow"), cors: res.headers.get("access-control-allow-origin") })
        .toEqual({ path, status: 405, allow: "GET, OPTIONS", cors: "*" });
    }
    expect((await env.call("GET", "/v1/trust-anchors")).status).toBe(200);
  });
});

describe("request body size", () => {
  const SIZE = 10 * 1024;

  test(`100 identifiers of 10 KiB that JSON writes as six-byte escapes are served (the limit is ${MAX_BODY_BYTES} bytes)`, async () => {
    const env = setup();
    // Control characters JSON.stringify writes as \u00XX (not \b, \t, \n, \f, \r, which take two bytes).
    const sixByte = [1, 2, 3, 4, 5, 6, 7, 11, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31];
    const control = JSON.stringify({ identifiers: Array.from({ length: 100 }, (_, i) => String.fromCharCode(sixByte[i % sixByte.length]!).repeat(SIZE)) });
    const emoji = `{"identifiers":[${Array.from({ length: 100 }, () => `"${"\\ud83d\\ude00".repeat(SIZE / 2)}"`).join(",")}]}`;
    for (const body of [control, emoji]) {
      expect(body.length).toBeGreaterThan(6 * SIZE * 100);
      expect(body.length).toBeLessThanOrEqual(MAX_BODY_BYTES);
      const res = await env.call("POST", "/v1/identity-resolve", body);
      expect(res.status).toBe(200);
      expect(res.body.identities).toHaveLength(100);
      expect(res.body.identities[0].input).toHaveLength(SIZE);
    }
  });

  test("a declared body over the limit is 413 PAYLOAD_TOO_LARGE with CORS and the error body (and elapsed on delegated-attest)", async () => {
    const env = setup();
    const body = `{"identifiers":["${"a".repeat(MAX_BODY_BYTES)}"]}`;
    for (const path of [...IDENTITY_PATHS, ...DELEGATED_PATHS]) {
      const res = await env.call("POST", path, body);
      expect({ path, status: res.status, code: res.body.code, cors: res.headers.get("access-control-allow-origin") })
        .toEqual({ path, status: 413, code: "PAYLOAD_TOO_LARGE", cors: "*" });
      expect(Object.keys(res.body).sort()).toEqual(DELEGATED_PATHS.includes(path) ? ["code", "elapsed", "error"] : ["code", "error"]);
    }
  });

  test("a declared Content-Length over the limit is refused before a byte of the body is read", async () => {
    const env = setup();
    for (const path of ["/v1/identity-resolve", "/v1/delegated-attest", "/v1/nonce"]) {
      let pulled = false;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled = true;
          controller.enqueue(new TextEncoder().encode("{}"));
          controller.close();
        },
      }, { highWaterMark: 0 });
      const method = path === "/v1/nonce" ? "PUT" : "POST";
      const res = await env.call(method, path, body, { "content-length": String(MAX_BODY_BYTES + 1) });
      const expected = method === "PUT" ? [405, "METHOD_NOT_ALLOWED"] : [413, "PAYLOAD_TOO_LARGE"];
      expect([path, res.status, res.body.code, res.headers.get("access-control-allow-origin"), pulled]).toEqual([path, ...expected, "*", false]);
    }
  });

  test("a chunked body (no Content-Length) over the limit is cut off and answered 413 too", async () => {
    const env = setup();
    const stream = () => {
      let left = MAX_BODY_BYTES + 1;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (left <= 0) return controller.close();
          const n = Math.min(left, 1 << 20);
          left -= n;
          controller.enqueue(new Uint8Array(n).fill(0x20));
        },
      });
    };
    for (const path of ["/v1/identity-resolve", "/v1/delegated-attest"]) {
      const res = await env.call("POST", path, stream());
      expect([res.status, res.body.code, res.headers.get("access-control-allow-origin")]).toEqual([413, "PAYLOAD_TOO_LARGE", "*"]);
    }
    expect(env.eas.calls).toBe(0);
  });

  test("served by Bun with main's maxRequestBodySize (16 MiB), a 9 MiB body gets the app's 413, not Bun's bare one", async () => {
    const env = setup();
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, maxRequestBodySize: 16 * 1024 * 1024, fetch: (request) => env.app.handle(request) });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/v1/identity-resolve`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "a".repeat(9 * 1024 * 1024),
      });
      expect(res.status).toBe(413);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(await res.json()).toEqual({ error: `Request body larger than ${MAX_BODY_BYTES} bytes`, code: "PAYLOAD_TOO_LARGE" });
    } finally {
      server.stop(true);
    }
  });
});

/** Every use case of the app as a spy that records its input and refuses with a code of its own. */
function spyApp() {
  const calls: Record<string, unknown[]> = {};
  const spy = (name: string, answer: unknown) => (...input: unknown[]) => {
    (calls[name] ??= []).push(input);
    return Promise.resolve(answer);
  };
  const app = createApp({
    privateOrigins: ["https://app.example.com"],
    eas: {
      readNonce: spy("nonce", fail("RPC_ERROR", "spy")) as ReadNonce,
      delegatedAttest: Object.assign(spy("delegatedAttest", fail("SCHEMA_NOT_SUBSIDIZED", "spy")), {
        batch: spy("delegatedAttestBatch", { txHash: null, blockNumber: null, results: [] }),
      }) as DelegatedAttest,
      chainName: "x",
      chainId: 1,
      easAddress: "0x0000000000000000000000000000000000000000",
    },
    trustAnchors: anchors,
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    controller: { discover: spy("controllerEndpointConfirm", fail("INVALID_DID", "spy")) as never, confirm: spy("controllerConfirm", fail("INVALID_DID", "spy")) as never },
    artifactTrust: spy("artifactTrust", fail("NETWORK_ERROR", "spy")) as never,
    attestations: {
      list: spy("attestationList", fail("NETWORK_ERROR", "spy")) as never,
      queries: { count: spy("attestationCount", fail("NETWORK_ERROR", "spy")) as never, get: spy("attestationGet", fail("NETWORK_ERROR", "spy")) as never },
    },
    subjectOwnership: spy("subjectOwnership", fail("NETWORK_ERROR", "spy")) as never,
    premiumRpc: {
      sessions: { authenticate: () => Promise.resolve({ ok: true, value: { account: { id: "a", address: A, plan: "free", createdAtMs: 0 } } }) } as never,
      premiumRpc: spy("premiumRpc", fail("NETWORK_ERROR", "spy")) as never,
    },
    signingKeys: {
      caller: () => Promise.resolve({ ok: true, value: { id: "a", address: A, plan: "free", createdAtMs: 0 } }),
      keys: { upsert: spy("signingKeyUpsert", fail("SIGNING_KEY_LIMIT_EXCEEDED", "spy")), list: spy("signingKeyList", []) } as never,
    },
    keyStatus: { keyStatus: spy("keyStatus", fail("NETWORK_ERROR", "spy")) as never, clientRate: { take: () => ({ allowed: true }) }, maxInFlight: 100 },
    controllerAuthorization: {
      authorize: spy("controllerAuthorization", fail("NETWORK_ERROR", "spy")) as never,
      resolveDidUrl: spy("didUrlResolve", fail("NETWORK_ERROR", "spy")) as never,
      clientRate: { take: () => ({ allowed: true }) },
      maxInFlight: 100,
    },
    subjects: {
      sessions: { authenticate: () => Promise.resolve({ ok: true, value: { account: { id: "a", address: A, plan: "free", createdAtMs: 0 } } }) } as never,
      subjects: { add: spy("subjectCreate", fail("SUBJECT_NOT_FOUND", "spy")), update: spy("subjectPatch", fail("SUBJECT_NOT_FOUND", "spy")) } as never,
    },
    accounts: {
      sessions: { authenticate: () => Promise.resolve({ ok: true, value: { account: { id: "a", address: A, plan: "free", createdAtMs: 0 } } }) } as never,
      accounts: { setDisplayName: spy("accountPatch", undefined) } as never,
      ledger: fakeWriteLedger(),
      plans: { free: { annualWrites: 1, schemas: [] }, paid: { annualWrites: 1, schemas: [] } },
      clock: fakeClock(),
      chainId: 1,
    },
    session: {
      sessions: {
        challenge: spy("walletChallenge", fail("CLIENT_NOT_ALLOWED", "spy")),
        verify: spy("walletVerify", fail("INVALID_CHALLENGE", "spy")),
        authenticate: () => Promise.resolve(fail("UNAUTHENTICATED", "spy")),
        logout: () => Promise.resolve(),
      } as never,
      witness: spy("controllerWitness", { result: fail("UNAUTHENTICATED", "spy"), deprecated: false }) as never,
      ledger: fakeWriteLedger(),
      plans: { free: { annualWrites: 1, schemas: [] }, paid: { annualWrites: 1, schemas: [] } },
      clock: fakeClock(),
      secureCookies: false,
      // The witness is for sale, and every payment passes: the paid alias reaches the use case once its body is valid.
      payments: {
        offers: () => true,
        handle: async (_request: Request, _purpose: string, work: (paid: { payer: string; key: string }) => Promise<{ response: Response }>) =>
          (await work({ payer: A, key: "k" })).response,
        terms: () => Promise.resolve({}),
        idempotentWrite: (_request: Request, body: unknown, scope: string) => ({ scope, body: String(body) }),
      } as never,
    },
    privateRelay: {
      sessions: { authenticate: () => Promise.resolve({ ok: true, value: { account: { id: "a", address: A, plan: "free", createdAtMs: 0 } } }) } as never,
      relay: spy("privateRelay", fail("SCHEMA_NOT_ELIGIBLE", "spy")) as never,
      readNonce: spy("nonce", fail("RPC_ERROR", "spy")) as ReadNonce,
      chainName: "x",
      chainId: 1,
      easAddress: "0x0000000000000000000000000000000000000000",
    },
  });
  return { app, calls };
}

const A = "0x173a347faed486bb69081ef673c6e52c03f57f3e";
const B32 = `0x${"ab".repeat(32)}`;
const CONTROLLER = `did:pkh:eip155:1:${A}`;
/** Per operation: requests its route lets through to the use case (legacy and alternate forms included), and requests it refuses. */
const SAMPLES: Record<keyof typeof REQUEST_MODELS, { accepted: unknown[]; refused: unknown[] }> = {
  nonce: { accepted: [{ attester: A }], refused: [{}, { attester: "" }, { attester: "0x123" }, { attester: [A, A] }] },
  delegatedAttest: {
    accepted: [
      { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: { schema: B32, deadline: "1800000000" } } },
      { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: { schemaUid: B32, deadline: 1_800_000_000 } } },
      { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: {}, typedData: { message: { schema: B32, deadline: "1", recipient: A, value: "0" } } } },
    ],
    refused: [
      {},
      { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: { deadline: "1" } } },
      { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: { schema: B32, deadline: "1", value: "1" } } },
      { attester: A, signature: "", prepared: { delegatedRequest: { schema: B32, deadline: "1" } } },
    ],
  },
  delegatedAttestBatch: {
    // Each request is the single route's to check: the batch's model wants 1 to 50 of them, whatever they hold.
    accepted: [{ requests: [{}] }, { requests: Array(50).fill({ attester: A }) }],
    refused: [{}, { requests: [] }, { requests: Array(51).fill({}) }, { requests: {} }],
  },
  identityResolve: {
    accepted: [{ identifiers: [] }, { identifiers: ["did:web:example.com", ""] }],
    refused: [{}, { identifiers: "a.com" }, { identifiers: [1] }, { identifiers: Array(101).fill("a.com") }],
  },
  controllerEndpointConfirm: { accepted: [{ subjectDid: "example.com" }, { subjectDid: "did:web:a.com", walletDid: "" }], refused: [{}, { subjectDid: " " }, { subjectDid: ["a.com", "b.com"] }] },
  controllerConfirm: {
    accepted: [{ subjectDid: "example.com" }, { subjectDid: "example.com", walletDid: CONTROLLER }],
    refused: [{}, { subjectDid: "example.com", walletDid: "" }, { subjectDid: "example.com", walletDid: [CONTROLLER, CONTROLLER] }],
  },
  artifactTrust: { accepted: [{ artifactDid: "did:artifact:bafy" }], refused: [{}, { artifactDid: "" }, { artifactDid: ["did:artifact:a", "did:artifact:b"] }] },
  attestationList: {
    accepted: [
      { subject: "did:web:example.com", schema: "user-review" },
      { subject: "example.com", schema: "x", limit: "5", cursor: "abc" },
      { subject: "did:web:a.com" },
      { attester: A },
      { recipient: A, schema: B32, revoked: "true", since: "1", until: "2", order: "oldest" },
    ],
    // None of subject, attester, recipient and schema is refused too (INVALID_INPUT), by the route after the model.
    refused: [
      { attester: "0x12" },
      { attester: A, revoked: "yes" },
      { attester: A, order: "random" },
      { schema: "user-review", since: "-1" },
      { subject: "did:web:a.com", schema: "user-review", limit: "1000" },
      { subject: ["a", "b"], schema: "user-review" },
    ],
  },
  attestationCount: {
    accepted: [{ subject: "did:web:example.com" }, { attester: A, schema: B32, revoked: "false", since: "1", until: "2" }],
    refused: [{ recipient: "0x12" }, { attester: [A, A] }, { schema: "user-review", until: "x" }],
  },
  walletChallenge: {
    accepted: [
      { walletDid: CONTROLLER, domain: "app.example.com", uri: "https://app.example.com/" },
      { address: A, chainId: 1, domain: "app.example.com", uri: "https://app.example.com/" },
    ],
    refused: [
      { walletDid: CONTROLLER, uri: "https://app.example.com/" },
      { address: A, domain: "app.example.com", uri: "https://app.example.com/" },
      { walletDid: CONTROLLER, domain: "app.example.com", uri: " https://app.example.com/" },
    ],
  },
  walletVerify: { accepted: [{ challengeId: "c", siweMessage: "m", signature: "0x12" }], refused: [{ challengeId: "c", siweMessage: "m" }, []] },
  subjectOwnership: {
    accepted: [{ subjectDid: "did:web:a.com", connectedWalletDid: CONTROLLER }, { subjectDid: "x", connectedWalletDid: "y", txHash: B32 }],
    refused: [{ subjectDid: "did:web:a.com" }, { subjectDid: "did:web:a.com", connectedWalletDid: CONTROLLER, txHash: "0x12" }],
  },
  premiumRpc: {
    accepted: [{ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }, [{ jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }, { nonsense: true }]],
    refused: [{ jsonrpc: "1.0", id: 1, method: "eth_chainId" }, [], { jsonrpc: "2.0", id: 1 }],
  },
  accountPatch: { accepted: [{ displayName: "Alice" }, { displayName: null }], refused: [{}, { displayName: 5 }, { displayName: "x".repeat(101) }] },
  subjectCreate: {
    accepted: [{ did: "did:web:a.com" }, { subjectDid: "a.com", displayName: "Shop" }, { did: "did:pkh:eip155:1:" + A, displayName: null, txHash: B32 }],
    refused: [{}, { did: "" }, { did: 5 }, { subjectDid: "a.com", displayName: 5 }, { did: "a.com", txHash: "0x12" }, { did: "a.com", displayName: "x".repeat(101) }],
  },
  subjectPatch: {
    accepted: [{ displayName: "Shop" }, { displayName: null }, { isDefault: true }, { displayName: "x", isDefault: true }],
    refused: [{}, { isDefault: false }, { displayName: 5 }, { displayName: "x".repeat(101) }],
  },
  controllerWitness: {
    accepted: [
      { subjectDid: "did:web:example.com", controllerDid: CONTROLLER, chainId: 31337 },
      { subject: "did:web:example.com", controller: CONTROLLER, attestationUid: B32, easContract: A, schemaUid: B32, method: "dns" },
    ],
    refused: [{ subjectDid: "did:web:example.com" }, { subjectDid: "did:web:example.com", controllerDid: CONTROLLER, chainId: "31337" }, { subjectDid: 5, controllerDid: CONTROLLER }],
  },
  signingKeyUpsert: {
    accepted: [
      { keyDid: CONTROLLER, keyType: "service-signing", displayName: "Signer" },
      { keyDid: "did:key:z6Mk", keyType: "attestation", displayName: "Signer", tags: ["x402", "mcp"], notes: null },
    ],
    refused: [{}, { keyDid: CONTROLLER, keyType: "service-signing" }, { keyDid: 5, keyType: "service-signing", displayName: "x" }, { keyDid: CONTROLLER, keyType: "attestation", displayName: "x", tags: "x402" }],
  },
  signingKeyList: { accepted: [{}, { keyType: "service-signing", tag: "x402" }], refused: [{ tag: ["a", "b"] }, { keyType: "x".repeat(51) }] },
  keyStatus: {
    accepted: [{ subjectDid: "did:web:a.com", keyDid: CONTROLLER }, { subjectDid: "did:web:a.com", keyDid: CONTROLLER, at: "1800000000" }],
    refused: [{}, { subjectDid: "did:web:a.com" }, { subjectDid: "did:web:a.com", keyDid: CONTROLLER, at: "soon" }, { subjectDid: ["a", "b"], keyDid: CONTROLLER }],
  },
  controllerAuthorization: {
    accepted: [{ subjectDid: "did:web:a.com", controllerDid: CONTROLLER }, { subjectDid: "did:web:a.com", controllerDid: CONTROLLER, purpose: "keyAgreement", at: "1800000000" }],
    refused: [{}, { subjectDid: "did:web:a.com" }, { subjectDid: "did:web:a.com", controllerDid: CONTROLLER, at: "soon" }, { subjectDid: ["a", "b"], controllerDid: CONTROLLER }],
  },
  didUrlResolve: {
    accepted: [{ didUrl: "did:web:a.com#key-1" }],
    refused: [{}, { didUrl: "" }, { didUrl: ["did:web:a.com#a", "did:web:a.com#b"] }],
  },
};

function sampleRequest(method: string, path: string, models: RequestModels, sample: unknown): Request {
  if (models.query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(sample as Record<string, string | string[]>)) {
      for (const one of Array.isArray(value) ? value : [value]) params.append(name, one);
    }
    return new Request(`http://localhost${path}?${params}`, { method: method.toUpperCase() });
  }
  return new Request(`http://localhost${path}`, {
    method: method.toUpperCase(),
    headers: { "content-type": "application/json" },
    body: JSON.stringify(sample),
  });
}

describe("session paths", () => {
  test("a wrong method, HEAD included, is 405 with Allow; an oversized body is 413; both with the allowlisted origin's CORS", async () => {
    const { app } = spyApp();
    const origin = "https://app.example.com";
    const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
      app.handle(new Request(`http://localhost${path}`, { method, headers: { origin, ...headers }, body }));
    for (const [method, path, allow] of [["HEAD", "/v1/session/me", "GET, OPTIONS"], ["GET", "/v1/controller-witness", "POST, OPTIONS"], ["PUT", "/api/private/session/logout", "POST, OPTIONS"]] as const) {
      const res = await call(method, path);
      expect([path, res.status, res.headers.get("allow"), res.headers.get("access-control-allow-origin")]).toEqual([path, 405, allow, origin]);
    }
    const big = await call("POST", "/v1/controller-witness", { "content-type": "application/json" }, "x".repeat(MAX_BODY_BYTES + 1));
    expect([big.status, ((await big.json()) as { code: string }).code, big.headers.get("access-control-allow-origin")]).toEqual([413, "PAYLOAD_TOO_LARGE", origin]);
    expect((await call("OPTIONS", "/v1/session/me")).status).toBe(204);
  });
});

describe("request models", () => {
  test("every route openapi.json gives a request model validates with that very model, from the one table", async () => {
    const { app, calls } = spyApp();
    const served = (await (await app.handle(new Request("http://localhost/openapi.json"))).json()) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> }; parameters?: { name: string; in: string; required: boolean; schema: unknown }[] }>>;
    };
    // The same generator over the same table, in process: its schemas are objects, comparable by identity.
    const built = buildOpenApi(ROUTE_DOCS, { title: "t", version: "1", serverUrl: "http://localhost" }) as unknown as typeof served;
    const asJson = (schema: unknown) => JSON.parse(JSON.stringify(schema));
    // The operations whose route validates with a model; the others' bodies and queries are checked in their own code
    // (RouteDoc.body and .query), and published as read (http/openapi_test.ts walks them).
    const modelled = new Set(ROUTE_DOCS.filter((d) => d.request !== undefined).flatMap((d) => d.paths.map((p) => `${d.method} ${p}`)));
    const checked: string[] = [];
    for (const [path, operations] of Object.entries(built.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const publishedBody = operation.requestBody?.content["application/json"]?.schema;
        // The query's parameters; a revalidated read also publishes the If-None-Match header (http/http_cache.ts).
        const queryOf = (parameters: typeof operation.parameters) => {
          const query = parameters?.filter((p) => p.in === "query");
          return query === undefined || query.length === 0 ? undefined : query;
        };
        const publishedQuery = queryOf(operation.parameters);
        if (publishedBody === undefined && publishedQuery === undefined) continue;
        if (!modelled.has(`${method} ${path}`)) continue;
        // OpenAPI writes a path parameter as {id}, Elysia as :id; a request names one (any id: the spy answers).
        const route = app.routes.find((r) => r.path === path.replace(/\{(\w+)\}/g, ":$1") && r.method.toLowerCase() === method);
        const concrete = path.replace(/\{\w+\}/g, "s1");
        const models = (route?.hooks as { detail?: Record<string, unknown> } | undefined)?.detail?.["x-request-models"] as RequestModels | undefined;
        expect({ path, method, validated: models !== undefined }).toEqual({ path, method, validated: true });
        const key = (Object.keys(REQUEST_MODELS) as (keyof typeof REQUEST_MODELS)[]).find((k) => REQUEST_MODELS[k] === models)!;
        expect({ path, key: key !== undefined }).toEqual({ path, key: true });
        const servedOperation = served.paths[path]![method]!;
        let model: TSchema;
        if (publishedBody !== undefined) {
          model = models!.body!;
          expect(publishedBody).toBe(model);
          expect(servedOperation.requestBody!.content["application/json"]!.schema).toEqual(asJson(model));
        } else {
          model = models!.query!;
          const properties = (model as unknown as { properties: Record<string, unknown>; required?: string[] }).properties;
          expect(publishedQuery!.map((p) => p.name)).toEqual(Object.keys(properties));
          for (const parameter of publishedQuery!) {
            expect(parameter.schema).toBe(properties[parameter.name]);
            expect(parameter.required).toBe(((model as unknown as { required?: string[] }).required ?? []).includes(parameter.name));
          }
          expect(queryOf(servedOperation.parameters)).toEqual(asJson(publishedQuery));
        }
        // identity-resolve has no use case to spy on: a 200 is the route's own answer to a request it let through.
        const reached = (before: number, res: Response) =>
          key === "identityResolve" ? res.status === 200 : (calls[key]?.length ?? 0) === before + 1;
        for (const sample of SAMPLES[key].accepted) {
          const before = calls[key]?.length ?? 0;
          const res = await app.handle(sampleRequest(method, concrete, models!, sample));
          expect({ path, sample, reached: reached(before, res), status: res.status })
            .toEqual({ path, sample, reached: true, status: res.status });
          expect({ path, sample, valid: Value.Check(model, sample) }).toEqual({ path, sample, valid: true });
        }
        for (const sample of SAMPLES[key].refused) {
          const before = calls[key]?.length ?? 0;
          const res = await app.handle(sampleRequest(method, concrete, models!, sample));
          const body = (await res.json()) as { code: string };
          expect({ path, sample, status: res.status, code: body.code, reached: reached(before, res), valid: Value.Check(model, sample) })
            .toEqual({ path, sample, status: 400, code: key === "artifactTrust" ? "INVALID_DID" : "INVALID_INPUT", reached: false, valid: false });
        }
        checked.push(`${method} ${path}`);
      }
    }
    // 28 before the signing keys and the key status (issue 24: four more operation paths); 34 with the private relay's
    // nonce and the paid witness alias (issue 33); 36 with the attestation count (issue 37); 37 with the public relay's
    // batches (issue 36); 41 with controller authorization and DID URL resolution, two paths each (issue 38).
    expect(checked.length).toBe(41);
    expect(new Set([...Object.keys(calls), "identityResolve"])).toEqual(new Set(Object.keys(REQUEST_MODELS)));
  });
});
