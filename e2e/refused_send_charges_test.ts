/**
 * A transaction the node refuses (a JSON-RPC error to `eth_sendRawTransaction`, the bytes never taken) costs nothing
 * (decisions §23, found by attack): the answer, 500 SUBMISSION_FAILED, says nothing was sent and invites the same
 * signature again, and the sponsored write was given back, but the gas charged stayed: a free account's share of the
 * private relay (`PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR`, room for one write) refused the invited retry 429 for the
 * rest of the hour, and on the public relay the hour's budget, the shares and the attester's hourly token stayed spent.
 * A JSON-RPC proxy in front of a real Anvil refuses the sends; the real service over loopback.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { startStack, type Stack } from "./harness.ts";
import { signedLinkedIdentifier } from "./support/linked_identifier.ts";
import { postDelegatedAttest, signedReviewBody } from "./support/review_signer.ts";
import { inFrontOf, isSend, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
const REFUSED = "The chain refused the transaction; nothing was sent, and the same signature may be submitted again";
let proxy: RpcProxy;
let stack: Stack;

beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "10",
      // Room for one linked identifier's charge (its simulated gas limit, about 516,000), not two.
      PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR: "700000",
      // One public write an hour per attester: a token kept by a refused send refuses the retry.
      PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "1",
    },
    rpcUrlFor: inFrontOf(proxy),
    // The refusal is the node's answer to the send, never a late one.
    sendSyncGraceMs: 120_000,
  });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

/** The node refuses every send with a JSON-RPC error, as a node refuses a transaction it does not take. */
function refuseSends() {
  proxy.onCall = (call) => (isSend(call.method) ? { code: -32000, message: "intrinsic gas too low" } : undefined);
}
const takeSends = () => void (proxy.onCall = undefined);

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const easNonce = (key: Hex) =>
  chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [privateKeyToAccount(key).address] });

/** A relay's gas charged this hour, all instances (the service's metrics). */
async function gasUsed(relay: "public" | "private"): Promise<bigint> {
  const text = await (await fetch(`${stack.baseUrl}/metrics`)).text();
  return BigInt(new RegExp(`^ats_${relay}_relay_gas_used (\\d+)$`, "m").exec(text)![1]!);
}

async function privateWrite(cookie: string, body: unknown) {
  const res = await fetch(`${stack.baseUrl}/api/private/relay/eas/delegated-attest`, {
    method: "POST",
    headers: { origin: APP, cookie, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

async function sponsoredWrites(cookie: string) {
  const me = await (await fetch(`${stack.baseUrl}/api/private/accounts/me`, { headers: { cookie, origin: APP } })).json() as { subscription: { sponsoredWritesUsedCurrentYear: number } };
  const session = await (await fetch(`${stack.baseUrl}/v1/session/me`, { headers: { cookie, origin: APP } })).json() as { quota: { reserved: number } };
  return { used: me.subscription.sponsoredWritesUsedCurrentYear, reserved: session.quota.reserved };
}

test("private relay: sends the node refused spend none of a free account's gas share; the invited retry of the same signature is written", async () => {
  const key = generatePrivateKey();
  const cookie = await signInCookie(stack.baseUrl, key, { origin: APP });
  const body = await signedLinkedIdentifier(stack, key, "did:web:refused.test");
  const before = await gasUsed("private");
  refuseSends();
  try {
    // Twice: either charge kept alone left no room in the share for the retry.
    for (let i = 0; i < 2; i++) {
      const refused = await privateWrite(cookie, body);
      expect([refused.status, refused.body.code, refused.body.error]).toEqual([500, "SUBMISSION_FAILED", REFUSED]);
    }
  } finally {
    takeSends();
  }
  expect(await easNonce(key)).toBe(0n);
  expect(await sponsoredWrites(cookie)).toEqual({ used: 0, reserved: 0 });
  expect(await gasUsed("private")).toBe(before);
  const retried = await privateWrite(cookie, body);
  expect([retried.status, retried.body.uid]).toEqual([200, expect.stringMatching(/^0x[0-9a-f]{64}$/)]);
  expect(await easNonce(key)).toBe(1n);
  expect(await sponsoredWrites(cookie)).toEqual({ used: 1, reserved: 0 });
  expect(await gasUsed("private")).toBeGreaterThan(before);
});

test("public relay: a send the node refused keeps none of the hour's gas nor the attester's hourly token; the same signature is then written", async () => {
  const key = generatePrivateKey();
  const body = await signedReviewBody({ chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids }, key);
  const before = await gasUsed("public");
  refuseSends();
  try {
    const refused = await postDelegatedAttest(stack.baseUrl, body);
    expect([refused.status, refused.body.code, refused.body.error]).toEqual([500, "SUBMISSION_FAILED", REFUSED]);
  } finally {
    takeSends();
  }
  expect(await easNonce(key)).toBe(0n);
  expect(await gasUsed("public")).toBe(before);
  // The attester's one write of the hour is still there.
  const retried = await postDelegatedAttest(stack.baseUrl, body);
  expect([retried.status, retried.body.uid]).toEqual([200, expect.stringMatching(/^0x[0-9a-f]{64}$/)]);
  expect(await gasUsed("public")).toBeGreaterThan(before);
});
