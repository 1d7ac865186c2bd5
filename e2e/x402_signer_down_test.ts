/**
 * x402 with its offer/receipt key in a remote signer (decisions §27), on the devnet with the official x402 client as
 * the paying agent: while the signer is down a paid request is 503 SIGNER_UNAVAILABLE with Retry-After before the
 * payment is verified or settled (nobody's balance moves); once it is back the same payment goes through, once, and
 * the answer carries a receipt signed by that key.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, type Hex, http, recoverTypedDataAddress } from "viem";
import { type ReceiptPayload, receiptTypedData } from "../domain/payments/mod.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS, type Facilitator, startFacilitator, TEST_USD } from "../adapters/devnet/mod.ts";
import type { Service } from "../app/service.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";
import { type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";

const PRICE = 10_000n;
const ISSUER = privateKeyToAccount(ANVIL_DEV_KEYS[8]!).address;
const controllerKey = privateKeyToAccount(generatePrivateKey());

let dns: DnsServer;
let stack: Stack;
let service: Service;
let facilitator: Facilitator;
let signer: RpcProxy;

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const balance = (address: Hex) =>
  chain().readContract({ address: stack.devnet.x402.token, abi: TEST_USD.abi, functionName: "balanceOf", args: [address] }) as Promise<bigint>;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.paid.test", [[`v=1;controller=did:pkh:eip155:31337:${controllerKey.address}`]]);
  signer = startRpcProxy("http://127.0.0.1:9");
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      WITNESS_USER_RATE_PER_MINUTE: "1000",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "1000",
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "1000",
    },
  });
  signer.upstream = stack.devnet.rpcUrl;
  facilitator = startFacilitator({ rpcUrl: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, privateKey: stack.devnet.keys.facilitator });
  service = await stack.restartService({
    X402_SIGNER: `jsonrpc:${signer.url}#${ISSUER}`,
    X402_FACILITATOR_URL: facilitator.url,
    X402_ASSET: stack.devnet.x402.token,
    X402_ASSET_NAME: stack.devnet.x402.name,
    X402_ASSET_VERSION: stack.devnet.x402.version,
    X402_PAY_TO: stack.devnet.x402.payTo,
    X402_WITNESS_PRICE: String(PRICE),
  });
});
afterAll(async () => {
  await facilitator?.stop();
  await stack?.stop();
  await signer?.stop();
  await dns?.stop();
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${service.url}/v1/paid/controller-witness`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

describe("x402 with its signer down", () => {
  test("503 SIGNER_UNAVAILABLE before the payment is taken; the same payment succeeds once the signer is back", async () => {
    const key = stack.devnet.keys.users[4]!;
    const payer = privateKeyToAccount(key).address;
    const body = { subjectDid: "did:web:paid.test", controllerDid: `did:pkh:eip155:31337:${controllerKey.address}` };
    const unpaid = await post(body);
    expect(unpaid.status).toBe(402);
    const client = new x402HTTPClient(
      registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(key) })
        .setSpendControls({ allowedAssets: [{ network: "eip155:31337", asset: stack.devnet.x402.token, maxAmountPerPayment: String(PRICE) }] }),
    );
    const required = client.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.clone().json());
    const header = client.encodePaymentSignatureHeader(await client.createPaymentPayload(required));
    const [payerBefore, payeeBefore] = [await balance(payer), await balance(stack.devnet.x402.payTo)];

    signer.onHttp = () => new Response("signer down", { status: 503 });
    const down = await post(body, header);
    const downText = await down.text();
    expect(down.status).toBe(503);
    expect(JSON.parse(downText)).toMatchObject({ code: "SIGNER_UNAVAILABLE" });
    expect(Number(down.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(downText).not.toContain("127.0.0.1");
    expect([await balance(payer), await balance(stack.devnet.x402.payTo)]).toEqual([payerBefore, payeeBefore]);

    signer.onHttp = undefined;
    const paid = await post(body, header);
    expect(paid.status).toBe(200);
    const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response")!) as { success: boolean; extensions?: Record<string, unknown> };
    expect(settlement.success).toBe(true);
    expect([await balance(payer), await balance(stack.devnet.x402.payTo)]).toEqual([payerBefore - PRICE, payeeBefore + PRICE]);
    // The receipt is signed by the configured key.
    const receipt = (settlement.extensions?.["offer-receipt"] as { info: { receipt: { payload: ReceiptPayload; signature: Hex } } }).info.receipt;
    expect(await recoverTypedDataAddress({ ...receiptTypedData(receipt.payload), signature: receipt.signature } as never)).toBe(ISSUER);
  });
});
