/**
 * A relay batch too large for one block (found by attacking the batches): 50 valid reviews of 1,500 characters each need
 * more gas than Anvil's 30,000,000 block. Anvil's estimate answers `gas required exceeds allowance`, which was read as
 * an RPC failure: every item 500 RPC_ERROR, nothing sent, a dependency failure inviting the same batch again. (A batch
 * whose estimate fitted but whose 20 % headroom did not was signed, then refused by the node: every item 500
 * SUBMISSION_FAILED.) Now the part that fits is sent in one transaction, its gas at most the block's, and the rest
 * told to come again in a smaller batch. Real Anvil, the real service over loopback.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { generatePrivateKey } from "viem/accounts";
import { type Stack, startStack } from "./harness.ts";
import { signedReviewBody } from "./support/review_signer.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
}, 120_000);
afterAll(async () => await stack?.stop());

test("50 reviews needing more than a block's gas: the part that fits is sent, each other item is 400 naming a smaller batch; none is RPC_ERROR", async () => {
  const target = { chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids };
  const requests = await Promise.all(Array.from({ length: 50 }, (_, i) =>
    signedReviewBody(target, generatePrivateKey(), { data: { subject: `did:web:block${i}.test`, version: "1", ratingValue: 3, reviewBody: "y".repeat(1_500), screenshotUrls: [], proofs: [] } })));
  const res = await fetch(`${stack.baseUrl}/v1/delegated-attest/batch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ requests }) });
  expect(res.status).toBe(200);
  const body = await res.json() as { txHash: string | null; results: { uid?: string; status?: number; code?: string; error?: string }[] };
  const sent = body.results.filter((r) => r.uid !== undefined);
  const refused = body.results.filter((r) => r.uid === undefined);
  expect(sent.length).toBeGreaterThan(0);
  expect(body.txHash).toMatch(/^0x[0-9a-f]{64}$/);
  expect(refused.length).toBeGreaterThan(0);
  for (const r of refused) expect(r).toMatchObject({ status: 400, code: "INVALID_INPUT", error: expect.stringContaining("send it again in a smaller batch") });
  // The sent ones are the first in order: a prefix of the batch.
  expect(body.results.findIndex((r) => r.uid === undefined)).toBe(sent.length);
}, 240_000);
