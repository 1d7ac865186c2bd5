import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { silentLogger } from "../adapters/observability/mod.ts";
import { createReadNonce, parseDelegatedRequest } from "../domain/delegation/mod.ts";
import { createOAuth, readApiClientMetadata, readPublicClientMetadata } from "../domain/oauth/mod.ts";
import { fakeAccessTokenKeys, fakeAccountStore, fakeClock, fakeEasReader, fakeOAuthStore, fakeRandom, fakeReplayStore, fakeSubmissionRecords, fakeWriteLedger, fakeMcpSessions } from "../ports/fakes/mod.ts";
import { ApiClientBody, OAuthRegisterBody, PrivateRelayBody, type RequestModels } from "./models.ts";
import { createMcpEndpoint } from "./routes/mcp/mod.ts";
import { MAX_BODY_BYTES } from "./routes/request.ts";
import { minimalAppDeps, testPaymentGate, testPaymentHeader, trackedRelayDeps } from "./testing.ts";
import { Elysia } from "elysia";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { IDEMPOTENCY_LEASE_MS } from "../domain/idempotency/mod.ts";
import { fail } from "../domain/result.ts";
import { privateRelayRoutes } from "./routes/delegation/mod.ts";
import { createApp } from "./app.ts";
import { buildOpenApi, operationIdOf } from "./openapi.ts";
import { ROUTE_DOCS } from "./route_docs.ts";

// Issue 29 item 6: `/openapi.json` is a document other people's tools accept, checked with those tools themselves.

type Operation = { operationId: string; security?: Record<string, string[]>[] };
type Document = {
  paths: Record<string, Record<string, Operation | unknown[]>>;
  components: { securitySchemes: Record<string, { type: string; in: string; name: string }> };
};

/** The document the app serves, built with fakes (no chain). */
async function served(): Promise<Document> {
  const app = createApp(minimalAppDeps());
  const response = await app.handle(new Request("http://localhost/openapi.json"));
  expect(response.status).toBe(200);
  return (await response.json()) as Document;
}

const dir = mkdtempSync(join(tmpdir(), "ats-openapi-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const METHODS = new Set(["get", "post", "patch", "delete"]);
const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => METHODS.has(method)).map(([method, op]) => ({ path, method, op: op as Operation })));

describe("/openapi.json for other people's tools", () => {
  test("a strict parser (@readme/openapi-parser, every rule an error) validates it", async () => {
    const result = await validate(await served() as never, {
      validate: {
        rules: {
          openapi: {
            "array-without-items": "error",
            "duplicate-non-request-body-parameters": "error",
            "duplicate-operation-id": "error",
            "invalid-security-scheme-properties": "error",
            "non-optional-path-parameters": "error",
            "path-parameters-not-in-parameters": "error",
            "path-parameters-not-in-path": "error",
          },
        },
      },
    });
    expect(result.valid ? "valid" : compileErrors(result)).toBe("valid");
    expect(result.warnings).toEqual([]);
  });

  test("Redocly's recommended ruleset (the pinned @redocly/cli) reports no error", async () => {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(await served()));
    // The CLI itself, run by this Bun: the same rules and version a user of `redocly lint` gets, no telemetry.
    const cli = Bun.resolveSync("@redocly/cli/bin/cli.js", import.meta.dir);
    const proc = Bun.spawn([process.execPath, cli, "lint", "--extends", "recommended", "--format", "json", file], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text()];
    await proc.exited;
    const report = JSON.parse(out || "null") as { totals: { errors: number }; problems: { ruleId: string; severity: string; location: { pointer: string }[] }[] } | null;
    expect({ report: report !== null, stderr: report === null ? err : "" }).toEqual({ report: true, stderr: "" });
    const errors = report!.problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId} ${p.location[0]?.pointer}`);
    expect(errors).toEqual([]);
    expect([report!.totals.errors, proc.exitCode]).toEqual([0, 0]);
  });

  test("openapi-typescript generates types from it that typecheck against its paths and models", async () => {
    const types = astToString(await openapiTS(await served() as never));
    for (const path of ["/v1/identity-resolve", "/v1/identity/resolve", "/api/private/subjects/{id}", "/v1/controller-witness"]) {
      expect(types).toContain(`"${path}": {`);
    }
    // The generated types and a client's use of them, compiled strictly: wrong uses must be errors, not `any`.
    const file = join(dir, "client.ts");
    writeFileSync(file, `${types}
type ResolveBody = paths["/v1/identity-resolve"]["post"]["requestBody"]["content"]["application/json"];
export const body: ResolveBody = { identifiers: ["did:web:example.com"] };
// @ts-expect-error identifiers is required
export const empty: ResolveBody = {};
type Resolved = paths["/v1/identity/resolve"]["post"]["responses"][200]["content"]["application/json"];
export const labels = (r: Resolved): string[] => r.identities.map((i) => i.label);
export const subject: paths["/api/private/subjects/{id}"]["parameters"]["path"] = { id: "s1" };
// @ts-expect-error the path parameter is required
export const noSubject: paths["/api/private/subjects/{id}"]["parameters"]["path"] = {};
export const byId: operations["get_api_private_subjects_byId"] = {} as paths["/api/private/subjects/{id}"]["get"];
// @ts-expect-error no such path
export type Missing = paths["/v1/no-such-path"];
`);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      noUncheckedIndexedAccess: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.es2022.d.ts"],
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(diagnostics).toEqual([]);
  });

  test("declares the session cookie, the x402 header and OAuth bearer tokens, and every operation's security names only those", async () => {
    const doc = await served();
    expect(doc.components.securitySchemes).toEqual({
      session: expect.objectContaining({ type: "apiKey", in: "cookie", name: "ats_session" }),
      x402: expect.objectContaining({ type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE" }),
      bearer: expect.objectContaining({ type: "http", scheme: "bearer", bearerFormat: "JWT" }),
    });
    const security = Object.fromEntries(operations(doc).map(({ path, method, op }) => [`${method} ${path}`, op.security]));
    for (const [operation, requirements] of Object.entries(security)) {
      expect({ operation, declared: Array.isArray(requirements) }).toEqual({ operation, declared: true });
      for (const scheme of requirements!.flatMap(Object.keys)) expect(["session", "x402", "bearer"]).toContain(scheme);
    }
    expect(security["post /v1/delegated-attest"]).toEqual([]);
    expect(security["post /v1/session/wallet/verify"]).toEqual([]);
    // Decisions §19: the routes that take bearer tokens name the scope they need beside the session.
    expect(security["get /api/private/accounts/me"]).toEqual([{ session: [] }, { bearer: ["account:read"] }]);
    expect(security["delete /api/private/subjects/{id}"]).toEqual([{ session: [] }, { bearer: ["subjects:write"] }]);
    expect(security["post /v1/controller-witness"]).toEqual([{ session: [] }, { x402: [] }, { bearer: ["witness:write"] }]);
    expect(security["post /api/private/relay/eas/delegated-attest"]).toEqual([{ session: [] }, { x402: [] }, { bearer: ["relay:write"] }]);
    expect(security["post /v1/paid/controller-witness"]).toEqual([{ x402: [] }]);
    expect(security["post /oauth/token"]).toEqual([]);
    expect(security["post /api/private/subscriptions/x402"]).toEqual([{ session: [], x402: [] }]);
    expect(security["post /v1/session/logout"]).toEqual([{}, { session: [] }]);
  });

  test("operationIds are one per method and path; a table that repeats one is refused when built", () => {
    expect([operationIdOf("post", "/v1/identity-resolve"), operationIdOf("post", "/v1/identity/resolve")])
      .toEqual(["post_v1_identityResolve", "post_v1_identity_resolve"]);
    expect([operationIdOf("get", "/"), operationIdOf("get", "/console/app.js"), operationIdOf("get", "/api/private/subjects/{id}")])
      .toEqual(["get_root", "get_console_appJs", "get_api_private_subjects_byId"]);
    const info = { title: "t", version: "1", serverUrl: "http://127.0.0.1:8080" };
    const ids = operations(buildOpenApi(ROUTE_DOCS, info) as unknown as Document).map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const twice = [ROUTE_DOCS[0]!, { ...ROUTE_DOCS[0]!, paths: [ROUTE_DOCS[0]!.paths[0]!] }];
    expect(() => buildOpenApi(twice, info)).toThrow(/operationId get_api_eas_nonce/);
  });
});

// Issue 33 item 10: the document publishes, for every route the app serves, the body it reads, its parameters and
// the statuses it answers; found by walking the app's own routes with requests, not from the table that builds it.

type PublishedOperation = {
  requestBody?: { required?: boolean; content: Record<string, unknown> };
  parameters?: { name: string; in: string; required: boolean }[];
  responses: Record<string, { content?: Record<string, unknown> }>;
};
type Published = { paths: Record<string, Record<string, PublishedOperation> & { parameters?: { name: string; in: string }[] }> };

const ORIGIN = "https://app.example.com";
const SIGNED_IN = "ats_session=signed-in";

/**
 * An app serving every route: each capability wired to fakes, or to a stub that records that it was reached and
 * fails (its 500 is the stub's, so a 5xx is not held against the document). One account is signed in by
 * {@link SIGNED_IN}; every other request has no session.
 */
function everyRouteApp() {
  const reached: string[] = [];
  const fn = (name: string) => (..._args: unknown[]) => {
    reached.push(name);
    return Promise.reject(new Error(`stub ${name}`));
  };
  const stub = (name: string) =>
    new Proxy({}, { get: (_target, prop) => (typeof prop === "symbol" || prop === "then" ? undefined : fn(`${name}.${prop}`)) });
  const clock = fakeClock();
  const account = { id: "acc-1", address: "0x00000000000000000000000000000000000000a1", plan: "free", createdAtMs: 0 } as const;
  const session = { tokenHash: "h", accountId: account.id, createdAtMs: 0, expiresAtMs: clock.nowMs() + 60_000, revokedAtMs: null };
  const sessions = {
    authenticate: (token: string | undefined) =>
      Promise.resolve(token === "signed-in" ? { ok: true, value: { account, session } } : { ok: false, code: "UNAUTHENTICATED", message: "No session" }),
    logout: () => Promise.resolve(),
    challenge: fn("sessions.challenge"),
    verify: fn("sessions.verify"),
    register: fn("sessions.register"),
  } as never;
  const plans = { free: { annualWrites: 1, schemas: [] }, paid: { annualWrites: 1, schemas: [] } };
  const ledger = fakeWriteLedger();
  const oauth = createOAuth({
    store: fakeOAuthStore(),
    keys: fakeAccessTokenKeys(clock),
    accounts: fakeAccountStore(),
    clock,
    random: fakeRandom(),
    issuer: "http://localhost",
    policy: { registrationsPerClientPerHour: 3, registrationsPerHour: 100, refreshTokenTtlSeconds: 86_400, liveCodesPerAccount: 10, liveCodesPerClient: 10, grantsPerAccount: 10 },
  });
  const eas = fakeEasReader();
  const app = createApp({
    ...minimalAppDeps(),
    privateOrigins: [ORIGIN],
    publicBaseUrl: "http://localhost",
    controller: { discover: fn("discover"), confirm: fn("confirm") } as never,
    artifactTrust: fn("artifactTrust") as never,
    attestations: { list: fn("attestationList") as never, queries: { count: fn("attestationCount") as never, get: fn("attestationGet") as never } },
    subjectOwnership: fn("subjectOwnership") as never,
    session: { sessions, witness: fn("witness") as never, ledger, plans, clock, secureCookies: false },
    accounts: { sessions, accounts: stub("accounts") as never, ledger, plans, clock, chainId: eas.chainId },
    premiumRpc: { sessions, premiumRpc: fn("premiumRpc") as never },
    subjects: { sessions, subjects: stub("subjects") as never },
    privateRelay: { sessions, relay: fn("relay") as never, readNonce: createReadNonce(eas), chainName: "x", chainId: eas.chainId, easAddress: eas.easAddress },
    subscriptions: { sessions, gate: { offers: () => false, handle: fn("gate.handle"), terms: fn("gate.terms") } as never, payments: stub("payments") as never, ledger, plans, clock },
    submissions: { sessions, status: { read: fn("submissions.read"), list: fn("submissions.list") } as never },
    didDocument: { "@context": ["https://www.w3.org/ns/did/v1"], id: "did:web:localhost", verificationMethod: [], assertionMethod: [] },
    webhooks: { sessions, webhooks: stub("webhooks") as never },
    signingKeys: { caller: () => Promise.resolve({ ok: false, code: "UNAUTHENTICATED", message: "No session" }) as never, keys: stub("keys") as never },
    keyStatus: { keyStatus: fn("keyStatus") as never, clientRate: { take: () => ({ allowed: true }) } as never, maxInFlight: 1 },
    oauth: { oauth, keys: fakeAccessTokenKeys(clock), sessions, issuer: "http://localhost", chainId: eas.chainId, assetVersion: () => Promise.resolve("v1") },
    apiClients: { oauth, sessions },
    mcp: createMcpEndpoint({ sessions: fakeMcpSessions(), tools: stub("tools") as never, maxSessions: 2, sessionIdleSeconds: 60, maxInFlight: 2, clock, log: silentLogger }),
    metricsText: () => Promise.resolve(""),
    console: { bundle: () => Promise.resolve({ js: "", css: "", version: "v1" }) as never, settings: { chainId: eas.chainId, chainName: "x", serviceDnsLabel: "ats" } },
  });
  return { app, reached };
}

/** A request body that counts how often the route pulled it: read or not, whatever the route then does with it. */
function countedBody(text: string) {
  let reads = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      reads++;
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  }, { highWaterMark: 0 }); // nothing pulled until someone reads
  return { body, reads: () => reads };
}

const MCP_INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } },
});

/** The requests every operation is sent: the shared refusals (no credentials, a bad body, a foreign origin, …). */
function probes(method: string): { name: string; init: RequestInit }[] {
  if (method === "GET") {
    return [
      { name: "no credentials, no query", init: {} },
      { name: "signed in, no query", init: { headers: { cookie: SIGNED_IN } } },
      { name: "an invalid bearer token", init: { headers: { authorization: "Bearer not-a-token" } } },
    ];
  }
  const json = { "content-type": "application/json" };
  return [
    { name: "{} without credentials", init: { headers: json, body: "{}" } },
    { name: "malformed JSON", init: { headers: json, body: "{" } },
    { name: "text/plain", init: { headers: { "content-type": "text/plain" }, body: "{}" } },
    { name: "a form with a repeated parameter", init: { headers: { "content-type": "application/x-www-form-urlencoded" }, body: "a=1&a=2" } },
    { name: "a foreign origin", init: { headers: { ...json, origin: "https://elsewhere.example" }, body: "{}" } },
    { name: "an allowlisted origin without a session", init: { headers: { ...json, origin: ORIGIN }, body: "{}" } },
    { name: "a declared body over the limit", init: { headers: { ...json, "content-length": String(MAX_BODY_BYTES + 1) }, body: "{}" } },
    { name: "an invalid bearer token", init: { headers: { ...json, authorization: "Bearer not-a-token" }, body: "{}" } },
    // Well-formed for /mcp (its transport's own refusals), a body of the wrong shape for every other route.
    { name: "an MCP initialize without Accept", init: { headers: json, body: MCP_INITIALIZE } },
    { name: "an MCP initialize as text/plain", init: { headers: { "content-type": "text/plain", accept: "application/json, text/event-stream" }, body: MCP_INITIALIZE } },
  ];
}

describe("/openapi.json against the routes the app serves", () => {
  test("every route publishes the body it reads, its path and query parameters, and every status the shared refusals give", async () => {
    const { app, reached } = everyRouteApp();
    const doc = (await (await app.handle(new Request("http://localhost/openapi.json"))).json()) as Published;
    const routes = app.routes.filter((r) => r.method !== "OPTIONS" && !["/openapi.json", "/docs"].includes(r.path));
    const missing: string[] = [];
    let walked = 0;
    for (const route of routes) {
      const method = route.method.toUpperCase();
      const path = route.path.replace(/:(\w+)/g, "{$1}");
      const name = `${method} ${path}`;
      const item = doc.paths[path];
      const operation = item?.[method.toLowerCase()];
      if (item === undefined || operation === undefined) {
        missing.push(`${name}: not published`);
        continue;
      }
      walked++;
      const concrete = `http://localhost${route.path.replace(/:\w+/g, "x1")}`;

      // The body: published exactly when the route reads one.
      if (method !== "GET") {
        const counted = countedBody("{}");
        await app.handle(new Request(concrete, { method, headers: { "content-type": "application/json" }, body: counted.body, duplex: "half" } as RequestInit));
        const reads = counted.reads() > 0;
        if (reads && operation.requestBody === undefined) missing.push(`${name}: reads a body, publishes none`);
        if (!reads && operation.requestBody !== undefined) missing.push(`${name}: publishes a body it never reads`);
      }

      // Path parameters, on the path item; the query model the route validates with, property by property.
      const pathNames = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      const published = (item.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
      if (JSON.stringify(published) !== JSON.stringify(pathNames)) missing.push(`${name}: path parameters ${published} for ${pathNames}`);
      const query = ((route.hooks as { detail?: Record<string, unknown> }).detail?.["x-request-models"] as RequestModels | undefined)?.query as
        | { properties: Record<string, unknown>; required?: string[] }
        | undefined;
      const params = new Map((operation.parameters ?? []).filter((p) => p.in === "query").map((p) => [p.name, p.required]));
      for (const [param] of Object.entries(query?.properties ?? {})) {
        const required = (query!.required ?? []).includes(param);
        if (params.get(param) !== required) missing.push(`${name}: query parameter ${param} (required: ${required}) published as ${params.get(param)}`);
      }

      // Every status the shared refusals give is published (a 5xx is a stub's), and an HTML answer as text/html.
      for (const probe of probes(method)) {
        const res = await app.handle(new Request(concrete, { method, ...probe.init }));
        const status = String(res.status);
        const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
        await res.arrayBuffer();
        if (res.status >= 500) continue;
        const response = operation.responses[status];
        if (response === undefined) missing.push(`${name}: answers ${status} to ${probe.name}, publishes ${Object.keys(operation.responses)}`);
        else if (type === "text/html" && response.content?.["text/html"] === undefined) missing.push(`${name}: answers ${status} as text/html, published without it`);
        // A request without a query that the route refuses as bad input: its query is required, so published (one
        // parameter, or at least one of several, as the model's x-required-any-of says and the route checks).
        const anyOf = (query as { "x-required-any-of"?: string[] } | undefined)?.["x-required-any-of"];
        const anyOfPublished = anyOf !== undefined && anyOf.length > 0 && anyOf.every((p) => params.has(p)) &&
          (operation as { "x-required-any-of"?: unknown })["x-required-any-of"] !== undefined;
        // (A path parameter's value is "s1" here, which a route may refuse as malformed: that 400 is the path's.)
        if (method === "GET" && res.status === 400 && ![...params.values()].includes(true) && !anyOfPublished && !path.includes("{")) {
          missing.push(`${name}: refuses ${probe.name} with 400, publishes no required query parameter`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(walked).toBe(routes.length);
    expect(walked).toBeGreaterThan(60);
    // Bad input reaches no use case: all that was reached is the reads of the signed-in GETs.
    expect(reached.filter((r) => !/\.(get|list|deliveries)$/.test(r))).toEqual([]);
  });
});

describe("bodies published for routes that check them in their own code", () => {
  const A = "0x00000000000000000000000000000000000000a1";
  const B32 = `0x${"ab".repeat(32)}`;
  /** Each sample with the code's verdict: whatever that code takes, the published model takes too. */
  const agree = (model: TSchema, read: (body: unknown) => { ok: boolean }, samples: unknown[]) =>
    samples.map((sample) => ({ sample, code: read(sample).ok, model: Value.Check(model, sample) })).filter((r) => r.code && !r.model);

  test("RFC 7591 metadata: what registration and API-client creation accept, the models accept; what the models refuse, they refuse", () => {
    const register = [
      { redirect_uris: ["https://app.example/cb"] },
      { redirect_uris: ["http://127.0.0.1:4000/cb", "com.example.app:/cb"], client_name: "Bot", scope: "account:read witness:write", grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "client_secret_basic", logo_uri: "x" },
      { redirect_uris: ["https://app.example/cb"], client_name: null, scope: "" },
    ];
    const refusedRegister = [{}, { redirect_uris: [] }, { redirect_uris: ["https://a.example/cb"], grant_types: ["client_credentials"] }, { redirect_uris: ["https://a.example/cb"], client_name: " " }, { redirect_uris: ["https://a.example/cb"], response_types: ["token"] }];
    expect(agree(OAuthRegisterBody, readPublicClientMetadata, [...register, ...refusedRegister])).toEqual([]);
    expect(register.map((b) => readPublicClientMetadata(b).ok)).toEqual([true, true, true]);
    expect(refusedRegister.map((b) => [Value.Check(OAuthRegisterBody, b), readPublicClientMetadata(b).ok])).toEqual(refusedRegister.map(() => [false, false]));

    const clients = [{}, { client_name: "CI", scope: "keys:write", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post", redirect_uris: [] }];
    const refusedClients = [{ grant_types: ["authorization_code"] }, { token_endpoint_auth_method: "none" }, { redirect_uris: ["https://a.example/cb"] }, { client_name: "" }];
    expect(agree(ApiClientBody, readApiClientMetadata, [...clients, ...refusedClients])).toEqual([]);
    expect(clients.map((b) => readApiClientMetadata(b).ok)).toEqual([true, true]);
    expect(refusedClients.map((b) => [Value.Check(ApiClientBody, b), readApiClientMetadata(b).ok])).toEqual(refusedClients.map(() => [false, false]));
  });

  test("the private relay's body: the public relay's, and subjectDid a string when given", () => {
    const body = { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: { schema: B32, deadline: "1800000000" } } };
    const samples = [body, { ...body, subjectDid: "did:web:shop.example" }, { ...body, prepared: { delegatedRequest: {}, typedData: { message: { schema: B32, deadline: "1" } } } }];
    expect(agree(PrivateRelayBody, parseDelegatedRequest, samples)).toEqual([]);
    expect(samples.map((b) => parseDelegatedRequest(b).ok)).toEqual([true, true, true]);
    expect([{ ...body, subjectDid: 5 }, { ...body, attester: "0x12" }, { signature: "0x1", prepared: body.prepared }].map((b) => Value.Check(PrivateRelayBody, b))).toEqual([false, false, false]);
  });
});

describe("/docs", () => {
  test("runs nothing, loads only its own stylesheet (its hash in the policy), is never framed nor sniffed", async () => {
    const { apiDocRoutes } = await import("./routes/api_docs.ts");
    const { API_PAGE_STYLE } = await import("./openapi.ts");
    const { createHash } = await import("node:crypto");
    const res = await apiDocRoutes("http://127.0.0.1:8080").handle(new Request("http://127.0.0.1:8080/docs"));
    const page = await res.text();
    expect(page).toContain(`<style>${API_PAGE_STYLE}</style>`);
    expect(page).not.toContain("<script");
    expect(res.headers.get("content-security-policy")).toBe(
      `default-src 'none'; style-src 'sha256-${createHash("sha256").update(API_PAGE_STYLE).digest("base64")}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    expect([res.headers.get("x-frame-options"), res.headers.get("x-content-type-options")]).toEqual(["DENY", "nosniff"]);
  });
});

// Found in review: the paid relay alias declared no 5xx, though it answers every one the private relay's use case
// gives. Each relay route is driven here with a use case that gives each 5xx in turn, and must publish that status
// naming the code; every route that takes x402 payments publishes the gate's own 503 SIGNER_UNAVAILABLE.
describe("the relays publish every 5xx their routes answer", () => {
  const A = "0x00000000000000000000000000000000000000a1";
  const BODY = { attester: A, signature: "0xdeadbeef", prepared: { delegatedRequest: { schema: `0x${"ab".repeat(32)}`, deadline: "1800000000" } } };
  const HASH = `0x${"ab".repeat(32)}`;
  /** Each 5xx a relay's use case answers (domain/delegation/); the private relay's lookups add 502 NETWORK_ERROR. */
  const RELAY_5XX: { code: string; message: string; details?: string; unavailable?: true; retryAfterSeconds?: number }[] = [
    fail("NO_DELEGATE_KEY", "x"),
    fail("RPC_ERROR", "x"),
    fail("SUBMISSION_FAILED", "x", HASH),
    fail("INTERNAL_ERROR", "x"),
    fail("MAINNET_NOT_SUPPORTED", "x"),
    { ...fail("SUBMISSION_FAILED", "x"), unavailable: true },
    fail("OUTCOME_UNKNOWN", "x", HASH),
    { ...fail("SIGNER_UNAVAILABLE", "x"), unavailable: true, retryAfterSeconds: 5 },
  ];
  const PRIVATE_5XX = [...RELAY_5XX, fail("NETWORK_ERROR", "x")];
  const published = buildOpenApi(ROUTE_DOCS, { title: "t", version: "1", serverUrl: "http://localhost" }) as unknown as {
    paths: Record<string, Record<string, { responses: Record<string, { description?: string }> }>>;
  };
  /** `answer`'s status and code, unless it is a 5xx with `expected` (when given) the route publishes naming its code. */
  const undeclared = async (path: string, answer: Response, expected?: string): Promise<string[]> => {
    const { code } = (await answer.json()) as { code: string };
    if (answer.status < 500 || (expected !== undefined && code !== expected)) return [`POST ${path}: ${answer.status} ${code}, not ${expected}`];
    const description = published.paths[path]?.post?.responses[String(answer.status)]?.description ?? "";
    return description.includes(code) ? [] : [`POST ${path}: ${answer.status} ${code}`];
  };
  const post = (headers: Record<string, string> = {}, body: unknown = BODY) =>
    ({ method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

  /** The private relay's routes over a use case answering `current.failure`, sessions and x402 both taken. */
  async function privateRelay(current: { failure: unknown }, extra: { signerReady?: () => Promise<boolean> } = {}) {
    const { payments } = await openSqliteStorage(":memory:");
    const ok = () => Promise.resolve({ isValid: true, success: true, transaction: HASH, network: "eip155:31337" });
    const gate = testPaymentGate(payments, { verify: ok, settle: ok } as never, undefined, { relay: "10000" }, extra);
    const account = { id: "acc-1", address: A, plan: "free", createdAtMs: 0 };
    const relay = () => Promise.resolve(current.failure);
    const app = new Elysia().use(privateRelayRoutes({
      sessions: { authenticate: (token: string | undefined) => Promise.resolve(token === "signed-in" ? { ok: true, value: { account, session: {} } } : fail("UNAUTHENTICATED", "No session")) } as never,
      relay: relay as never,
      readNonce: () => Promise.reject(new Error("unused")),
      chainName: "ATS Devnet",
      chainId: 31337,
      easAddress: `0x${"ee".repeat(20)}`,
      log: silentLogger,
      payments: gate,
    }));
    const paid = async () => app.handle(new Request("http://localhost/v1/paid/delegated-attest", post({ "payment-signature": await testPaymentHeader(gate, "http://localhost/v1/paid/delegated-attest", "relay") })));
    return { app, paid };
  }

  test("each single relay route (public, private, paid alias) publishes each 5xx its use case answers, naming the code", async () => {
    const current = { failure: undefined as unknown };
    const base = minimalAppDeps();
    const publicApp = createApp({ ...base, eas: { ...base.eas, delegatedAttest: (() => Promise.resolve(current.failure)) as never } });
    const { app, paid } = await privateRelay(current);
    const missing: string[] = [];
    for (const failure of PRIVATE_5XX) {
      current.failure = failure;
      if (RELAY_5XX.includes(failure)) {
        for (const path of ["/v1/delegated-attest", "/api/eas/delegated-attest"]) {
          missing.push(...await undeclared(path, await publicApp.handle(new Request(`http://localhost${path}`, post())), failure.code));
        }
      }
      const path = "/api/private/relay/eas/delegated-attest";
      missing.push(...await undeclared(path, await app.handle(new Request(`http://localhost${path}`, post({ cookie: SIGNED_IN }))), failure.code));
      missing.push(...await undeclared("/v1/paid/delegated-attest", await paid(), failure.code));
    }
    expect(missing).toEqual([]);
  });

  test("every route that takes x402 publishes the gate's 503 SIGNER_UNAVAILABLE (the paid relay alias's answer)", async () => {
    const { paid } = await privateRelay({ failure: undefined }, { signerReady: () => Promise.resolve(false) });
    const answered = await undeclared("/v1/paid/delegated-attest", await paid(), "SIGNER_UNAVAILABLE");
    const x402 = ROUTE_DOCS.filter((doc) => doc.auth.includes("x402")).flatMap((doc) => doc.paths);
    expect(x402.length).toBeGreaterThanOrEqual(5);
    const silent = x402.filter((path) => !(published.paths[path]?.post?.responses["503"]?.description ?? "").includes("SIGNER_UNAVAILABLE"));
    expect([...answered, ...silent]).toEqual([]);
  });

  test("each batch route publishes its 503: a retry under the key of a batch that died after sending, its submission no longer known", async () => {
    const clock = fakeClock();
    const records = fakeSubmissionRecords();
    const replay = fakeReplayStore();
    let opened!: () => void;
    const sent = new Promise<void>((resolve) => (opened = resolve));
    // The batch hands its transaction to the chain (its submission opened) and its instance dies.
    const batch = async (_bodies: unknown, caller?: { onSubmitting?: (chainId: number, key: string, layout: unknown) => Promise<void> }) => {
      await caller?.onSubmitting?.(31337, `0x${"11".repeat(65)}`, [{ ref: `0x${"11".repeat(65)}` }]);
      opened();
      return await new Promise<never>(() => {});
    };
    const app = createApp(trackedRelayDeps(Object.assign(() => Promise.reject(new Error("unused")), { batch }) as never, { records, replay, clock }));
    const path = "/v1/delegated-attest/batch";
    const request = () => new Request(`http://localhost${path}`, post({ "idempotency-key": "dead-batch" }, { requests: [BODY] }));
    void app.handle(request());
    await sent;
    records.records.clear();
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    expect(await undeclared(path, await app.handle(request()), "OUTCOME_UNKNOWN")).toEqual([]);
    // The private relay's batch words it alike (http/routes/delegation/_batch.ts) and declares it alike.
    expect(published.paths["/api/private/relay/eas/delegated-attest/batch"]?.post?.responses["503"]?.description).toContain("OUTCOME_UNKNOWN");
  });
});

describe("path parameters and credentials the routes refuse as they publish", () => {
  test("a path parameter that does not percent-decode (%ff, a cut escape) names nothing: 404 with the route's own code, never 500", async () => {
    const { app } = everyRouteApp();
    const answers: unknown[] = [];
    for (const path of ["/api/private/oauth/clients/%ff", "/api/private/oauth/clients/%E0%A4%A", "/api/private/oauth/authorizations/%ff"]) {
      const res = await app.handle(new Request(`http://localhost${path}`, { method: "DELETE", headers: { origin: ORIGIN, cookie: SIGNED_IN } }));
      answers.push([path, res.status, ((await res.json()) as { code: string }).code]);
    }
    expect(answers).toEqual([
      ["/api/private/oauth/clients/%ff", 404, "CLIENT_NOT_FOUND"],
      ["/api/private/oauth/clients/%E0%A4%A", 404, "CLIENT_NOT_FOUND"],
      ["/api/private/oauth/authorizations/%ff", 404, "AUTHORIZATION_NOT_FOUND"],
    ]);
  });

  test("signing out with an access token is 403 insufficient_scope as on every session-only route, never a success that revoked nothing", async () => {
    const { app } = everyRouteApp();
    const answers: unknown[] = [];
    for (const path of ["/v1/session/logout", "/api/private/session/logout"]) {
      for (const headers of [{ authorization: "Bearer some-access-token" }, { authorization: "Bearer some-access-token", cookie: SIGNED_IN, origin: ORIGIN }] as Record<string, string>[]) {
        const res = await app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" }));
        answers.push([path, res.status, ((await res.json()) as { code: string }).code, res.headers.get("set-cookie")]);
      }
    }
    expect(answers).toEqual([
      ["/v1/session/logout", 403, "insufficient_scope", null],
      ["/v1/session/logout", 403, "insufficient_scope", null],
      ["/api/private/session/logout", 403, "insufficient_scope", null],
      ["/api/private/session/logout", 403, "insufficient_scope", null],
    ]);
    // A session's own sign-out is unchanged.
    const res = await app.handle(new Request("http://localhost/v1/session/logout", { method: "POST", headers: { "content-type": "application/json", cookie: SIGNED_IN, origin: ORIGIN }, body: "{}" }));
    expect([res.status, await res.json()]).toEqual([200, { success: true }]);
  });
});
