/**
 * `POST /api/private/rpc-premium` on the devnet (issue 17, item 7): read calls forwarded and counted against the
 * plan, writes and over-wide log ranges refused as JSON-RPC errors and never forwarded, a node failure given
 * back, the limit (five reads: the sixth is 403), no session 401, a foreign origin 403. Every JSON-RPC call the
 * service makes goes through a recording proxy in front of Anvil.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, type Hex, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { signInWithWallet, type WalletSession } from "../http/client/session.ts";
import { type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
let stack: Stack;
let proxy: RpcProxy;
beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, FREE_PLAN_ANNUAL_PREMIUM_READS: "5", PREMIUM_RPC_MAX_LOG_RANGE: "100" },
    rpcUrlFor: (url) => {
      proxy.upstream = url;
      return proxy.url;
    },
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

async function premium(body: unknown, cookie?: string, origin = APP) {
  const res = await fetch(`${stack.baseUrl}/api/private/rpc-premium`, {
    method: "POST",
    headers: { "content-type": "application/json", origin, ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as any };
}
const used = async (cookie: string) =>
  (await (await fetch(`${stack.baseUrl}/api/private/accounts/me`, { headers: { cookie, origin: APP } })).json() as any).subscription.premiumReadsUsedCurrentYear;
const rpcCall = (id: unknown, method: string, params: unknown[] = []) => ({ jsonrpc: "2.0", id, method, params });

describe("premium reads", () => {
  test("reads are answered by the chain and counted; writes and wide ranges are refused and never forwarded; a node failure is given back; the sixth read of five is 403", async () => {
    const session = await signIn();
    const chain = createPublicClient({ transport: http(stack.devnet.rpcUrl) });
    const head = await chain.getBlockNumber();

    // 1. A single eth_blockNumber, answered by the chain.
    const single = await premium(rpcCall(7, "eth_blockNumber"), session.cookie);
    expect(single.status).toBe(200);
    expect(single.body).toEqual({ jsonrpc: "2.0", id: 7, result: expect.any(String) });
    expect(BigInt(single.body.result)).toBeGreaterThanOrEqual(head);
    expect(await used(session.cookie)).toBe(1);

    // 2. A batch: a read, a real signed transfer from a funded wallet (refused), a log range of 4,097 blocks
    //    (refused: at most 100 here) and a balance, answered in order.
    const sender = privateKeyToAccount(stack.devnet.keys.users[0] as Hex);
    const nonceBefore = await chain.getTransactionCount({ address: sender.address, blockTag: "pending" });
    const balanceBefore = await chain.getBalance({ address: sender.address });
    const rawTransaction = await sender.signTransaction({
      chainId: stack.devnet.chainId,
      nonce: nonceBefore,
      to: privateKeyToAccount(generatePrivateKey()).address,
      value: parseEther("1"),
      gas: 21_000n,
      maxFeePerGas: 100_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    });
    proxy.calls.length = 0;
    const batch = await premium([
      rpcCall("chain", "eth_chainId"),
      rpcCall("write", "eth_sendRawTransaction", [rawTransaction]),
      rpcCall("wide", "eth_getLogs", [{ fromBlock: "0x0", toBlock: "0x1000" }]),
      rpcCall("balance", "eth_getBalance", [sender.address, "latest"]),
    ], session.cookie);
    expect(batch.status).toBe(200);
    expect(batch.body.map((a: { id: string }) => a.id)).toEqual(["chain", "write", "wide", "balance"]);
    expect(BigInt(batch.body[0].result)).toBe(BigInt(stack.devnet.chainId));
    expect(batch.body[1].error.code).toBe(-32601);
    expect(batch.body[1].result).toBeUndefined();
    expect(batch.body[2].error.code).toBe(-32602);
    expect(BigInt(batch.body[3].result)).toBe(balanceBefore);
    // Neither refused call reached the node (other traffic of the service, such as the index follower, may have).
    expect(proxy.calls.filter((c) => c.method === "eth_sendRawTransaction")).toEqual([]);
    expect(proxy.calls.filter((c) => c.method === "eth_getLogs" && JSON.stringify(c.params).includes("0x1000"))).toEqual([]);
    expect(proxy.calls.filter((c) => c.method === "eth_getBalance" && JSON.stringify(c.params).includes(sender.address))).toHaveLength(1);
    // And the chain did not move: the transfer was never sent.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await chain.getTransactionCount({ address: sender.address, blockTag: "pending" })).toBe(nonceBefore);
    expect(await chain.getBalance({ address: sender.address })).toBe(balanceBefore);
    expect(await used(session.cookie)).toBe(3);

    // 3. A log range with its upper bound missing (the head, read first) within the limit: forwarded and counted.
    const recent = await chain.getBlockNumber();
    const tagged = await premium(rpcCall("logs", "eth_getLogs", [{ fromBlock: `0x${(recent > 5n ? recent - 5n : 0n).toString(16)}` }]), session.cookie);
    expect([tagged.status, tagged.body.id, Array.isArray(tagged.body.result)]).toEqual([200, "logs", true]);
    const afterTagged = 4;
    expect(await used(session.cookie)).toBe(afterTagged);

    // 4. The node cannot be reached: 502 without its text, the reads given back.
    proxy.onHttp = (calls) => (calls.some((c) => c.method === "eth_getCode") ? new Response("upstream secret", { status: 502 }) : undefined);
    const down = await premium(rpcCall(1, "eth_getCode", [sender.address, "latest"]), session.cookie);
    proxy.onHttp = undefined;
    expect([down.status, down.body]).toEqual([502, { error: "The chain did not answer", code: "NETWORK_ERROR" }]);
    expect(await used(session.cookie)).toBe(afterTagged);

    // 5. Five reads a year on this plan: a batch that does not fit is refused whole, then reads up to five, the sixth 403.
    const left = 5 - afterTagged;
    const tooMany = await premium(Array.from({ length: left + 1 }, (_, i) => rpcCall(i, "eth_chainId")), session.cookie);
    expect([tooMany.status, tooMany.body.code]).toEqual([403, "PREMIUM_READ_LIMIT_EXCEEDED"]);
    expect(await used(session.cookie)).toBe(afterTagged);
    for (let i = 0; i < left; i++) expect((await premium(rpcCall(i, "eth_chainId"), session.cookie)).status).toBe(200);
    expect(await used(session.cookie)).toBe(5);
    proxy.calls.length = 0;
    const sixth = await premium(rpcCall(6, "eth_blockNumber"), session.cookie);
    expect([sixth.status, sixth.body]).toEqual([403, { error: "Premium read limit exceeded", code: "PREMIUM_READ_LIMIT_EXCEEDED" }]);
    expect(await used(session.cookie)).toBe(5);
    // A refused call needs no read: it is still answered at the limit.
    const refusedAtLimit = await premium(rpcCall(8, "eth_sendRawTransaction", [rawTransaction]), session.cookie);
    expect([refusedAtLimit.status, refusedAtLimit.body.error.code]).toEqual([200, -32601]);
    expect(proxy.calls.filter((c) => c.method === "eth_sendRawTransaction")).toEqual([]);

    // Another account has its own five.
    const other = await signIn();
    expect((await premium(rpcCall(1, "eth_chainId"), other.cookie)).status).toBe(200);
    expect(await used(other.cookie)).toBe(1);
  });

  test("without a session 401; a foreign origin 403; a malformed body 400", async () => {
    const none = await premium(rpcCall(1, "eth_chainId"));
    expect([none.status, none.body.code]).toEqual([401, "UNAUTHENTICATED"]);
    const session = await signIn();
    const foreign = await premium(rpcCall(1, "eth_chainId"), session.cookie, "https://evil.test");
    expect([foreign.status, foreign.body.code]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
    const empty = await premium([], session.cookie);
    expect([empty.status, empty.body.code]).toEqual([400, "INVALID_INPUT"]);
    const res = await fetch(`${stack.baseUrl}/api/private/rpc-premium`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: APP, cookie: session.cookie },
      body: "{\"jsonrpc\":",
    });
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([400, "INVALID_JSON"]);
    expect(await used(session.cookie)).toBe(0);
  });
});
