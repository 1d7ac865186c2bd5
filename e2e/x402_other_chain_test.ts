// x402 payments settled on a served chain that is not the default (decisions §13, §30): `bun main.ts` serving chains A
// (31337, the default) and B (31338) with X402_NETWORK=eip155:31338, the devnet facilitator on B behind a proxy, the
// official client paying with B's test token. Payers' balances and their authorizations' use are read on B, where the
// payments settle. Found by attack: they were read on the default chain A, so a payer holding three prices got one of
// three parallel paid witnesses and two 409 PAYMENT_IN_PROGRESS, and a payment a third party landed on B before the
// facilitator was left unsettled (no receipt, the payer's next paid request 402 unsettled_payment).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Facilitator, startFacilitator, TEST_USD } from "../adapters/devnet/mod.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { type SignedAuthorization, submitAuthorization } from "./support/test_usd.ts";
import { startThreeChains, threeChainsServiceEnv, type TestChain, type ThreeChains } from "./support/three_chains.ts";

const PRICE = 10_000n;
const dir = mkdtempSync(join(tmpdir(), "ats-x402-other-chain-"));
const controller = privateKeyToAccount(generatePrivateKey());
let three: ThreeChains;
let b: TestChain;
let dns: DnsServer;
let facilitator: Facilitator;
let service: ServiceProcess;
/**
 * The facilitator as the service reaches it. `frontRun`: a third party submits the payer's authorization on B before
 * each settle. `settleGate`: each settle is held until the gate's requests each either reached the facilitator's
 * settle or were answered, so a payment stays open while the payer's others are taken or refused (counted, not timed).
 */
let proxy: ReturnType<typeof Bun.serve>;
let frontRun = false;
let frontRuns: Hex[] = [];
let settleGate: { size: number; settled: number; answered: number; waiting: (() => void)[] } | undefined;
let frontRunner: Hex;

const onB = () => createPublicClient({ cacheTime: 0, transport: http(b.nodeUrl), pollingInterval: 50 });
const token = () => b.x402Token!;
const balanceOnB = (address: Hex) => onB().readContract({ address: token(), abi: TEST_USD.abi, functionName: "balanceOf", args: [address] }) as Promise<bigint>;

function openGate(gate: NonNullable<typeof settleGate>) {
  if (gate.settled + gate.answered >= gate.size) for (const release of gate.waiting.splice(0)) release();
}

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
  b = three.chains[1];
  dns = await startDnsServer();
  facilitator = startFacilitator({ rpcUrl: b.nodeUrl, chainId: b.chainId, privateKey: three.keys.facilitator });
  frontRunner = generatePrivateKey();
  await onB().request({ method: "anvil_setBalance" as never, params: [privateKeyToAccount(frontRunner).address, "0xDE0B6B3A7640000"] as never });
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = request.method === "POST" ? await request.text() : undefined;
      const gate = settleGate;
      if (gate !== undefined && path === "/settle") {
        await new Promise<void>((resolve) => {
          gate.waiting.push(resolve);
          gate.settled += 1;
          openGate(gate);
        });
      }
      if (frontRun && path === "/settle") {
        const { paymentPayload } = JSON.parse(body!) as { paymentPayload: { payload: SignedAuthorization } };
        frontRuns.push(await submitAuthorization({ rpcUrl: b.nodeUrl }, token(), frontRunner, paymentPayload.payload));
      }
      return await fetch(`${facilitator.url}${path}`, { method: request.method, headers: { "content-type": "application/json" }, body });
    },
  });
  service = await startServiceProcess({
    ...threeChainsServiceEnv(three, dir),
    INDEX_FOLLOW: "false",
    LOG_LEVEL: "error",
    DNS_SERVERS: dns.address,
    ALLOW_PRIVATE_NETWORK: "true",
    WITNESS_USER_RATE_PER_MINUTE: "1000",
    WITNESS_DOMAIN_RATE_PER_MINUTE: "1000",
    DISCOVERY_DOMAIN_RATE_PER_MINUTE: "1000",
    X402_FACILITATOR_URL: `http://127.0.0.1:${proxy.port}`,
    X402_NETWORK: b.caip2,
    X402_ASSET: token(),
    X402_ASSET_NAME: three.x402.name,
    X402_ASSET_VERSION: three.x402.version,
    X402_PAY_TO: three.x402.payTo,
    X402_WITNESS_PRICE: String(PRICE),
    ...TEST_RELAY_LIMITS,
  }, 60_000);
}, 180_000);

afterAll(async () => {
  if (service !== undefined) expect(await service.stop()).toBe(0);
  proxy?.stop(true);
  await facilitator?.stop();
  await dns?.stop();
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh payer holding exactly `amount` of B's token, sent by a dev account that is not the payee. */
async function fundedPayer(amount: bigint): Promise<{ key: Hex; address: Hex }> {
  const key = generatePrivateKey();
  const address = privateKeyToAccount(key).address;
  const funder = createWalletClient({ account: privateKeyToAccount(three.keys.users[4]!), transport: http(b.nodeUrl) });
  const hash = await funder.writeContract({ address: token(), abi: TEST_USD.abi, functionName: "transfer", args: [address, amount], chain: null });
  await onB().waitForTransactionReceipt({ hash });
  expect(await balanceOnB(address)).toBe(amount);
  return { key, address };
}

/** Witness bodies for `count` subjects the controller key controls. */
function subjects(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => {
    dns.setTxt(`_controllers.${prefix}${i}.test`, [[`v=1;controller=did:pkh:eip155:31337:${controller.address}`]]);
    return { subjectDid: `did:web:${prefix}${i}.test`, controllerDid: `did:pkh:eip155:31337:${controller.address}` };
  });
}

async function post(body: unknown, headers: Record<string, string> = {}) {
  return await fetch(`${service.url}/v1/controller-witness`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

/** The official client's payment header for the terms of an unpaid witness request (they name B and B's token). */
async function paymentFor(key: Hex, body: unknown): Promise<Record<string, string>> {
  const unpaid = await post(body);
  expect(unpaid.status).toBe(401);
  expect(decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!).accepts).toEqual([
    expect.objectContaining({ network: b.caip2, asset: token(), amount: String(PRICE) }),
  ]);
  const client = new x402HTTPClient(
    registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(key) })
      .setSpendControls({ allowedAssets: [{ network: b.caip2 as `${string}:${string}`, asset: token(), maxAmountPerPayment: String(PRICE) }] }),
  );
  const required = client.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.clone().json());
  return client.encodePaymentSignatureHeader(await client.createPaymentPayload(required));
}

test("a payer holding three witness prices on B sends three paid witness requests in parallel: all three are written and settled on B", async () => {
  const { key, address } = await fundedPayer(3n * PRICE);
  const payeeBefore = await balanceOnB(three.x402.payTo);
  const bodies = subjects("parallel", 3);
  const headers: Record<string, string>[] = [];
  for (const body of bodies) headers.push(await paymentFor(key, body));
  const gate = (settleGate = { size: bodies.length, settled: 0, answered: 0, waiting: [] });
  try {
    const answers = await Promise.all(bodies.map(async (body, i) => {
      const answer = await post(body, headers[i]);
      gate.answered += 1;
      openGate(gate);
      return answer;
    }));
    // Read on A, B's balance was unknown: one payment open at a time, the others 409 PAYMENT_IN_PROGRESS.
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const a of answers) expect(decodePaymentResponseHeader(a.headers.get("payment-response")!)).toMatchObject({ success: true, network: b.caip2 });
  } finally {
    settleGate = undefined;
  }
  expect(await balanceOnB(address)).toBe(0n);
  expect(await balanceOnB(three.x402.payTo)).toBe(payeeBefore + 3n * PRICE);
});

test("a third party landing the payer's authorization on B before the facilitator: settled with that transaction, and the payer's next paid request is served", async () => {
  const { key, address } = await fundedPayer(2n * PRICE);
  const payeeBefore = await balanceOnB(three.x402.payTo);
  const [body] = subjects("frontrun", 1);
  const header = await paymentFor(key, body);
  frontRun = true;
  frontRuns = [];
  let answer: Response;
  try {
    answer = await post(body, header);
  } finally {
    frontRun = false;
  }
  expect(answer.status).toBe(200);
  // Read on A, the authorization's use on B was not seen: success false, the payment recorded as the payer's doing.
  expect(frontRuns).toHaveLength(1);
  expect(decodePaymentResponseHeader(answer.headers.get("payment-response")!)).toMatchObject({ success: true, network: b.caip2, transaction: frontRuns[0] });
  expect(await balanceOnB(three.x402.payTo)).toBe(payeeBefore + PRICE);
  // The payer paid: its next paid request is served (it was 402 unsettled_payment).
  const next = await post(body, await paymentFor(key, body));
  expect(next.status).toBe(200);
  expect(decodePaymentResponseHeader(next.headers.get("payment-response")!).success).toBe(true);
  expect(await balanceOnB(address)).toBe(0n);
  expect(await balanceOnB(three.x402.payTo)).toBe(payeeBefore + 2n * PRICE);
});
