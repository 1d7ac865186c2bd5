/**
 * A sign-in's contract-wallet check runs code the request names on the service's node (an ERC-6492 factory call, then
 * `isValidSignature`): found by attacking sign-in, one challenge took any number of verify attempts, each running a
 * factory that loops at the node's cap (a block's gas): about 185 times a plain check's node CPU, unauthenticated.
 * Now each check carries its own gas cap and a challenge asks the chain at most five times; the answers stay 401
 * `INVALID_SIGNATURE` (never a 502: the wallet refused, the node did not fail).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http, serializeErc6492Signature } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { CONTRACT_CHECKS_PER_CHALLENGE } from "../app/accounts.ts";
import { inFrontOf, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { postDelegatedAttest, signedReviewBody } from "./support/review_signer.ts";
import { startStack, type Stack } from "./harness.ts";
import { LOOPING_CONTRACT_INITCODE } from "./support/test_wallet.ts";

const APP = "https://app.test";
let stack: Stack;
let proxy: RpcProxy;
let looping: Hex;

beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({ env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP }, rpcUrlFor: inFrontOf(proxy) });
  const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 20 });
  const deployer = createWalletClient({ account: privateKeyToAccount(stack.devnet.keys.users[5]!), transport: http(stack.devnet.rpcUrl) });
  const deployed = await deployer.sendTransaction({ data: LOOPING_CONTRACT_INITCODE, chain: null });
  looping = (await client.waitForTransactionReceipt({ hash: deployed })).contractAddress!;
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

async function post(path: string, body: unknown) {
  const res = await fetch(`${stack.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", origin: APP }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

test("verify attempts naming a looping factory: each check at its capped gas, at most five a challenge, all 401", async () => {
  const account = privateKeyToAccount(generatePrivateKey());
  const wallet = account.address;
  const challenge = await post("/v1/session/wallet/challenge", { walletDid: `did:pkh:eip155:31337:${wallet}`, domain: "app.test", uri: `${APP}/login` });
  expect(challenge.status).toBe(200);
  const signature = serializeErc6492Signature({ address: looping, data: "0x00", signature: `0x${"11".repeat(65)}` });
  const attempt = { challengeId: challenge.body.challengeId, siweMessage: challenge.body.siweMessage, signature };
  const mark = proxy.calls.length;
  const answers = [];
  for (let i = 0; i < CONTRACT_CHECKS_PER_CHALLENGE + 3; i++) {
    const answer = await post("/v1/session/wallet/verify", attempt);
    answers.push([answer.status, answer.body.code]);
  }
  expect(answers).toEqual(Array(CONTRACT_CHECKS_PER_CHALLENGE + 3).fill([401, "INVALID_SIGNATURE"]));
  const checks = proxy.calls.slice(mark).filter((c) => c.method === "eth_call");
  expect(checks.length).toBe(CONTRACT_CHECKS_PER_CHALLENGE);
  expect(new Set(checks.map((c) => (c.params[0] as { gas?: string }).gas))).toEqual(new Set([`0x${(3_000_000).toString(16)}`]));
  // The challenge still stands for its wallet's own signature (checked locally): the bound refuses chain checks only.
  const own = await post("/v1/session/wallet/verify", { ...attempt, signature: await account.signMessage({ message: String(challenge.body.siweMessage) }) });
  expect(own.status).toBe(200);
});

test("a public write's simulation searches no further than PUBLIC_RELAY_MAX_GAS_PER_TX allows, with its headroom", async () => {
  // Before, the estimate ran at the node's cap (a block's gas): a contract attester's isValidSignature ran in it too.
  const target = { chainId: stack.service.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids };
  const mark = proxy.calls.length;
  const written = await postDelegatedAttest(stack.baseUrl, await signedReviewBody(target, generatePrivateKey()));
  expect(written.status).toBe(200);
  const estimates = proxy.calls.slice(mark).filter((c) => c.method === "eth_estimateGas");
  expect(estimates.map((c) => (c.params[0] as { gas?: string }).gas)).toEqual([`0x${((3_000_000n * 10n) / 12n).toString(16)}`]);
});

test("a public batch's simulation searches no further than its requests' share: PUBLIC_RELAY_MAX_GAS_PER_TX each, with its headroom", async () => {
  // Before, a batch's estimate ran at the node's cap whatever the relay's limit.
  const target = { chainId: stack.service.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids };
  const requests = [await signedReviewBody(target, generatePrivateKey()), await signedReviewBody(target, generatePrivateKey()), await signedReviewBody(target, generatePrivateKey())];
  const mark = proxy.calls.length;
  const res = await fetch(`${stack.baseUrl}/v1/delegated-attest/batch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ requests }) });
  const body = await res.json() as { results: { uid?: string }[] };
  expect([res.status, body.results.map((r) => typeof r.uid)]).toEqual([200, ["string", "string", "string"]]);
  const estimates = proxy.calls.slice(mark).filter((c) => c.method === "eth_estimateGas");
  expect(estimates.map((c) => (c.params[0] as { gas?: string }).gas)).toEqual([`0x${((3n * 3_000_000n * 10n) / 12n).toString(16)}`]);
});
