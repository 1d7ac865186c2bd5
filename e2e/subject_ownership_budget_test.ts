/**
 * The ownership a signed-in account's subjects are proven by (decisions §12: "only after the signed-in wallet is proven
 * to own it"), against lookups others can make, on the real service with a real DNS server. Each registrable domain has
 * a lookup budget per minute (`DISCOVERY_DOMAIN_RATE_PER_MINUTE`, 5 here):
 * - anonymous ownership proofs of made-up subdomains spend the public views' budget, never the owner's own proof's;
 * - a controller the owner took out of DNS proves nothing once the answer kept for `DISCOVERY_CACHE_SECONDS` is gone,
 *   even while the domain's budget is spent (before, the answer kept for that case, up to ten minutes old, stood in).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
/** The answer kept for a second: a wait of more than that always finds it gone, however slow the machine. */
const CACHE_SECONDS = 1;
let stack: Stack;
let dns: DnsServer;
const owner = generatePrivateKey();
const mallory = generatePrivateKey();
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;

beforeAll(async () => {
  dns = await startDnsServer();
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      DISCOVERY_CACHE_SECONDS: String(CACHE_SECONDS),
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "5",
      SUBJECT_OWNERSHIP_RATE_PER_MINUTE: "1000",
      SUBJECTS_PER_ACCOUNT: "20",
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

async function call(method: string, path: string, cookie: string, body?: unknown) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { origin: APP, cookie, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}
const anonymousProof = (subjectDid: string, walletDid: string) =>
  fetch(`${stack.baseUrl}/api/verify/subject-ownership`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ subjectDid, connectedWalletDid: walletDid }),
  });

test("anonymous proofs of made-up subdomains do not spend the budget the owner's own proof needs", async () => {
  dns.setTxt("_controllers.budget.test", [[`v=1;controller=${pkh(owner)}`]]);
  const stranger = pkh(generatePrivateKey());
  // The public views' budget for budget.test, spent by anyone (each answered; the last ones refused for the budget).
  for (let i = 0; i < 8; i++) await (await anonymousProof(`did:web:budget.test:p${i}`, stranger)).text();
  const cookie = await signInCookie(stack.baseUrl, owner, { origin: APP });
  const added = await call("POST", "/api/private/subjects", cookie, { did: "did:web:budget.test" });
  // Before, 502 NETWORK_ERROR: the strangers' lookups had spent the one budget both shared.
  expect([added.status, added.body.subject?.ownership?.method]).toEqual([201, "dns"]);
});

test("a controller taken out of DNS proves nothing once the kept answer is gone, the domain's budget spent or not", async () => {
  dns.setTxt("_controllers.stale.test", [[`v=1;controller=${pkh(mallory)};controller=${pkh(owner)}`]]);
  const cookie = await signInCookie(stack.baseUrl, mallory, { origin: APP });
  const first = await call("POST", "/api/private/subjects", cookie, { did: "did:web:stale.test" });
  expect(first.status).toBe(201);
  expect((await call("DELETE", `/api/private/subjects/${first.body.subject.id}`, cookie)).status).toBe(200);

  // The owner takes Mallory out; Mallory spends the domain's budget for proofs with subdomains that prove nothing.
  dns.setTxt("_controllers.stale.test", [[`v=1;controller=${pkh(owner)}`]]);
  await Bun.sleep(CACHE_SECONDS * 1000 + 200);
  for (let i = 0; i < 6; i++) await call("POST", "/api/private/subjects", cookie, { did: `did:web:stale.test:p${i}` });

  const again = await call("POST", "/api/private/subjects", cookie, { did: "did:web:stale.test" });
  // Never the subject: a fresh look says no (403), or the budget refuses one (502), but the old answer never stands in.
  expect(again.status).not.toBe(201);
  expect([403, 502]).toContain(again.status);
  expect((await call("GET", "/api/private/subjects", cookie)).body.subjects.map((s: { canonicalDid: string }) => s.canonicalDid)).not.toContain("did:web:stale.test");
});
