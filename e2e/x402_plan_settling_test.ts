/**
 * A year of the paid plan counts once its payment settled (decisions §13), on the devnet with its EIP-3009 token, the
 * devnet facilitator behind a proxy that can hold a settlement, and the official x402 client paying.
 *
 * Before: the year was granted as the purchase's work, ahead of the settlement, and counted at once. A payer who then
 * made the settlement fail (cancelling the authorization on chain while it was held) had the paid plan's limits in the
 * meantime and kept what it wrote under them: four sponsored writes on a free plan of one, nothing paid. A second
 * purchase made meanwhile was placed after the first, so when the first failed it was paid for and began a year late.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Facilitator, startFacilitator, TEST_USD } from "../adapters/devnet/mod.ts";
import type { Service } from "../app/service.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";
import { cancelAuthorization } from "./support/test_usd.ts";
import { startFacilitatorProxy, x402Settings } from "./support/facilitator_proxy.ts";

const APP = "https://app.test";
const PLAN_PRICE = 1_000_000n;
const controller = privateKeyToAccount(generatePrivateKey());
let dns: DnsServer;
let stack: Stack;
let service: Service;
let facilitator: Facilitator;
let proxy: ReturnType<typeof Bun.serve>;
/** A settlement to hold: the one whose body names `nonce`; `arrived` when it came, it goes on once `release` resolves. */
let hold: { nonce: string; arrived: () => void; release: Promise<void>; cancelFirst: boolean } | undefined;

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
const token = () => stack.devnet.x402.token;
const balance = (address: Hex) => chain().readContract({ address: token(), abi: TEST_USD.abi, functionName: "balanceOf", args: [address] }) as Promise<bigint>;

beforeAll(async () => {
  dns = await startDnsServer();
  for (let i = 0; i < 6; i++) dns.setTxt(`_controllers.plan${i}.test`, [[`v=1;controller=did:pkh:eip155:31337:${controller.address}`]]);
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      WITNESS_USER_RATE_PER_MINUTE: "1000",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "1000",
      FREE_PLAN_ANNUAL_WRITES: "1",
    },
  });
  facilitator = startFacilitator({ rpcUrl: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, privateKey: stack.devnet.keys.facilitator });
  proxy = startFacilitatorProxy(facilitator.url, async (path, body) => {
    const held = hold;
    if (held !== undefined && path === "/settle" && body!.includes(held.nonce)) {
      held.arrived();
      await held.release;
      if (held.cancelFirst) await cancelAuthorization(stack.devnet, token(), stack.devnet.keys.users[0]! as Hex, held.nonce as Hex);
    }
  });
  service = await stack.restartService({
    ...x402Settings(proxy, stack.devnet.x402),
    X402_PAID_PLAN_PRICE: String(PLAN_PRICE),
  });
}, 180_000);
afterAll(async () => {
  proxy?.stop(true);
  await facilitator?.stop();
  await stack?.stop();
  await dns?.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

/** A plan purchase's payment by `payerKey` for the account of `cookie`, through the official client. */
async function planPayment(payerKey: Hex, cookie: string) {
  const client = new x402HTTPClient(registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(payerKey) })
    .setSpendControls({ allowedAssets: [{ network: "eip155:31337", asset: token(), maxAmountPerPayment: String(PLAN_PRICE) }] }));
  const unpaid = await post("/api/private/subscriptions/x402", {}, { cookie });
  const payload = await client.createPaymentPayload(client.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.json()));
  return { header: client.encodePaymentSignatureHeader(payload), nonce: (payload.payload as { authorization: { nonce: string } }).authorization.nonce };
}

/** Holds the settlement naming `nonce`; resolves `arrived` when it is held. */
function holdSettlement(nonce: string, cancelFirst: boolean) {
  let arrived!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  hold = { nonce, arrived, release: new Promise<void>((resolve) => (release = resolve)), cancelFirst };
  return { reached, release: () => release() };
}

const subscriptionOf = async (cookie: string) =>
  (await (await fetch(`${service.url}/api/private/accounts/me`, { headers: { cookie } })).json() as { subscription: Record<string, unknown> }).subscription;

test("while a purchase settles the account is on the free plan; the settlement fails: nothing was written under the paid plan's limits", async () => {
  const payer = stack.devnet.keys.users[0]! as Hex;
  const cookie = await signInCookie(service.url, payer, { origin: APP });
  const before = await balance(privateKeyToAccount(payer).address);
  const payment = await planPayment(payer, cookie);
  const held = holdSettlement(payment.nonce, true);
  const purchase = post("/api/private/subscriptions/x402", {}, { cookie, ...payment.header });
  await held.reached;
  expect(await subscriptionOf(cookie)).toMatchObject({ plan: "free", annualSponsoredWriteLimit: 1 });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    const witness = await post("/v1/controller-witness", { subjectDid: `did:web:plan${i}.test`, controllerDid: `did:pkh:eip155:31337:${controller.address}` }, { cookie, origin: APP });
    statuses.push(witness.status);
  }
  expect(statuses).toEqual([200, 403, 403, 403]);
  held.release();
  const answer = await purchase;
  hold = undefined;
  expect([answer.status, (await answer.json() as { code: string }).code]).toEqual([402, "PAYMENT_FAILED"]);
  expect(await subscriptionOf(cookie)).toMatchObject({ plan: "free", sponsoredWritesUsedCurrentYear: 1 });
  expect(await balance(privateKeyToAccount(payer).address)).toBe(before);
}, 60_000);

test("a second purchase while the first settles is 409 PAYMENT_IN_PROGRESS, nothing charged; after the first failed it buys the year from now", async () => {
  const cookie = await signInCookie(service.url, stack.devnet.keys.users[2]! as Hex, { origin: APP });
  const payerB = stack.devnet.keys.users[1]! as Hex;
  const first = await planPayment(stack.devnet.keys.users[0]! as Hex, cookie);
  const second = await planPayment(payerB, cookie);
  const bBefore = await balance(privateKeyToAccount(payerB).address);
  const held = holdSettlement(first.nonce, true);
  const firstAnswer = post("/api/private/subscriptions/x402", {}, { cookie, ...first.header });
  await held.reached;
  const refused = await post("/api/private/subscriptions/x402", {}, { cookie, ...second.header });
  expect([refused.status, (await refused.json() as { code: string }).code]).toEqual([409, "PAYMENT_IN_PROGRESS"]);
  held.release();
  expect((await firstAnswer).status).toBe(402);
  hold = undefined;
  expect(await balance(privateKeyToAccount(payerB).address)).toBe(bBefore);
  // The same authorization was given back: it buys the year now, from now.
  const bought = await post("/api/private/subscriptions/x402", {}, { cookie, ...second.header });
  expect(bought.status).toBe(200);
  const { purchased } = await bought.json() as { purchased: { periodStart: string } };
  expect(Math.abs(Date.parse(purchased.periodStart) - Date.now())).toBeLessThan(60_000);
  expect(await subscriptionOf(cookie)).toMatchObject({ plan: "paid", annualSponsoredWriteLimit: 1000 });
  expect(await balance(privateKeyToAccount(payerB).address)).toBe(bBefore - PLAN_PRICE);
}, 60_000);
