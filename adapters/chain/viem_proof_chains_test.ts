import { describe, expect, test } from "bun:test";
import { createPublicClient, custom } from "viem";
import { createChainProofs } from "../../domain/interactions/mod.ts";
import { checkTxProofOnChains } from "../../domain/reviews/mod.ts";
import type { ExplorerTxList } from "../../ports/interactions.ts";
import { createViemProofChains } from "./viem_proof_chains.ts";

const WALLET = "0x14dc79964da2c08b23698b3d3cc7ca32193d9955";
const CONTRACT = "0x1111111111111111111111111111111111111111";
const TX = `0x${"ab".repeat(32)}`;

/** A JSON-RPC endpoint of one chain that holds TX (to CONTRACT from WALLET, block 7) and counts every call by method. */
function fakeChain(chainId: number, options: { down?: boolean } = {}) {
  const calls: string[] = [];
  const transport = custom({
    request({ method, params }: { method: string; params: unknown[] }) {
      calls.push(method);
      if (options.down) throw new Error(`connect ECONNREFUSED http://secret-rpc.example/${chainId}`);
      if (method === "eth_chainId") return Promise.resolve(`0x${chainId.toString(16)}`);
      if (method === "eth_getTransactionReceipt") {
        return Promise.resolve(params[0] === TX ? { from: WALLET, to: CONTRACT, status: "0x1", blockNumber: "0x7", logs: [], contractAddress: null } : null);
      }
      if (method === "eth_getBlockByNumber") return Promise.resolve({ number: params[0], timestamp: "0x64" });
      throw new Error(`unexpected ${method}`);
    },
  });
  return { calls, transport };
}

const explorers: ExplorerTxList = {
  txlist: () => Promise.resolve({ ok: true, value: [{ hash: TX, from: WALLET, to: CONTRACT, failed: false, blockNumber: 7 }] }),
};

describe("createViemProofChains", () => {
  test("each chain read through its own client; a receipt read once and kept, for both routes; a second chain adds no call to the first", async () => {
    const a = fakeChain(31337);
    const b = fakeChain(8453);
    const chains = createViemProofChains({
      chains: [{ chainId: 31337, client: createPublicClient({ transport: a.transport }) }, { chainId: 8453, rpcUrl: "http://proof-chain.invalid" }],
      transport: () => b.transport,
    });
    expect(chains.chainIds).toEqual([31337, 8453]);
    const proofs = createChainProofs(chains, { operatorExplorer: () => "https://explorer.example/api", explorers });

    for (let i = 0; i < 3; i++) {
      expect(await proofs.txProof(8453, TX)).toMatchObject({ ok: true, value: { chain: "eip155:8453", from: WALLET, to: CONTRACT, status: "success", blockNumber: 7, blockTime: 100 } });
      expect(await proofs.findInteraction({ chainId: 8453, wallet: WALLET, contract: CONTRACT })).toEqual({ status: "verified", txHash: TX, blockNumber: 7 });
    }
    expect(b.calls.filter((m) => m === "eth_getTransactionReceipt")).toEqual(["eth_getTransactionReceipt"]);
    expect(b.calls.filter((m) => m === "eth_getBlockByNumber")).toHaveLength(1);
    expect(a.calls).toEqual([]);

    // Concurrent asks on the first chain share one read.
    await Promise.all([1, 2, 3, 4].map(() => proofs.findInteraction({ chainId: 31337, wallet: WALLET, contract: CONTRACT })));
    expect(a.calls.filter((m) => m === "eth_getTransactionReceipt")).toEqual(["eth_getTransactionReceipt"]);
  });

  test("a chain not read: /v1/interactions not-checked, /v1/tx-proofs UNSUPPORTED_CHAIN, a review's proof not checked; no JSON-RPC call anywhere", async () => {
    const a = fakeChain(31337);
    const chains = createViemProofChains({ chains: [{ chainId: 31337, client: createPublicClient({ transport: a.transport }) }] });
    const proofs = createChainProofs(chains, { operatorExplorer: () => "https://explorer.example/api", explorers });
    expect(await proofs.findInteraction({ chainId: 10, wallet: WALLET, contract: CONTRACT })).toEqual({ status: "not-checked", reason: "chain-not-read" });
    expect(await proofs.txProof(10, TX)).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    const verdict = await checkTxProofOnChains({
      proof: { chainId: 10, txHash: TX as `0x${string}` },
      subject: "did:web:app.example",
      reviewTime: 1_000n,
      senderRelation: () => Promise.resolve("attester"),
      targets: () => Promise.resolve([CONTRACT]),
    }, chains);
    expect(verdict).toEqual({ verdict: "not-checked", reason: "chain-not-read" });
    expect(chains.ownership(10)).toBeUndefined();
    expect(a.calls).toEqual([]);
  });

  test("a provider down: not-checked and RPC_ERROR without its URL, nothing kept; the other chain unaffected", async () => {
    const down = fakeChain(8453, { down: true });
    const a = fakeChain(31337);
    const logged: Record<string, unknown>[] = [];
    const chains = createViemProofChains({
      chains: [{ chainId: 31337, client: createPublicClient({ transport: a.transport }) }, { chainId: 8453, client: createPublicClient({ transport: down.transport }) }],
      log: (_event, fields) => logged.push(fields),
    });
    const proofs = createChainProofs(chains, { operatorExplorer: () => "https://explorer.example/api", explorers });
    expect(await proofs.findInteraction({ chainId: 8453, wallet: WALLET, contract: CONTRACT })).toEqual({ status: "not-checked", reason: "chain-failed" });
    const failed = await proofs.txProof(8453, TX);
    expect(failed).toMatchObject({ ok: false, code: "RPC_ERROR" });
    expect(JSON.stringify(failed)).not.toContain("secret-rpc");
    expect(logged.every((f) => f.chainId === 8453)).toBe(true);
    expect(await proofs.txProof(31337, TX)).toMatchObject({ ok: true, value: { chain: "eip155:31337" } });
  });

  test("contract ownership per chain: each chain's owner() on its own client", async () => {
    const a = fakeChain(31337);
    const b = fakeChain(8453);
    const chains = createViemProofChains({
      chains: [{ chainId: 31337, client: createPublicClient({ transport: a.transport }) }, { chainId: 8453, client: createPublicClient({ transport: b.transport }) }],
    });
    expect(chains.ownership(8453)?.chainId).toBe(8453);
    expect(await chains.ownership(8453)!.transaction(TX as `0x${string}`)).toMatchObject({ ok: true, value: { from: WALLET, blockNumber: 7n } });
    expect(b.calls).toEqual(["eth_getTransactionReceipt"]);
    expect(a.calls).toEqual([]);
  });

  test("a chain listed twice is refused", () => {
    const a = fakeChain(1);
    const client = createPublicClient({ transport: a.transport });
    expect(() => createViemProofChains({ chains: [{ chainId: 1, client }, { chainId: 1, client }] })).toThrow("listed twice");
  });
});
