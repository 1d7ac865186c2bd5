/** Deploying a counterfactual wallet (ERC-6492) before its delegated attestation is sent (issue 23). */
import { keccak256 } from "viem/utils";
import type { WalletDeployment } from "../../ports/eas.ts";
import { fail } from "../result.ts";
import { factoryCallFailedBefore, nonceUnavailable } from "./_refusals.ts";
import { signerUnavailable } from "./signer_unavailable.ts";
import { deadlineHolds, type DelegatedAttestFailure, expiredWhileQueued, type Sending } from "./_delegated_attest_types.ts";


/**
 * Deploys a counterfactual wallet (ERC-6492) so that EAS finds its code. Runs under the replay claim, after the
 * signature was proven valid by a read-only call that simulated the same deployment; its gas is capped and
 * charged to the relay's budget like the attestation's, and given back only when nothing was sent.
 *
 * Issue 23: that read-only call proves little, a factory may deploy only when given more gas than the real send
 * gets and burn it otherwise. So the wallet is recorded (`factoryCalls`) before its factory call is sent, at most
 * once per wallet; a call mined without leaving code keeps the record (the wallet's ERC-6492 signatures are refused
 * before any RPC from then on) and the caller's reservation (`onBurned`: the private relay's sponsored write).
 */
export async function deployCounterfactual(sending: Sending, target: WalletDeployment): Promise<DelegatedAttestFailure | undefined> {
  const { deps, claimed: { request, ticket, delegate } } = sending;
  if (delegate.deployWallet === undefined) {
    return fail("INVALID_SIGNATURE", "This deployment cannot deploy counterfactual wallets; deploy the wallet first");
  }
  const chainId = deps.eas.chainId;
  const state: FactoryCallState = { refusal: undefined, recorded: false, charged: undefined };
  // Asked under the wallet's lock, as the attestation's own send asks it: a request that waited there behind a slow
  // node's sends until its deadline came within the margin spends no gas on a wallet whose attestation cannot land.
  const outcome = await delegate.deployWallet(request.attester, target, (gas) => admitFactoryCall(sending, target, gas, state), {
    stillValid: () => deadlineHolds(deps, request.deadline),
  });
  if (typeof outcome === "object") {
    await deps.factoryCalls?.failed(chainId, request.attester, { txHash: outcome.txHash, gasUsed: outcome.gasUsed }, deps.clock.nowMs());
    if (ticket?.onBurned !== undefined) {
      await ticket.onBurned({ txHash: outcome.txHash, blockNumber: outcome.blockNumber });
      // Kept charged: the send's `finally` must not give it back.
      sending.kept = true;
    }
    return fail(
      "SUBMISSION_FAILED",
      "The wallet's factory call was mined but did not deploy the attester; its gas was charged, nothing was attested, and this wallet's ERC-6492 signatures are refused from now on: deploy the wallet and send the plain signature",
      outcome.txHash,
    );
  }
  // Deployed, or nothing was sent: the wallet's record goes. An unknown outcome keeps it (the call may still land).
  if (state.recorded && outcome !== "rpc-error") await deps.factoryCalls?.forget(chainId, request.attester);
  if (outcome === "deployed") return undefined;
  if (outcome === "expired") {
    // Nothing signed or sent: the gas charged goes back, as for the attestation's own send (_send_one.ts).
    if (state.charged !== undefined) await deps.guard?.refund?.(state.charged, sending.chargedTo);
    await deps.guard?.giveBackAttester?.(request.attester);
    return expiredWhileQueued(deps);
  }
  if (outcome === "signer-unavailable") {
    // Nothing signed, nothing sent (decisions §27): the gas charged goes back too, and the same request may be sent
    // again. It was RPC_ERROR with the record kept, so the wallet's later requests were refused for good.
    if (state.charged !== undefined) await deps.guard?.refund?.(state.charged, sending.chargedTo);
    await deps.guard?.giveBackAttester?.(request.attester);
    return signerUnavailable();
  }
  if (outcome === "chain-silent") {
    // A read before signing failed (the delegate's nonce or fees): nothing sent, so the charge and the token go back and
    // the answer is the chain's silence (RPC_ERROR, not kept under an Idempotency-Key), as for any read before a write.
    if (state.charged !== undefined) await deps.guard?.refund?.(state.charged, sending.chargedTo);
    await deps.guard?.giveBackAttester?.(request.attester);
    return fail("RPC_ERROR", "The chain did not answer before the wallet's deployment was sent; nothing was sent");
  }
  if (outcome === "nonce-unavailable") {
    // The delegate wallet's shared nonce could not be taken (the storage failed): nothing sent, so the charge and the
    // token go back, and the answer is the attestation's own send's (500 INTERNAL_ERROR, not kept under an
    // Idempotency-Key). It was "the factory call did not deploy the attester", 500 SUBMISSION_FAILED kept 24 hours.
    if (state.charged !== undefined) await deps.guard?.refund?.(state.charged, sending.chargedTo);
    await deps.guard?.giveBackAttester?.(request.attester);
    return nonceUnavailable();
  }
  if (outcome === "refused") {
    // The guard's 429 (the budget or a share had no room): nothing was sent, so the attester's token goes back.
    if (state.refusal?.code === "RATE_LIMITED") await deps.guard?.giveBackAttester?.(request.attester);
    return state.refusal ?? fail("INVALID_INPUT", "The wallet's deployment was refused");
  }
  if (outcome === "rpc-error") {
    // Not charged: the chain did not answer before the charge (the wallet's code, the factory call's estimate), so
    // nothing was sent and the attester's token goes back. Charged, the call may have left: the token is kept.
    if (state.charged === undefined) await deps.guard?.giveBackAttester?.(request.attester);
    return fail("RPC_ERROR", "The chain did not answer while deploying the wallet");
  }
  if (state.charged !== undefined) {
    // Charged, then not sent (the node refused the factory call): no gas was spent, so the charge and the token go
    // back, as for the attestation's own refused send (_send_one.ts). A factory call that reverts in estimation is
    // refused before the charge, and keeps its token.
    await deps.guard?.refund?.(state.charged, sending.chargedTo);
    await deps.guard?.giveBackAttester?.(request.attester);
  }
  return fail("SUBMISSION_FAILED", "The wallet's factory call did not deploy the attester; nothing was attested");
}

/** What admitting a factory call did: why it refused, whether the wallet was recorded, the gas charged to the budget. */
type FactoryCallState = { refusal: DelegatedAttestFailure | undefined; recorded: boolean; charged: bigint | undefined };

/** Whether the factory call of `gas` may be sent: within the cap, recorded once per wallet, charged to the budget. */
async function admitFactoryCall(
  sending: Sending,
  target: WalletDeployment,
  gas: bigint,
  state: FactoryCallState,
): Promise<boolean> {
  const { deps, claimed: { request } } = sending;
  const chainId = deps.eas.chainId;
  if (deps.maxGasPerTx !== undefined && gas > deps.maxGasPerTx) {
    state.refusal = fail("INVALID_INPUT", `Deploying the wallet needs ${gas} gas, more than the ${deps.maxGasPerTx} allowed per transaction`);
    return false;
  }
  if (deps.factoryCalls !== undefined) {
    state.recorded = await deps.factoryCalls.begin({
      chainId,
      wallet: request.attester,
      factory: target.factory,
      calldataHash: keccak256(target.factoryCalldata),
      createdAtMs: deps.clock.nowMs(),
    });
    // Another request sent this wallet's factory call already (its outcome unknown, or it failed meanwhile).
    if (!state.recorded) {
      state.refusal = factoryCallFailedBefore();
      return false;
    }
  }
  state.refusal = await deps.guard?.charge(gas, sending.chargedTo);
  if (state.refusal === undefined) state.charged = gas;
  if (state.refusal !== undefined && state.recorded) {
    await deps.factoryCalls?.forget(chainId, request.attester);
    state.recorded = false;
  }
  return state.refusal === undefined;
}
