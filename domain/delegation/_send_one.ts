/** Sending one checked delegated attestation (`attestByDelegation`) and settling its records (decisions §6, §15). */
import type { Submission } from "../../ports/eas.ts";
import { fail, type Ok, ok } from "../result.ts";
import { signerUnavailable } from "./signer_unavailable.ts";
import { cannotPay, chainRefused, chainSilentBeforeSend, nonceUnavailable } from "./_refusals.ts";
import { deployCounterfactual } from "./_deploy_wallet.ts";
import {
  type Claimed,
  deadlineHolds,
  type DelegatedAttestCaller,
  type DelegatedAttestDeps,
  type DelegatedAttestFailure,
  type DelegatedAttestSuccess,
  expiredWhileQueued,
  type Sending,
  simulationCap,
} from "./_delegated_attest_types.ts";

/** Sends one checked request, deploying its counterfactual wallet first when it must. */
export async function sendOne(deps: DelegatedAttestDeps, claimed: Claimed, caller: DelegatedAttestCaller): Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure> {
  const sending: Sending = { deps, claimed, chargedTo: { clientKey: caller.clientKey ?? "unknown", attester: claimed.request.attester }, kept: false };
  // Whatever ends this request before broadcast gives the caller's reservation back; gas burned keeps it (issue 23).
  try {
    return await submitClaimed(sending, caller);
  } finally {
    if (!sending.kept) await claimed.ticket?.release();
  }
}

/** Simulates (unless done ahead), charges the budget, opens the caller's submission, then signs and sends. */
async function submitClaimed(sending: Sending, caller: DelegatedAttestCaller): Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure> {
  const { deps, claimed } = sending;
  const { call, key, ticket, simulatedAhead } = claimed;
  const deployment = claimed.deploy;
  if (deployment !== undefined) {
    const refused = await deployCounterfactual(sending, deployment);
    if (refused !== undefined) {
      // The signature is given back (§15: nothing was attested); the wallet's record refuses it from now on.
      await deps.replay.release(deps.eas.chainId, key);
      return refused;
    }
  }
  // Ahead only when no wallet was deployed since: a deployment changes what the simulation would find.
  const simulation = await (deployment === undefined && simulatedAhead !== undefined ? simulatedAhead : claimed.delegate.simulate(call, simulationCap(deps)));
  if (!simulation.ok) {
    await deps.replay.release(deps.eas.chainId, key);
    if (simulation.reason === "reverted") {
      if (simulation.errorName === "DeadlineExpired") return fail("SIGNATURE_EXPIRED", "Signature expired");
      return fail("INVALID_INPUT", `EAS rejected the attestation: ${simulation.errorName}`);
    }
    if (simulation.reason === "insufficient-funds") {
      // The delegate wallet cannot pay (503): nothing was sent or charged, the service's state and not the request's,
      // so the attester's token goes back, as when the chain did not answer (below).
      await deps.guard?.giveBackAttester?.(sending.chargedTo.attester);
      return cannotPay();
    }
    if (simulation.reason === "too-much-gas") {
      if (deps.maxGasPerTx === undefined) return fail("INVALID_INPUT", "The attestation needs more gas than a block holds; nothing was sent");
      return fail("INVALID_INPUT", `The attestation needs more gas: more than the ${deps.maxGasPerTx} allowed per transaction; nothing was sent`);
    }
    // The chain did not answer: nothing was sent or charged, so the attester's token goes back (as for a failed read
    // just before signing, below); a refusal of the request itself (a revert, too much gas) keeps it.
    await deps.guard?.giveBackAttester?.(sending.chargedTo.attester);
    return fail("RPC_ERROR", "The chain did not answer the simulation");
  }
  // The budget is charged with the simulated gas (the transaction's gas limit, so never less than it spends),
  // atomically and before signing; once the transaction may have left (sent, mined, reverted, unknown) it is not
  // refunded, whatever the outcome. Nothing sent (below: refused by the node, not signed, ...), it goes back.
  if (deps.maxGasPerTx !== undefined && simulation.gas > deps.maxGasPerTx) {
    await deps.replay.release(deps.eas.chainId, key);
    return fail("INVALID_INPUT", `The attestation needs ${simulation.gas} gas, more than the ${deps.maxGasPerTx} allowed per transaction`);
  }
  const overBudget = await deps.guard?.charge(simulation.gas, sending.chargedTo);
  if (overBudget !== undefined) {
    // Refused for the hour's budget or a share of it (the client address's, the attester's): nothing was sent, so the
    // attester's hourly token goes back with the signature, as after any refusal before broadcast.
    await deps.replay.release(deps.eas.chainId, key);
    await deps.guard?.giveBackAttester?.(sending.chargedTo.attester);
    return overBudget;
  }
  if (caller.onSubmitting !== undefined) {
    try {
      await caller.onSubmitting(deps.eas.chainId, key);
    } catch (error) {
      // Nothing was signed or sent: the gas charged and the attester's token go back with the signature (they were
      // kept, though the answer, a 500, said nothing of what was spent).
      await giveBackUnsent(sending, simulation.gas);
      throw error;
    }
  }
  const submission = await claimed.delegate.submit(call, {
    gas: simulation.gas,
    // Asked once the wallet's lock is held: the request may have waited there behind a slow node's sends (decisions §6).
    stillValid: () => deadlineHolds(deps, claimed.request.deadline),
    onSigned: async (tx) => {
      // A record the reconciler already released must not be sent under: nobody could settle it.
      if (!(await deps.replay.markSigned(deps.eas.chainId, key, tx))) throw new Error("The submission record was released before sending");
      await ticket?.onSigned(tx);
      sending.kept = true;
    },
    onSent: async () => {
      await deps.replay.markSent(deps.eas.chainId, key);
      await ticket?.onSent();
    },
  });
  return await settleSubmission(sending, submission, simulation.gas);
}

/** Nothing was signed or sent: the signature, the gas charged, the attester's token and the caller's reservation go back. */
async function giveBackUnsent(sending: Sending, gas: bigint): Promise<void> {
  const { deps, claimed: { key, ticket } } = sending;
  await deps.replay.release(deps.eas.chainId, key);
  await deps.guard?.refund?.(gas, sending.chargedTo);
  await deps.guard?.giveBackAttester?.(sending.chargedTo.attester);
  await ticket?.release();
}

/** Keeps what became of the transaction on the replay record and the caller's ticket, and words the answer. */
async function settleSubmission(sending: Sending, submission: Submission, gas: bigint): Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure> {
  const { deps, claimed: { key, ticket } } = sending;
  if (submission.ok) {
    const value = { txHash: submission.txHash, uid: submission.uid, blockNumber: submission.blockNumber };
    await deps.replay.finish(deps.eas.chainId, key, { state: "mined", ...value });
    await ticket?.onMined(value);
    return ok(value);
  }
  if (submission.reason === "not-broadcast") {
    // The node refused it and does not hold it (or it was not sent): nothing can land and no gas was spent, so the
    // signature, the gas charged, the attester's token and the caller's reservation go back (decisions §23). The gas
    // was kept: a free account's share stayed spent, and the retry this answer invites was 429 for the hour. The
    // token goes back as well: a node refuses a signed transaction for the service's reasons (nonce, fees, balance, a
    // full pool). The one a request could cause, more bytes than the node takes (128 KiB), is refused before the charge
    // (MAX_CALLDATA_BYTES: the attestation's call data in delegated_attest.ts's checks, a wallet's factory call in
    // signature.ts).
    await giveBackUnsent(sending, gas);
    return chainRefused();
  }
  if (submission.reason === "nonce-unavailable") {
    // The wallet's shared nonce could not be taken (the storage failed): nothing signed or sent, all given back.
    await giveBackUnsent(sending, gas);
    return nonceUnavailable();
  }
  if (submission.reason === "rpc-error") {
    // The wallet's nonce or fees could not be read, before anything was signed: as a failed balance read or simulation,
    // 500 RPC_ERROR (decisions §2), an answer that did nothing (not kept under an Idempotency-Key). Nothing was sent, so
    // the signature, the gas charged, the attester's token and the caller's reservation are given back.
    await giveBackUnsent(sending, gas);
    return chainSilentBeforeSend();
  }
  if (submission.reason === "signer-unavailable") {
    await giveBackUnsent(sending, gas);
    return signerUnavailable();
  }
  if (submission.reason === "expired") {
    // Its deadline came within the margin while it waited for the wallet: nothing signed or sent, no nonce used; the
    // signature, the gas charged, the attester's token and the caller's reservation are given back, as for any refusal
    // before broadcast.
    await giveBackUnsent(sending, gas);
    return expiredWhileQueued(deps);
  }
  if (submission.reason === "reverted") {
    await deps.replay.finish(deps.eas.chainId, key, { state: "reverted", txHash: submission.txHash, blockNumber: submission.blockNumber });
    await refuseIfItTellsSimulationsApart(sending, submission.txHash);
    // Its gas was burned: a caller that can keep its reservation charged does (issue 23), others give it back.
    if (ticket?.onBurned !== undefined) await ticket.onBurned({ txHash: submission.txHash, blockNumber: submission.blockNumber });
    else await ticket?.release();
    return fail("SUBMISSION_FAILED", "The attestation transaction reverted", submission.txHash);
  }
  return fail(
    "OUTCOME_UNKNOWN",
    "The transaction was sent but its outcome is not known yet; it will be settled, and the same signature then answers with it",
    submission.txHash,
  );
}

/**
 * A wallet contract's attestation that passed the simulation and reverted on chain: simulated once more (the chain
 * has not moved the attester's EAS nonce, a reverted transaction changes nothing). Refused there too, the revert was
 * the chain's state (another transaction took the nonce first, the deadline passed); accepted again, the wallet tells
 * a simulation from a transaction (`tx.gasprice` is 0 in an `eth_estimateGas` without fees), and the relays no longer
 * send for it: it made the delegate pay for a reverted transaction at no cost to its owner, as often as it liked.
 */
async function refuseIfItTellsSimulationsApart(sending: Sending, txHash: string): Promise<void> {
  const { deps, claimed } = sending;
  if (!claimed.byContract || deps.walletRefusals === undefined) return;
  const again = await claimed.delegate.simulate(claimed.call, simulationCap(deps));
  if (!again.ok) return;
  await deps.walletRefusals.refuse({ chainId: deps.eas.chainId, wallet: claimed.request.attester.toLowerCase(), txHash, createdAtMs: deps.clock.nowMs() });
}
