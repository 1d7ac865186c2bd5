import { describe, expect, test } from "bun:test";
import type { TxReceiptFacts, TxReceiptReader } from "../../ports/interactions.ts";
import { singleProofChain } from "../interactions/mod.ts";
import { checkTxProofOnChains, type TxProofCheckInput } from "./mod.ts";

const REVIEWER = "0x14dc79964da2c08b23698b3d3cc7ca32193d9955";
const APP = "0x1111111111111111111111111111111111111111";
const TX = `0x${"cd".repeat(32)}` as `0x${string}`;

function reader(chainId: number, receipt: TxReceiptFacts | null | "down") {
  const asked: string[] = [];
  const r: TxReceiptReader = {
    chainId,
    receipt(txHash) {
      asked.push(txHash);
      return Promise.resolve(receipt === "down" ? { ok: false, reason: "rpc-error" } : { ok: true, value: receipt });
    },
    blockTime: () => Promise.resolve({ ok: true, value: 500 }),
  };
  return { r, asked };
}

const input = (chainId: number, extra: Partial<TxProofCheckInput> = {}): TxProofCheckInput => ({
  proof: { chainId, txHash: TX },
  subject: "did:web:app.example",
  reviewTime: 1_000n,
  senderRelation: (from) => Promise.resolve(from === REVIEWER ? "attester" : "unrelated"),
  targets: () => Promise.resolve([APP]),
  ...extra,
});

describe("checkTxProofOnChains()", () => {
  test("valid on a chain read: the reviewer's successful transaction to the app, before the review", async () => {
    const chain = reader(8453, { from: REVIEWER, to: APP, status: "success", blockNumber: 3 });
    expect(await checkTxProofOnChains(input(8453), singleProofChain(chain.r))).toMatchObject({ verdict: "valid", transaction: { blockTime: 500n } });
  });

  test("not checked, never valid: a chain the deployment does not read (no read at all), or one that fails", async () => {
    const chain = reader(8453, { from: REVIEWER, to: APP, status: "success", blockNumber: 3 });
    expect(await checkTxProofOnChains(input(10), singleProofChain(chain.r))).toEqual({ verdict: "not-checked", reason: "chain-not-read" });
    expect(chain.asked).toEqual([]);
    expect(await checkTxProofOnChains(input(8453), singleProofChain(reader(8453, "down").r))).toEqual({ verdict: "not-checked", reason: "chain-failed" });
  });

  test("invalid with reasons: not mined, reverted, another sender, after the review, a did:pkh subject on another chain", async () => {
    expect(await checkTxProofOnChains(input(8453), singleProofChain(reader(8453, null).r))).toMatchObject({ verdict: "invalid", reasons: [`the transaction ${TX} is not on eip155:8453`] });
    const bad = reader(8453, { from: APP, to: APP, status: "reverted", blockNumber: 3 });
    const verdict = await checkTxProofOnChains(input(8453, { reviewTime: 100n }), singleProofChain(bad.r));
    expect(verdict.verdict).toBe("invalid");
    expect(verdict.verdict === "invalid" ? verdict.reasons.length : 0).toBe(3);
    const elsewhere = reader(8453, { from: REVIEWER, to: APP, status: "success", blockNumber: 3 });
    expect(await checkTxProofOnChains(input(8453, { subject: `did:pkh:eip155:1:${APP}` }), singleProofChain(elsewhere.r))).toMatchObject({ verdict: "invalid" });
    expect(elsewhere.asked).toEqual([]);
  });
});
