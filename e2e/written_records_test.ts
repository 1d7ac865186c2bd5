/**
 * Issue 43 item 5: the follower of the instance that wrote an attestation takes its record from what the relay sent,
 * not from `getAttestation`, once EAS's uid of those fields at the block's time is the one the chain gave. On a real
 * Anvil with the real EAS: the record the read after the write lists is the chain's record, field for field and spelled
 * as the chain's read spells it, and the follower asked the node for no record of it (one with an expiration and a
 * reference, so a mistake in any field of the uid would have the record read from the chain instead).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { startStack, type Stack } from "./harness.ts";
import { postDelegatedAttest, signedReviewBody } from "./support/review_signer.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: { WEBHOOK_POLL_MS: "60000" } });
}, 60_000);
afterAll(async () => await stack?.stop());

test("the record of the writer's own attestation, taken from what it sent, is the chain's, and no eth_call read it", async () => {
  const target = { chainId: stack.service.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids };
  const subject = "did:web:written-records.example";
  const first = await postDelegatedAttest(stack.baseUrl, await signedReviewBody(target, generatePrivateKey() as Hex, {
    data: { subject, version: "1", ratingValue: 4, reviewBody: "first", screenshotUrls: [], proofs: [] },
  }));
  expect(first.status).toBe(200);
  await stack.sync();
  stack.rpc.reset();
  const expirationTime = BigInt(Math.floor(Date.now() / 1000) + 86_400 * 365);
  const written = await postDelegatedAttest(stack.baseUrl, await signedReviewBody(target, generatePrivateKey() as Hex, {
    data: { subject, version: "1", ratingValue: 5, reviewBody: "A review whose Record Is Taken from what was sent", screenshotUrls: [], proofs: [] },
    refUID: String(first.body.uid) as Hex,
    expirationTime,
  }));
  expect(written.status).toBe(200);
  const uid = String(written.body.uid).toLowerCase();

  const list = await fetch(`${stack.baseUrl}/v1/attestations?subject=${encodeURIComponent(subject)}&schema=user-review&limit=10`);
  expect(list.status).toBe(200);
  const items = ((await list.json()) as { items: { attestation: Record<string, unknown> }[] }).items;
  const listed = items.find((i) => String(i.attestation.uid).toLowerCase() === uid)?.attestation;
  expect(listed).toBeDefined();
  // The follower's poll for the read asked for no record: the write's own was taken from what was sent.
  expect(stack.rpc.followerTrips().flat()).not.toContain("eth_call");

  const chain = createPublicClient({ transport: http(stack.devnet.rpcUrl) });
  const onChain = await chain.readContract({ address: stack.service.easAddress as Hex, abi: EAS_ABI, functionName: "getAttestation", args: [uid as Hex] });
  expect(onChain.expirationTime).toBe(expirationTime);
  expect(onChain.refUID.toLowerCase()).toBe(String(first.body.uid).toLowerCase());
  expect(listed).toMatchObject({
    uid: onChain.uid,
    schema: onChain.schema,
    attester: onChain.attester,
    recipient: onChain.recipient,
    time: String(onChain.time),
    expirationTime: String(onChain.expirationTime),
    revocationTime: "0",
    data: { subject, ratingValue: "5", reviewBody: "A review whose Record Is Taken from what was sent" },
  });
  // The reference and revocability are not in the answers; they are in the uid the record was checked against, so a
  // mistake in either would have had the record read from the chain (the eth_call above).
});
