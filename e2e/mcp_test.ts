/**
 * The MCP endpoint (issue 27, decisions §20) on the devnet with real DNS, driven by the official SDK's client over
 * HTTP (`Client` + `StreamableHTTPClientTransport`, and its OAuth client provider for the account tools): every read
 * tool answers what its HTTP route answers; bad input is a tool error with the route's code and the session goes on;
 * the witness is written through the authorised tool after the MCP authorization flow (401 naming the metadata,
 * discovery, registration, authorization code with PKCE for resource {base}/mcp) and is seen on the chain; many
 * sessions opened and abandoned leave no more than MCP_MAX_SESSIONS behind.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { createPublicClient, type Hex, http, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { easWriter } from "./support/eas_writer.ts";
import { signInCookie } from "./support/sign_in.ts";
import { freePort, type Stack, startStack } from "./harness.ts";

const APP = "https://app.test";
const REDIRECT = "http://127.0.0.1:9/callback";
const SUBJECT = "did:web:mcp.test";
const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("ats e2e mcp artifact")));
const MAX_SESSIONS = 20;
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;

let dns: DnsServer;
let stack: Stack;
let base: string;
let alice: Hex;
/** The public client of the read tools, kept open across the tests until the last one. */
let reader: Client;

/** A client of the official SDK connected to {base}/mcp. */
async function connect(authProvider?: OAuthClientProvider): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: "ats-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), authProvider === undefined ? {} : { authProvider });
  await client.connect(transport);
  return { client, transport };
}

async function route(method: "GET" | "POST", path: string, options: { body?: unknown; cookie?: string } = {}) {
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.cookie !== undefined) Object.assign(headers, { cookie: options.cookie, origin: APP });
  const res = await fetch(`${base}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text?: string }[] };
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
  await client.callTool({ name, arguments: args }) as ToolAnswer;

/** Asks a read tool and its route the same question: the tool's structured content is the route's JSON. */
async function sameAsRoute(name: string, args: Record<string, unknown>, method: "GET" | "POST", path: string, body?: unknown) {
  const answer = await call(reader, name, args);
  const http = await route(method, path, { body });
  expect({ name, isError: answer.isError ?? false, status: http.status }).toEqual({ name, isError: false, status: 200 });
  expect(settled(answer.structuredContent)).toEqual(settled(http.body));
  // The summary: one paragraph of text first, then the same JSON as text.
  expect(answer.content[0]!.text!.length).toBeGreaterThan(40);
  expect(answer.content[0]!.text).not.toContain("\n");
  expect(settled(JSON.parse(answer.content[1]!.text!))).toEqual(settled(http.body));
  return answer.structuredContent!;
}

/**
 * An answer without the one field that is the clock's, not the chain's: key status's `endpointEvidence.checkedAt`
 * (now, in seconds) may tick between the tool's call and the route's.
 */
function settled(answer: unknown): unknown {
  const evidence = (answer as { endpointEvidence?: { checkedAt?: unknown } } | undefined)?.endpointEvidence;
  if (evidence === undefined || typeof evidence.checkedAt !== "number") return answer;
  const { checkedAt: _, ...rest } = evidence;
  return { ...(answer as object), endpointEvidence: rest };
}

/** The number a `/metrics` sample shows (0 when absent). */
async function metric(name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `) || (labels === "" && l.startsWith(`${name} `)));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

beforeAll(async () => {
  dns = await startDnsServer();
  const port = freePort();
  base = `http://127.0.0.1:${port}`;
  stack = await startStack({
    env: {
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      WITNESS_USER_RATE_PER_MINUTE: "100",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "100",
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "1000",
      MCP_MAX_SESSIONS: String(MAX_SESSIONS),
      // Every session of this test comes from 127.0.0.1; the rate itself has its unit test.
      MCP_SESSION_RATE_PER_MINUTE: "100000",
    },
  });
  alice = stack.devnet.keys.users[0] as Hex;
  dns.setTxt("_controllers.mcp.test", [[`v=1;controller=${pkh(alice)}`]]);
  reader = (await connect()).client;
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const witnessTxs = () => chain().getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.witness).address });

describe("MCP with the official SDK's client", () => {
  test("tools/list: the eight tools of decisions §20 and controller_authorization (§25), each described with a JSON input schema", async () => {
    const { tools } = await reader.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      "check_artifact_trust",
      "check_domain_controllers",
      "resolve_identities",
      "get_trust_anchors",
      "list_attestations",
      "key_status",
      "controller_authorization",
      "request_controller_witness",
      "get_account_usage",
    ]);
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(80);
      expect(tool.inputSchema.type).toBe("object");
      // The route's response model or its error body: the SDK's client checks every structured answer against it.
      expect(tool.outputSchema).toMatchObject({ type: "object", anyOf: [expect.any(Object), { required: ["error", "code"] }] });
      expect(tool.annotations?.readOnlyHint).toBe(tool.name !== "request_controller_witness");
    }
    expect(tools.find((t) => t.name === "key_status")!.inputSchema).toMatchObject({
      required: ["subjectDid", "keyDid"],
      properties: { at: { type: "integer" } },
    });
    expect(reader.getServerVersion()).toMatchObject({ name: "ats" });
  });

  test("every read tool answers its HTTP route's JSON", async () => {
    await sameAsRoute("get_trust_anchors", {}, "GET", "/v1/trust-anchors");
    const identifiers = [SUBJECT, pkh(alice), "example.com", "0x00000000000000000000000000000000000000aa"];
    const resolved = await sameAsRoute("resolve_identities", { identifiers }, "POST", "/v1/identity-resolve", { identifiers });
    expect(resolved.identities).toHaveLength(4);
    const q = new URLSearchParams({ subjectDid: SUBJECT, walletDid: pkh(alice) });
    const controllers = await sameAsRoute("check_domain_controllers", { subjectDid: SUBJECT, walletDid: pkh(alice) }, "GET", `/v1/controller-confirm?${q}`);
    expect(controllers.controllerKeys.map((k: { canonicalId: string }) => k.canonicalId)).toEqual([pkh(alice)]);
    const artifact = await sameAsRoute("check_artifact_trust", { artifactDid: ARTIFACT }, "GET", `/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    expect(artifact.summary).toMatchObject({ totalVerified: 0 });
    const list = await sameAsRoute("list_attestations", { subject: SUBJECT, schema: "controller-witness", limit: 10 }, "GET", `/v1/attestations?subject=${SUBJECT}&schema=controller-witness&limit=10`);
    expect(list.items).toEqual([]);
    const at = Number((await chain().getBlock()).timestamp);
    const key = await sameAsRoute("key_status", { subjectDid: SUBJECT, keyDid: pkh(alice), at }, "GET", `/v1/key-status?subjectDid=${SUBJECT}&keyDid=${pkh(alice)}&at=${at}`);
    expect(key).toMatchObject({ status: "registered", trustLevel: "basic" });
    // The same `at` for both, as for key status: without one each answer is as of its own second, and the two asked
    // across a second's boundary differed only there (a full-suite run was red on it).
    const authorization = await sameAsRoute(
      "controller_authorization",
      { subjectDid: SUBJECT, controllerDid: pkh(alice), purpose: ["authentication"], at },
      "GET",
      `/v1/controller-authorization?subjectDid=${SUBJECT}&controllerDid=${pkh(alice)}&purpose=authentication&at=${at}`,
    );
    expect(authorization).toMatchObject({ authorized: true, liveMethod: "dns", requestedPurpose: ["authentication"] });
  });

  test("bad input: a tool error carrying the route's code, and the session goes on", async () => {
    const cases: [string, Record<string, unknown>, string, string][] = [
      ["check_artifact_trust", { artifactDid: "did:artifact:nope" }, "INVALID_DID", `/v1/artifact-trust?artifactDid=did:artifact:nope`],
      ["check_artifact_trust", {}, "INVALID_DID", "/v1/artifact-trust"],
      ["check_domain_controllers", { subjectDid: "did:nope" }, "INVALID_DID", "/v1/controller-confirm?subjectDid=did:nope"],
      ["key_status", { subjectDid: SUBJECT, keyDid: "not-a-did" }, "INVALID_DID", `/v1/key-status?subjectDid=${SUBJECT}&keyDid=not-a-did`],
      ["controller_authorization", { subjectDid: `${SUBJECT}#key-1`, controllerDid: pkh(alice) }, "INVALID_DID", `/v1/controller-authorization?subjectDid=${encodeURIComponent(`${SUBJECT}#key-1`)}&controllerDid=${pkh(alice)}`],
      ["list_attestations", { subject: SUBJECT, schema: "no-such-schema" }, "INVALID_INPUT", `/v1/attestations?subject=${SUBJECT}&schema=no-such-schema`],
      ["list_attestations", { subject: "did:nope", schema: "user-review" }, "INVALID_DID", "/v1/attestations?subject=did:nope&schema=user-review"],
    ];
    for (const [name, args, code, path] of cases) {
      const answer = await call(reader, name, args);
      const http = await route("GET", path);
      expect({ name, args, isError: answer.isError, code: answer.structuredContent?.code, route: http.body.code }).toEqual({ name, args, isError: true, code, route: code });
      expect(answer.content[0]!.text).toStartWith(`${code}: `);
    }
    // Input the schema refuses (the client does not check it; the server does): the route's INVALID_INPUT.
    for (const args of [{ subject: SUBJECT, schema: "user-review", limit: 0 }, {}, { attester: "0x12" }, { subject: SUBJECT, schema: "user-review", extra: 1 }]) {
      expect((await call(reader, "list_attestations", args)).structuredContent).toMatchObject({ code: "INVALID_INPUT" });
    }
    expect((await call(reader, "resolve_identities", { identifiers: Array.from({ length: 101 }, () => "x") })).structuredContent).toMatchObject({ code: "INVALID_INPUT" });
    // An unknown tool is a protocol error (JSON-RPC invalid params), not a crash.
    await expect(reader.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
    // The same session still answers.
    expect((await call(reader, "get_trust_anchors")).isError).toBeUndefined();
  });

  test("the account tools: 401 with the metadata, then discovery, registration, code with PKCE; the witness seen on chain", async () => {
    // The challenge a bare call meets, before any client library: the metadata of the resource {base}/mcp.
    const init = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_account_usage", arguments: {} } }),
    });
    expect(init.status).toBe(401);
    expect(init.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="witness:write account:read"`);
    expect(await init.json()).toMatchObject({ code: "UNAUTHENTICATED" });

    const provider = new PersonAtTheConsentPage(await signInCookie(base, alice, { origin: APP }));
    const { client, transport } = await connect(provider);
    // The public tools need nothing.
    expect((await call(client, "get_trust_anchors")).isError).toBeUndefined();
    // The first call of an account tool starts the flow: the SDK discovers, registers and sends the person to consent.
    const body = { subjectDid: SUBJECT, controllerDid: pkh(alice) };
    await expect(client.callTool({ name: "request_controller_witness", arguments: body })).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.registered?.client_id).toBeString();
    const asked = provider.asked!;
    expect(Object.fromEntries(asked.searchParams)).toMatchObject({
      resource: `${base}/mcp`,
      scope: "witness:write account:read",
      code_challenge_method: "S256",
      response_type: "code",
      client_id: provider.registered!.client_id,
    });
    await transport.finishAuth(await provider.consent());
    expect(provider.saved?.scope).toBe("witness:write account:read");

    const before = await witnessTxs();
    const written = await call(client, "request_controller_witness", body);
    expect(written.isError).toBeUndefined();
    expect(written.structuredContent).toMatchObject({ success: true, method: "dns-txt" });
    expect(written.content[0]!.text).toContain(written.structuredContent!.uid);
    const attestation = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [written.structuredContent!.uid as Hex] });
    expect(attestation.attester).toBe(privateKeyToAccount(stack.devnet.keys.witness).address);
    expect(attestation.schema).toBe(stack.devnet.schemaUids["controller-witness"] as Hex);
    expect(await witnessTxs()).toBe(before + 1);

    // The account's usage through the tool is the route's answer to the person's session.
    const usage = await call(client, "get_account_usage");
    const cookie = await signInCookie(base, alice, { origin: APP });
    const http = await route("GET", "/api/private/subscriptions/current", { cookie });
    expect(usage.structuredContent).toEqual(http.body);
    expect(usage.structuredContent!.subscription).toMatchObject({ sponsoredWritesUsedCurrentYear: 1 });

    // A witness refused by the use case (the domain does not name this controller) is a tool error; nothing written.
    const refused = await call(client, "request_controller_witness", { subjectDid: SUBJECT, controllerDid: pkh(stack.devnet.keys.users[1] as Hex) });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent!.code).toBeString();
    expect(await witnessTxs()).toBe(before + 1);

    // The read tools see what was written: the witness in the list, the key now intermediate, a claim it backs.
    const witnesses = await sameAsRoute("list_attestations", { subject: SUBJECT, schema: "controller-witness" }, "GET", `/v1/attestations?subject=${SUBJECT}&schema=controller-witness`);
    // The other filters of decisions §24, as the route takes them (issue 37).
    const attester = witnesses.items[0].attestation.attester as string;
    const byAttester = await sameAsRoute("list_attestations", { attester, schema: "controller-witness", revoked: false, order: "oldest", since: 0 }, "GET",
      `/v1/attestations?attester=${attester}&schema=controller-witness&revoked=false&order=oldest&since=0`);
    expect(byAttester.items.map((i: { attestation: { uid: string } }) => i.attestation.uid)).toContain(written.structuredContent!.uid);
    const at = Number((await chain().getBlock()).timestamp);
    const key = await sameAsRoute("key_status", { subjectDid: SUBJECT, keyDid: pkh(alice), at }, "GET", `/v1/key-status?subjectDid=${SUBJECT}&keyDid=${pkh(alice)}&at=${at}`);
    expect(key).toMatchObject({ trustLevel: "intermediate", controllerWitness: { uid: written.structuredContent!.uid } });
    const writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.service.easAddress });
    const claim = encodeSchemaData(findSchemaByName("responsibility-claim")!.schema, {
      responsibleParty: SUBJECT, subject: ARTIFACT, subjectLabel: "mcp-plugin", responsibilityType: ["creator"], proofs: [], issuedAt: BigInt(at), effectiveAt: 0n, expiresAt: 0n,
    }) as { value: Hex };
    await writer.attest(alice, stack.devnet.schemaUids["responsibility-claim"] as Hex, {
      recipient: (didToAddress(ARTIFACT) as { value: Hex }).value,
      data: claim.value,
      revocable: findSchemaByName("responsibility-claim")!.revocable,
    });
    // Written straight to the chain, not through the service: its follower polls before the read.
    await stack.sync();
    const trust = await sameAsRoute("check_artifact_trust", { artifactDid: ARTIFACT }, "GET", `/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    expect(trust.responsibilityClaims).toHaveLength(1);
    await client.close();
  });

  test("an API client's own token (client_credentials, resource {base}/mcp) works; a token for the service itself is 401 at /mcp, initialize included", async () => {
    const cookie = await signInCookie(base, alice, { origin: APP });
    const created = await fetch(`${base}/api/private/oauth/clients`, {
      method: "POST",
      headers: { cookie, origin: APP, "content-type": "application/json" },
      body: JSON.stringify({ client_name: "MCP bot", scope: "account:read", grant_types: ["client_credentials"] }),
    });
    expect(created.status).toBe(201);
    const { client_id, client_secret } = await created.json() as { client_id: string; client_secret: string };
    const token = async (resource?: string) => {
      const form = new URLSearchParams({ grant_type: "client_credentials", scope: "account:read", ...(resource === undefined ? {} : { resource }) });
      const res = await fetch(`${base}/oauth/token`, { method: "POST", headers: { authorization: `Basic ${btoa(`${client_id}:${client_secret}`)}` }, body: form });
      expect(res.status).toBe(200);
      return (await res.json() as { access_token: string }).access_token;
    };
    const withToken = async (accessToken: string) => {
      const client = new Client({ name: "ats-e2e-bot", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${accessToken}` } } }));
      return client;
    };
    const forMcp = await withToken(await token(`${base}/mcp`));
    expect((await call(forMcp, "get_account_usage")).structuredContent!.subscription).toMatchObject({ sponsoredWritesUsedCurrentYear: 1 });
    // Its scope is account:read only: the witness tool is 403 insufficient_scope, and nothing is written.
    const before = await witnessTxs();
    await expect(forMcp.callTool({ name: "request_controller_witness", arguments: { subjectDid: SUBJECT, controllerDid: pkh(alice) } })).rejects.toThrow(/insufficient_scope/);
    expect(await witnessTxs()).toBe(before);
    // A token whose audience is the service, not {base}/mcp, is invalid here: 401 invalid_token from initialize on.
    await expect(withToken(await token())).rejects.toThrow(/"code":"UNAUTHENTICATED"/);
    const bare = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${await token()}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_account_usage", arguments: {} } }),
    });
    expect([bare.status, bare.headers.get("www-authenticate")]).toEqual([401, `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", error="invalid_token", scope="witness:write account:read"`]);
    await forMcp.close();
  });

  test("many sessions opened and abandoned: never more than MCP_MAX_SESSIONS kept, the least recently used go first", async () => {
    const closedBefore = await metric("ats_mcp_sessions_closed_total", '{reason="full"}');
    const opened: string[] = [];
    for (let i = 0; i < 3 * MAX_SESSIONS; i++) {
      const { transport } = await connect();
      opened.push(transport.sessionId!);
      // Abandoned: never closed, never used again.
      expect(await metric("ats_mcp_sessions")).toBeLessThanOrEqual(MAX_SESSIONS);
    }
    expect(new Set(opened).size).toBe(3 * MAX_SESSIONS);
    expect(await metric("ats_mcp_sessions")).toBe(MAX_SESSIONS);
    expect(await metric("ats_mcp_sessions_closed_total", '{reason="full"}')).toBeGreaterThanOrEqual(closedBefore + 2 * MAX_SESSIONS);
    // The oldest abandoned session is gone (404, as the transport's specification says: start a new one); the newest answers.
    const ask = (sessionId: string) => fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }),
    });
    expect((await ask(opened[0]!)).status).toBe(404);
    const newest = await ask(opened.at(-1)!);
    expect(newest.status).toBe(200);
    expect(((await newest.json()) as { result: { tools: unknown[] } }).result.tools).toHaveLength(9);
    // The reader of the first tests was pushed out too: its next call fails, and a new session works.
    await expect(reader.listTools()).rejects.toThrow();
    const again = (await connect()).client;
    expect((await call(again, "get_trust_anchors")).isError).toBeUndefined();
    expect(await metric("ats_mcp_sessions")).toBe(MAX_SESSIONS);

    // Memory, in this process (the service runs in it): 500 more sessions opened and abandoned leave the heap where it
    // was. A session is a record in the storage (issue 34), and the bound keeps those to MAX_SESSIONS as well.
    const initialize = async () => await (await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "abandoned", version: "1" } } }),
    })).text();
    for (let i = 0; i < 50; i++) await initialize();
    Bun.gc(true);
    const heapBefore = process.memoryUsage().heapUsed;
    for (let i = 0; i < 500; i++) await initialize();
    Bun.gc(true);
    const grown = process.memoryUsage().heapUsed - heapBefore;
    expect(await metric("ats_mcp_sessions")).toBe(MAX_SESSIONS);
    expect(grown).toBeLessThan(4 * 1024 * 1024);
  });
});

/**
 * The OAuth client provider of the SDK's client, with the person in it: `redirectToAuthorization` notes the URL the
 * SDK built, and `consent` is the person, signed in with their wallet, opening it and approving on the service's page.
 */
class PersonAtTheConsentPage implements OAuthClientProvider {
  registered: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  asked: URL | undefined;
  private verifier = "";
  constructor(private readonly cookie: string) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "MCP e2e agent", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.registered;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.registered = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.asked = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  /** The person opens the authorization URL, reads the consent form and approves; the code the redirect carries. */
  async consent(): Promise<string> {
    const page = await fetch(this.asked!, { headers: { cookie: this.cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    const form = /<form[^>]*id="consent-form"[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
    if (form === null) throw new Error("no consent form on the page");
    const decode = (text: string) => text.replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
    const fields: Record<string, string> = {};
    for (const input of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[decode(input[1]!)] = decode(input[2]!);
    const posted = await fetch(new URL(decode(form[1]!), base), {
      method: "POST",
      redirect: "manual",
      headers: { cookie: this.cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...fields, decision: "approve" }),
    });
    expect(posted.status).toBe(303);
    const location = new URL(posted.headers.get("location")!);
    expect(location.searchParams.get("state")).toBe(this.asked!.searchParams.get("state"));
    return location.searchParams.get("code")!;
  }
}
