import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { checkReviewProof, readServiceTransaction } from "./reviews.ts";

const SERVICE = "0x2222222222222222222222222222222222222222";
const HASH = `0x${"cd".repeat(32)}` as const;
const reviewer = privateKeyToAccount(`0x${"11".repeat(32)}`);
const T = 1_700_000_000;

/** The service's `GET /v1/tx-proofs`, answering from a table by chain. */
function service(answers: Record<number, { status: number; body: unknown }>) {
  const asked: string[] = [];
  const fetchFn = (url: string) => {
    asked.push(url);
    const chain = Number(new URL(url).searchParams.get("chain"));
    const answer = answers[chain] ?? { status: 400, body: { error: "Chain not read", code: "UNSUPPORTED_CHAIN" } };
    return Promise.resolve(new Response(JSON.stringify(answer.body), { status: answer.status }));
  };
  return { asked, fetch: fetchFn };
}

const mined = { chain: "eip155:8453", txHash: HASH, from: reviewer.address.toLowerCase(), to: SERVICE, status: "success", blockNumber: 9, blockTime: T };

describe("verifyReview's transactions on a chain the caller has no RPC for (decisions §29): the service's GET /v1/tx-proofs", () => {
  test("readServiceTransaction: mined, not mined, a chain the service does not read, a failure that is never 'nothing found'", async () => {
    const s = service({ 8453: { status: 200, body: mined }, 10: { status: 404, body: { error: "x", code: "NOT_FOUND" } }, 1: { status: 500, body: { error: "x", code: "RPC_ERROR" } } });
    const options = { baseUrl: "https://ats.example", fetch: s.fetch };
    expect(await readServiceTransaction(8453, HASH, options)).toEqual({ from: reviewer.address, to: SERVICE, success: true, blockTime: BigInt(T) });
    expect(s.asked[0]).toBe(`https://ats.example/v1/tx-proofs?chain=8453&txHash=${HASH}`);
    expect(await readServiceTransaction(10, HASH, options)).toBeUndefined();
    expect(await readServiceTransaction(42, HASH, options)).toBe("unsupported");
    await expect(readServiceTransaction(1, HASH, options)).rejects.toThrow("could not confirm");
  });

  test("a proof on another chain than the verifier's RPC is checked through the service, and judged by the same rules", async () => {
    const s = service({ 8453: { status: 200, body: mined } });
    const wrapper = { proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: "eip155:8453", txHash: HASH } };
    const review = { attester: reviewer.address, subject: "did:web:shop.example", time: BigInt(T + 60) };
    const checked = await checkReviewProof(wrapper, review, {
      transactions: { chainId: 31337, read: () => Promise.reject(new Error("not this chain")) },
      otherChains: (chainId, hash) => readServiceTransaction(chainId, hash, { baseUrl: "https://ats.example", fetch: s.fetch }),
      subjectAddresses: () => Promise.resolve([SERVICE]),
    });
    expect(checked).toMatchObject({ valid: true, reasons: [], transaction: { chainId: 8453, txHash: HASH, senderRelation: "attester" } });
    // A chain neither reads: reported, not checked.
    const elsewhere = await checkReviewProof({ ...wrapper, proofObject: { chainId: "eip155:42", txHash: HASH } }, review, {
      otherChains: (chainId, hash) => readServiceTransaction(chainId, hash, { baseUrl: "https://ats.example", fetch: s.fetch }),
      subjectAddresses: () => Promise.resolve([SERVICE]),
    });
    expect(elsewhere.reasons).toEqual(["eip155:42 is not the chain this verifier reads"]);
  });
});
