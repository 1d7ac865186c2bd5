/**
 * The guard on the public relay (issue 17, item 6): per-attester and per-client-address limits and an hourly
 * gas budget, each answered 429 with Retry-After before any transaction; PUBLIC_RELAY=off; TRUST_PROXY. Issue 43:
 * PUBLIC_RELAY_MAX_GAS_PER_TX bounds one public request, and each client address and attester has a share of the budget.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Service } from "../app/service.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "./support/postgres.ts";
import { BUDGET_HOUR_TEST_MS, startStack, type Stack, withinOneBudgetHour } from "./harness.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => await stack?.stop());

const target = () => ({ chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids });
const delegateNonce = () =>
  createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) }).getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.delegate).address });

async function attest(service: Service, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${service.url}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() as Record<string, any> };
}

let databases = 0;
const guarded = (env: Record<string, string>) =>
  stack.restartService({ DATABASE_PATH: join(stack.dir, `guard-${++databases}.sqlite`), ...env });

describe("the public relay guard", () => {
  test("an attester past its hourly allowance is 429 with Retry-After, and no transaction is sent", async () => {
    const service = await guarded({ PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "2" });
    const key = generatePrivateKey();
    const first = await signedReviewBody(target(), key, { nonce: 0n });
    expect((await attest(service, first)).status).toBe(200);
    expect((await attest(service, await signedReviewBody(target(), key, { nonce: 1n }))).status).toBe(200);
    const before = await delegateNonce();
    const third = await attest(service, await signedReviewBody(target(), key, { nonce: 2n }));
    expect([third.status, third.body.code]).toEqual([429, "RATE_LIMITED"]);
    expect(Number(third.retryAfter)).toBeGreaterThan(0);
    expect(third.body.elapsed).toMatch(/ms$/);
    expect(await delegateNonce()).toBe(before);
    // A signature already on record still answers with its outcome past the limit (how a client settles a doubt).
    const again = await attest(service, first);
    expect([again.status, again.body.code]).toEqual([409, "DUPLICATE"]);
    // Someone else's garbage naming an attester does not spend that attester's allowance.
    const fresh = generatePrivateKey();
    for (let i = 0; i < 3; i++) {
      const forged = await signedReviewBody(target(), generatePrivateKey());
      const res = await attest(service, { ...forged, attester: privateKeyToAccount(fresh).address });
      expect(res.status).toBe(400);
    }
    expect((await attest(service, await signedReviewBody(target(), fresh))).status).toBe(200);
  });

  test("a client address past its rate is 429 (behind TRUST_PROXY=1, X-Forwarded-For names the client); another is served", async () => {
    const service = await guarded({ PUBLIC_RELAY_IP_RATE_PER_MINUTE: "2", TRUST_PROXY: "1" });
    const from = (ip: string) => ({ "x-forwarded-for": `198.51.100.7, ${ip}` });
    for (let i = 0; i < 2; i++) expect((await attest(service, await signedReviewBody(target(), generatePrivateKey()), from("203.0.113.9"))).status).toBe(200);
    const before = await delegateNonce();
    const third = await attest(service, await signedReviewBody(target(), generatePrivateKey()), from("203.0.113.9"));
    expect([third.status, third.body.code, Number(third.retryAfter) > 0]).toEqual([429, "RATE_LIMITED", true]);
    expect(await delegateNonce()).toBe(before);
    expect((await attest(service, await signedReviewBody(target(), generatePrivateKey()), from("203.0.113.10"))).status).toBe(200);
  });

  test("the hourly gas budget: once spent, 429 until the next hour, before any RPC", async () => {
    await withinOneBudgetHour();
    // Room for one review (its simulated gas, charged) but then no room for a typical one (300,000 gas).
    const probe = await guarded({});
    expect((await attest(probe, await signedReviewBody(target(), generatePrivateKey()))).status).toBe(200);
    const charged = Number(/ats_public_relay_gas_used (\d+)/.exec(await (await fetch(`${probe.url}/metrics`)).text())![1]);
    const service = await guarded({ PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: String(charged + 200_000) });
    expect((await attest(service, await signedReviewBody(target(), generatePrivateKey()))).status).toBe(200);
    const before = await delegateNonce();
    const second = await attest(service, await signedReviewBody(target(), generatePrivateKey()));
    expect([second.status, second.body.code]).toEqual([429, "RATE_LIMITED"]);
    expect(Number(second.retryAfter)).toBeGreaterThan(0);
    expect(Number(second.retryAfter)).toBeLessThanOrEqual(3_600);
    expect(await delegateNonce()).toBe(before);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/ats_public_relay_refusals_total\{reason="budget"\} 1/);
    expect(metrics).toMatch(/ats_public_relay_gas_used \d{6}/);
  }, BUDGET_HOUR_TEST_MS);

  test("issue 43: a request needing more gas than PUBLIC_RELAY_MAX_GAS_PER_TX is 400 INVALID_INPUT before anything is sent, and charges nothing", async () => {
    const service = await guarded({});
    // 30,000 characters: millions of gas, where a review of a sentence needs a few hundred thousand.
    const body = await signedReviewBody(target(), generatePrivateKey(), {
      data: { subject: "did:web:shop.test", version: "1", ratingValue: 1, reviewBody: "x".repeat(30_000), screenshotUrls: [], proofs: [] },
    });
    const before = await delegateNonce();
    const res = await attest(service, body);
    expect([res.status, res.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(res.body.error).toMatch(/more than the 3000000 allowed per transaction/);
    expect(await delegateNonce()).toBe(before);
    expect(await (await fetch(`${service.url}/metrics`)).text()).toMatch(/^ats_public_relay_gas_used 0$/m);
  });

  test("issue 43: a client address and an attester each spend at most their share of the hour's budget; another address is still served", async () => {
    await withinOneBudgetHour();
    const probe = await guarded({});
    expect((await attest(probe, await signedReviewBody(target(), generatePrivateKey()))).status).toBe(200);
    const charged = Number(/ats_public_relay_gas_used (\d+)/.exec(await (await fetch(`${probe.url}/metrics`)).text())![1]);
    // Room for one review in each share (then none for a typical one), the hour's budget far larger.
    const share = String(charged + 200_000);
    const service = await guarded({ TRUST_PROXY: "1", PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR: share, PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR: share });
    const from = (ip: string) => ({ "x-forwarded-for": ip });
    expect((await attest(service, await signedReviewBody(target(), generatePrivateKey()), from("203.0.113.40"))).status).toBe(200);
    const before = await delegateNonce();
    const second = await attest(service, await signedReviewBody(target(), generatePrivateKey()), from("203.0.113.40"));
    expect([second.status, second.body.code, Number(second.retryAfter) > 0]).toEqual([429, "RATE_LIMITED", true]);
    expect(second.body.error).toMatch(/address's share/);
    expect(await delegateNonce()).toBe(before);
    // Another address is served: one client did not close the relay.
    const attester = generatePrivateKey();
    expect((await attest(service, await signedReviewBody(target(), attester, { nonce: 0n }), from("203.0.113.41"))).status).toBe(200);
    // That attester's share is spent, whatever address its next request comes from.
    const third = await attest(service, await signedReviewBody(target(), attester, { nonce: 1n }), from("203.0.113.42"));
    expect([third.status, third.body.code]).toEqual([429, "RATE_LIMITED"]);
    expect(third.body.error).toMatch(/attester's share/);
    expect(await delegateNonce()).toBe(before + 1);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/ats_public_relay_refusals_total\{reason="client_gas"\} 1/);
    expect(metrics).toMatch(/ats_public_relay_refusals_total\{reason="attester_gas"\} 1/);
  }, BUDGET_HOUR_TEST_MS);

  test("issue 43, the attack: 13 long reviews from one address with fresh attesters spend at most that address's share; another address is served", async () => {
    await withinOneBudgetHour();
    // The defaults of a deployment: 50,000,000 gas an hour, a tenth of it per address, 3,000,000 per request.
    const service = await guarded({ TRUST_PROXY: "1", PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "50000000" });
    const from = (ip: string) => ({ "x-forwarded-for": ip });
    const review = (chars: number) => ({ subject: "did:web:shop.test", version: "1", ratingValue: 1, reviewBody: "y".repeat(chars), screenshotUrls: [], proofs: [] });
    const answers: number[] = [];
    for (let i = 0; i < 13; i++) {
      const body = await signedReviewBody(target(), generatePrivateKey(), { data: review(i % 3 === 0 ? 30_000 : 400) });
      answers.push((await attest(service, body, from("203.0.113.60"))).status);
    }
    const gasUsed = Number(/ats_public_relay_gas_used (\d+)/.exec(await (await fetch(`${service.url}/metrics`)).text())![1]);
    console.log(`[public_relay_guard_test] the attack: ${answers.join(" ")}, ${gasUsed} gas charged`);
    // Before: five accepted for 41.5 M gas, and the hour was spent for everyone.
    expect(gasUsed).toBeLessThanOrEqual(5_000_000);
    expect(answers.filter((status) => status === 400)).toHaveLength(5);
    expect(answers).toContain(429);
    expect((await attest(service, await signedReviewBody(target(), generatePrivateKey()), from("203.0.113.61"))).status).toBe(200);
  }, BUDGET_HOUR_TEST_MS);

  describe.skipIf(postgresUnavailableReason() !== undefined)("on PostgreSQL", () => {
    let pg: TestPostgres | undefined;
    beforeAll(async () => {
      pg = await startPostgres();
    }, 60_000);
    afterAll(async () => await pg?.stop());
    const gasUsed = async (service: Service) =>
      Number(/ats_public_relay_gas_used (\d+)/.exec(await (await fetch(`${service.url}/metrics`)).text())![1]);

    test("two instances share the hourly gas budget: what one spent, the other cannot spend", async () => {
      await withinOneBudgetHour();
      const probe = await guarded({});
      expect((await attest(probe, await signedReviewBody(target(), generatePrivateKey()))).status).toBe(200);
      // Room for one review, then none for a typical attestation, as in the SQLite case above.
      const env = { DATABASE_URL: pg!.url, PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: String(await gasUsed(probe) + 200_000) };
      const one = await stack.restartService(env);
      const two = await stack.restartService(env);
      expect((await attest(one, await signedReviewBody(target(), generatePrivateKey()))).status).toBe(200);
      expect(await gasUsed(two)).toBe(await gasUsed(one));
      const before = await delegateNonce();
      const refused = await attest(two, await signedReviewBody(target(), generatePrivateKey()));
      expect([refused.status, refused.body.code, Number(refused.retryAfter) > 0]).toEqual([429, "RATE_LIMITED", true]);
      expect(await delegateNonce()).toBe(before);
    }, BUDGET_HOUR_TEST_MS);

    test("issue 43: a client address's share of the hour is the deployment's: what it spent at one instance, it cannot spend at the other", async () => {
      await withinOneBudgetHour();
      const probe = await guarded({});
      expect((await attest(probe, await signedReviewBody(target(), generatePrivateKey()))).status).toBe(200);
      const env = { DATABASE_URL: pg!.url, TRUST_PROXY: "1", PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR: String(await gasUsed(probe) + 200_000) };
      const one = await stack.restartService(env);
      const two = await stack.restartService(env);
      const from = { "x-forwarded-for": "203.0.113.50" };
      expect((await attest(one, await signedReviewBody(target(), generatePrivateKey()), from)).status).toBe(200);
      const before = await delegateNonce();
      const refused = await attest(two, await signedReviewBody(target(), generatePrivateKey()), from);
      expect([refused.status, refused.body.code]).toEqual([429, "RATE_LIMITED"]);
      expect(refused.body.error).toMatch(/address's share/);
      expect(await delegateNonce()).toBe(before);
      expect((await attest(two, await signedReviewBody(target(), generatePrivateKey()), { "x-forwarded-for": "203.0.113.51" })).status).toBe(200);
    }, BUDGET_HOUR_TEST_MS);
  });

  test("PUBLIC_RELAY=off closes the route with 403 PUBLIC_RELAY_DISABLED", async () => {
    const service = await guarded({ PUBLIC_RELAY: "off" });
    const res = await attest(service, await signedReviewBody(target(), generatePrivateKey()));
    expect([res.status, res.body.code]).toEqual([403, "PUBLIC_RELAY_DISABLED"]);
  });

  test("PUBLIC_RELAY=off closes the batch route too: 403 for the whole batch, its Idempotency-Key not kept", async () => {
    // It answered 200 with each item refused, and kept that answer under the key for a day: the same batch sent once
    // the relay was open again got the closed relay's answer back.
    const database = join(stack.dir, `guard-${++databases}.sqlite`);
    const batch = { requests: [await signedReviewBody(target(), generatePrivateKey())] };
    const send = async (service: Service) => {
      const res = await fetch(`${service.url}/v1/delegated-attest/batch`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "closed-relay-batch-1" },
        body: JSON.stringify(batch),
      });
      return { status: res.status, body: await res.json() as Record<string, any> };
    };
    const closed = await send(await stack.restartService({ DATABASE_PATH: database, PUBLIC_RELAY: "off" }));
    expect([closed.status, closed.body.code]).toEqual([403, "PUBLIC_RELAY_DISABLED"]);
    const open = await send(await stack.restartService({ DATABASE_PATH: database }));
    expect(open.status).toBe(200);
    expect(open.body.results).toMatchObject([{ uid: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
  });
});
