/**
 * Registering one new wallet at two instances at once, on PostgreSQL: two `bun main.ts` on one PostgreSQL, one Anvil
 * with EAS. Parallel registers, each with its own signed challenge, sent alternately to both, all answered 200 with a
 * session, several saying `created: true`: each request checked that no account existed, then inserted one (the
 * insert did nothing for all but one) and took "created" from a lookup made before that insert. Exactly one is the
 * wallet's registration (200, created); the others are 409 `ACCOUNT_ALREADY_EXISTS` with no session, as on SQLite.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { postgresUnavailableReason } from "./support/postgres.ts";
import { type PostgresInstances, startPostgresInstances } from "./support/postgres_instances.ts";
import type { ServiceProcess } from "./support/service_process.ts";

const skip = postgresUnavailableReason();
if (skip !== undefined) console.warn(`[register_race_postgres_test] ${skip}`);
const APP = "https://app.test";
let stack: PostgresInstances | undefined;
let instances: ServiceProcess[] = [];

beforeAll(async () => {
  if (skip !== undefined) return;
  stack = await startPostgresInstances("ats-register-pg-");
  instances = await stack.start({
    SIWE_DOMAINS: "app.test",
    CORS_ORIGINS: APP,
    // Every challenge comes from 127.0.0.1 for one wallet: the rate has its own test (e2e/sign_in_limits_test.ts).
    SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
    ...TEST_RELAY_LIMITS,
  }, { count: 2, timeoutMs: 60_000 });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

async function post(base: string, path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", origin: APP }, body: JSON.stringify(body) });
  return { status: res.status, cookie: res.headers.get("set-cookie"), body: await res.json() as Record<string, unknown> };
}

describe.skipIf(skip !== undefined)("register of one new wallet at two instances at once, on PostgreSQL", () => {
  test("exactly one register is 200 with created: true; the others are 409 ACCOUNT_ALREADY_EXISTS with no session", async () => {
    const bases = instances.map((i) => i.url);
    for (let round = 0; round < 5; round++) {
      const wallet = privateKeyToAccount(generatePrivateKey());
      const walletDid = `did:pkh:eip155:31337:${wallet.address}`;
      // Every challenge is taken and signed before any register is sent, so the registers race each other only.
      const signed = await Promise.all([...bases, ...bases].map(async (base) => {
        const challenge = await post(base, "/v1/session/wallet/challenge", { walletDid, domain: "app.test", uri: `${APP}/login` });
        expect(challenge.status).toBe(200);
        const siweMessage = String(challenge.body.siweMessage);
        return { base, body: { ...challenge.body, signature: await wallet.signMessage({ message: siweMessage }) } };
      }));
      const answers = await Promise.all(signed.map((s) => post(s.base, "/v1/session/wallet/register", s.body)));
      const outcome = answers.map((a) => (a.status === 200 ? `200 created=${a.body.created}` : `${a.status} ${a.body.code}`)).sort();
      expect({ round, outcome }).toEqual({ round, outcome: ["200 created=true", ...Array(3).fill("409 ACCOUNT_ALREADY_EXISTS")] });
      expect(answers.filter((a) => a.cookie !== null)).toHaveLength(1);
      // The wallet has its one account: verify signs it in to the account register created.
      const registered = answers.find((a) => a.status === 200)!.body.account as { id: string };
      const challenge = await post(bases[1]!, "/v1/session/wallet/challenge", { walletDid, domain: "app.test", uri: `${APP}/login` });
      const signature = await wallet.signMessage({ message: String(challenge.body.siweMessage) });
      const verified = await post(bases[0]!, "/v1/session/wallet/verify", { ...challenge.body, signature });
      expect({ status: verified.status, id: (verified.body.account as { id: string }).id, created: verified.body.created })
        .toEqual({ status: 200, id: registered.id, created: false });
    }
  }, 60_000);
});
