/** A receipt turned into a user review, and that review submitted through the service's delegated-attest endpoint. */
import { buildUserReviewFromReceipt, type SignedReceipt, type UserReviewData, type UserReviewFromReceiptOptions } from "../domain/payments/mod.ts";
import { type AttestDelegatedOptions, attestDelegated, type AtsClientOptions, type DelegatedAttestResult } from "./delegated_attest.ts";
import { AtsClientError } from "./errors.ts";

/** The user-review data for the receipt's service, with the receipt (verbatim) as its `x402-receipt` proof. */
export function buildReceiptReview(receipt: SignedReceipt, options: UserReviewFromReceiptOptions): UserReviewData {
  const data = buildUserReviewFromReceipt(receipt, options);
  if (!data.ok) throw new AtsClientError(data.code, data.message);
  return data.value;
}

/** Options of {@link attestReceiptReview}. */
export type AttestReceiptReviewOptions = UserReviewFromReceiptOptions & Pick<AttestDelegatedOptions, "attester" | "sign">;

/**
 * Builds the review of a receipt and submits it through the service's delegated-attest endpoint; the
 * attester must be the receipt's payer. The receipt is read, not verified: verify it first.
 */
export async function attestReceiptReview(
  receipt: SignedReceipt,
  input: AttestReceiptReviewOptions,
  options: AtsClientOptions = {},
): Promise<DelegatedAttestResult & { data: UserReviewData }> {
  const data = buildReceiptReview(receipt, { ...input, reviewer: input.reviewer ?? input.attester });
  const result = await attestDelegated({ schemaName: "user-review", data, attester: input.attester, sign: input.sign }, options);
  return { ...result, data };
}
