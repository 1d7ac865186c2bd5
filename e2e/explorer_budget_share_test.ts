/**
 * An embed's explorer (`GET /v1/interactions?…&explorer=`, decisions §29) under the discovery budget per registrable
 * domain (`DISCOVERY_DOMAIN_RATE_PER_MINUTE`, default 30), of which each client address may spend a third a minute, on
 * the real service with a real DNS server and a real HTTPS explorer. Before the share (found by attack with the widget
 * in Chromium), one client's lookups of made-up wallets at made-up subdomains of the explorer (names that do not even
 * resolve), well under its `PROOF_READ_RATE_PER_MINUTE`, spent the domain's whole budget, and every other user's check
 * was `not-checked` (`explorer-failed`): their reviews carried no tx-interaction proof.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "0x3333333333333333333333333333333333333333";
const ATTACKER = "203.0.113.7";
const VERIFIER = "198.51.100.9";

let dns: DnsServer;
let explorer: HttpsServer;
let stack: Stack;
/** The explorer's transactions by wallet (lowercase), as txlist lists them. */
const listed = new Map<string, Record<string, string>[]>();

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  explorer = await startHttpsServer({
    ...await issueLeaf(["scan.explorer.test"]),
    routes: (request) => {
      const result = listed.get((new URL(request.url).searchParams.get("address") ?? "").toLowerCase()) ?? [];
      return Response.json(result.length === 0 ? { status: "0", message: "No transactions found", result: [] } : { status: "1", message: "OK", result });
    },
  });
  // Only the real explorer's name resolves: the attacker's made-up subdomains are NXDOMAIN.
  dns.setA("scan.explorer.test", ["127.0.0.1"]);
  stack = await startStack({ env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true", TRUST_PROXY: "1" }, didJsonCa: ca.cert });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await explorer?.stop();
  await dns?.stop();
});

async function interactions(client: string, wallet: string, explorerUrl: string) {
  const query = new URLSearchParams({ chain: "31337", wallet, contract: APP, explorer: explorerUrl });
  const res = await fetch(`${stack.baseUrl}/v1/interactions?${query}`, { headers: { "x-forwarded-for": client } });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

test("one client's 45 lookups of made-up wallets at made-up subdomains spend only its share: another client is still verified", async () => {
  // A real user's transaction to the app, mined on the devnet the service reads, and listed by the real explorer.
  const user = privateKeyToAccount(stack.devnet.keys.users[4] as Hex);
  const tx = await createWalletClient({ account: user, transport: http(stack.devnet.rpcUrl) }).sendTransaction({ to: APP, value: 1n, chain: null });
  const receipt = await createPublicClient({ transport: http(stack.devnet.rpcUrl) }).waitForTransactionReceipt({ hash: tx });
  listed.set(user.address.toLowerCase(), [
    { hash: tx, from: user.address, to: APP, isError: "0", txreceipt_status: "1", blockNumber: String(receipt.blockNumber) },
  ]);
  const real = `https://scan.explorer.test:${explorer.port}/api`;

  // The flood: more than the domain's 30 a minute, under the client's 60 proof reads a minute, each a new wallet (nothing
  // kept answers it) at a new subdomain that does not resolve.
  const flood: Record<string, unknown>[] = [];
  for (let i = 1; i <= 45; i++) {
    const answer = await interactions(ATTACKER, `0x${i.toString(16).padStart(40, "0")}`, `https://x${i}.scan.explorer.test:${explorer.port}/api`);
    expect(answer.status).toBe(200);
    flood.push(answer.body);
  }
  expect(flood.every((a) => a.status === "not-checked" && a.reason === "explorer-failed")).toBe(true);
  // Nothing reached the explorer: no made-up name resolved.
  expect(explorer.requests).toHaveLength(0);

  // The spender asks the real user's check itself: past its share, refused to it alone (not kept for the others).
  await interactions(ATTACKER, user.address, real);
  // Another client's check of the real user at the real explorer (before: not-checked, explorer-failed).
  const verified = await interactions(VERIFIER, user.address, real);
  expect(verified).toEqual({ status: 200, body: { status: "verified", txHash: tx, blockNumber: Number(receipt.blockNumber) } });
  expect(explorer.requests.map((r) => r.path)).toEqual(["/api"]);
}, 120_000);
