/**
 * The added latency of paying with x402 (issue 18, decisions §13). On the embedded devnet, with the devnet's
 * EIP-3009 token and a facilitator built on the official packages, N private-relay writes made by a signed-in
 * account are timed against N made by an agent paying each with the official client (`@x402/core` + `@x402/evm`
 * exact, a viem account), in the same run, alternating. Three figures per paid write: the paid request alone
 * (verify, replay key, the write, settlement on chain, receipt), the agent's whole exchange (the 402, signing the
 * authorization, the paid request), and each as a ratio to the signed-in write.
 *
 *   bun run bench/x402_payment_path.ts [N]
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startFacilitator } from "../adapters/devnet/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack } from "../e2e/harness.ts";
import { signInCookie } from "../e2e/support/sign_in.ts";

const N = Number(process.argv[2] ?? 20);
const APP = "https://app.test";
const stack = await startStack({ env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, FREE_PLAN_SCHEMAS: "*", FREE_PLAN_ANNUAL_WRITES: "100000" } });
const facilitator = startFacilitator({ rpcUrl: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, privateKey: stack.devnet.keys.facilitator });
const service = await stack.restartService({
  X402_FACILITATOR_URL: facilitator.url,
  X402_ASSET: stack.devnet.x402.token,
  X402_ASSET_NAME: stack.devnet.x402.name,
  X402_ASSET_VERSION: stack.devnet.x402.version,
  X402_PAY_TO: stack.devnet.x402.payTo,
  X402_RELAY_PRICE: "5000",
});
const def = findSchemaByName("user-review")!;
const path = `${service.url}/api/private/relay/eas/delegated-attest`;

async function review(key: Hex, nonce: bigint): Promise<string> {
  const account = privateKeyToAccount(key);
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: "did:web:bench.example", version: "1", ratingValue: 4, reviewBody: `ok ${nonce}`, screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce,
    chainId: service.chainId,
    easAddress: service.easAddress,
  });
  return JSON.stringify({ prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address });
}

// The signed-in account.
const member = generatePrivateKey();
const cookie = await signInCookie(service.url, member, { origin: APP });

// The paying agent: an Anvil dev account holding the devnet token.
const payerKey = stack.devnet.keys.users[0]!;
const agent = new x402HTTPClient(
  registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(payerKey) })
    .setSpendControls({ allowedAssets: [{ network: "eip155:31337", asset: stack.devnet.x402.token }] }),
);

const signedIn: number[] = [];
const paidRequest: number[] = [];
const paidExchange: number[] = [];
const post = (body: string, headers: Record<string, string>) =>
  fetch(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
for (let i = 0; i < N + 2; i++) {
  const warm = i < 2;
  const memberBody = await review(member, BigInt(i));
  let t = performance.now();
  const a = await post(memberBody, { origin: APP, cookie });
  if (a.status !== 200) throw new Error(`signed-in write: ${a.status} ${await a.text()}`);
  if (!warm) signedIn.push(performance.now() - t);

  const agentBody = await review(payerKey, BigInt(i));
  const start = performance.now();
  const unpaid = await post(agentBody, {});
  const required = agent.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.json());
  const header = agent.encodePaymentSignatureHeader(await agent.createPaymentPayload(required));
  t = performance.now();
  const paid = await post(agentBody, header);
  if (paid.status !== 200 || paid.headers.get("payment-response") === null) throw new Error(`paid write: ${paid.status} ${await paid.text()}`);
  await paid.arrayBuffer();
  if (!warm) {
    paidRequest.push(performance.now() - t);
    paidExchange.push(performance.now() - start);
  }
}
const p50 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const [base, request, exchange] = [p50(signedIn), p50(paidRequest), p50(paidExchange)];
const ms = (x: number) => `${x.toFixed(1)} ms`;
console.log(JSON.stringify({
  writes: N,
  signedInP50: ms(base),
  paidRequestP50: ms(request),
  paidExchangeP50: ms(exchange),
  addedByPaymentRequest: ms(request - base),
  addedByPaymentExchange: ms(exchange - base),
  paidRequestToSignedIn: Number((request / base).toFixed(2)),
  paidExchangeToSignedIn: Number((exchange / base).toFixed(2)),
}));
await facilitator.stop();
await stack.stop();
process.exit(0);
