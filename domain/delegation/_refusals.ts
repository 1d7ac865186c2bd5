/** The refusals the delegated attestation's steps share (decisions §15, issue 23). */
import type { ReplayRecord } from "../../ports/replay_store.ts";
import { DUPLICATE_ON_ITS_WAY } from "../idempotency/mod.ts";
import { fail } from "../result.ts";
import type { DelegatedAttestFailure } from "./_delegated_attest_types.ts";

/**
 * The truthful answer to a signature already on record (decisions §15): its uid, its hash, or in progress. Worded
 * "on its way" ({@link DUPLICATE_ON_ITS_WAY}) while its transaction is neither mined nor reverted: the record may yet be
 * released, so that answer is not kept under an Idempotency-Key (domain/idempotency), as "being processed" is not.
 */
export function duplicate(record: ReplayRecord): DelegatedAttestFailure {
  if (record.state === "mined") return fail("DUPLICATE", "Duplicate submission: already attested", record.uid ?? record.txHash ?? undefined);
  if (record.state === "reverted") return fail("DUPLICATE", "Duplicate submission: its transaction reverted", record.txHash ?? undefined);
  if (record.txHash !== null) return fail("DUPLICATE", DUPLICATE_ON_ITS_WAY, record.txHash);
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

/**
 * The node refused the signed transaction and does not hold it (decisions §15): nothing was broadcast, so no gas was
 * spent and nothing is charged (§23).
 */
export function chainRefused(): DelegatedAttestFailure {
  return fail("SUBMISSION_FAILED", "The chain refused the transaction; nothing was sent, and the same signature may be submitted again");
}

/**
 * The delegate wallet's nonce, shared by the service's instances under a lock in the storage, could not be taken (the
 * storage failed): 500 `INTERNAL_ERROR`, nothing sent, an answer that did nothing (not kept under an Idempotency-Key).
 * It was answered as the chain's refusal, which it was not.
 */
export function nonceUnavailable(): DelegatedAttestFailure {
  return fail("INTERNAL_ERROR", "The service could not take its delegate wallet's next nonce; nothing was sent, and the same signature may be submitted again");
}

/**
 * Whether a refusal says nothing was done because of the service or what it depends on, not the request: a read of
 * the chain that failed (500 `RPC_ERROR`), a lookup the private relay's checks need (502 `NETWORK_ERROR`), a delegate
 * wallet that cannot pay (503 `SUBMISSION_FAILED`), a limit of the hour (429). The same request may come again as it is.
 */
export function refusedForUs(failure: DelegatedAttestFailure): boolean {
  const code: string = failure.code;
  return code === "RPC_ERROR" || code === "NETWORK_ERROR" || code === "RATE_LIMITED" || (code === "SUBMISSION_FAILED" && failure.unavailable === true);
}

/**
 * The answer to a batch's later request of an attester whose request `index` was refused so ({@link refusedForUs}):
 * the same refusal, nothing sent. It was 400 `ATTESTER_MISMATCH` (`NONCE_AHEAD`, "re-sign"), its nonce fine, and it
 * kept its attester's hourly token, so the same batch sent again once the chain answered was refused 429.
 */
export function refusedWithEarlier(index: number, failure: DelegatedAttestFailure): DelegatedAttestFailure {
  return {
    ...failure,
    message: `Not sent: request ${index} of the batch, of the same attester and before this one, was refused so (${failure.message}); send them again together`,
  };
}
