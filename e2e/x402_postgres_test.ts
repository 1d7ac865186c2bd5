/**
 * x402 on PostgreSQL, as operators deploy it (decisions §13, §28): two instances of `bun main.ts` on one PostgreSQL,
 * one Anvil with EAS, the devnet's facilitator, a DNS server on loopback, and the official x402 client paying. A paid
 * witness and a paid relay write each answered 500: the payer's ledger rows (`x402:<payer>`, no account) referenced
 * accounts, which PostgreSQL enforces and SQLite does not, and every x402 test ran on SQLite. The same payment sent to
 * both instances at once writes once and is paid once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Devnet, type Facilitator, startFacilitator, TEST_USD } from "../adapters/devnet/mod.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { postgresUnavailableReason } from "./support/postgres.ts";
import { type PostgresInstances, startPostgresInstances } from "./support/postgres_instances.ts";
import type { ServiceProcess } from "./support/service_process.ts";

const skip = postgresUnavailableReason();
const WITNESS_PRICE = 10_000n;
const RELAY_PRICE = 5_000n;
const controller = privateKeyToAccount(generatePrivateKey());
let stack: PostgresInstances | undefined;
let devnet: Devnet;
let dns: DnsServer;
let facilitator: Facilitator;
let instances: ServiceProcess[] = [];

beforeAll(async () => {
  if (skip !== undefined) return;
  [stack, dns] = await Promise.all([startPostgresInstances("ats-x402-pg-"), startDnsServer()]);
  devnet = stack.devnet;
  dns.setTxt("_controllers.paid.test", [[`v=1;controller=did:pkh:eip155:31337:${controller.address}`]]);
  facilitator = startFacilitator({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, privateKey: devnet.keys.facilitator });
  instances = await stack.start({
    DNS_SERVERS: dns.address,
    ALLOW_PRIVATE_NETWORK: "true",
    X402_FACILITATOR_URL: facilitator.url,
    X402_ASSET: devnet.x402.token,
    X402_ASSET_NAME: devnet.x402.name,
    X402_ASSET_VERSION: devnet.x402.version,
    X402_PAY_TO: devnet.x402.payTo,
    X402_WITNESS_PRICE: String(WITNESS_PRICE),
    X402_RELAY_PRICE: String(RELAY_PRICE),
    ...TEST_RELAY_LIMITS,
  }, { count: 2, timeoutMs: 60_000 });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await facilitator?.stop();
  await dns?.stop();
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
const sent = (key: Hex) => chain().getTransactionCount({ address: privateKeyToAccount(key).address });
const balance = (address: Hex) =>
  chain().readContract({ address: devnet.x402.token as Hex, abi: TEST_USD.abi, functionName: "balanceOf", args: [address] }) as Promise<bigint>;

/** The official client's payment for what `path` asks when sent `body` unpaid (a 402). */
async function paymentFor(key: Hex, base: string, path: string, body: unknown): Promise<Record<string, string>> {
  const unpaid = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(unpaid.status).toBe(402);
  const client = new x402HTTPClient(
    registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(key) })
      // The devnet's test token is not one of the client's default assets: allowed by name, with a ceiling.
      .setSpendControls({ allowedAssets: [{ network: "eip155:31337", asset: devnet.x402.token, maxAmountPerPayment: "1000000" }] }),
  );
  const required = client.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.json());
  return client.encodePaymentSignatureHeader(await client.createPaymentPayload(required));
}

async function paid(base: string, path: string, body: unknown, payment: Record<string, string>) {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...payment }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

/** One paid call at `base` by the payer of `key`: 200, one transaction from the service's `wallet`, the price paid once. */
async function paysOnce(key: Hex, base: string, path: string, body: unknown, wallet: Hex, price: bigint) {
  const payer = privateKeyToAccount(key).address;
  const payment = await paymentFor(key, base, path, body);
  const [before, walletSent] = [await balance(payer), await sent(wallet)];
  expect((await paid(base, path, body, payment)).status).toBe(200);
  expect(await sent(wallet)).toBe(walletSent + 1);
  expect(await balance(payer)).toBe(before - price);
}

const witnessBody = { subjectDid: "did:web:paid.test", controllerDid: `did:pkh:eip155:31337:${controller.address}` };

describe.skipIf(skip !== undefined)("x402 on PostgreSQL, two instances", () => {
  test("a paid witness: 200, one witness transaction, the price paid once", async () => {
    await paysOnce(devnet.keys.users[3] as Hex, instances[0]!.url, "/v1/paid/controller-witness", witnessBody, devnet.keys.witness as Hex, WITNESS_PRICE);
  }, 60_000);

  test("a paid relay write of the payer's own review: 200, one delegate transaction, the price paid once", async () => {
    const key = devnet.keys.users[4] as Hex;
    const payer = privateKeyToAccount(key).address;
    const body = await signedReviewBody(devnet, key, { data: { subject: `did:pkh:eip155:31337:${payer}`, version: "1", ratingValue: 4, reviewBody: "paid", screenshotUrls: [], proofs: [] } });
    await paysOnce(key, instances[1]!.url, "/v1/paid/delegated-attest", body, devnet.keys.delegate as Hex, RELAY_PRICE);
  }, 60_000);

  test("the same payment sent to both instances at once: one witness, paid once; the other 409", async () => {
    const key = devnet.keys.users[2] as Hex;
    const payer = privateKeyToAccount(key).address;
    const payment = await paymentFor(key, instances[0]!.url, "/v1/paid/controller-witness", witnessBody);
    const [before, witnessSent] = [await balance(payer), await sent(devnet.keys.witness as Hex)];
    const answers = await Promise.all(instances.map((instance) => paid(instance.url, "/v1/paid/controller-witness", witnessBody, payment)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect(await sent(devnet.keys.witness as Hex)).toBe(witnessSent + 1);
    expect(await balance(payer)).toBe(before - WITNESS_PRICE);
  }, 60_000);

  test("a payment whose network or asset holds U+0000 is refused as invalid (402), not answered 500 by the replay lookup", async () => {
    const key = devnet.keys.users[5] as Hex;
    const payment = await paymentFor(key, instances[0]!.url, "/v1/paid/controller-witness", witnessBody);
    const [name, value] = Object.entries(payment)[0]!;
    for (const field of ["network", "asset"] as const) {
      const payload = JSON.parse(Buffer.from(value, "base64").toString("utf8")) as { accepted: Record<string, string> };
      payload.accepted[field] = `${payload.accepted[field]}\u0000`;
      const answer = await paid(instances[0]!.url, "/v1/paid/controller-witness", witnessBody, { [name]: Buffer.from(JSON.stringify(payload)).toString("base64") });
      expect({ field, status: answer.status, code: answer.body.code }).toEqual({ field, status: 402, code: "PAYMENT_INVALID" });
    }
  }, 60_000);
});
