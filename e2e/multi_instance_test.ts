/**
 * Several instances behind a load balancer: two service processes, one Anvil, one PostgreSQL, one
 * delegate wallet. Concurrent delegated attestations at both all succeed with distinct nonces; one
 * signature sent to both is accepted once; a user's quota is exact across both, for witnesses and for the
 * private relay; the public relay's hourly gas budget is one budget for both.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { isAtsClientError } from "../client/errors.ts";
import { requestControllerWitness, signInWithWallet } from "../client/session.ts";
import { BUDGET_HOUR_TEST_MS, e2eArtifacts, TEST_RELAY_LIMITS, withinOneBudgetHour } from "./harness.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "./support/postgres.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { signInCookie } from "./support/sign_in.ts";

const skip = postgresUnavailableReason();
if (skip !== undefined) console.warn(`[multi_instance_test] ${skip}`);

let dir: string;
let devnet: Devnet;
let pg: TestPostgres;
let dns: DnsServer;
let instances: ServiceProcess[] = [];
let env: Record<string, string>;
const controller = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  if (skip !== undefined) return;
  dir = mkdtempSync(join(tmpdir(), "ats-multi-"));
  [devnet, pg, dns] = await Promise.all([
    startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() }),
    startPostgres(),
    startDnsServer(),
  ]);
  dns.setTxt("_controllers.shared.test", [[`v=1;controller=did:pkh:eip155:1:${controller.address}`]]);
  env = {
    PORT: "0",
    RPC_URL: devnet.rpcUrl,
    TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
    WITNESS_PRIVATE_KEY: devnet.keys.witness,
    DATABASE_URL: pg.url,
    DATA_DIR: dir,
    DNS_SERVERS: dns.address,
    SIWE_DOMAINS: "app.test",
    FREE_PLAN_ANNUAL_WRITES: "3",
    FREE_PLAN_SCHEMAS: "*",
    WITNESS_USER_RATE_PER_MINUTE: "100",
    WITNESS_DOMAIN_RATE_PER_MINUTE: "100",
    LOG_LEVEL: "error",
    ...TEST_RELAY_LIMITS,
  };
  // Both start at once: the schema migration is serialized by an advisory lock.
  instances = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
});
afterAll(async () => {
  for (const instance of instances) expect(await instance.stop()).toBe(0);
  await dns?.stop();
  await pg?.stop();
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const client = () => createPublicClient({ transport: http(devnet.rpcUrl), pollingInterval: 50 });

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

  test("one signature sent to both instances at once is accepted once", async () => {
    const body = await signedReview(generatePrivateKey());
    const results = await Promise.all(instances.map((instance) => post(instance.url, body)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.status === 409)?.body.code).toBe("DUPLICATE");
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
    const pair = await Promise.all([0, 1].map(() => startServiceProcess({
      ...env,
      DATABASE_URL: pg.url.replace(/\/postgres$/, "/budget_test"),
      DATA_DIR: join(dir, "budget"),
      PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "2000000",
    })));
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
