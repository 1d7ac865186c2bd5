/**
 * `POST /api/private/rpc-premium` on the devnet (issue 17, item 7): read calls forwarded and counted against the
 * plan, writes and over-wide log ranges refused as JSON-RPC errors and never forwarded, the limit, no session.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { signInWithWallet, type WalletSession } from "../http/client/session.ts";
import { type RpcProxy, inFrontOf, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
let stack: Stack;
let proxy: RpcProxy;
beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, FREE_PLAN_ANNUAL_PREMIUM_READS: "5", PREMIUM_RPC_MAX_LOG_RANGE: "100" },
    rpcUrlFor: inFrontOf(proxy),
  });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

async function signIn(): Promise<WalletSession> {
  const wallet = privateKeyToAccount(generatePrivateKey());
  return await signInWithWallet({
    walletDid: `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`,
    domain: "app.test",
    uri: `${APP}/login`,
    sign: (message) => wallet.signMessage({ message }),
  }, { baseUrl: stack.baseUrl, origin: APP });
}

async function premium(body: unknown, cookie?: string) {
  const res = await fetch(`${stack.baseUrl}/api/private/rpc-premium`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: APP, ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as any };
}
const used = async (cookie: string) =>
  (await (await fetch(`${stack.baseUrl}/api/private/accounts/me`, { headers: { cookie, origin: APP } })).json() as any).subscription.premiumReadsUsedCurrentYear;

describe("premium reads", () => {
  test("reads are answered by the chain and counted; writes and wide ranges are refused and never forwarded; the limit holds", async () => {
    const session = await signIn();
    const head = await createPublicClient({ transport: http(stack.devnet.rpcUrl) }).getBlockNumber();
    const single = await premium({ jsonrpc: "2.0", id: 7, method: "eth_blockNumber", params: [] }, session.cookie);
    expect(single.status).toBe(200);
    expect(single.body.id).toBe(7);
    expect(BigInt(single.body.result)).toBeGreaterThanOrEqual(head);
    expect(await used(session.cookie)).toBe(1);

    proxy.calls.length = 0;
    const batch = await premium([
      { jsonrpc: "2.0", id: "chain", method: "eth_chainId", params: [] },
      { jsonrpc: "2.0", id: "write", method: "eth_sendRawTransaction", params: ["0x02f8"] },
      { jsonrpc: "2.0", id: "wide", method: "eth_getLogs", params: [{ fromBlock: "0x0", toBlock: "0x1000" }] },
      { jsonrpc: "2.0", id: "balance", method: "eth_getBalance", params: [privateKeyToAccount(stack.devnet.keys.delegate).address, "latest"] },
    ], session.cookie);
    expect(batch.status).toBe(200);
    expect(batch.body.map((a: { id: string }) => a.id)).toEqual(["chain", "write", "wide", "balance"]);
    expect(BigInt(batch.body[0].result)).toBe(BigInt(stack.devnet.chainId));
    expect(batch.body[1].error.code).toBe(-32601);
    expect(batch.body[2].error.code).toBe(-32602);
    expect(BigInt(batch.body[3].result)).toBeGreaterThan(0n);
    expect(proxy.calls.map((c) => c.method).sort()).toEqual(["eth_chainId", "eth_getBalance"]);
    expect(await used(session.cookie)).toBe(3);

    // Five reads a year on this plan: two left, a batch of three is refused whole.
    const over = await premium([1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, method: "eth_chainId", params: [] })), session.cookie);
    expect([over.status, over.body.code]).toEqual([403, "PREMIUM_READ_LIMIT_EXCEEDED"]);
    expect(await used(session.cookie)).toBe(3);
  });

  test("without a session 401; a cross-origin request 403", async () => {
    const none = await premium({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
    expect([none.status, none.body.code]).toEqual([401, "UNAUTHENTICATED"]);
    const session = await signIn();
    const res = await fetch(`${stack.baseUrl}/api/private/rpc-premium`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "https://evil.test", cookie: session.cookie },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(res.status).toBe(403);
  });
});
