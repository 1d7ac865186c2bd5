/** The refusals the delegated attestation's steps share (decisions §15, issue 23). */
import type { ReplayRecord } from "../../ports/replay_store.ts";
import { fail } from "../result.ts";
import type { DelegatedAttestFailure } from "./_delegated_attest_types.ts";

/** The truthful answer to a signature already on record (decisions §15): its uid, its hash, or in progress. */
export function duplicate(record: ReplayRecord): DelegatedAttestFailure {
  if (record.state === "mined") return fail("DUPLICATE", "Duplicate submission: already attested", record.uid ?? record.txHash ?? undefined);
  if (record.state === "reverted") return fail("DUPLICATE", "Duplicate submission: its transaction reverted", record.txHash ?? undefined);
  if (record.txHash !== null) return fail("DUPLICATE", "Duplicate submission: its transaction is on its way", record.txHash);
  return fail("DUPLICATE", "Duplicate submission: it is being processed");
}

/** A wallet whose factory call the service already sent (issue 23): refused before any gas. */
export function factoryCallFailedBefore(): DelegatedAttestFailure {
  return fail(
    "INVALID_SIGNATURE",
    "The service already sent this wallet's ERC-6492 factory call and it did not deploy the wallet; its ERC-6492 signatures are not accepted: deploy the wallet and send the plain signature",
  );
}

export function cannotPay(): DelegatedAttestFailure {
  return { ...fail("SUBMISSION_FAILED", "The delegate wallet cannot pay for gas right now; nothing was recorded"), unavailable: true };
}

/** A wallet contract that made the delegate pay for a reverted transaction (ports/wallet_refusals.ts). */
export function walletRefused(txHash: string): DelegatedAttestFailure {
  return fail(
    "INVALID_SIGNATURE",
    `This wallet contract accepted a signature when the service simulated the attestation and refused it on chain (transaction ${txHash}); the relays no longer send for it`,
  );
}

/**
 * The delegate wallet's nonce or fees could not be read before anything was signed (500 `RPC_ERROR`, decisions §2):
 * nothing was sent, and the same signature may be submitted again once the chain answers.
 */
export function chainSilentBeforeSend(): DelegatedAttestFailure {
  return fail("RPC_ERROR", "The chain did not answer before the transaction was sent; nothing was sent, and the same signature may be submitted again");
}
