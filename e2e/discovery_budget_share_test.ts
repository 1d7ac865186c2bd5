/**
 * The verification reads' lookup budget per registrable domain (`DISCOVERY_DOMAIN_RATE_PER_MINUTE`, default 30) against
 * one client, on the real service with a real DNS server: each client address (as `KEY_STATUS_RATE_PER_MINUTE` counts
 * it; `TRUST_PROXY=1` here, so `X-Forwarded-For` names it) may spend at most a third of a domain's budget a minute.
 * Before, one anonymous client's key-status reads of 30 made-up subdomains (well under its 60 a minute) spent the whole
 * budget, and the domain's own key status and controller authorization answered 502 to everyone.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";

const KEY = "did:pkh:eip155:31337:0x1111111111111111111111111111111111111111";
const ATTACKER = "203.0.113.7";
const VERIFIER = "198.51.100.9";

let dns: DnsServer;
let stack: Stack;

beforeAll(async () => {
  dns = await startDnsServer();
  stack = await startStack({ env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true", TRUST_PROXY: "1" } });
  dns.setTxt("_controllers.victim.test", [[`v=1;controller=${KEY}`]]);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

async function read(client: string, path: string, query: Record<string, string>) {
  const res = await fetch(`${stack.baseUrl}${path}?${new URLSearchParams(query)}`, { headers: { "x-forwarded-for": client } });
  return { status: res.status, body: await res.json() as Record<string, any> };
}
const keyStatus = (client: string, subjectDid: string) => read(client, "/v1/key-status", { subjectDid, keyDid: KEY });
const authorization = (client: string, subjectDid: string) =>
  read(client, "/v1/controller-authorization", { subjectDid, controllerDid: KEY });

test("one client's key-status reads of 30 made-up subdomains spend only its share of the domain's budget", async () => {
  const flood: number[] = [];
  for (let i = 0; i < 30; i++) flood.push((await keyStatus(ATTACKER, `did:web:x${i}.victim.test`)).status);
  // The spender's own read of the domain (asked first: a verifier's answer is then kept for everyone).
  const own = await keyStatus(ATTACKER, "did:web:victim.test");

  // Another client's reads of the real domain answer with the evidence (before: 502 NETWORK_ERROR for everyone).
  const status = await keyStatus(VERIFIER, "did:web:victim.test");
  expect([status.status, status.body.endpointEvidence?.found, status.body.endpointEvidence?.sources]).toEqual([200, true, ["dns-txt"]]);
  expect(status.body.trustLevel).toBe("basic");
  const authorized = await authorization(VERIFIER, "did:web:victim.test");
  expect([authorized.status, authorized.body.authorized, authorized.body.liveMethod, authorized.body.currentlyVerified]).toEqual([200, true, "dns", true]);

  // The spender had its share (10 of 30); the rest was refused to it, as a spent budget is (the evidence could not be
  // read: 502), its read of the real domain included.
  expect(flood.filter((s) => s === 200)).toHaveLength(10);
  expect(flood.filter((s) => s === 502)).toHaveLength(20);
  expect([own.status, own.body.code]).toEqual([502, "NETWORK_ERROR"]);
}, 120_000);
