/**
 * A signed deadline that passes while the write waits for the delegate wallet's lock behind a slow node (decisions §6):
 * found by attack, with RPC_SEND_SYNC=off and a node answering each send 8 s after it took it, requests that passed the
 * margin on arrival were signed and sent after their deadline, reverted on chain at the delegate's cost (500
 * SUBMISSION_FAILED), and the private relay kept the account's sponsored write for them. The deadline is now asked again
 * once the wallet's lock is held, before signing.
 *
 * The order is the proxy's, not the machine's speed: the first send's answer is held until every other request passed
 * its checks and the service's clock reached the point where their deadlines are within the margin, and the chain's
 * time is moved past those deadlines (a request signed and sent after that would revert). What is counted: the
 * transactions the delegate sent, their receipts, the answers and the accounts' sponsored writes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { inFrontOf, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { signInCookie } from "./support/sign_in.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
const MARGIN = 30;
/** Seconds beyond the margin the deadlines are signed with: the requests' checks on arrival run within them. */
const SLACK = 8;

let proxy: RpcProxy;
let stack: Stack;
beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: {
      RPC_SEND_SYNC: "off",
      DEADLINE_MARGIN_SECONDS: String(MARGIN),
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "3",
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
    },
    rpcUrlFor: inFrontOf(proxy),
  });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const pkh = (key: Hex) => `did:pkh:eip155:${stack.devnet.chainId}:${privateKeyToAccount(key).address.toLowerCase()}`;

/** A signed body of `schema` by `key`, for nonce 0, with `deadline`. */
async function signedBody(key: Hex, schema: "user-review" | "linked-identifier", deadline: bigint) {
  const account = privateKeyToAccount(key);
  const def = findSchemaByName(schema)!;
  const data = schema === "user-review"
    ? { subject: "did:web:shop.test", version: "1", ratingValue: 4, reviewBody: "queued", screenshotUrls: [], proofs: [] }
    : { subject: pkh(key), linkedId: "did:web:elsewhere.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 };
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids[schema] as Hex, schema: def.schema, revocable: def.revocable },
    data,
    attester: account.address,
    nonce: 0n,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
    deadline,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

async function call(method: string, path: string, body?: unknown, cookie?: string) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { ...(cookie === undefined ? {} : { origin: APP, cookie }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

async function anvil(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(stack.devnet.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await res.json()) as { result: unknown }).result;
}

/** Resolves once `condition` holds, asked every few milliseconds (a wait on a state, never a guess at a duration). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await Bun.sleep(5);
}

test("writes queued behind a slow send whose deadlines come within the margin meanwhile are refused unsent: no revert, no sponsored write kept", async () => {
  const delegate = privateKeyToAccount(stack.devnet.keys.delegate).address;
  const privateKeys = Array.from({ length: 3 }, () => generatePrivateKey());
  const cookies = await Promise.all(privateKeys.map((key) => signInCookie(stack.baseUrl, key, { origin: APP })));
  const before = await chain().getTransactionCount({ address: delegate });
  const firstBlock = (await chain().getBlockNumber()) + 1n;

  // The first send reaches the node at once (automine: mined), and its answer is held until released.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let heldOne = false;
  proxy.onAnswered = async (calls) => {
    if (!heldOne && calls.some((c) => c.method === "eth_sendRawTransaction")) {
      heldOne = true;
      await released;
    }
    return undefined;
  };
  const sendsFrom = proxy.calls.length;
  const seen = (method: string) => proxy.calls.slice(sendsFrom).filter((c) => c.method === method).length;

  const deadline = BigInt(Math.floor(Date.now() / 1000) + MARGIN + SLACK);
  const publicBodies = await Promise.all(Array.from({ length: 3 }, () => signedBody(generatePrivateKey(), "user-review", deadline)));
  const batchBodies = await Promise.all(Array.from({ length: 2 }, () => signedBody(generatePrivateKey(), "user-review", deadline)));
  const privateBodies = await Promise.all(privateKeys.map((key) => signedBody(key, "linked-identifier", deadline)));
  let answered = 0;
  const counted = <T>(p: Promise<T>) => p.finally(() => void answered++);
  const singles = Promise.all([
    ...publicBodies.map((body) => counted(call("POST", "/v1/delegated-attest", body))),
    ...privateBodies.map((body, i) => counted(call("POST", "/api/private/relay/eas/delegated-attest", body, cookies[i]))),
  ]);
  const batch = counted(call("POST", "/v1/delegated-attest/batch", { requests: batchBodies }));

  // Every request simulated (passed its checks on arrival: one simulation each, the batch one) or answered, and the
  // first send held; then the service's clock past the point where the deadline is within the margin, and the chain's
  // time past the deadline itself.
  const requests = publicBodies.length + privateBodies.length + 1;
  await until(() => (heldOne && seen("eth_estimateGas") + answered >= requests) || answered === requests);
  await until(() => Math.floor(Date.now() / 1000) + MARGIN >= Number(deadline));
  await anvil("evm_increaseTime", [MARGIN * 2]);
  release();
  const [answers, batchAnswer] = await Promise.all([singles, batch]);
  proxy.onAnswered = undefined;

  // One transaction left the delegate wallet, and it was mined: none was signed after the deadline came too close.
  expect(seen("eth_sendRawTransaction")).toBe(1);
  const after = await chain().getTransactionCount({ address: delegate });
  expect(after - before).toBe(1);
  const statuses: string[] = [];
  for (let n = firstBlock; n <= (await chain().getBlockNumber()); n++) {
    for (const tx of (await chain().getBlock({ blockNumber: n, includeTransactions: true })).transactions) {
      if (tx.from.toLowerCase() === delegate.toLowerCase()) statuses.push((await chain().getTransactionReceipt({ hash: tx.hash })).status);
    }
  }
  expect(statuses).toEqual(["success"]);

  // The write that held the lock first went through; every other was refused 400 SIGNATURE_EXPIRED, unsent.
  const outcomes = [
    ...answers.map((a) => (a.status === 200 ? "ok" : `${a.status} ${a.body.code}`)),
    ...(batchAnswer.body.results as Record<string, any>[]).map((r) => (r.uid !== undefined ? "ok" : `${r.status} ${r.code}`)),
  ];
  const okCount = outcomes.filter((o) => o === "ok").length;
  expect(okCount === 1 || (okCount === 2 && batchAnswer.body.txHash !== null)).toBe(true);
  expect(outcomes.filter((o) => o !== "ok").every((o) => o === "400 SIGNATURE_EXPIRED")).toBe(true);
  expect(outcomes.filter((o) => o !== "ok")).toHaveLength(outcomes.length - okCount);

  // The private relay charged a sponsored write only for a write that landed.
  for (const [i, cookie] of cookies.entries()) {
    const me = await call("GET", "/api/private/accounts/me", undefined, cookie);
    const landed = answers[publicBodies.length + i]!.status === 200;
    expect(me.body.subscription.sponsoredWritesUsedCurrentYear).toBe(landed ? 1 : 0);
  }
}, 120_000);
