/**
 * Transaction proofs and a reorganisation (decisions §29, §30; found by attacking the proof routes): a receipt is kept
 * only once it is as deep as the chain's confirmations, as the index counts them. A transaction the chain took back
 * before that is no longer proved: `/v1/tx-proofs` answers 404 and `/v1/interactions` does not say "verified". Real
 * Anvil (a snapshot and a revert are the reorganisation), the real service over loopback, an explorer on loopback.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Stack, startStack } from "./harness.ts";

const APP = "0x2222222222222222222222222222222222222222";
let stack: Stack;
let explorer: ReturnType<typeof Bun.serve>;
const listed = new Map<string, Record<string, string>[]>();

beforeAll(async () => {
  explorer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const result = listed.get((new URL(request.url).searchParams.get("address") ?? "").toLowerCase()) ?? [];
      return Response.json({ status: result.length === 0 ? "0" : "1", message: result.length === 0 ? "No transactions found" : "OK", result });
    },
  });
  stack = await startStack({ env: { EXPLORER_API_URLS: `31337=http://127.0.0.1:${explorer.port}/api`, INDEX_CONFIRMATIONS: "12", DISCOVERY_CACHE_SECONDS: "0" } });
}, 120_000);

afterAll(async () => {
  await explorer?.stop(true);
  await stack?.stop();
});

async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(stack.devnet.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await res.json()) as { result: unknown }).result;
}

async function get(path: string) {
  const res = await fetch(`${stack.baseUrl}${path}`);
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

/** A transaction from dev user `n` to the app's contract, mined, and listed by the explorer. */
async function interact(n: number): Promise<{ tx: Hex; wallet: string }> {
  const user = privateKeyToAccount(stack.devnet.keys.users[n] as Hex);
  const tx = await createWalletClient({ account: user, transport: http(stack.devnet.rpcUrl) }).sendTransaction({ to: APP, value: 1n, chain: null });
  const mined = await createPublicClient({ transport: http(stack.devnet.rpcUrl) }).waitForTransactionReceipt({ hash: tx });
  listed.set(user.address.toLowerCase(), [{ hash: tx, from: user.address.toLowerCase(), to: APP, isError: "0", txreceipt_status: "1", blockNumber: String(mined.blockNumber) }]);
  return { tx, wallet: user.address };
}

test("a transaction taken back before it was 12 blocks deep is 404 and not verified", async () => {
  const snapshot = await rpc("evm_snapshot");
  const { tx, wallet } = await interact(5);
  const before = await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`);
  expect([before.status, before.body.status]).toEqual([200, "success"]);
  expect((await get(`/v1/interactions?chain=31337&wallet=${wallet}&contract=${APP}`)).body).toMatchObject({ status: "verified", txHash: tx.toLowerCase() });

  expect(await rpc("evm_revert", [snapshot])).toBe(true);
  expect(await rpc("eth_getTransactionReceipt", [tx])).toBeNull();
  // Before: 200 "success" and "verified" for a transaction the chain no longer has.
  const after = await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`);
  expect([after.status, after.body.code]).toEqual([404, "NOT_FOUND"]);
  expect((await get(`/v1/interactions?chain=31337&wallet=${wallet}&contract=${APP}`)).body).toEqual({ status: "none" });
}, 60_000);

const receiptReads = () => stack.rpc.methods().filter((m) => m === "eth_getTransactionReceipt").length;

test("a receipt 12 blocks deep is read once and kept; one nearer the head is read again at each ask", async () => {
  const { tx } = await interact(6);
  const shallow = receiptReads();
  await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`);
  await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`);
  expect(receiptReads() - shallow).toBe(2);
  await rpc("anvil_mine", ["0xc"]);
  const deep = receiptReads();
  const first = await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`);
  expect([first.status, first.body.status]).toEqual([200, "success"]);
  const again = await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`);
  expect(again.body).toEqual(first.body);
  expect(receiptReads() - deep).toBe(1);
}, 60_000);

test("a transaction mined again at the same height, later, after a reorganisation is answered with its new block's time, and kept with it", async () => {
  // The block's time was kept at first sight, by height: the proof settled with the time of the block taken back.
  const user = privateKeyToAccount(stack.devnet.keys.users[4] as Hex);
  const wallet = createWalletClient({ account: user, transport: http(stack.devnet.rpcUrl) });
  const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
  const raw = await wallet.signTransaction({ ...(await wallet.prepareTransactionRequest({ to: APP, value: 1n, chain: null })), chain: null } as never);
  const snapshot = await rpc("evm_snapshot");
  const tx = await rpc("eth_sendRawTransaction", [raw]) as Hex;
  const first = await chain.getBlock({ blockNumber: (await chain.waitForTransactionReceipt({ hash: tx })).blockNumber });
  expect((await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`)).body.blockTime).toBe(Number(first.timestamp));

  expect(await rpc("evm_revert", [snapshot])).toBe(true);
  await rpc("evm_setNextBlockTimestamp", [Number(first.timestamp) + 86_400]);
  expect(await rpc("eth_sendRawTransaction", [raw])).toBe(tx);
  const second = await chain.getBlock({ blockNumber: (await chain.waitForTransactionReceipt({ hash: tx })).blockNumber });
  expect(second.number).toBe(first.number);
  expect((await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`)).body).toMatchObject({ blockNumber: Number(second.number), blockTime: Number(second.timestamp) });
  await rpc("anvil_mine", ["0xc"]);
  expect((await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`)).body.blockTime).toBe(Number(second.timestamp));
  expect((await get(`/v1/tx-proofs?chain=31337&txHash=${tx}`)).body.blockTime).toBe(Number(second.timestamp));
}, 60_000);
