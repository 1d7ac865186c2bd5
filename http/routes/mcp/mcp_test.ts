import { describe, expect, spyOn, test } from "bun:test";
import { Elysia } from "elysia";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { silentLogger } from "../../../adapters/observability/mod.ts";
import type { BearerAuth } from "../../../domain/oauth/mod.ts";
import { createRateLimiter, createSharedRateLimiter } from "../../../domain/rate_limit.ts";
import { fail, ok } from "../../../domain/result.ts";
import type { Account } from "../../../ports/accounts.ts";
import { fakeAttestationIndex, fakeClock, fakeIdempotencyStore, fakeIndexStore, fakeMcpSessions, fakeRateCounter, fakeSignedTx, fakeWriteLedger } from "../../../ports/fakes/mod.ts";
import { createWitnessResume } from "../../../domain/witness/mod.ts";
import { createListAttestations } from "../../../domain/index/mod.ts";
import { createIdempotency, IDEMPOTENCY_LEASE_MS } from "../../../domain/idempotency/mod.ts";
import { minimalAppDeps } from "../../testing.ts";
import { createApp } from "../../app.ts";
import { summarize, summarizeError } from "./_summaries.ts";
import { createTools, type McpToolDeps } from "./_tools.ts";
import { createMcpEndpoint, MCP_MAX_BATCH, type McpEndpointDeps, mcpRoutes } from "./mcp.ts";
import { clientInFlightShare, networkInFlightShare } from "./_server.ts";

const BASE = "http://localhost";
const ACCOUNT: Account = { id: "acc-1", address: "0x00000000000000000000000000000000000000a1", plan: "free", createdAtMs: 0 };
const SUBSCRIPTION = {
  plan: "free",
  status: "active",
  annualSponsoredWriteLimit: 10,
  sponsoredWritesUsedCurrentYear: 3,
  annualPremiumReadLimit: null,
  premiumReadsUsedCurrentYear: null,
  entitlementPeriodStart: "2026-01-01T00:00:00.000Z",
  entitlementPeriodEnd: "2027-01-01T00:00:00.000Z",
  eligibleSchemas: ["controller-witness"],
};
type Answer = { isError?: boolean; structuredContent?: Record<string, unknown>; content: { text?: string }[] };

describe("summarize()", () => {
  test("one paragraph of the answer's counts and verdicts, worded for what was found", () => {
    const artifact = (claims: number) => summarize("check_artifact_trust", {
      artifactDid: "did:artifact:b", chain: { caip2: "eip155:1" }, responsibilityClaims: Array(claims).fill({}), securityAssessments: [], certifications: [], otherAttestations: [],
      summary: { totalQueried: 3, totalVerified: claims, totalExcluded: 3 - claims },
    });
    expect(artifact(0)).toContain("0 verified responsibility claims");
    expect(artifact(0)).toContain("nobody on this chain stands behind the artifact");
    expect(artifact(1)).toContain("1 verified responsibility claim,");
    expect(artifact(1)).not.toContain("nobody");
    const anchors = summarize("get_trust_anchors", { version: 2, updatedAt: "t", chains: { "eip155:1": { name: "Mainnet", easContract: "0xE", schemas: { a: "0x1" } } }, registries: [{}, {}], widgetOrigins: [] });
    expect(anchors).toBe("Trust anchors version 2, updated t: 1 chain, eip155:1 (Mainnet, EAS 0xE, 1 schema); 2 issuer registries, 0 widget origins.");
    expect(summarize("list_attestations", { subject: "did:web:a", schema: "user-review", items: [], nextCursor: "c2" })).toContain("call again with cursor c2");
    expect(summarize("list_attestations", { items: [{ attestation: { attester: "0xa1" }, revoked: true }], nextCursor: null }))
      .toBe("1 attestation on this page (1 revoked) from 1 attester: 0xa1. This is the last page.");
    for (const text of [artifact(0), anchors]) expect(text).not.toContain("\n");
    expect(summarizeError("INVALID_DID", "Invalid subjectDid", "not a DID")).toBe("INVALID_DID: Invalid subjectDid (not a DID). Correct the input and call again.");
  });
});

/** Use cases that answer at once, except artifact trust, which the test releases by hand. */
function fakeTools(overrides: Partial<McpToolDeps> = {}): McpToolDeps {
  return {
    artifactTrust: () => Promise.resolve(fail("NETWORK_ERROR", "The chain did not answer")),
    confirm: () => Promise.resolve(fail("INVALID_DID", "Invalid subjectDid")) as never,
    trustAnchors: { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] },
    attestationList: () => Promise.resolve(fail("INVALID_INPUT", "schema is unknown")),
    keyStatus: () => Promise.resolve(fail("NETWORK_ERROR", "down")),
    keyStatusRate: createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }),
    witness: () => Promise.resolve({ result: fail("UNAUTHENTICATED", "no"), deprecated: false, deprecation: undefined }) as never,
    subscription: (account) => Promise.resolve({ ...SUBSCRIPTION, plan: account.plan }),
    log: silentLogger,
    ...overrides,
  };
}

/** The endpoint behind an Elysia app, and a connected SDK client whose requests the app handles in process. */
async function setUp(deps: Partial<McpEndpointDeps> = {}, token?: string) {
  const endpoint = createMcpEndpoint({ tools: fakeTools(), sessions: fakeMcpSessions(), maxSessions: 10, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger, ...deps });
  const app = new Elysia().use(mcpRoutes(endpoint));
  const fetch = (url: string | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    return app.handle(new Request(url, { ...init, headers }));
  };
  const client = new Client({ name: "unit", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { fetch }));
  const call = async (name: string, args: Record<string, unknown> = {}) => await client.callTool({ name, arguments: args }) as Answer;
  return { endpoint, app, client, call };
}

/** The endpoint behind an Elysia app whose client address is the request's `x-test-client`, and SDK clients of given addresses. */
async function setUpClients(deps: Partial<McpEndpointDeps> = {}) {
  const endpoint = createMcpEndpoint({
    tools: fakeTools(), sessions: fakeMcpSessions(), maxSessions: 10, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger,
    clientAddress: (request) => request.headers.get("x-test-client") ?? undefined,
    ...deps,
  });
  const app = new Elysia().use(mcpRoutes(endpoint));
  const connectAs = async (address: string) => {
    const fetch = (url: string | URL, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.set("x-test-client", address);
      return app.handle(new Request(url, { ...init, headers }));
    };
    const client = new Client({ name: "unit", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { fetch }));
    return { call: async (name: string, args: Record<string, unknown> = {}) => await client.callTool({ name, arguments: args }) as Answer };
  };
  return { endpoint, connectAs };
}

/** A bearer check that knows two tokens: `all` (both MCP scopes) and `read` (account:read only), for {base}/mcp. */
const bearer: BearerAuth = (token, required) => {
  if (required.audience !== `${BASE}/mcp`) return Promise.resolve(fail("invalid_token", "The access token is invalid"));
  if (token === "all" || (token === "read" && required.scope === "account:read")) {
    return Promise.resolve(ok({ account: ACCOUNT, clientId: "c1", scopes: [required.scope], claims: {} as never }));
  }
  if (token === "read") return Promise.resolve(fail("insufficient_scope", `This request needs the scope ${required.scope}`));
  return Promise.resolve(fail("invalid_token", "The access token is invalid"));
};

describe("createMcpEndpoint()", () => {
  test("past MCP_MAX_IN_FLIGHT a tool call is the tool error RATE_LIMITED, and the session answers once calls end", async () => {
    const waiting: (() => void)[] = [];
    const artifactTrust = () => new Promise<never>((resolve) => waiting.push(() => resolve(fail("NETWORK_ERROR", "down") as never)));
    // 8 in all, 2 per client: four clients fill the instance.
    const { connectAs } = await setUpClients({ tools: fakeTools({ artifactTrust }), maxInFlight: 8 });
    const clients = await Promise.all(["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"].map(connectAs));
    const running = clients.slice(0, 4).flatMap((c) => [c.call("check_artifact_trust", { artifactDid: "did:artifact:a" }), c.call("check_artifact_trust", { artifactDid: "did:artifact:b" })]);
    while (waiting.length < 8) await Bun.sleep(1);
    const refused = await clients[4]!.call("check_artifact_trust", { artifactDid: "did:artifact:c" });
    expect([refused.isError, refused.structuredContent]).toEqual([true, { error: "Too many tool calls in progress; try again later", code: "RATE_LIMITED" }]);
    // A tool answered from memory alone holds no slot and is answered while all are taken.
    expect((await clients[4]!.call("get_trust_anchors")).structuredContent).toMatchObject({ version: 1 });
    for (const release of waiting) release();
    for (const answer of await Promise.all(running)) expect(answer.structuredContent).toEqual({ error: "down", code: "NETWORK_ERROR" });
    const later = clients[4]!.call("check_artifact_trust", { artifactDid: "did:artifact:c" });
    while (waiting.length < 9) await Bun.sleep(1);
    waiting[8]!();
    expect((await later).structuredContent).toEqual({ error: "down", code: "NETWORK_ERROR" });
  });

  test("one client holds at most a quarter of MCP_MAX_IN_FLIGHT, from any number of sessions: past it RATE_LIMITED naming its share, while another client's calls run; memory-only tools count against nothing", async () => {
    const waiting: (() => void)[] = [];
    const confirm = () => new Promise<never>((resolve) => waiting.push(() => resolve(fail("NETWORK_ERROR", "down") as never)));
    const artifactTrust = () => new Promise<never>((resolve) => waiting.push(() => resolve(fail("NETWORK_ERROR", "down") as never)));
    const { connectAs } = await setUpClients({ tools: fakeTools({ confirm: confirm as never, artifactTrust }), maxInFlight: 8 });
    // The attacker: two sessions of one address, each asking for more slow lookups than its share.
    const [a1, a2, b] = await Promise.all([connectAs("198.51.100.7"), connectAs("198.51.100.7"), connectAs("203.0.113.9")]);
    const held = [a1!.call("check_domain_controllers", { subjectDid: "did:web:slow.test" }), a2!.call("check_domain_controllers", { subjectDid: "did:web:slow.test" })];
    while (waiting.length < 2) await Bun.sleep(1);
    let over: Answer[] | undefined;
    void Promise.all([a1!.call("check_domain_controllers", { subjectDid: "did:web:slow.test" }), a2!.call("check_artifact_trust", { artifactDid: "did:artifact:x" })]).then((answers) => (over = answers));
    // Answered, or (as before the share) started a lookup that holds a slot.
    while (over === undefined && waiting.length < 3) await Bun.sleep(1);
    expect(waiting).toHaveLength(2);
    for (const answer of over!) {
      expect([answer.isError, answer.structuredContent]).toEqual([true, { error: "Too many tool calls in progress from this client (at most 2 at once); try again later", code: "RATE_LIMITED" }]);
    }
    // Another client's calls run (and hold slots) while the first is at its share.
    const other = b!.call("check_artifact_trust", { artifactDid: "did:artifact:y" });
    while (waiting.length < 3) await Bun.sleep(1);
    // A memory-only tool answers for the client at its share too.
    expect((await a1!.call("get_trust_anchors")).structuredContent).toMatchObject({ version: 1 });
    expect((await a2!.call("resolve_identities", { identifiers: ["did:web:a.test"] })).structuredContent).toMatchObject({ identities: [{ canonical: "did:web:a.test" }] });
    for (const release of waiting) release();
    for (const answer of await Promise.all([...held, other])) expect(answer.structuredContent).toEqual({ error: "down", code: "NETWORK_ERROR" });
    // The share is free again once the calls end.
    const again = a1!.call("check_domain_controllers", { subjectDid: "did:web:slow.test" });
    while (waiting.length < 4) await Bun.sleep(1);
    waiting[3]!();
    expect((await again).structuredContent).toEqual({ error: "down", code: "NETWORK_ERROR" });
  });

  test("a client's share of MCP_MAX_IN_FLIGHT is a quarter, at least one; an IPv6 /48's half, at least one", () => {
    expect([1, 2, 7, 8, 32, 33, 10_000].map(clientInFlightShare)).toEqual([1, 1, 1, 2, 8, 8, 2_500]);
    expect([1, 2, 7, 8, 32].map(networkInFlightShare)).toEqual([1, 1, 3, 4, 16]);
  });

  test("the /64s of one IPv6 /48 together hold at most half of MCP_MAX_IN_FLIGHT; an address elsewhere still runs", async () => {
    // Found by review: the share was per /64, and a /56 holds 256 of them, so four held every slot again.
    const waiting: (() => void)[] = [];
    const confirm = () => new Promise<never>((resolve) => waiting.push(() => resolve(fail("NETWORK_ERROR", "down") as never)));
    const { connectAs } = await setUpClients({ tools: fakeTools({ confirm: confirm as never }), maxInFlight: 8 });
    const [n1, n2, n3, v4] = await Promise.all([connectAs("2001:db8:7:1::5"), connectAs("2001:db8:7:2::5"), connectAs("2001:db8:7:3::5"), connectAs("203.0.113.9")]);
    const slow = (client: typeof n1) => client!.call("check_domain_controllers", { subjectDid: "did:web:slow.test" });
    const held = [slow(n1), slow(n1), slow(n2), slow(n2)];
    while (waiting.length < 4) await Bun.sleep(1);
    const refused = await slow(n3);
    expect([refused.isError, refused.structuredContent]).toEqual([true, { error: "Too many tool calls in progress from this network (at most 4 at once); try again later", code: "RATE_LIMITED" }]);
    expect(waiting).toHaveLength(4);
    const elsewhere = slow(v4);
    while (waiting.length < 5) await Bun.sleep(1);
    for (const release of waiting) release();
    for (const answer of await Promise.all([...held, elsewhere])) expect(answer.structuredContent).toEqual({ error: "down", code: "NETWORK_ERROR" });
  });

  test("a session pushed out while it answers still gives that answer, then is gone", async () => {
    const waiting: (() => void)[] = [];
    const artifactTrust = () => new Promise<never>((resolve) => waiting.push(() => resolve(fail("NETWORK_ERROR", "down") as never)));
    const endpoint = createMcpEndpoint({ tools: fakeTools({ artifactTrust }), sessions: fakeMcpSessions(), maxSessions: 1, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger });
    const app = new Elysia().use(mcpRoutes(endpoint));
    const connect = async () => {
      const client = new Client({ name: "unit", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { fetch: (url, init) => app.handle(new Request(url, init)) }));
      return client;
    };
    const first = await connect();
    const running = first.callTool({ name: "check_artifact_trust", arguments: { artifactDid: "did:artifact:a" } }) as Promise<Answer>;
    while (waiting.length < 1) await Bun.sleep(1);
    await connect();
    expect(await endpoint.sessions()).toBe(1);
    waiting[0]!();
    expect((await running).structuredContent).toEqual({ error: "down", code: "NETWORK_ERROR" });
    await expect(first.listTools()).rejects.toThrow(/Session not found/);
  });

  test("key_status takes from the route's bucket of the client's address; a tool that throws is INTERNAL_ERROR, the session goes on", async () => {
    const keyStatusRate = createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 });
    const { call } = await setUp({ tools: fakeTools({ keyStatusRate, attestationList: () => Promise.reject(new Error("boom at https://rpc.secret")) }) });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await call("key_status", { subjectDid: "did:web:a.test", keyDid: "did:key:z6Mk" })).structuredContent?.code);
    expect(codes).toEqual(["NETWORK_ERROR", "NETWORK_ERROR", "RATE_LIMITED"]);
    const thrown = await call("list_attestations", { subject: "did:web:a.test", schema: "user-review" });
    expect(thrown.structuredContent).toEqual({ error: "Internal error", code: "INTERNAL_ERROR" });
    expect(JSON.stringify(thrown)).not.toContain("rpc.secret");
    expect((await call("resolve_identities", { identifiers: ["did:web:a.test"] })).structuredContent).toMatchObject({ identities: [{ canonical: "did:web:a.test" }] });
  });

  test("the verification tools look endpoints up as their caller: its share of a domain's lookup budget, as the routes'", async () => {
    const clients: unknown[] = [];
    const tools = createTools(fakeTools({
      keyStatusRate: createRateLimiter(fakeClock(), { capacity: 10, perMinute: 10 }),
      keyStatus: (_s, _k, _at, options) => (clients.push(options?.client), Promise.resolve(fail("NETWORK_ERROR", "down"))),
      artifactTrust: (_did, options) => (clients.push(options?.client), Promise.resolve(fail("NETWORK_ERROR", "down"))),
      controllerAuthorization: (_request, options) => (clients.push(options?.client), Promise.resolve(fail("NETWORK_ERROR", "down"))),
    }), { withAccountTools: false });
    const run = (name: string, args: Record<string, unknown>) => tools.find((t) => t.name === name)!.run(args, { clientKey: "203.0.113.7" });
    await run("key_status", { subjectDid: "did:web:a.test", keyDid: "did:key:z6Mk" });
    await run("check_artifact_trust", { artifactDid: "did:artifact:a" });
    await run("controller_authorization", { subjectDid: "did:web:a.test", controllerDid: "did:pkh:eip155:1:0x00000000000000000000000000000000000000b2" });
    expect(clients).toEqual(["203.0.113.7", "203.0.113.7", "203.0.113.7"]);
  });

  test("list_attestations takes the routes' one subject rule (issue 43): whitespace, a control character, a did:web naming no domain is INVALID_DID", async () => {
    const attestationList = createListAttestations({
      reads: fakeAttestationIndex(), store: fakeIndexStore(), schemaUids: {}, startBlock: 0n, cursorKey: new Uint8Array(32),
    });
    const { call } = await setUp({ tools: fakeTools({ attestationList }) });
    for (const subject of ["did:web:not a did", "did:web:exa\tmple.com", "did:web:a..b", "not a did", `did:pkh:eip155:01:0x${"1".repeat(40)}`]) {
      const answer = await call("list_attestations", { subject });
      expect({ subject, isError: answer.isError, code: answer.structuredContent?.code }).toEqual({ subject, isError: true, code: "INVALID_DID" });
    }
    // A bare domain, as the route takes it: the subject as normalized.
    const bare = await call("list_attestations", { subject: "shop.example" });
    expect([bare.isError, bare.structuredContent?.subject]).toEqual([undefined, "did:web:shop.example"]);
  });

  test("check_domain_controllers takes the route's fields: a subject past 2,048 characters is the use case's INVALID_DID, a long walletDid is read", async () => {
    // The tool bounded both at 2,048 and answered INVALID_INPUT, where /v1/controller-confirm answers INVALID_DID (and
    // takes the long wallet).
    const asked: [string, string | undefined][] = [];
    const confirm = ((subject: string, wallet?: string) => (asked.push([subject, wallet]), Promise.resolve(fail("INVALID_DID", "Invalid subjectDid")))) as never;
    const { call } = await setUp({ tools: fakeTools({ confirm }) });
    const long = `did:web:${"a".repeat(2_100)}.com`;
    expect((await call("check_domain_controllers", { subjectDid: long })).structuredContent?.code).toBe("INVALID_DID");
    const wallet = `did:pkh:eip155:1:0x${"1".repeat(2_100)}`;
    await call("check_domain_controllers", { subjectDid: "did:web:ok.example", walletDid: wallet });
    expect(asked).toEqual([[long, undefined], ["did:web:ok.example", wallet]]);
  });

  test("list_attestations shares the list routes' per-address query rate (INDEX_QUERY_RATE_PER_MINUTE, issue 43): past it, RATE_LIMITED and nothing read", async () => {
    const attestationQueryRate = createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 });
    let reads = 0;
    const attestationList = () => {
      reads++;
      return Promise.resolve(ok({ subject: "did:web:a.test", items: [], nextCursor: null }) as never);
    };
    const { call } = await setUp({ tools: fakeTools({ attestationList, attestationQueryRate }) });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await call("list_attestations", { subject: "did:web:a.test" })).structuredContent?.code);
    expect(codes).toEqual([undefined, undefined, "RATE_LIMITED"]);
    expect(reads).toBe(2);
  });

  test("sessions idle past MCP_SESSION_IDLE_SECONDS are swept; their client then gets 404", async () => {
    const clock = fakeClock(0);
    const { endpoint, client } = await setUp({ clock, sessionIdleSeconds: 60 });
    expect(await endpoint.sessions()).toBe(1);
    clock.set(59_000);
    expect(await endpoint.sweep()).toBe(0);
    await client.listTools();
    clock.set(118_000);
    expect(await endpoint.sweep()).toBe(0);
    clock.set(119_000);
    expect(await endpoint.sweep()).toBe(1);
    expect(await endpoint.sessions()).toBe(0);
    await expect(client.listTools()).rejects.toThrow(/404|Session not found/);
  });

  test("new sessions past MCP_SESSION_RATE_PER_MINUTE from one address are 429 with Retry-After; other addresses and open sessions go on", async () => {
    const clock = fakeClock();
    const endpoint = createMcpEndpoint({
      tools: fakeTools(),
      sessions: fakeMcpSessions(),
      maxSessions: 10,
      sessionIdleSeconds: 60,
      maxInFlight: 10,
      clock,
      log: silentLogger,
      sessionRate: createRateLimiter(clock, { capacity: 2, perMinute: 2 }),
      clientAddress: (request) => request.headers.get("x-test-client") ?? undefined,
    });
    const app = new Elysia().use(mcpRoutes(endpoint));
    const initialize = (client: string) => app.handle(new Request(`${BASE}/mcp`, {
      method: "POST",
      headers: { "x-test-client": client, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "b", version: "1" } } }),
    }));
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await initialize("203.0.113.9")).status);
    expect(statuses).toEqual([200, 200, 429]);
    const refused = await initialize("203.0.113.9");
    expect([refused.headers.get("retry-after"), await refused.json()]).toEqual(["30", { error: "Too many new MCP sessions from this address; try again later", code: "RATE_LIMITED" }]);
    // The same client written as an IPv4-mapped IPv6 address is the same client.
    expect((await initialize("::ffff:203.0.113.9")).status).toBe(429);
    expect((await initialize("198.51.100.7")).status).toBe(200);
    expect(await endpoint.sessions()).toBe(3);
    // An IPv6 client is counted by its /64: every address of one subscriber's prefix shares its budget (each had one
    // of its own, so one /64 could fill the table and push every other client's sessions out).
    const prefix = [];
    for (let i = 1; i <= 10; i++) prefix.push((await initialize(`2001:db8:1:2::${i.toString(16)}`)).status);
    expect(prefix).toEqual([200, 200, 429, 429, 429, 429, 429, 429, 429, 429]);
    expect((await initialize("2001:db8:1:3::1")).status).toBe(200);
  });

  test("two endpoints on one store (two instances): a session opened at one is used and closed at the other, its message budget one for both", async () => {
    const clock = fakeClock(0);
    const sessions = fakeMcpSessions();
    const counter = fakeRateCounter();
    const instance = () => {
      const endpoint = createMcpEndpoint({
        tools: fakeTools(),
        sessions,
        sessionMessages: createSharedRateLimiter(counter, clock, { scope: "mcp_session_messages", capacity: 10, perMinute: 10 }),
        maxSessions: 10,
        sessionIdleSeconds: 60,
        maxInFlight: 10,
        clock,
        log: silentLogger,
      });
      return new Elysia().use(mcpRoutes(endpoint));
    };
    const apps = [instance(), instance()];
    // A load balancer without affinity: every request goes to the next instance.
    let turn = 0;
    const served: number[] = [];
    const fetch = (url: string | URL, init?: RequestInit) => {
      served.push(turn % 2);
      return apps[turn++ % 2]!.handle(new Request(url, init));
    };
    const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { fetch });
    const client = new Client({ name: "unit", version: "1" });
    await client.connect(transport);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await client.callTool({ name: "get_trust_anchors", arguments: {} }) as Answer);
    expect(answers.map((a) => [a.isError ?? false, a.structuredContent?.version])).toEqual(Array(4).fill([false, 1]));
    expect(new Set(served)).toEqual(new Set([0, 1]));
    expect(sessions.sessions.size).toBe(1);
    // One budget of ten messages at both: `notifications/initialized` and the four calls took five.
    const sessionId = transport.sessionId!;
    const list = (n: number) => fetch(`${BASE}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/list" }))),
    });
    expect((await list(5)).status).toBe(200);
    expect((await list(1)).status).toBe(429);
    await transport.terminateSession();
    expect(sessions.sessions.size).toBe(0);
    expect((await fetch(`${BASE}/mcp`, { method: "DELETE", headers: { "mcp-session-id": sessionId } })).status).toBe(404);
  });

  test("malformed tools/call or tools/list params are -32602 in the service's words, not -32603 with the validator's issue list", async () => {
    // Found by attacking the tool server: the SDK's own schemas answered "Internal error" and a multi-line dump of zod
    // issues for input a client got wrong.
    const { app, client } = await setUp();
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const send = async (message: Record<string, unknown>) => {
      const res = await app.handle(new Request(`${BASE}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, ...message }),
      }));
      return await res.json() as { error?: { code: number; message: string }; result?: { tools?: unknown[] } };
    };
    const cases: [Record<string, unknown>, string][] = [
      [{ method: "tools/call" }, "tools/call takes params {name: string, arguments?: object}"],
      [{ method: "tools/call", params: { name: 5 } }, "tools/call takes params {name: string, arguments?: object}"],
      [{ method: "tools/call", params: { name: "get_trust_anchors", arguments: "x" } }, "arguments must be an object"],
      [{ method: "tools/call", params: { name: "get_trust_anchors", arguments: null } }, "arguments must be an object"],
      [{ method: "tools/call", params: { name: "get_trust_anchors", arguments: [] } }, "arguments must be an object"],
      [{ method: "tools/list", params: { cursor: 5 } }, "tools/list takes params {cursor?: string}"],
    ];
    for (const [message, words] of cases) expect({ message, error: (await send(message)).error }).toEqual({ message, error: { code: -32602, message: `Invalid params: ${words}` } });
    expect((await send({ method: "tools/list" })).result?.tools?.length).toBeGreaterThan(0);
    // In a batch, the malformed request gets its error and the others their answers.
    const batch = await app.handle(new Request(`${BASE}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/list" }, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_trust_anchors", arguments: 3 } }]),
    }));
    const answers = await batch.json() as { id: number; result?: unknown; error?: { code: number } }[];
    expect(answers.map((a) => [a.id, a.error?.code ?? "result"]).sort()).toEqual([[1, "result"], [2, -32602]]);
    expect((await send({ method: "tools/call", params: { name: "get_trust_anchors" } })).result).toMatchObject({ structuredContent: { version: 1 } });
  });

  test("without OAuth (no bearer) the account tools are not offered", async () => {
    const { client } = await setUp();
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain("request_controller_witness");
  });

  test("an account tool: 401 without a token, 401 invalid_token with a bad one, 403 without the scope, the account with a good one", async () => {
    const withBearer = { bearer: { authenticate: bearer, resource: BASE } };
    const { app } = await setUp(withBearer);
    const post = (authorization?: string) => app.handle(new Request(`${BASE}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "request_controller_witness", arguments: {} } }),
    }));
    const none = await post();
    expect([none.status, none.headers.get("www-authenticate"), await none.json()]).toEqual([
      401,
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", scope="witness:write account:read"`,
      { error: "This tool needs an OAuth access token for this endpoint", code: "UNAUTHENTICATED" },
    ]);
    const bad = await post("Bearer nope");
    expect([bad.status, bad.headers.get("www-authenticate")]).toEqual([401, `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", error="invalid_token", scope="witness:write account:read"`]);
    // A token sent where none is needed is still checked (MCP authorization: invalid or expired is 401), initialize too.
    const initialize = (authorization: string) => app.handle(new Request(`${BASE}/mcp`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "b", version: "1" } } }),
    }));
    const expired = await initialize("Bearer nope");
    expect([expired.status, expired.headers.get("www-authenticate")]).toEqual([401, `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", error="invalid_token", scope="witness:write account:read"`]);
    expect((await initialize("Bearer read")).status).toBe(200);
    const narrow = await post("Bearer read");
    expect([narrow.status, (await narrow.json() as { code: string }).code]).toEqual([403, "insufficient_scope"]);
    expect(narrow.headers.get("www-authenticate")).toContain('error="insufficient_scope"');

    // With a token: the session's tools act for the token's account; the read tools never needed one.
    const reader = await setUp(withBearer, "read");
    expect((await reader.client.listTools()).tools).toHaveLength(8);
    expect((await reader.call("get_account_usage")).structuredContent).toEqual({ subscription: SUBSCRIPTION });
    await expect(reader.call("request_controller_witness", { subjectDid: "did:web:a.test" })).rejects.toThrow(/insufficient_scope/);
    expect((await reader.call("get_trust_anchors")).isError).toBeUndefined();
    // The tool checks its input as the route checks its body: the route's INVALID_INPUT, worded the same way.
    const writer = await setUp(withBearer, "all");
    const witness = await writer.call("request_controller_witness", { subjectDid: "did:web:a.test" });
    expect(witness.structuredContent).toMatchObject({ code: "INVALID_INPUT", error: "controllerDid is required" });
  });
});

describe("request_controller_witness with an idempotency key (decisions §23)", () => {
  test("a retry with the same key and arguments gets the first answer and writes once; other arguments under the key are IDEMPOTENCY_KEY_REUSED", async () => {
    let writes = 0;
    const witness = () => {
      writes++;
      return Promise.resolve({ result: ok({ success: true, uid: `0x${"ab".repeat(32)}`, txHash: `0x${"cd".repeat(32)}`, blockNumber: 7, observedAt: 1, method: "dns-txt" }), deprecated: false, deprecation: undefined }) as never;
    };
    const tools = fakeTools({ witness, idempotency: createIdempotency({ store: fakeIdempotencyStore(), clock: fakeClock() }) });
    const writer = await setUp({ tools, bearer: { authenticate: bearer, resource: BASE } }, "all");
    const args = { subjectDid: "did:web:a.test", controllerDid: "did:pkh:eip155:1:0x00000000000000000000000000000000000000a1", idempotencyKey: "w-1" };
    const first = await writer.call("request_controller_witness", args);
    expect(first.structuredContent).toMatchObject({ success: true });
    const retry = await writer.call("request_controller_witness", args);
    expect(retry.structuredContent).toEqual(first.structuredContent);
    expect(writes).toBe(1);
    // The same arguments listed in another order are the same call (a JSON object's members have no order).
    const reordered = await writer.call("request_controller_witness", { idempotencyKey: "w-1", controllerDid: args.controllerDid, subjectDid: args.subjectDid });
    expect(reordered.structuredContent).toEqual(first.structuredContent);
    expect(writes).toBe(1);
    const other = await writer.call("request_controller_witness", { ...args, subjectDid: "did:web:b.test" });
    expect([other.isError, other.structuredContent?.code]).toEqual([true, "IDEMPOTENCY_KEY_REUSED"]);
    const bad = await writer.call("request_controller_witness", { ...args, idempotencyKey: "" });
    expect(bad.structuredContent?.code).toBe("INVALID_INPUT");
    expect(writes).toBe(1);
  });
});

/**
 * The witness tool over a fake write ledger, its witness noting write `<prefix><run>`, signing and sending it, then
 * answering as `afterSent` has it; by default its answer is lost (OUTCOME_UNKNOWN): the write stays open for the
 * reconciler.
 */
function witnessOverLedger(options: { n: number; prefix: string; host: string; key: string; afterSent?: () => Promise<unknown> }) {
  const clock = fakeClock();
  const ledger = fakeWriteLedger();
  const account = { id: `acc-${options.n}`, address: `0x00000000000000000000000000000000000000a${options.n}`, plan: "free", createdAtMs: 0 } as unknown as Account;
  const state = { runs: 0 };
  const lost = () => Promise.resolve({ result: fail("OUTCOME_UNKNOWN", "The witness transaction was sent but its outcome is not known yet; it will be settled", "0xab") });
  const afterSent = options.afterSent ?? lost;
  const witness = (async (_body: unknown, _session: unknown, noting: { onReserved?: (noted: string) => Promise<void> } = {}) => {
    const id = `${options.prefix}${++state.runs}`;
    await ledger.reserve({ id, accountId: account.id, year: 2027, fingerprint: "f", createdAtMs: clock.nowMs() }, 10);
    await noting.onReserved?.(`witness-write:${id}`);
    await ledger.markSigned(id, fakeSignedTx("0x00000000000000000000000000000000000000f1", state.runs, "e"), clock.nowMs());
    await ledger.markSent(id, clock.nowMs());
    return await afterSent();
  }) as never;
  const tools = createTools(fakeTools({
    witness,
    witnessResume: createWitnessResume({ ledger, nowMs: () => clock.nowMs() }),
    idempotency: createIdempotency({ store: fakeIdempotencyStore(), clock }),
  }), { withAccountTools: true });
  const tool = tools.find((t) => t.name === "request_controller_witness")!;
  const args = { subjectDid: `did:web:${options.host}`, controllerDid: "did:pkh:eip155:1:0x00000000000000000000000000000000000000b2", idempotencyKey: options.key };
  return { clock, ledger, state, call: () => tool.run(args, { clientKey: "c", account }) };
}

describe("request_controller_witness taken over after a crash (decisions §23)", () => {
  test("a retry past the lease of a call that died after sending answers from the write it noted, and never writes again", async () => {
    let died: () => void = () => {};
    // Signed and sent, then the instance dies: the transaction may land.
    const { clock, state, call } = witnessOverLedger({
      n: 1,
      prefix: "w",
      host: "crash.test",
      key: "crash-1",
      afterSent: async () => {
        died();
        return await new Promise(() => {});
      },
    });
    const dead = new Promise<void>((resolve) => (died = resolve));
    void call();
    await dead;
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    // Before: run again, a second transaction and a second sponsored write.
    expect(await call()).toMatchObject({ ok: false, code: "OUTCOME_UNKNOWN" });
    // Not kept: the key stays the write's, and a later retry asks about it again (still not run).
    expect(await call()).toMatchObject({ ok: false, code: "IDEMPOTENCY_KEY_IN_USE" });
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    expect(await call()).toMatchObject({ ok: false, code: "OUTCOME_UNKNOWN" });
    expect(state.runs).toBe(1);
  });
});

describe("hostile requests (issue 33)", () => {
  const INITIALIZE = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "b", version: "1" } } };
  const list = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list" });
  /** An app with the endpoint, and a POST of `body` (JSON unless a string or a stream) for a session. */
  const withEndpoint = (deps: Partial<McpEndpointDeps> = {}) => {
    const endpoint = createMcpEndpoint({ tools: fakeTools(), sessions: fakeMcpSessions(), maxSessions: 10, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger, ...deps });
    const app = new Elysia().use(mcpRoutes(endpoint));
    const post = (body: unknown, session?: string) => app.handle(new Request(`${BASE}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(session === undefined ? {} : { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" }),
      },
      body: typeof body === "string" || body instanceof ReadableStream ? body : JSON.stringify(body),
      duplex: "half",
    } as RequestInit));
    const open = async () => {
      const response = await post(INITIALIZE);
      expect(response.status).toBe(200);
      return response.headers.get("mcp-session-id")!;
    };
    return { endpoint, post, open };
  };

  test("a POST of a session that is not here is 404 before a byte of its body is read; a live session's hostile body is refused unparsed", async () => {
    const { post, open } = withEndpoint();
    // The attack: 8 MB of `[` then `]` for a session that does not exist. The body is a stream counting what is read.
    let pulls = 0;
    const stream = () => new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new TextEncoder().encode("[".repeat(1 << 16)));
      },
    }, { highWaterMark: 0 });
    const unknown = await post(stream(), "no-such-session");
    expect([unknown.status, await unknown.json(), pulls]).toEqual([404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }, 0]);
    const session = await open();
    const parse = spyOn(JSON, "parse");
    try {
      const nested = `${"[".repeat(4_000_000)}${"]".repeat(4_000_000)}`;
      const wide = JSON.stringify(Array(100_000).fill(list(1)));
      for (const [body, reason] of [[nested, "Body nested deeper than 32 levels"], [wide, "Body holds more than 20000 values"]] as const) {
        for (const id of [session, undefined]) {
          const refused = await post(body, id);
          expect([refused.status, await refused.json()]).toEqual([400, { jsonrpc: "2.0", error: { code: -32600, message: `Invalid Request: ${reason}` }, id: null }]);
        }
      }
      expect(parse.mock.calls.filter(([text]) => text === nested || text === wide)).toHaveLength(0);
    } finally {
      parse.mockRestore();
    }
    // The session is untouched.
    expect((await post(list(2), session)).status).toBe(200);
  });

  test("a batch holds at most MCP_MAX_BATCH messages; a session sends at most MCP_SESSION_MESSAGES_PER_MINUTE, every method counted", async () => {
    const clock = fakeClock(0);
    const sessionMessages = createSharedRateLimiter(fakeRateCounter(), clock, { scope: "mcp_session_messages", capacity: 12, perMinute: 12 });
    const { post, open } = withEndpoint({ clock, sessionMessages });
    const first = await open();
    const batch = (n: number) => Array.from({ length: n }, (_, i) => list(i + 1));
    const tooMany = await post(batch(MCP_MAX_BATCH + 1), first);
    expect([tooMany.status, await tooMany.json()]).toEqual([400, { jsonrpc: "2.0", error: { code: -32600, message: `Invalid Request: a batch holds at most ${MCP_MAX_BATCH} messages` }, id: null }]);
    const full = await post(batch(MCP_MAX_BATCH), first);
    expect([full.status, (await full.json() as unknown[]).length]).toEqual([200, MCP_MAX_BATCH]);
    // 2 of the 12 left: a batch of 3 is refused whole, with the time one more message takes to come back (5 s).
    const limited = await post(batch(3), first);
    expect([limited.status, limited.headers.get("retry-after"), await limited.json()]).toEqual([
      429,
      "5",
      { error: "Too many MCP messages in this session; try again later", code: "RATE_LIMITED" },
    ]);
    // Another session has its own budget; this one's comes back with time.
    const second = await open();
    expect((await post(batch(MCP_MAX_BATCH), second)).status).toBe(200);
    expect((await post(list(1), first)).status).toBe(200);
    expect((await post(list(1), first)).status).toBe(200);
    expect((await post(list(1), first)).status).toBe(429);
    clock.set(5_000);
    expect((await post(list(1), first)).status).toBe(200);
    expect((await post(list(1), first)).status).toBe(429);
  });
});

describe("/mcp in the app", () => {
  test("a browser client's preflight is allowed the MCP headers from any origin, without credentials; GET is 405", async () => {
    const app = createApp({
      ...minimalAppDeps(),
      mcp: createMcpEndpoint({ tools: fakeTools(), sessions: fakeMcpSessions(), maxSessions: 10, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger }),
    });
    const preflight = await app.handle(new Request(`${BASE}/mcp`, {
      method: "OPTIONS",
      headers: { origin: "https://agent.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type, authorization, mcp-session-id, mcp-protocol-version" },
    }));
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    expect(preflight.headers.get("access-control-allow-headers")).toContain("Mcp-Session-Id");
    const initialized = await app.handle(new Request(`${BASE}/mcp`, {
      method: "POST",
      headers: { origin: "https://agent.example", "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "b", version: "1" } } }),
    }));
    expect(initialized.status).toBe(200);
    expect(initialized.headers.get("mcp-session-id")).toBeString();
    expect(initialized.headers.get("access-control-expose-headers")).toContain("Mcp-Session-Id");
    const get = await app.handle(new Request(`${BASE}/mcp`, { headers: { accept: "text/event-stream" } }));
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST, DELETE, OPTIONS"]);
  });
});

describe("request_controller_witness answered OUTCOME_UNKNOWN under its idempotencyKey (decisions §23)", () => {
  test("a retry answers from the write the call noted: kept as it was while on its way, a kept failure once the write was given back", async () => {
    const { clock, ledger, state, call } = witnessOverLedger({ n: 2, prefix: "u", host: "unknown.test", key: "unknown-1" });
    const first = await call();
    expect(first).toMatchObject({ ok: false, code: "OUTCOME_UNKNOWN" });
    // Still on its way: the kept answer again, and again (never IDEMPOTENCY_KEY_IN_USE), nothing run.
    expect(await call()).toEqual(first);
    expect(await call()).toEqual(first);
    expect(state.runs).toBe(1);
    // The reconciler gave the write back (reverted: nothing of it can land): the retry answers the failure, kept, and
    // never runs the witness again under the key. Before, it ran again: a second write under one key.
    await ledger.release("u1", clock.nowMs(), "reverted");
    const failed = await call();
    expect(failed).toEqual({ ok: false, code: "SUBMISSION_FAILED", message: "The witness transaction failed; nothing of it was written; send it again under a new key", details: ledger.writes.get("u1")!.txHash! });
    expect(await call()).toEqual(failed);
    expect(state.runs).toBe(1);
  });
});

describe("request_controller_witness answered OUTCOME_UNKNOWN, its write then given back for its silence alone (found in review)", () => {
  test("a retry keeps the unknown outcome, never 'nothing of it was written', and never runs the witness again", async () => {
    const { clock, ledger, state, call } = witnessOverLedger({ n: 3, prefix: "s", host: "silent.test", key: "silent-1" });
    const first = await call();
    expect(first).toMatchObject({ ok: false, code: "OUTCOME_UNKNOWN" });
    // No word of its resends for 10 minutes: given back, which proves nothing (it may still land).
    await ledger.release("s1", clock.nowMs(), "silence");
    expect(await call()).toEqual(first);
    expect(state.runs).toBe(1);
    expect(await call()).toEqual(first);
    expect(state.runs).toBe(1);
  });
});
