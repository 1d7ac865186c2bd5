/**
 * One wallet in two roles on one chain (decisions §27, §30): `DELEGATE_SIGNER_31337` names the default chain's own
 * delegate, and it is the witness's key. The relay's writes and the witness's then go through one sender with one
 * nonce book. Before, the default chain got a second EAS client for its own delegate: the wallet had two senders, each
 * taking the nonce the other had just spent, so the write after a write of the other role was refused by the node
 * (a witness answered 500; on a real chain, a send with higher fees would have replaced the other's transaction).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
const controller = privateKeyToAccount(generatePrivateKey());
let dns: DnsServer;
let stack: Stack;

beforeAll(async () => {
  dns = await startDnsServer();
  for (let i = 0; i < 3; i++) dns.setTxt(`_controllers.roles${i}.test`, [[`v=1;controller=did:pkh:eip155:31337:${controller.address}`]]);
  stack = await startStack({ env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true", SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP } });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

test("witness writes and relay writes of one wallet, one after the other, all land", async () => {
  const service = await stack.restartService({ ROLES_KEY: stack.devnet.keys.witness, DELEGATE_SIGNER_31337: "env:ROLES_KEY" });
  const cookie = await signInCookie(service.url, stack.devnet.keys.users[3] as Hex, { origin: APP });
  const reviewer = stack.devnet.keys.users[4] as Hex;
  const target = { chainId: service.chainId, easAddress: service.easAddress, schemaUids: stack.devnet.schemaUids };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const witness = await post("/v1/controller-witness", { subjectDid: `did:web:roles${i}.test`, controllerDid: `did:pkh:eip155:31337:${controller.address}` }, { cookie, origin: APP });
    statuses.push(witness.status);
    const review = await post("/v1/delegated-attest", await signedReviewBody(target, reviewer, { nonce: BigInt(i) }));
    statuses.push(review.status);
  }
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
  // Every one of them from the one wallet, in its nonce order.
  const sender = privateKeyToAccount(stack.devnet.keys.witness as Hex).address;
  const nonce = await fetch(stack.devnet.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getTransactionCount", params: [sender, "latest"] }),
  });
  expect(Number((await nonce.json() as { result: string }).result)).toBeGreaterThanOrEqual(6);
}, 120_000);
