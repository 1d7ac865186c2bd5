/**
 * A provider whose receipts lag: `eth_getTransactionReceipt` answers null for a mined transaction (a load-balanced
 * backend behind the head), while `eth_getTransactionByHash` names its block. Found by attack: a private relay write
 * mined, its request ended without the receipt (503 OUTCOME_UNKNOWN at the shutdown's grace), and the restart's
 * reconciler read "replaced", recorded the submission mined with no uid and gave the sponsored write back: a plan of
 * three writes put four attestations on chain. A write on chain is never given back (decisions §12, §15): the row
 * stays open until the receipt comes, and counts against the plan meanwhile.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { startStack, type Stack } from "./harness.ts";
import { inFrontOf, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { signInCookie } from "./support/sign_in.ts";
import { waitFor } from "./support/wait_for.ts";

const APP = "https://app.test";
const PLAN = 3;
const LINKED = findSchemaByName("linked-identifier")!;
let proxy: RpcProxy;
let stack: Stack;

beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: {
      RPC_SEND_SYNC: "off",
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: String(PLAN),
      SHUTDOWN_GRACE_MS: "1500",
    },
    rpcUrlFor: inFrontOf(proxy),
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const easNonce = (key: Hex) =>
  chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [privateKeyToAccount(key).address] });

async function linked(key: Hex, nonce: bigint, linkedId: string) {
  const account = privateKeyToAccount(key);
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["linked-identifier"] as Hex, schema: LINKED.schema, revocable: LINKED.revocable },
    data: { subject: `did:pkh:eip155:31337:${account.address.toLowerCase()}`, linkedId, proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 },
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

async function call(base: string, method: string, path: string, cookie: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { origin: APP, cookie, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

test("a mined private relay write whose receipt the provider does not give is never given back: the chain holds at most the plan's writes", async () => {
  const alice = generatePrivateKey();
  const cookie = await signInCookie(stack.baseUrl, alice, { origin: APP });
  const first = await linked(alice, 0n, "did:web:first.test");
  proxy.onAnswer = (rpc, answer) => (rpc.method === "eth_getTransactionReceipt" ? { ...answer, result: null } : answer);
  const pending = call(stack.baseUrl, "POST", "/api/private/relay/eas/delegated-attest", cookie, first);
  await waitFor("the first write mined", async () => ((await easNonce(alice)) === 1n ? true : undefined));
  const stopping = stack.service.stop();
  const answer = await pending;
  await stopping;
  expect([answer.status, answer.body.code]).toEqual([503, "OUTCOME_UNKNOWN"]);

  // The restart's reconciler (grace 0 on SQLite) finds the transaction in a block with no receipt: the write stays open.
  const next = await stack.restartService();
  const again = await call(next.url, "POST", "/api/private/relay/eas/delegated-attest", cookie, first);
  expect([again.status, again.body.code]).toEqual([409, "DUPLICATE"]);

  // The provider healed: the plan has two writes left, not three.
  proxy.onAnswer = undefined;
  const more: number[] = [];
  for (const n of [1n, 2n, 3n]) {
    more.push((await call(next.url, "POST", "/api/private/relay/eas/delegated-attest", cookie, await linked(alice, n, `did:web:more-${n}.test`))).status);
  }
  expect(more).toEqual([200, 200, 403]);
  expect(await easNonce(alice)).toBe(BigInt(PLAN));

  // The next start reads the receipt: the first write is charged, with its uid.
  await next.stop();
  const last = await stack.restartService();
  const me = await call(last.url, "GET", "/api/private/accounts/me", cookie);
  expect([me.body.subscription.sponsoredWritesUsedCurrentYear, me.body.subscription.annualSponsoredWriteLimit]).toEqual([PLAN, PLAN]);
  const settled = await call(last.url, "POST", "/api/private/relay/eas/delegated-attest", cookie, first);
  expect([settled.status, settled.body.code]).toEqual([409, "DUPLICATE"]);
  // Open, the duplicate named the transaction; settled, it names the attestation, which EAS holds as alice's.
  expect(settled.body.details).not.toBe(again.body.details);
  const attestation = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [settled.body.details as Hex] });
  expect(attestation.attester).toBe(privateKeyToAccount(alice).address);
  expect(await easNonce(alice)).toBe(BigInt(PLAN));
}, 180_000);
