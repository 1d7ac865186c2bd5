/**
 * Several instances behind a load balancer: two service processes, one Anvil, one PostgreSQL, one
 * delegate wallet. Concurrent delegated attestations at both all succeed with distinct nonces; one
 * signature sent to both is accepted once; a user's quota is exact across both, for witnesses and for the
 * private relay; the public relay's hourly gas budget is one budget for both. The limits that guard money or storage
 * are counted once for both (issue 34): concurrent requests alternating between them are admitted exactly as one
 * instance admits them; and an MCP session opened at one is used at the other through the official SDK's client. One
 * Idempotency-Key sent to both runs once (issue 36). A list cursor one instance gave, the other takes (issue 43).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SQL } from "bun";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Devnet } from "../adapters/devnet/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { isAtsClientError } from "../client/errors.ts";
import { requestControllerWitness, signInWithWallet } from "../client/session.ts";
import { BUDGET_HOUR_TEST_MS, TEST_RELAY_LIMITS, withinOneBudgetHour } from "./harness.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { postgresUnavailableReason, type TestPostgres } from "./support/postgres.ts";
import { type PostgresInstances, startPostgresInstances } from "./support/postgres_instances.ts";
import type { ServiceProcess } from "./support/service_process.ts";
import { signInCookie } from "./support/sign_in.ts";

const skip = postgresUnavailableReason();
if (skip !== undefined) console.warn(`[multi_instance_test] ${skip}`);

let stack: PostgresInstances;
let dir: string;
let devnet: Devnet;
let pg: TestPostgres;
let dns: DnsServer;
let instances: ServiceProcess[] = [];
/** What every instance of this file has over the shared environment. */
let env: Record<string, string>;
const controller = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  if (skip !== undefined) return;
  [stack, dns] = await Promise.all([startPostgresInstances("ats-multi-"), startDnsServer()]);
  ({ dir, devnet, pg } = stack);
  dns.setTxt("_controllers.shared.test", [[`v=1;controller=did:pkh:eip155:1:${controller.address}`]]);
  env = {
    DNS_SERVERS: dns.address,
    SIWE_DOMAINS: "app.test",
    FREE_PLAN_ANNUAL_WRITES: "3",
    FREE_PLAN_SCHEMAS: "*",
    WITNESS_USER_RATE_PER_MINUTE: "100",
    WITNESS_DOMAIN_RATE_PER_MINUTE: "100",
    ...TEST_RELAY_LIMITS,
  };
  instances = await stack.start(env, { count: 2 });
});
afterAll(async () => {
  const codes = await stack?.stop() ?? [];
  await dns?.stop();
  for (const code of codes) expect(code).toBe(0);
});

const client = () => createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl), pollingInterval: 50 });

const signedReview = (key: Hex) => signedReviewBody(devnet, key);

async function post(base: string, body: unknown) {
  const response = await fetch(`${base}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() as Record<string, unknown> };
}

describe.skipIf(skip !== undefined)(`two instances on one PostgreSQL and one delegate wallet${skip ? ` (skipped: ${skip})` : ""}`, () => {
  test("concurrent delegated attestations at both all succeed, each with its own delegate nonce", async () => {
    const delegate = privateKeyToAccount(devnet.keys.delegate).address;
    const before = await client().getTransactionCount({ address: delegate });
    const bodies = await Promise.all(Array.from({ length: 24 }, () => signedReview(generatePrivateKey())));
    const results = await Promise.all(bodies.map((body, i) => post(instances[i % 2]!.url, body)));
    expect(results.map((r) => r.status)).toEqual(Array(24).fill(200));
    const nonces = await Promise.all(results.map(async (r) => (await client().getTransaction({ hash: r.body.txHash as Hex })).nonce));
    expect(nonces.sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => before + i));
    expect(await client().getTransactionCount({ address: delegate })).toBe(before + 24);
    for (const r of results.slice(0, 3)) {
      const attestation = await client().readContract({ address: devnet.easAddress as Hex, abi: EAS_ABI, functionName: "getAttestation", args: [r.body.uid as Hex] });
      expect(attestation.uid).toBe(r.body.uid as Hex);
    }
  });

  test("public reads at either instance answer from the one index: a write through one is listed at both at once (issue 34)", async () => {
    const subject = "did:web:both.test";
    const body = await signedReviewBody(devnet, generatePrivateKey(), {
      data: { subject, version: "1", ratingValue: 3, reviewBody: "seen everywhere", screenshotUrls: [], proofs: [] },
    });
    const written = await post(instances[0]!.url, body);
    expect(written.status).toBe(200);
    const pages = await Promise.all(instances.map(async (instance) => {
      const res = await fetch(`${instance.url}/v1/attestations?subject=${subject}&schema=user-review`);
      return { status: res.status, body: await res.json() as { asOf: { blockNumber: number }; items: { attestation: { uid: string } }[] } };
    }));
    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(page.body.items.map((i) => i.attestation.uid.toLowerCase())).toEqual([String(written.body.uid).toLowerCase()]);
      expect(page.body.asOf.blockNumber).toBeGreaterThanOrEqual(Number(written.body.blockNumber));
    }
  });

  test("a list cursor one instance gave, the other takes; one minted by hand is 400 at both (issue 43: one secret for the deployment)", async () => {
    const query = "schema=user-review&order=oldest&limit=3";
    const first = await fetch(`${instances[0]!.url}/v1/attestations?${query}`);
    const page = await first.json() as { items: { attestation: { uid: string } }[]; nextCursor: string };
    expect(page.nextCursor).toEqual(expect.any(String));
    const next = await fetch(`${instances[1]!.url}/v1/attestations?${query}&cursor=${page.nextCursor}`);
    expect(next.status).toBe(200);
    const following = await next.json() as { items: { attestation: { uid: string } }[] };
    expect(following.items).toHaveLength(3);
    const seen = new Set(page.items.map((i) => i.attestation.uid));
    expect(following.items.filter((i) => seen.has(i.attestation.uid))).toEqual([]);
    const [body, check] = page.nextCursor.split(".") as [string, string];
    const minted = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, "base64url").toString()), i: 9 })).toString("base64url")}.${check}`;
    for (const instance of instances) {
      const refused = await fetch(`${instance.url}/v1/attestations?${query}&cursor=${minted}`);
      expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
    }
  });

  test("one signature sent to both instances at once is accepted once", async () => {
    const body = await signedReview(generatePrivateKey());
    const results = await Promise.all(instances.map((instance) => post(instance.url, body)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.status === 409)?.body.code).toBe("DUPLICATE");
  });

  test("one Idempotency-Key sent to both instances at once runs once; a retry at either replays it; its submission is read at both (issue 36)", async () => {
    const delegate = privateKeyToAccount(devnet.keys.delegate).address;
    const before = await client().getTransactionCount({ address: delegate });
    const text = JSON.stringify(await signedReview(generatePrivateKey()));
    const send = (base: string) => fetch(`${base}/v1/delegated-attest`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "both-instances-1" },
      body: text,
    });
    const answers = await Promise.all(instances.map(async (instance) => {
      const res = await send(instance.url);
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, unknown> };
    }));
    const ran = answers.filter((a) => a.status === 200 && a.replayed === null);
    expect(ran).toHaveLength(1);
    const other = answers.find((a) => a !== ran[0])!;
    if (other.status === 409) expect(other.body.code).toBe("IDEMPOTENCY_KEY_IN_USE");
    else expect([other.status, other.replayed, other.body]).toEqual([200, "true", ran[0]!.body]);
    for (const instance of instances) {
      const retry = await send(instance.url);
      expect([retry.status, retry.headers.get("idempotent-replayed"), await retry.json()]).toEqual([200, "true", ran[0]!.body]);
      const submission = await (await fetch(`${instance.url}/v1/submissions/${ran[0]!.body.submissionId}`)).json() as Record<string, unknown>;
      expect([submission.txHash, submission.uid]).toEqual([ran[0]!.body.txHash, ran[0]!.body.uid]);
    }
    expect(await client().getTransactionCount({ address: delegate })).toBe(before + 1);
  });

  test("a user's quota is exact across instances: eight parallel witness requests for three writes give three", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const session = await signInWithWallet({
      walletDid: `did:pkh:eip155:${devnet.chainId}:${wallet.address}`,
      domain: "app.test",
      uri: "https://app.test/",
      sign: (message) => wallet.signMessage({ message }),
    }, { baseUrl: instances[0]!.url });
    const outcomes = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      try {
        await requestControllerWitness(
          { subjectDid: "did:web:shared.test", controllerDid: `did:pkh:eip155:1:${controller.address}` },
          session,
          { baseUrl: instances[i % 2]!.url },
        );
        return "ok";
      } catch (error) {
        return isAtsClientError(error) ? error.code : String(error);
      }
    }));
    expect(outcomes.filter((o) => o === "ok")).toHaveLength(3);
    expect(outcomes.filter((o) => o === "SPONSORED_WRITE_LIMIT_EXCEEDED")).toHaveLength(5);
  });
});


describe.skipIf(skip !== undefined)(`quota and budget shared by two instances${skip ? ` (skipped: ${skip})` : ""}`, () => {
  test("the private relay's quota is exact across instances: with one write left, four parallel writes at both give one", async () => {
    const key = generatePrivateKey();
    // Sessions live in PostgreSQL: a cookie from one instance is valid at every instance.
    const cookie = await signInCookie(instances[0]!.url, key);
    const relay = async (base: string, nonce: bigint, i: number) => {
      const body = await signedReviewBody(devnet, key, {
        nonce,
        data: { subject: `did:web:shop${i}.test`, version: "1", ratingValue: 4, reviewBody: "fine", screenshotUrls: [], proofs: [] },
      });
      const res = await fetch(`${base}/api/private/relay/eas/delegated-attest`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() as Record<string, unknown> };
    };
    expect((await relay(instances[0]!.url, 0n, 0)).status).toBe(200);
    expect((await relay(instances[1]!.url, 1n, 1)).status).toBe(200);
    const race = await Promise.all([2, 3, 4, 5].map((i) => relay(instances[i % 2]!.url, 2n, i)));
    expect(race.filter((r) => r.status === 200)).toHaveLength(1);
    // A loser is refused by the quota the winner reserved, by the winner's claim on nonce 2, or, when it read the
    // nonce after the winner was mined, as a signature over a nonce that moved (decisions §6): each costs no write.
    const refusals = ["403 SPONSORED_WRITE_LIMIT_EXCEEDED", "409 DUPLICATE", "400 ATTESTER_MISMATCH NONCE_MOVED"];
    for (const r of race.filter((r) => r.status !== 200)) {
      expect(refusals).toContain(`${r.status} ${r.body.code}${r.body.code === "ATTESTER_MISMATCH" ? ` ${r.body.details}` : ""}`);
    }
    const used = await Promise.all(instances.map(async (instance) => {
      const me = await fetch(`${instance.url}/api/private/accounts/me`, { headers: { cookie } });
      return ((await me.json()) as { subscription: { sponsoredWritesUsedCurrentYear: number } }).subscription.sponsoredWritesUsedCurrentYear;
    }));
    expect(used).toEqual([3, 3]);
    const over = await relay(instances[1]!.url, 3n, 6);
    expect([over.status, over.body.code]).toEqual([403, "SPONSORED_WRITE_LIMIT_EXCEEDED"]);
  });

  test("the public relay's gas budget is one budget: alternating writes stop at what one budget holds, at both instances", async () => {
    // A database of their own, so the hour's budget starts empty. A review is charged its gas limit (about 590,000 on
    // the devnet), so 2,000,000 gas hold three: one budget serves three of the six requests, two separate budgets
    // would serve all six.
    await withinOneBudgetHour();
    const admin = new SQL(pg.url);
    await admin.unsafe("CREATE DATABASE budget_test");
    await admin.close();
    const pair = await stack.start({
      ...env,
      DATABASE_URL: pg.url.replace(/\/postgres$/, "/budget_test"),
      DATA_DIR: join(dir, "budget"),
      PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "2000000",
    }, { count: 2 });
    try {
      const results = [];
      for (let i = 0; i < 6; i++) results.push(await post(pair[i % 2]!.url, await signedReview(generatePrivateKey())));
      const written = results.filter((r) => r.status === 200).length;
      expect(written).toBeGreaterThanOrEqual(2);
      expect(written).toBeLessThanOrEqual(3);
      expect(results.slice(written).map((r) => [r.status, r.body.code])).toEqual(Array(6 - written).fill([429, "RATE_LIMITED"]));
      const metrics = await Promise.all(pair.map(async (p) => await (await fetch(`${p.url}/metrics`)).text()));
      for (const text of metrics) expect(text).toMatch(/ats_public_relay_refusals_total\{reason="budget"\} [1-9]/);
    } finally {
      for (const instance of pair) expect(await instance.stop()).toBe(0);
    }
  }, BUDGET_HOUR_TEST_MS);
});

/** The sum over `pair` of a `/metrics` sample (0 where absent). */
async function metricSum(pair: readonly ServiceProcess[], sample: string): Promise<number> {
  const texts = await Promise.all(pair.map(async (p) => await (await fetch(`${p.url}/metrics`)).text()));
  return texts.reduce((sum, text) => sum + Number(text.split("\n").find((l) => l.startsWith(`${sample} `))?.split(" ")[1] ?? 0), 0);
}

describe.skipIf(skip !== undefined)(`limits counted once for two instances (issue 34)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  // Two more instances with tight limits behind a "proxy" (TRUST_PROXY=1): each test names its own client addresses
  // in X-Forwarded-For, so no test spends another's tokens. Every request of a race is sent at once, and its limit
  // is taken as it arrives, before any chain or DNS work; the per-minute limits give a token back every 15 s or more.
  let pair: ServiceProcess[] = [];
  const at = (i: number) => pair[i % 2]!.url;
  const from = (address: string) => ({ "x-forwarded-for": address });
  /** `init` with its requests sent from `address`. */
  const fromAddress = (init: RequestInit | undefined, address: string): RequestInit => {
    const headers = new Headers(init?.headers);
    headers.set("x-forwarded-for", address);
    return { ...init, headers };
  };
  beforeAll(async () => {
    if (skip !== undefined) return;
    dns.setTxt("_controllers.limits-user.test", [[`v=1;controller=did:pkh:eip155:1:${controller.address}`]]);
    dns.setTxt("_controllers.limits-domain.test", [[`v=1;controller=did:pkh:eip155:1:${controller.address}`]]);
    pair = await stack.start({
      ...env,
      DATA_DIR: join(dir, "limits"),
      TRUST_PROXY: "1",
      PUBLIC_RELAY_IP_RATE_PER_MINUTE: "4",
      PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "3",
      WITNESS_USER_RATE_PER_MINUTE: "2",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "3",
      FREE_PLAN_ANNUAL_WRITES: "100",
      SIWE_CHALLENGE_RATE_PER_MINUTE: "3",
      OAUTH_REGISTER_RATE_PER_HOUR: "3",
      MCP_SESSION_RATE_PER_MINUTE: "3",
    }, { count: 2 });
  });
  afterAll(async () => {
    for (const instance of pair) expect(await instance.stop()).toBe(0);
  });

  /** POSTs `body` as JSON to `path` at instance `i % 2`, from `address`. */
  const postAt = async (i: number, path: string, body: unknown, address: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${at(i)}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...from(address), ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() as Record<string, unknown> };
  };

  test("the public relay's limit of 4 per client address admits exactly 4 of 10 concurrent writes alternating between the instances", async () => {
    const refusedBefore = await metricSum(pair, 'ats_public_relay_refusals_total{reason="client"}');
    const bodies = await Promise.all(Array.from({ length: 10 }, () => signedReview(generatePrivateKey())));
    const results = await Promise.all(bodies.map((body, i) => postAt(i, "/v1/delegated-attest", body, "198.51.100.10")));
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused.map((r) => [r.status, r.body.code])).toEqual(Array(6).fill([429, "RATE_LIMITED"]));
    // The answer one instance gives: a token of four a minute is at most 15 s away.
    for (const r of refused) expect(Number(r.retryAfter)).toBeWithin(1, 16);
    expect(await metricSum(pair, 'ats_public_relay_refusals_total{reason="client"}')).toBe(refusedBefore + 6);
    // Another address has its own four.
    expect((await postAt(1, "/v1/delegated-attest", await signedReview(generatePrivateKey()), "198.51.100.11")).status).toBe(200);
  });

  test("the public relay's limit of 3 an hour per attester admits 3 of 8 signatures of one attester sent to both instances at once", async () => {
    const key = generatePrivateKey();
    const bodies = await Promise.all(Array.from({ length: 8 }, (_, i) => signedReviewBody(devnet, key, {
      nonce: 0n,
      data: { subject: `did:web:attester${i}.test`, version: "1", ratingValue: 4, reviewBody: "fine", screenshotUrls: [], proofs: [] },
    })));
    // Each from an address of its own, so only the attester's limit counts them.
    const results = await Promise.all(bodies.map((body, i) => postAt(i, "/v1/delegated-attest", body, `198.51.100.${20 + i}`)));
    expect(results.filter((r) => r.status === 429 && r.body.code === "RATE_LIMITED")).toHaveLength(5);
    // The three admitted race for the attester's nonce 0: one is written; the others lose as decisions §6 allows.
    const admitted = results.filter((r) => r.status !== 429);
    expect(admitted.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of admitted.filter((r) => r.status !== 200)) {
      expect(["409 DUPLICATE", "400 ATTESTER_MISMATCH NONCE_MOVED"]).toContain(`${r.status} ${r.body.code}${r.body.code === "ATTESTER_MISMATCH" ? ` ${r.body.details}` : ""}`);
    }
  });

  /** A wallet signed in at instance 0 from `address`, and a fetch that sends its requests from that address. */
  const signedIn = async (address: string) => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const fetchFrom = ((url: string | URL | Request, init?: RequestInit) =>
      fetch(url, fromAddress(init, address))) as typeof fetch;
    const session = await signInWithWallet({
      walletDid: `did:pkh:eip155:${devnet.chainId}:${wallet.address}`,
      domain: "app.test",
      uri: "https://app.test/",
      sign: (message) => wallet.signMessage({ message }),
    }, { baseUrl: at(0), fetch: fetchFrom });
    return { session, fetchFrom };
  };
  const witness = async (user: Awaited<ReturnType<typeof signedIn>>, subjectDid: string, i: number) => {
    try {
      await requestControllerWitness({ subjectDid, controllerDid: `did:pkh:eip155:1:${controller.address}` }, user.session, { baseUrl: at(i), fetch: user.fetchFrom });
      return "ok";
    } catch (error) {
      return isAtsClientError(error) ? `${error.code}${error.code === "RATE_LIMITED" ? `: ${error.message}` : ""}` : String(error);
    }
  };

  test("the witness's limit of 2 per user admits 2 of 6 concurrent requests at both instances", async () => {
    const user = await signedIn("198.51.100.40");
    const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => witness(user, "did:web:limits-user.test", i)));
    expect(outcomes.filter((o) => o === "ok")).toHaveLength(2);
    expect(outcomes.filter((o) => o.startsWith("RATE_LIMITED: Too many witness requests;"))).toHaveLength(4);
  });

  test("the witness's limit of 3 per domain admits 3 of 6 concurrent requests of three users at both instances", async () => {
    const users = await Promise.all([41, 42, 43].map((n) => signedIn(`198.51.100.${n}`)));
    // Two requests per user: within each user's limit of two, so only the domain's limit refuses.
    const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => witness(users[i % 3]!, "did:web:www.limits-domain.test", i)));
    expect(outcomes.filter((o) => o === "ok")).toHaveLength(3);
    expect(outcomes.filter((o) => o.startsWith("RATE_LIMITED: Too many witness requests for this domain"))).toHaveLength(3);
  });

  test("sign-in challenges: a limit of 3 per client address admits 3 of 8 concurrent requests at both instances", async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => postAt(i, "/v1/session/wallet/challenge", {
      walletDid: `did:pkh:eip155:${devnet.chainId}:${privateKeyToAccount(generatePrivateKey()).address}`,
      domain: "app.test",
      uri: "https://app.test/login",
    }, "198.51.100.50")));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429 && r.body.code === "RATE_LIMITED" && Number(r.retryAfter) >= 1)).toHaveLength(5);
  });

  test("OAuth registration: a limit of 3 an hour per client address admits 3 of 8 concurrent registrations at both instances", async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => postAt(i, "/oauth/register", {
      redirect_uris: ["https://app.test/cb"],
      client_name: "Release bot",
      token_endpoint_auth_method: "none",
    }, "198.51.100.51")));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429)).toHaveLength(5);
  });

  const INITIALIZE = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "e2e", version: "1" } } };
  const MCP_HEADERS = { accept: "application/json, text/event-stream" };

  test("MCP: a limit of 3 new sessions a minute per client address admits 3 of 8 concurrent initializes at both instances", async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => postAt(i, "/mcp", INITIALIZE, "198.51.100.52", MCP_HEADERS)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429).map((r) => r.body)).toEqual(Array(5).fill({
      error: "Too many new MCP sessions from this address; try again later",
      code: "RATE_LIMITED",
    }));
  });

  test("MCP: a session opened at one instance is used at the other through the official SDK's client, and ended there", async () => {
    // A load balancer without affinity: each request of the client goes to the next instance.
    const served: number[] = [];
    let turn = 0;
    const balanced = ((url: string | URL | Request, init?: RequestInit) => {
      const target = new URL(String(url));
      const i = turn++ % 2;
      // The client also asks (GET) for a stream the server does not offer (405); only the POSTs carry the session's work.
      if (init?.method === "POST") served.push(i);
      target.host = new URL(at(i)).host;
      return fetch(target, fromAddress(init, "198.51.100.53"));
    }) as typeof fetch;
    const transport = new StreamableHTTPClientTransport(new URL(`${at(0)}/mcp`), { fetch: balanced });
    const client = new Client({ name: "ats-e2e-balanced", version: "1.0.0" });
    await client.connect(transport);
    expect((await client.listTools()).tools).toHaveLength(9);
    for (let i = 0; i < 3; i++) {
      const answer = await client.callTool({ name: "get_trust_anchors", arguments: {} }) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      expect([answer.isError ?? false, typeof answer.structuredContent?.chains]).toEqual([false, "object"]);
    }
    const resolved = await client.callTool({ name: "resolve_identities", arguments: { identifiers: ["did:web:limits-user.test"] } }) as { structuredContent?: Record<string, unknown> };
    expect(resolved.structuredContent).toMatchObject({ identities: [{ canonical: "did:web:limits-user.test" }] });
    // POSTs of initialize, notifications/initialized, tools/list and four calls: each instance answered some.
    expect(served).toHaveLength(7);
    expect(served.filter((i) => i === 0).length).toBeGreaterThan(0);
    expect(served.filter((i) => i === 1).length).toBeGreaterThan(0);
    // Both instances count the one session table.
    const [a, b] = await Promise.all(pair.map(async (p) => Number(/\nats_mcp_sessions (\d+)/.exec(await (await fetch(`${p.url}/metrics`)).text())?.[1])));
    expect(a).toBe(b!);
    // Ended at the next instance in turn, the session is gone at both.
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    const asked = await Promise.all([0, 1].map((i) => fetch(`${at(i)}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", ...MCP_HEADERS, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    })));
    expect(asked.map((r) => r.status)).toEqual([404, 404]);
  });
});
