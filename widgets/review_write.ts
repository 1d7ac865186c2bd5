/** The widget's write: the review prepared and shown for confirmation, then signed, its signer checked, and sent. */
import { recoverTypedDataAddress } from "viem";
import { fetchNonce, prepareDelegatedAttestation, signableTypedData, submitDelegatedAttestation } from "../client/delegated_attest.ts";
import { fetchSubmission, newIdempotencyKey } from "../client/submissions.ts";
import { buildReviewData, transactionProof } from "../domain/reviews/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { byId, explain, fail, formError, progress, rating, type SentReview, show, stars, WidgetError, type WidgetState } from "./_widget_ui.ts";
import { afterSendFailure, submissionOutcome, unsureText } from "./send_outcome.ts";
import { askHost, askWallet } from "./host_signing.ts";

/** The form sent: the review built (with the interaction's proof), the nonce read, and the confirmation shown. */
export async function prepareReview(state: WidgetState): Promise<void> {
  if (state.busy) return;
  const { params, settings, body } = state;
  const value = rating(state);
  if (value < 1) return formError("Choose a rating from 1 to 5 stars.");
  if (state.mode === "detecting") return formError("Still looking for the host page's wallet; try again in a moment.");
  const wallet = state.wallet;
  if (wallet === undefined) {
    return formError(state.mode === "integrated" ? "The host page did not name its wallet, so this review cannot be signed here." : "Connect a wallet first.");
  }
  formError(undefined);
  state.busy = true;
  try {
    progress("Preparing the review…");
    const txHash = state.interaction?.wallet === wallet ? state.interaction.txHash : undefined;
    const proof = txHash === undefined ? undefined : transactionProof({ chainId: params.chainId, txHash, proofType: "tx-interaction" });
    const proofs = proof !== undefined && proof.ok ? [proof.value] : [];
    const data = buildReviewData({ subject: params.subject, ratingValue: value, reviewBody: body.value, version: "1.0.0", proofs });
    if (!data.ok) throw new WidgetError(data.message);
    const nonce = await fetchNonce(wallet, { baseUrl: location.origin });
    if (nonce.chainId !== settings.chainId || nonce.easAddress.toLowerCase() !== settings.easAddress.toLowerCase()) {
      throw new WidgetError("The service answered for another chain; reload the widget.");
    }
    const reviewSchema = findSchemaByName("user-review")!;
    state.prepared = prepareDelegatedAttestation({
      schema: { uid: settings.reviewSchemaUid, schema: reviewSchema.schema, revocable: reviewSchema.revocable },
      data: data.value,
      attester: wallet,
      nonce: nonce.nonce,
      chainId: nonce.chainId,
      easAddress: nonce.easAddress,
    });
    byId("confirm-chain").textContent = `${settings.chainName} (chain ${settings.chainId})`;
    byId("confirm-contract").textContent = settings.easAddress;
    byId("confirm-subject").textContent = params.subject;
    byId("confirm-rating").textContent = stars(value);
    byId("confirm-body").textContent = body.value === "" ? "(no text)" : body.value;
    byId("confirm-proof").textContent = proofs.length === 0 ? "(none)" : `Use of the app: transaction ${txHash} on chain ${params.chainId}`;
    state.busy = false;
    show("confirm-view");
  } catch (error) {
    fail(state, error);
  }
}

/** The confirmation accepted: signed by the host or the wallet, the signer checked to be the wallet shown, then sent. */
export async function signAndSend(state: WidgetState): Promise<void> {
  const prepared = state.prepared;
  if (state.busy || prepared === undefined || state.wallet === undefined) return;
  state.busy = true;
  const shown = state.wallet;
  try {
    const typed = signableTypedData(prepared);
    const integrated = state.mode === "integrated";
    progress(integrated ? "Waiting for the host page's wallet to sign…" : "Sign the review in your wallet…");
    const signature = integrated ? await askHost(state, typed) : await askWallet(state, typed, shown);
    progress("Checking the signature…");
    let signer: string;
    try {
      signer = await recoverTypedDataAddress({ ...typed, signature: signature as `0x${string}` });
    } catch {
      throw new WidgetError("The signature is not a valid signature of this review.");
    }
    if (signer.toLowerCase() !== shown.toLowerCase()) {
      throw new WidgetError(`The review was signed by ${signer}, not by the wallet shown (${shown}); nothing was sent.`);
    }
    progress("Sending the review…");
    state.sent = { body: { prepared, signature, attester: shown }, key: newIdempotencyKey(), rating: rating(state), text: state.body.value };
  } catch (error) {
    fail(state, error);
    return;
  }
  await deliver(state);
}

/**
 * Sends the signed review kept in `state.sent` under its `Idempotency-Key`: the relay's success shows the uid; a refusal
 * (nothing written) the error view; anything that leaves the write possible the unsure view (widgets/send_outcome.ts),
 * a 202 (its submission still on its way) among them: the submission it names is what "Check again" reads.
 */
async function deliver(state: WidgetState): Promise<void> {
  const sent = state.sent!;
  try {
    const result = await submitDelegatedAttestation(sent.body, { baseUrl: location.origin, idempotencyKey: sent.key });
    succeed(state, sent, result.uid, result.txHash);
  } catch (error) {
    const outcome = afterSendFailure(error);
    if (outcome.kind === "refused") {
      state.sent = undefined;
      return fail(state, error);
    }
    if (outcome.submissionId !== undefined) sent.submissionId = outcome.submissionId;
    unsure(state, unsureText(outcome));
  }
}

/** "Check again" after an unsure send: the submission read when it has one, else the same bytes sent under the same key. */
export async function checkAgain(state: WidgetState): Promise<void> {
  const sent = state.sent;
  if (state.busy || sent === undefined) return;
  state.busy = true;
  progress("Checking whether the review was written…");
  if (sent.submissionId === undefined) return await deliver(state);
  try {
    const submission = await fetchSubmission(sent.submissionId, { baseUrl: location.origin });
    const seen = submissionOutcome(submission);
    if (seen.kind === "written") return succeed(state, sent, seen.uid, seen.txHash ?? "(not known)");
    if (seen.kind === "failed") {
      state.sent = undefined;
      return fail(state, new WidgetError(`Its transaction failed; nothing was attested${seen.code === undefined ? "" : ` (${seen.code})`}. Write it again to send a new one.`));
    }
    unsure(state, unsureText({ why: "waiting", submissionId: sent.submissionId, txHash: submission.txHash }));
  } catch (error) {
    unsure(state, `${explain(error)} The review may still have been written: check again in a moment.`);
  }
}

/** The success view for the review sent. */
function succeed(state: WidgetState, sent: SentReview, uid: string | null, txHash: string): void {
  state.sent = undefined;
  byId("success-rating").textContent = stars(sent.rating);
  byId("success-body").textContent = sent.text === "" ? "(no text)" : sent.text;
  byId("success-wallet").textContent = sent.body.attester;
  byId("success-uid").textContent = uid ?? "(not known yet)";
  byId("success-tx").textContent = txHash;
  state.busy = false;
  show("success-view");
}

/** The unsure view: the review may have been written; "Check again" finds out. */
function unsure(state: WidgetState, text: string): void {
  state.busy = false;
  byId("unsure-text").textContent = text;
  show("unsure-view");
}
