import { describe, expect, test } from "bun:test";
import { createPrometheusMetrics, silentLogger } from "../adapters/observability/mod.ts";
import { fail, ok } from "../domain/result.ts";
import { fakeClock, fakeWriteLedger } from "../ports/fakes/mod.ts";
import { createApp } from "./app.ts";
import { json } from "./errors.ts";
import {
  applyCachePolicy,
  MAX_AGE_HEADER,
  CACHE,
  type CachePolicy,
  createEtagMemo,
  createPolicyLookup,
  ERROR_SECONDS,
  httpCacheSettings,
  ifNoneMatchMatches,
  STATIC_SECONDS,
  strongEtag,
  withKnownBody,
} from "./http_cache.ts";
import { instrumentedHandler } from "./instrument.ts";
import { ROUTE_DOCS } from "./route_docs.ts";
import { minimalAppDeps } from "./testing.ts";

// Decisions §21, issue 34 item 3: every route's answers carry the cache policy declared with it; public reads have a
// strong ETag and answer 304 to a matching If-None-Match.

const A = "0x173a347faed486bb69081ef673c6e52c03f57f3e";
const PKH = `did:pkh:eip155:1:${A}`;
const ARTIFACT = "did:artifact:bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e";
/** Ages unlike the defaults, so that each header shows where its number came from. */
const SETTINGS = httpCacheSettings({ indexPollMs: 2_500, discoveryCacheSeconds: 45 });
const INDEX = "public, max-age=3, stale-while-revalidate=3";
const DISCOVERY = "public, max-age=45, stale-while-revalidate=45";
const STATIC = `public, max-age=${STATIC_SECONDS}, stale-while-revalidate=${STATIC_SECONDS}`;
const CREDENTIALS = { authorization: "Bearer some.token", cookie: "ats_session=abc", "payment-signature": "e30=" };

const unauthenticated = () => Promise.resolve(fail("UNAUTHENTICATED", "Unauthenticated"));
const refused = () => Promise.resolve(fail("UNAUTHENTICATED", "Unauthenticated"));
const plans = { free: { annualWrites: 1, schemas: [] }, paid: { annualWrites: 1, schemas: [] } };
const sessions = { authenticate: unauthenticated, challenge: refused, verify: refused, logout: () => Promise.resolve() } as never;

/**
 * An app with every capability, each a fake: the public reads answer 200 with what `answers` holds now, the routes
 * with a credential refuse (the fake sessions know nobody), the rest answer as their fakes make them.
 */
function fullApp(options: { settings?: ReturnType<typeof httpCacheSettings> } = {}) {
  const answers = { artifactTrust: ok({ artifactDid: ARTIFACT, claims: [] as string[] }) as unknown, list: ok({ items: [], nextCursor: null }) as unknown };
  const gate = {
    offers: () => true,
    handle: () => Promise.resolve(json({ error: "Payment required", code: "PAYMENT_REQUIRED" }, 402)),
    terms: () => Promise.resolve({}),
    idempotentWrite: (_request: Request, body: unknown, scope: string) => ({ scope, body: String(body) }),
  };
  const app = createApp({
    ...minimalAppDeps(),
    httpCache: options.settings ?? SETTINGS,
    privateOrigins: ["https://app.example.com"],
    controller: {
      discover: (did: string) => Promise.resolve(ok({ subject: did, evidence: [] })),
      confirm: (did: string) => Promise.resolve(ok({ subject: did, evidence: [], approvedIssuer: { status: "not-configured" } })),
    } as never,
    artifactTrust: (() => Promise.resolve(answers.artifactTrust)) as never,
    attestations: {
      list: (() => answers.list instanceof Error ? Promise.reject(answers.list) : Promise.resolve(answers.list)) as never,
      queries: {
        count: (() => Promise.resolve(ok({ count: 0 }))) as never,
        get: (() => Promise.resolve(ok({ attestation: {}, revoked: false }))) as never,
      },
    },
    keyStatus: {
      keyStatus: ((subjectDid: string, keyDid: string) => Promise.resolve(ok({ subjectDid, keyDid, status: "unknown" }))) as never,
      clientRate: { take: () => ({ allowed: true }) } as never,
      maxInFlight: 100,
    },
    controllerAuthorization: {
      authorize: ((request: { subjectDid: string; controllerDid: string }) => Promise.resolve(ok({ ...request, authorized: false }))) as never,
      resolveDidUrl: ((didUrl: string) => Promise.resolve(ok({ didUrl }))) as never,
      clientRate: { take: () => ({ allowed: true }) } as never,
      maxInFlight: 100,
    },
    session: { sessions, witness: (() => Promise.reject(new Error("unused"))) as never, ledger: fakeWriteLedger(), plans, clock: fakeClock(), secureCookies: false, payments: gate as never },
    accounts: { sessions, accounts: {} as never, ledger: fakeWriteLedger(), plans, clock: fakeClock(), chainId: 1 },
    subjectOwnership: (() => Promise.resolve(fail("NETWORK_ERROR", "spy"))) as never,
    subjects: { sessions, subjects: {} as never },
    webhooks: { sessions, webhooks: {} as never },
    privateRelay: { sessions, relay: {} as never, readNonce: (() => Promise.reject(new Error("unused"))) as never, chainName: "x", chainId: 1, easAddress: A, payments: gate as never },
    subscriptions: { sessions, gate: gate as never, payments: {} as never, ledger: fakeWriteLedger(), plans, clock: fakeClock() },
    submissions: { sessions, status: { read: () => Promise.resolve(fail("NOT_FOUND", "Submission not found")), list: () => Promise.reject(new Error("unused")) } as never },
    didDocument: { "@context": ["https://www.w3.org/ns/did/v1"], id: "did:web:ats.example", verificationMethod: [], assertionMethod: [] },
    premiumRpc: { sessions, premiumRpc: (() => Promise.reject(new Error("unused"))) as never },
    signingKeys: { caller: unauthenticated as never, keys: {} as never },
    oauth: {
      oauth: { authorization: { check: () => Promise.resolve({ ok: false, kind: "show", error: "invalid_client", description: "Unknown client" }) } } as never,
      keys: { jwks: () => Promise.resolve({ keys: [] }) } as never,
      sessions,
      issuer: "http://127.0.0.1:8080",
      chainId: 1,
      assetVersion: () => Promise.resolve("v1"),
    },
    apiClients: { oauth: {} as never, sessions },
    mcp: { handle: () => Promise.resolve(json({ jsonrpc: "2.0", id: 1, result: {} })), readBody: () => Promise.resolve("{}"), sessions: () => Promise.resolve(0), sweep: () => Promise.resolve(0) },
    metricsText: () => Promise.resolve("# nothing\n"),
    console: { bundle: () => Promise.resolve({ js: "console.log(1)", css: "body{}", version: "v1" }), settings: { chainId: 1, chainName: "x", serviceDnsLabel: "ats" } },
    widgets: { bundle: () => Promise.resolve({ js: "console.log(2)", css: "main{}", version: "w1" }) },
    interactions: {
      findInteraction: () => Promise.resolve({ status: "none" as const }),
      txProof: (chainId: number, txHash: string) => Promise.resolve(ok({ chain: `eip155:${chainId}`, txHash, from: A, to: A, status: "success" as const, blockNumber: 1, blockTime: 1 })),
    },
    // The review widget writes to the service's chain, with its anchored user-review schema.
    trustAnchors: {
      version: 1,
      updatedAt: "2026-01-01T00:00:00Z",
      widgetOrigins: [],
      chains: { [`eip155:${minimalAppDeps().eas.chainId}`]: { name: "x", easContract: A, schemas: { "user-review": `0x${"7".repeat(64)}` } } },
      registries: [],
    },
  });
  return { app, answers };
}

/** A request for a route of the app: a path parameter named, the public reads' queries given so that they answer 200. */
const QUERIES: Readonly<Record<string, string>> = {
  "/v1/artifact-trust": `artifactDid=${ARTIFACT}`,
  "/api/public/artifact-trust": `artifactDid=${ARTIFACT}`,
  "/v1/attestations": "subject=did:web:example.com&schema=user-review",
  "/api/public/attestations": "subject=did:web:example.com&schema=user-review",
  "/v1/attestations/count": `attester=${A}`,
  "/api/public/attestations/count": `attester=${A}`,
  "/v1/key-status": `subjectDid=did:web:example.com&keyDid=${PKH}`,
  "/api/public/key-status": `subjectDid=did:web:example.com&keyDid=${PKH}`,
  "/v1/controller-authorization": `subjectDid=did:web:example.com&controllerDid=${PKH}`,
  "/api/public/controller-authorization": `subjectDid=did:web:example.com&controllerDid=${PKH}`,
  "/v1/did-url/resolve": "didUrl=did:web:example.com%23key-1",
  "/api/public/did-url/resolve": "didUrl=did:web:example.com%23key-1",
  "/v1/controller-endpoint-confirm": "subjectDid=example.com",
  "/api/public/controller-endpoint-confirm": "subjectDid=example.com",
  "/v1/controller-confirm": "subjectDid=example.com",
  "/api/public/controller-confirm": "subjectDid=example.com",
  "/api/eas/nonce": `attester=${A}`,
  "/v1/nonce": `attester=${A}`,
  "/widgets/reviews/embed": `url=example.com&contract=${A}&chainId=1`,
  "/v1/interactions": `chain=1&wallet=${A}&contract=${A}`,
  "/v1/tx-proofs": `chain=1&txHash=0x${"a".repeat(64)}`,
};

function requestFor(method: string, path: string, headers: Record<string, string> = {}): Request {
  // A path parameter the route takes as well formed (an attestation uid), else any.
  const concrete = path.replace(/:(\w+)/g, (_, name: string) => (name === "uid" ? `0x${"ab".repeat(32)}` : "s1"));
  const query = QUERIES[path];
  const init: RequestInit = { method, headers: { ...headers } };
  if (method !== "GET" && method !== "DELETE") {
    init.body = "{}";
    init.headers = { "content-type": "application/json", ...headers };
  }
  return new Request(`http://localhost${concrete}${query === undefined ? "" : `?${query}`}`, init);
}

/**
 * What each route must answer, written out here from decisions §21 rather than read from the route table: the public
 * reads with their ages (index: the poll; DNS and did.json evidence: the discovery cache; the service's own files:
 * five minutes), the console revalidated, the live public routes never kept; every other route has a session, a
 * token or a payment (or is the MCP endpoint, which takes tokens and keeps sessions): private, no-store.
 */
const PUBLIC_READS: Readonly<Record<string, string>> = {
  "GET /v1/artifact-trust": INDEX,
  "GET /api/public/artifact-trust": INDEX,
  "GET /v1/key-status": INDEX,
  "GET /api/public/key-status": INDEX,
  "GET /v1/controller-authorization": INDEX,
  "GET /api/public/controller-authorization": INDEX,
  "GET /v1/did-url/resolve": DISCOVERY,
  "GET /api/public/did-url/resolve": DISCOVERY,
  "GET /v1/attestations": INDEX,
  "GET /api/public/attestations": INDEX,
  "GET /v1/attestations/count": INDEX,
  "GET /api/public/attestations/count": INDEX,
  "GET /v1/attestations/:uid": INDEX,
  "GET /api/public/attestations/:uid": INDEX,
  "GET /v1/controller-endpoint-confirm": DISCOVERY,
  "GET /api/public/controller-endpoint-confirm": DISCOVERY,
  "GET /v1/controller-confirm": DISCOVERY,
  "GET /api/public/controller-confirm": DISCOVERY,
  "GET /v1/trust-anchors": STATIC,
  "GET /v1/trust-policy": STATIC,
  "GET /v1/tx-proofs": INDEX,
  "GET /api/public/trust-anchors": STATIC,
  "GET /.well-known/did.json": STATIC,
  "GET /.well-known/oauth-authorization-server": STATIC,
  "GET /.well-known/oauth-protected-resource": STATIC,
  "GET /.well-known/oauth-protected-resource/mcp": STATIC,
  "GET /oauth/jwks.json": STATIC,
  "GET /openapi.json": STATIC,
  "GET /docs": STATIC,
  "GET /": "no-cache",
  "GET /console/app.js": "no-cache",
  "GET /widgets/reviews/embed": "no-cache",
  "GET /widgets/reviews/create": "no-cache",
  "GET /widgets/reviews/widget.js": "no-cache",
  "GET /widgets/reviews/widget.css": "no-cache",
  "GET /console/app.css": "no-cache",
};
const LIVE_PUBLIC: ReadonlySet<string> = new Set([
  "GET /api/eas/nonce",
  "GET /v1/submissions/:id",
  "GET /v1/nonce",
  "GET /v1/interactions",
  "GET /healthz",
  "GET /readyz",
  "GET /metrics",
  "GET /oauth/authorize",
  "POST /api/eas/delegated-attest",
  "POST /v1/delegated-attest",
  "POST /v1/delegated-attest/batch",
  "POST /v1/identity-resolve",
  "POST /v1/identity/resolve",
  "POST /api/public/identity-resolve",
  "POST /api/verify/subject-ownership",
  "POST /oauth/register",
]);
/** Public routes whose answer depends on the caller's credential when it sends one: the consent page reads the session. */
const CREDENTIAL_DEPENDENT: ReadonlySet<string> = new Set(["GET /oauth/authorize"]);

/** The paths answered from the index with `asOf`. */
const INDEX_ANSWERS = /^\/(v1|api\/public)\/(artifact-trust|key-status|controller-authorization|attestations)(\/|$)/;

describe("every route of the app has its cache policy", () => {
  test("public reads are public with their ages and an ETag, live public routes no-store, everything else private, no-store", async () => {
    const { app } = fullApp();
    const routes = app.routes.filter((r) => r.method !== "OPTIONS").map((r) => `${r.method} ${r.path}`);
    // The walk covers the whole surface: every route the service documents is served by this app.
    const documented = ROUTE_DOCS.flatMap((doc) => doc.paths.map((path) => `${doc.method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`));
    expect(documented.filter((name) => !routes.includes(name))).toEqual([]);
    for (const name of [...Object.keys(PUBLIC_READS), ...LIVE_PUBLIC]) {
      expect({ name, served: routes.includes(name) }).toEqual({ name, served: true });
    }
    const seen: Record<string, number> = {};
    for (const route of routes) {
      const [method, path] = route.split(" ") as [string, string];
      const response = await app.handle(requestFor(method, path));
      const cacheControl = response.headers.get("cache-control");
      const expected = PUBLIC_READS[route];
      if (expected !== undefined) {
        // The answers of the index carry a weak ETag over the answer without asOf (decisions §21 amended); the others a strong one.
        const tag = INDEX_ANSWERS.test(path) ? /^W\/"[A-Za-z0-9_-]{43}"$/ : /^"[A-Za-z0-9_-]{43}"$/;
        expect({ route, status: response.status, cacheControl, etag: tag.test(response.headers.get("etag") ?? "") })
          .toEqual({ route, status: 200, cacheControl: expected, etag: true });
      } else {
        const klass = LIVE_PUBLIC.has(route) ? "no-store" : "private, no-store";
        expect({ route, cacheControl, etag: response.headers.get("etag") }).toEqual({ route, cacheControl: klass, etag: null });
      }
      seen[cacheControl!] = (seen[cacheControl!] ?? 0) + 1;
    }
    expect(seen["private, no-store"]).toBe(routes.length - Object.keys(PUBLIC_READS).length - LIVE_PUBLIC.size);
    expect(seen["no-store"]).toBe(LIVE_PUBLIC.size);
  });

  test("a request carrying credentials changes nothing on a public read, and makes a credential-dependent answer private, no-store", async () => {
    const { app } = fullApp();
    for (const route of app.routes.filter((r) => r.method !== "OPTIONS").map((r) => `${r.method} ${r.path}`)) {
      const [method, path] = route.split(" ") as [string, string];
      const anonymous = (await app.handle(requestFor(method, path))).headers.get("cache-control");
      const credentialed = await app.handle(requestFor(method, path, CREDENTIALS));
      const expected = CREDENTIAL_DEPENDENT.has(route) ? "private, no-store" : anonymous;
      expect({ route, cacheControl: credentialed.headers.get("cache-control") }).toEqual({ route, cacheControl: expected });
    }
    // The consent page: no-store for anyone, private, no-store for a caller with a session.
    const consent = await app.handle(new Request("http://localhost/oauth/authorize?client_id=x", { headers: { cookie: "ats_session=abc" } }));
    expect(consent.headers.get("cache-control")).toBe("private, no-store");
    const anonymous = await app.handle(new Request("http://localhost/oauth/authorize?client_id=x"));
    expect(anonymous.headers.get("cache-control")).toBe("no-store");
    // Artifact trust ignores credentials: a signed-in client gets the very answer a CDN may keep for everyone.
    const plain = await app.handle(requestFor("GET", "/v1/artifact-trust"));
    const signedIn = await app.handle(requestFor("GET", "/v1/artifact-trust", CREDENTIALS));
    expect([signedIn.headers.get("cache-control"), signedIn.headers.get("etag")]).toEqual([INDEX, plain.headers.get("etag")]);
  });

  test("CORS preflights are untouched; another method on a read is 405 no-store (HEAD included: no route serves it)", async () => {
    const { app } = fullApp();
    const preflight = await app.handle(new Request("http://localhost/v1/artifact-trust", { method: "OPTIONS" }));
    expect([preflight.status, preflight.headers.get("cache-control"), preflight.headers.get("access-control-max-age")]).toEqual([204, null, "600"]);
    for (const method of ["HEAD", "POST", "DELETE"]) {
      const response = await app.handle(new Request(`http://localhost/v1/artifact-trust?artifactDid=${ARTIFACT}`, { method }));
      expect([method, response.status, response.headers.get("cache-control"), response.headers.get("etag")]).toEqual([method, 405, "no-store", null]);
    }
  });
});

describe("ETag and If-None-Match", () => {
  const get = (app: ReturnType<typeof fullApp>["app"], path: string, headers: Record<string, string> = {}) =>
    app.handle(new Request(`http://localhost${path}`, { headers }));
  const TRUST = `/v1/artifact-trust?artifactDid=${ARTIFACT}`;

  test("the same answer has the same ETag on every request, another answer another; an index answer's is weak, over it without asOf", async () => {
    const { app, answers } = fullApp();
    answers.artifactTrust = ok({ artifactDid: ARTIFACT, claims: ["one"] });
    const first = await get(app, TRUST);
    const again = await get(app, TRUST);
    const etag = first.headers.get("etag")!;
    expect(etag).toBe(`W/${strongEtag(new TextEncoder().encode(await first.text()))}`);
    expect(again.headers.get("etag")).toBe(etag);
    // Gateway and backend paths answer the same bytes: the same ETag.
    expect((await get(app, `/api/public/artifact-trust?artifactDid=${ARTIFACT}`)).headers.get("etag")).toBe(etag);
    answers.artifactTrust = ok({ artifactDid: ARTIFACT, claims: ["one", "two"] });
    const changed = await get(app, TRUST);
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(await changed.json()).toEqual({ artifactDid: ARTIFACT, claims: ["one", "two"] });
  });

  test("a matching If-None-Match is 304 with no body, the same ETag and Cache-Control, and CORS; weak comparison; `*`", async () => {
    const { app, answers } = fullApp();
    answers.artifactTrust = ok({ artifactDid: ARTIFACT, claims: ["one"] });
    const first = await get(app, TRUST);
    const etag = first.headers.get("etag")!;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, `"a,b", W/${etag} , "c"`, "*"]) {
      const conditional = await get(app, TRUST, { "if-none-match": header });
      expect({ header, status: conditional.status, body: await conditional.text() }).toEqual({ header, status: 304, body: "" });
      expect(conditional.headers.get("etag")).toBe(etag);
      expect(conditional.headers.get("cache-control")).toBe(INDEX);
      expect(conditional.headers.get("access-control-allow-origin")).toBe("*");
      expect(conditional.headers.get("content-type")).toBeNull();
    }
    for (const header of ['"other"', etag.slice(0, -2) + '"', `W/"x"`, "", etag.slice(1, -1)]) {
      const full = await get(app, TRUST, { "if-none-match": header });
      expect({ header, status: full.status, etag: full.headers.get("etag") }).toEqual({ header, status: 200, etag });
      expect(await full.json()).toEqual({ artifactDid: ARTIFACT, claims: ["one"] });
    }
    // Once the answer changes, the old ETag no longer matches: the new answer in full.
    answers.artifactTrust = ok({ artifactDid: ARTIFACT, claims: ["one", "two"] });
    const changed = await get(app, TRUST, { "if-none-match": etag });
    expect(changed.status).toBe(200);
    expect(await changed.json()).toEqual({ artifactDid: ARTIFACT, claims: ["one", "two"] });
  });

  test("the trust anchors answered at the server's edge carry the same ETag as the app's and answer 304 too", async () => {
    const { app } = fullApp();
    const handler = instrumentedHandler(app as never, { metrics: createPrometheusMetrics(), log: silentLogger });
    const byApp = await app.handle(new Request("http://localhost/v1/trust-anchors"));
    const atEdge = await handler(new Request("http://localhost/v1/trust-anchors"));
    expect([atEdge.status, atEdge.headers.get("cache-control"), atEdge.headers.get("etag")]).toEqual([200, STATIC, byApp.headers.get("etag")]);
    expect(await atEdge.text()).toBe(await byApp.text());
    const conditional = await handler(new Request("http://localhost/v1/trust-anchors", { headers: { "if-none-match": byApp.headers.get("etag")! } }));
    expect([conditional.status, await conditional.text(), conditional.headers.get("etag")]).toEqual([304, "", byApp.headers.get("etag")]);
    // Answered at once, as before caching (issue 28): the ETag comes from the answer's text, no body is read back.
    expect(handler(new Request("http://localhost/v1/trust-anchors"))).toBeInstanceOf(Response);
    // identity-resolve, a POST, is answered at the edge without validators.
    const resolve = await handler(new Request("http://localhost/v1/identity-resolve", { method: "POST", body: '{"identifiers":["example.com"]}' }));
    expect([resolve.status, resolve.headers.get("cache-control"), resolve.headers.get("etag")]).toEqual([200, "no-store", null]);
  });
});

describe("errors", () => {
  const get = (app: ReturnType<typeof fullApp>["app"], path: string) => app.handle(new Request(`http://localhost${path}`));

  test("the server edge's own answers are never kept: 503 SHUTTING_DOWN while it drains, on a public read too", async () => {
    const { app } = fullApp();
    const handler = instrumentedHandler(app as never, { metrics: createPrometheusMetrics(), log: silentLogger });
    handler.drain();
    for (const path of ["/v1/trust-anchors", `/v1/artifact-trust?artifactDid=${ARTIFACT}`, "/api/private/subjects"]) {
      const response = await handler(new Request(`http://localhost${path}`));
      const body = await response.json() as { code: string };
      expect([path, response.status, body.code, response.headers.get("cache-control"), response.headers.get("etag")])
        .toEqual([path, 503, "SHUTTING_DOWN", "no-store", null]);
    }
  });

  test("a public read's 400 and 404 are kept a short while, never longer than its 200; other errors never", async () => {
    const { app, answers } = fullApp();
    const invalid = await get(app, "/v1/artifact-trust");
    expect([invalid.status, invalid.headers.get("cache-control"), invalid.headers.get("etag")]).toEqual([400, "public, max-age=3", null]);
    const discovery = await get(app, "/v1/controller-confirm");
    expect([discovery.status, discovery.headers.get("cache-control")]).toEqual([400, `public, max-age=${ERROR_SECONDS}`]);
    const unknown = await get(app, "/v1/no-such-route");
    expect([unknown.status, unknown.headers.get("cache-control")]).toEqual([404, `public, max-age=${ERROR_SECONDS}`]);
    for (const [code, status] of [["NETWORK_ERROR", 502], ["OUTCOME_UNKNOWN", 503], ["INTERNAL_ERROR", 500], ["RATE_LIMITED", 429]] as const) {
      answers.list = fail(code, "Failed");
      const failed = await get(app, "/v1/attestations?subject=did:web:example.com&schema=user-review");
      expect([code, failed.status, failed.headers.get("cache-control"), failed.headers.get("etag")]).toEqual([code, status, "no-store", null]);
      expect(Object.keys(await failed.json()).sort()).toEqual(["code", "error"]);
    }
    answers.list = new Error("boom");
    const thrown = await get(app, "/v1/attestations?subject=did:web:example.com&schema=user-review");
    expect([thrown.status, thrown.headers.get("cache-control")]).toEqual([500, "no-store"]);
  });

  test("a 404 of the session area is private, no-store; a private route's error is private, no-store", async () => {
    const { app } = fullApp();
    const unknown = await get(app, "/api/private/no-such-route");
    expect([unknown.status, unknown.headers.get("cache-control")]).toEqual([404, "private, no-store"]);
    const unauthenticated = await get(app, "/api/private/subjects/s1");
    expect([unauthenticated.status, unauthenticated.headers.get("cache-control")]).toEqual([401, "private, no-store"]);
  });

  test("with DISCOVERY_CACHE_SECONDS=0 evidence answers are kept but revalidated at every use, and their errors not kept", async () => {
    const { app } = fullApp({ settings: httpCacheSettings({ indexPollMs: 1_000, discoveryCacheSeconds: 0 }) });
    const confirm = await get(app, "/v1/controller-endpoint-confirm?subjectDid=example.com");
    expect([confirm.status, confirm.headers.get("cache-control"), confirm.headers.get("etag") !== null]).toEqual([200, "public, no-cache", true]);
    const trust = await get(app, `/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    expect(trust.headers.get("cache-control")).toBe("public, no-cache");
    const list = await get(app, "/v1/attestations?subject=did:web:example.com&schema=user-review");
    expect(list.headers.get("cache-control")).toBe("public, max-age=1, stale-while-revalidate=1");
    const invalid = await get(app, "/v1/controller-endpoint-confirm");
    expect([invalid.status, invalid.headers.get("cache-control")]).toEqual([400, "no-store"]);
  });
});

describe("the mechanism", () => {
  const answer = (body: string, status = 200, headers: Record<string, string> = {}) => new Response(body, { status, headers });
  const request = (headers: Record<string, string> = {}, method = "GET") => new Request("http://localhost/x", { method, headers });

  test("If-None-Match compares opaque-tags, W/ ignored on both sides, commas allowed inside a tag", () => {
    expect(ifNoneMatchMatches(null, '"a"')).toBe(false);
    expect(ifNoneMatchMatches('"a"', '"a"')).toBe(true);
    expect(ifNoneMatchMatches('W/"a"', '"a"')).toBe(true);
    expect(ifNoneMatchMatches('"a"', 'W/"a"')).toBe(true);
    expect(ifNoneMatchMatches('"x,y", "a"', '"a"')).toBe(true);
    expect(ifNoneMatchMatches('"x,"a""', '"a"')).toBe(false);
    expect(ifNoneMatchMatches(' * ', '"a"')).toBe(true);
    expect(ifNoneMatchMatches('"ab"', '"a"')).toBe(false);
    expect(ifNoneMatchMatches("a", '"a"')).toBe(false);
  });

  test("Vary adds the declared headers to what the answer says; credentials: private switches a public policy", async () => {
    const policy: CachePolicy = { kind: "public", freshness: ["index"], vary: ["Accept-Language", "origin"], credentials: "private" };
    const varied = await applyCachePolicy(request(), answer("{}", 200, { vary: "Origin" }), { policy, settings: SETTINGS });
    expect([varied.headers.get("vary"), varied.headers.get("cache-control")]).toEqual(["Origin, Accept-Language", INDEX]);
    const credentialed = await applyCachePolicy(request({ authorization: "Bearer x" }), answer("{}"), { policy, settings: SETTINGS });
    expect([credentialed.headers.get("cache-control"), credentialed.headers.get("etag")]).toEqual(["private, no-store", null]);
    const paid = await applyCachePolicy(request({ "payment-signature": "e30=" }), answer("{}"), { policy, settings: SETTINGS });
    expect(paid.headers.get("cache-control")).toBe("private, no-store");
  });

  test("an answer's own max-age (MAX_AGE_HEADER) shortens its route's and is never sent; it cannot lengthen it", async () => {
    const short = await applyCachePolicy(request(), answer("{}", 200, { [MAX_AGE_HEADER]: "0" }), { policy: CACHE.discovery, settings: SETTINGS });
    expect([short.headers.get("cache-control"), short.headers.has(MAX_AGE_HEADER), short.headers.has("etag")]).toEqual(["public, no-cache", false, true]);
    const longer = await applyCachePolicy(request(), answer("{}", 200, { [MAX_AGE_HEADER]: "9999" }), { policy: CACHE.discovery, settings: SETTINGS });
    expect(longer.headers.get("cache-control")).toBe("public, max-age=45, stale-while-revalidate=45");
  });

  test("the memo of last answers gives each answer the ETag of its own bytes", async () => {
    const memo = createEtagMemo();
    const options = { policy: CACHE.index, settings: SETTINGS, memo, route: "/v1/x" };
    const etagOf = async (body: string) => (await applyCachePolicy(request(), answer(body), options)).headers.get("etag");
    const hashed = (body: string) => strongEtag(new TextEncoder().encode(body));
    for (const body of ['{"a":1}', '{"a":1}', '{"a":2}', '{"a":1}', '{"a":1,"b":2}', '{"a":1}']) expect(await etagOf(body)).toBe(hashed(body));
    // What the memo holds stays intact once the answer made of it is read.
    const first = await applyCachePolicy(request(), answer('{"kept":true}'), options);
    expect(await first.text()).toBe('{"kept":true}');
    expect(await etagOf('{"kept":true}')).toBe(hashed('{"kept":true}'));
    expect(memo.entries.get("/v1/x")!.bytes.length).toBe('{"kept":true}'.length);
  });

  test("an answer whose text is known gets the very ETag its bytes would, at once", async () => {
    const text = JSON.stringify({ label: "café ☕ 𝄞", n: 1 });
    const known = applyCachePolicy(request(), withKnownBody(new Response(text), text), { policy: CACHE.index, settings: SETTINGS });
    expect(known).toBeInstanceOf(Response);
    const read = await applyCachePolicy(request(), new Response(text), { policy: CACHE.index, settings: SETTINGS });
    expect((known as Response).headers.get("etag")).toBe(read.headers.get("etag"));
    expect(read.headers.get("etag")).toBe(strongEtag(new TextEncoder().encode(text)));
    expect(await (known as Response).text()).toBe(text);
    const conditional = applyCachePolicy(request({ "if-none-match": read.headers.get("etag")! }), withKnownBody(new Response(text), text), {
      policy: CACHE.index,
      settings: SETTINGS,
    }) as Response;
    expect([conditional.status, await conditional.text()]).toEqual([304, ""]);
  });

  test("a body given as a Blob (identity-resolve keeps its answers so) is read and hashed like any other", async () => {
    const blob = new Blob(['{"identities":[]}']);
    const response = await applyCachePolicy(request(), new Response(blob), { policy: CACHE.static, settings: SETTINGS });
    expect(response.headers.get("etag")).toBe(strongEtag(new TextEncoder().encode('{"identities":[]}')));
    expect(await response.text()).toBe('{"identities":[]}');
    // The kept Blob is untouched: the next answer made of it reads the same bytes.
    expect(await new Response(blob).text()).toBe('{"identities":[]}');
  });

  test("the lookup: a route's own policy, no-store for another method on its path, private for the session area, path parameters matched", () => {
    const policyOf = createPolicyLookup([
      { method: "get", paths: ["/v1/a"], cache: CACHE.index },
      { method: "get", paths: ["/api/private/s/{id}"], cache: CACHE.private },
      { method: "get", paths: ["/v1/items/{uid}"], cache: CACHE.index },
    ], (path) => path.startsWith("/api/private/"));
    expect(policyOf("GET", "/v1/a")).toBe(CACHE.index);
    expect(policyOf("POST", "/v1/a")).toBe(CACHE.noStore);
    expect(policyOf("GET", "/v1/items/0xab")).toBe(CACHE.index);
    expect(policyOf("DELETE", "/v1/items/0xab")).toBe(CACHE.noStore);
    expect(policyOf("GET", "/v1/items/")).toBe(CACHE.static);
    expect(policyOf("GET", "/api/private/anything")).toBe(CACHE.private);
    expect(policyOf("GET", "/elsewhere")).toBe(CACHE.static);
  });
});

describe("/openapi.json", () => {
  test("publishes each answer's Cache-Control, the public reads' ETag, If-None-Match and 304", async () => {
    const { app } = fullApp();
    type Op = { parameters?: { name: string; in: string }[]; responses: Record<string, { headers?: Record<string, { description: string }> }> };
    const doc = (await (await app.handle(new Request("http://localhost/openapi.json"))).json()) as { paths: Record<string, Record<string, Op>> };
    const trust = doc.paths["/v1/artifact-trust"]!.get!;
    expect(trust.parameters!.filter((p) => p.in === "header").map((p) => p.name)).toEqual(["If-None-Match"]);
    expect(Object.keys(trust.responses["304"]!.headers!).sort()).toEqual(["Cache-Control", "ETag"]);
    expect(trust.responses["200"]!.headers!["Cache-Control"]!.description).toContain("INDEX_POLL_MS");
    expect(trust.responses["200"]!.headers!["Cache-Control"]!.description).toContain("DISCOVERY_CACHE_SECONDS");
    expect(trust.responses["200"]!.headers!.ETag).toBeDefined();
    expect(doc.paths["/v1/trust-anchors"]!.get!.responses["304"]).toBeDefined();
    expect(doc.paths["/api/private/subjects/{id}"]!.get!.responses["200"]!.headers!["Cache-Control"]!.description).toBe("private, no-store");
    expect(doc.paths["/v1/nonce"]!.get!.responses["304"]).toBeUndefined();
    expect(doc.paths["/v1/nonce"]!.get!.responses["200"]!.headers!["Cache-Control"]!.description).toBe("no-store");
    // Every documented answer of every operation says how it may be kept.
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (method === "parameters") continue;
        for (const [status, response] of Object.entries(op.responses)) {
          expect({ path, method, status, documented: typeof response.headers?.["Cache-Control"]?.description }).toEqual({ path, method, status, documented: "string" });
        }
      }
    }
  });
});
