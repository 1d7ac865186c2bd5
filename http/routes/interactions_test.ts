import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../adapters/observability/mod.ts";
import { createFindInteraction, createTxProofs } from "../../domain/interactions/mod.ts";
import type { TxReceiptReader } from "../../ports/interactions.ts";
import { interactionRoutes } from "./interactions.ts";

const WALLET = "0x14dc79964da2c08b23698b3d3cc7ca32193d9955";
const CONTRACT = "0x1111111111111111111111111111111111111111";
const HASH = `0x${"ab".repeat(32)}`;

function app(options: { failing?: boolean } = {}) {
  const reader: TxReceiptReader = {
    chainId: 31337,
    receipt: (txHash) =>
      Promise.resolve(options.failing
        ? { ok: false, reason: "rpc-error" }
        : { ok: true, value: txHash === HASH ? { from: WALLET, to: CONTRACT, status: "success", blockNumber: 7 } : null }),
    blockTime: () => Promise.resolve({ ok: true, value: 1_700_000_007 }),
  };
  const readerFor = (chainId: number) => (chainId === 31337 ? reader : undefined);
  return interactionRoutes({
    findInteraction: createFindInteraction({
      readerFor,
      operatorExplorer: (chainId) => (chainId === 31337 ? "https://explorer.example/api" : undefined),
      explorers: { txlist: () => Promise.resolve({ ok: true, value: [{ hash: HASH, from: WALLET, to: CONTRACT, failed: false, blockNumber: 7 }] }) },
    }),
    txProof: createTxProofs({ readerFor }),
    log: silentLogger,
  });
}

const get = async (path: string, options?: { failing?: boolean }) => {
  const res = await app(options).handle(new Request(`http://localhost${path}`));
  return { status: res.status, body: await res.json() as Record<string, unknown> };
};

describe("GET /v1/interactions", () => {
  test("a transaction the explorer lists and the chain confirms: verified", async () => {
    expect(await get(`/v1/interactions?chain=eip155:31337&wallet=${WALLET}&contract=${CONTRACT}`))
      .toEqual({ status: 200, body: { status: "verified", txHash: HASH, blockNumber: 7 } });
  });

  test("a chain the deployment does not read, or one it cannot read now: not-checked, never an error", async () => {
    expect(await get(`/v1/interactions?chain=8453&wallet=${WALLET}&contract=${CONTRACT}`)).toEqual({ status: 200, body: { status: "not-checked", reason: "chain-not-read" } });
    expect(await get(`/v1/interactions?chain=31337&wallet=${WALLET}&contract=${CONTRACT}`, { failing: true })).toEqual({ status: 200, body: { status: "not-checked", reason: "chain-failed" } });
  });

  test("bad or repeated parameters are 400 INVALID_INPUT naming them", async () => {
    for (const [query, word] of [
      [`chain=x&wallet=${WALLET}&contract=${CONTRACT}`, "chain"],
      [`chain=1&wallet=nope&contract=${CONTRACT}`, "wallet"],
      [`chain=1&wallet=${WALLET}`, "contract"],
      [`chain=1&wallet=${WALLET}&contract=${CONTRACT}&explorer=http://x.example`, "explorer"],
      [`chain=1&chain=2&wallet=${WALLET}&contract=${CONTRACT}`, "chain"],
    ] as const) {
      const res = await get(`/v1/interactions?${query}`);
      expect({ query, status: res.status, code: res.body.code, named: String(res.body.error).includes(word) }).toEqual({ query, status: 400, code: "INVALID_INPUT", named: true });
    }
  });
});

describe("GET /v1/tx-proofs", () => {
  test("a mined transaction: its sender, recipient, status and block; others 404, 400 UNSUPPORTED_CHAIN, 500 RPC_ERROR", async () => {
    expect(await get(`/v1/tx-proofs?chain=31337&txHash=${HASH}`)).toEqual({
      status: 200,
      body: { chain: "eip155:31337", txHash: HASH, from: WALLET, to: CONTRACT, status: "success", blockNumber: 7, blockTime: 1_700_000_007 },
    });
    expect((await get(`/v1/tx-proofs?chain=31337&txHash=0x${"cd".repeat(32)}`)).status).toBe(404);
    expect(await get(`/v1/tx-proofs?chain=1&txHash=${HASH}`)).toMatchObject({ status: 400, body: { code: "UNSUPPORTED_CHAIN" } });
    expect(await get(`/v1/tx-proofs?chain=31337&txHash=0x12`)).toMatchObject({ status: 400, body: { code: "INVALID_INPUT" } });
    const down = await get(`/v1/tx-proofs?chain=31337&txHash=${HASH}`, { failing: true });
    expect(down).toEqual({ status: 500, body: { error: "The chain could not be read", code: "RPC_ERROR" } });
  });
});
