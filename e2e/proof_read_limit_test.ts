/**
 * The public proof reads behind a per-client budget (found by attacking §29's routes): `/v1/tx-proofs` and
 * `/v1/interactions` cost the operator JSON-RPC calls and explorer requests for any hash or wallet a caller makes up.
 * A lookup that reads a chain or an explorer takes a turn of `PROOF_READ_RATE_PER_MINUTE` per client address, shared
 * by both routes; past it, 429 `RATE_LIMITED` with `Retry-After` and no call; a kept answer takes no turn. Real Anvil,
 * the real service over loopback, an explorer on loopback.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Stack, startStack } from "./harness.ts";

const APP = "0x3333333333333333333333333333333333333333";
let stack: Stack;
let explorer: ReturnType<typeof Bun.serve>;
let explorerAsked = 0;

beforeAll(async () => {
  explorer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch() {
      explorerAsked++;
      return Response.json({ status: "0", message: "No transactions found", result: [] });
    },
  });
  stack = await startStack({ env: { EXPLORER_API_URLS: `31337=http://127.0.0.1:${explorer.port}/api`, PROOF_READ_RATE_PER_MINUTE: "3", DISCOVERY_CACHE_SECONDS: "60", INDEX_CONFIRMATIONS: "0" } });
}, 120_000);

afterAll(async () => {
  await explorer?.stop(true);
  await stack?.stop();
});

const receiptReads = () => stack.rpc.methods().filter((m) => m === "eth_getTransactionReceipt").length;

test("three lookups a minute per address across both routes; the fourth is 429 with Retry-After and no call; a kept proof is still answered", async () => {
  // A real transaction, settled (INDEX_CONFIRMATIONS=0: every mined receipt is): its proof is kept after one read.
  const user = privateKeyToAccount(stack.devnet.keys.users[4] as Hex);
  const tx = await createWalletClient({ account: user, transport: http(stack.devnet.rpcUrl) }).sendTransaction({ to: APP, value: 1n, chain: null });
  await createPublicClient({ transport: http(stack.devnet.rpcUrl) }).waitForTransactionReceipt({ hash: tx });
  const made = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

  expect((await fetch(`${stack.baseUrl}/v1/tx-proofs?chain=31337&txHash=${tx}`)).status).toBe(200);
  expect((await fetch(`${stack.baseUrl}/v1/tx-proofs?chain=31337&txHash=${made(1)}`)).status).toBe(404);
  expect((await fetch(`${stack.baseUrl}/v1/interactions?chain=31337&wallet=${user.address}&contract=${APP}`)).status).toBe(200);
  const [reads, asked] = [receiptReads(), explorerAsked];

  const refused = await fetch(`${stack.baseUrl}/v1/tx-proofs?chain=31337&txHash=${made(2)}`);
  expect([refused.status, await refused.json()]).toEqual([429, { error: "Too many proof lookups from this address; try again later", code: "RATE_LIMITED" }]);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  const other = await fetch(`${stack.baseUrl}/v1/interactions?chain=31337&wallet=${privateKeyToAccount(stack.devnet.keys.users[5] as Hex).address}&contract=${APP}`);
  expect(other.status).toBe(429);
  expect([receiptReads(), explorerAsked]).toEqual([reads, asked]);

  // Kept answers take no turn: the settled proof, and the interaction answer kept for DISCOVERY_CACHE_SECONDS.
  expect((await fetch(`${stack.baseUrl}/v1/tx-proofs?chain=31337&txHash=${tx}`)).status).toBe(200);
  expect((await fetch(`${stack.baseUrl}/v1/interactions?chain=31337&wallet=${user.address}&contract=${APP}`)).status).toBe(200);
  // Input refused before any lookup takes none either.
  expect((await fetch(`${stack.baseUrl}/v1/tx-proofs?chain=31337&txHash=0x12`)).status).toBe(400);
}, 60_000);
