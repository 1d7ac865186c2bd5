/** The reviewed service's side: a reply to a review, sent by a controller key of the service. */
import { createWalletClient, defineChain, type Hex, http, type LocalAccount, parseEventLogs } from "viem";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { buildReviewResponseData } from "../domain/reviews/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { AtsClientError } from "./errors.ts";
import { ZERO_UID, chainContext, type ReviewChainOptions } from "./review_chain.ts";

/**
 * The reviewed service replies to a review: a non-revocable `user-review-response` (subject = the
 * reviewer's did:pkh on this chain, refUID = the review) with no proofs, sent by `account` (a
 * controller key of the service), which pays gas. Throws `INVALID_INPUT` naming the field before anything
 * is signed.
 */
export async function respondToReview(
  input: { readonly reviewUid: string; readonly responseBody: string; readonly account: LocalAccount },
  options: ReviewChainOptions,
): Promise<{ uid: Hex; txHash: Hex; blockNumber: bigint }> {
  const shape = buildReviewResponseData({
    reviewerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001",
    reviewUid: input.reviewUid,
    responseBody: input.responseBody,
  });
  if (!shape.ok) throw new AtsClientError(shape.code, shape.message);
  const chain = await chainContext(options);
  const review = await chain.read(input.reviewUid as Hex);
  if (review.uid === ZERO_UID || review.schema.toLowerCase() !== chain.uid("user-review")) {
    throw new AtsClientError("INVALID_INPUT", "reviewUid is not a user review on this chain");
  }
  const data = buildReviewResponseData({
    reviewerDid: `did:pkh:eip155:${options.chainId}:${review.attester}`,
    reviewUid: input.reviewUid,
    responseBody: input.responseBody,
  });
  if (!data.ok) throw new AtsClientError(data.code, data.message);
  const encoded = encodeSchemaData(findSchemaByName("user-review-response")!.schema, data.value);
  if (!encoded.ok) throw new AtsClientError("INVALID_INPUT", encoded.message);
  const recipient = didToAddress(data.value.subject);
  if (!recipient.ok) throw new AtsClientError("INVALID_DID", recipient.message);
  const wallet = createWalletClient({
    account: input.account,
    transport: http(options.rpc),
    chain: defineChain({
      id: options.chainId,
      name: `eip155:${options.chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [options.rpc] } },
    }),
  });
  let txHash: Hex;
  try {
    txHash = await wallet.writeContract({
      address: chain.easAddress,
      abi: EAS_ABI,
      functionName: "attest",
      args: [{
        schema: chain.uid("user-review-response"),
        data: { recipient: recipient.value, expirationTime: 0n, revocable: false, refUID: input.reviewUid as Hex, data: encoded.value, value: 0n },
      }],
    });
  } catch (cause) {
    throw new AtsClientError("SUBMISSION_FAILED", "The reply could not be sent", { cause });
  }
  const receipt = await chain.client.waitForTransactionReceipt({ hash: txHash, pollingInterval: 50 });
  if (receipt.status !== "success") throw new AtsClientError("SUBMISSION_FAILED", "The reply transaction reverted");
  const [attested] = parseEventLogs({ abi: EAS_ABI, logs: receipt.logs, eventName: "Attested" });
  return { uid: (attested as unknown as { args: { uid: Hex } }).args.uid, txHash, blockNumber: receipt.blockNumber };
}
