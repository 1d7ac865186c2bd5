import { keccak256, recoverAddress } from "viem/utils";
import type { DelegatedAttestCall, EasReader, HexString, WalletDeployment } from "../../ports/eas.ts";
import type { ReplayRecord } from "../../ports/replay_store.ts";
import { signerUnavailable } from "./signer_unavailable.ts";
import { type AttestMessage, attestDigest } from "./attest_typed_data.ts";
import { type DelegatedRequest, parseDelegatedRequest } from "./delegated_request.ts";
import { fail, type Ok, ok, type Result } from "../result.ts";
import { attestBatch, type DelegatedAttestBatch } from "./delegated_attest_batch.ts";
import { type NormalizedSignature, parseAttestSignature } from "./signature.ts";

export type {
  BatchNonces,
  CallerTicket,
  Claimed,
  DelegatedAttestCaller,
  DelegatedAttestCode,
  DelegatedAttestDeps,
  DelegatedAttestFailure,
  DelegatedAttestSuccess,
  SubsidizedSchema,
} from "./_delegated_attest_types.ts";
import type {
  BatchNonces,
  CallerTicket,
  Claimed,
  DelegatedAttestCaller,
  DelegatedAttestDeps,
  DelegatedAttestFailure,
  DelegatedAttestSuccess,
} from "./_delegated_attest_types.ts";

/** `details` of an ATTESTER_MISMATCH whose signature is valid for an older nonce: re-sign and resubmit. */
export const NONCE_MOVED = "NONCE_MOVED";

/**
 * Verifies and submits one delegated attestation; `batch` (decisions §23) checks several as it checks one and sends
 * those that pass in one `multiAttestByDelegation` transaction (absent on fakes that do not batch).
 */
export type DelegatedAttest = ((body: unknown, caller?: DelegatedAttestCaller) => Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure>) & {
  batch?: DelegatedAttestBatch | undefined;
};

const DEFAULT_MAX_DEADLINE_AHEAD = 86_400;

/**
 * Builds the delegated-attest use case. Checks run in the order of decisions §6, so everything
 * that needs no chain is rejected before the first RPC call, and nothing is broadcast before the
 * signature's replay record is stored.
 */
export function createDelegatedAttest(deps: DelegatedAttestDeps): DelegatedAttest {
  const maxAhead = BigInt(deps.maxDeadlineAheadSeconds ?? DEFAULT_MAX_DEADLINE_AHEAD);
  const signing: DigestCrypto = { recover: deps.recoverAddress ?? viemRecoverAddress, hash: deps.keccak256 ?? keccak256 };
  // Whether the delegate wallet could pay at its last check: a wallet that could not is not simulated for ahead.
  let walletCouldPay = false;

  /**
   * Every check of decisions §6 (and the caller's own, `admit`) up to the replay record, which it claims: what passes
   * is ready to be sent. In a batch (`batch`), the signature is verified against the nonce the attester will have when
   * EAS reaches it within the call, and nothing is simulated ahead.
   */
  async function check(body: unknown, caller: DelegatedAttestCaller, batch?: BatchNonces): Promise<Claimed | DelegatedAttestFailure> {
    const parsed = parseDelegatedRequest(body);
    if (!parsed.ok) return parsed;
    const request = parsed.value;
    const closed = deps.guard?.open();
    if (closed !== undefined) return closed;

    if (deps.mainnet) {
      return fail("MAINNET_NOT_SUPPORTED", "Mainnet delegated attestations are not available");
    }
    const schema = deps.subsidized.get(request.schema);
    if (schema === undefined) return fail("SCHEMA_NOT_SUBSIDIZED", "Schema not eligible for gas subsidy");
    const now = BigInt(Math.floor(deps.clock.nowMs() / 1000));
    if (request.deadline <= now) return fail("SIGNATURE_EXPIRED", "Signature expired");
    if (request.deadline > now + maxAhead) {
      return fail("INVALID_INPUT", `deadline must be at most ${maxAhead} seconds ahead`);
    }
    const parsedSignature = parseAttestSignature(request.signature);
    if (!parsedSignature.ok) return parsedSignature;
    // The replay key and what EAS is given are the 65 normalized bytes, whatever wrapping they came in.
    const signature = ok(parsedSignature.value.normalized);
    // Not a step of decisions §6: EAS would revert with Irrevocable in simulation; refusing it here spares the
    // RPC calls. Placed after the §6 checks that precede the replay lookup, so their precedence is unchanged.
    if (schema.revocable !== undefined && schema.revocable !== request.revocable) {
      return fail("INVALID_INPUT", `revocable must be ${schema.revocable} for schema ${schema.name}`);
    }
    // Recovery is CPU work: done for the nonce the client says it signed, used by the guard now (no RPC) and by
    // the verdict once the chain's nonce is known (decisions §6 order).
    const clientSigner =
      request.clientNonce === undefined ? undefined : recoverSigner(signing, deps.eas, request, signature.value, request.clientNonce);
    const known = await deps.replay.find(signature.value.hex);
    if (known !== undefined) return duplicate(known);
    // Issue 23: a wallet whose ERC-6492 factory call the service already sent, mined, without deploying it, is not
    // deployed again (that call may burn gas whenever it is sent). Storage only: refused before any RPC or gas.
    if (parsedSignature.value.deployment !== undefined && deps.factoryCalls !== undefined) {
      const sent = await deps.factoryCalls.find(deps.eas.chainId, request.attester);
      if (sent?.state === "failed") return factoryCallFailedBefore();
    }
    // The guard comes after the replay lookup (storage, no RPC): a signature already on record answers with its
    // outcome whatever the limits, since resubmitting it is how a client learns what became of an OUTCOME_UNKNOWN.
    if (deps.guard !== undefined) {
      // The attester's bucket is charged only for signatures that are the attester's (for the nonce the client
      // names): someone else's garbage cannot spend a real attester's hourly allowance.
      const signer = clientSigner === undefined ? request.attester : await clientSigner;
      const attesterKey = signer !== undefined && sameAddress(signer, request.attester) ? request.attester : `unverified:${signer ?? "none"}`;
      const refused = await deps.guard.admit({ clientKey: caller.clientKey ?? "unknown", attester: attesterKey });
      if (refused !== undefined) return refused;
    }
    const delegate = deps.delegate;
    if (delegate === undefined) {
      return fail("NO_DELEGATE_KEY", "Server misconfigured: no delegate key available");
    }

    // Issue 28: a signature already proven to be the attester's for the nonce the client names (an EOA's, no ERC-6492
    // wrapping) is simulated ahead, in the same JSON-RPC batch as the nonce read: it is a read, its answer is used
    // only once the chain's nonce is that nonce, the wallet can pay and the replay record is claimed (decisions §6
    // order of outcomes unchanged), and it saves a round trip. Anything else is simulated after the claim as before.
    // Not when the caller still has checks of its own to make (the private relay's plan, subject and refUID
    // authority): a request those refuse must cost the node nothing more than the reads that decided it (issue 23).
    const call = toCall(request, signature.value);
    const provenSigner = clientSigner === undefined ? undefined : await clientSigner;
    const simulateAhead = batch === undefined && walletCouldPay && parsedSignature.value.deployment === undefined && caller.admit === undefined &&
      provenSigner !== undefined && sameAddress(provenSigner, request.attester);
    // Read in the same tick as the nonce, so all ride in one JSON-RPC batch. The attester's code is read only when the
    // signature did not already recover to the attester (issue 43): the verdict below does not ask about the code of an
    // attester whose own key signed (should EAS ask a contract there instead, the simulation before sending says so),
    // and asking for it was a JSON-RPC call on every request.
    const signedByAttester = provenSigner !== undefined && sameAddress(provenSigner, request.attester);
    const funds = delegate.checkFunds();
    const pendingNonce = deps.eas.getAttesterNonce(request.attester, { withCode: !signedByAttester });
    const simulatedAhead = simulateAhead ? delegate.simulate(call) : undefined;
    const [chainNonce, fundsCheck] = await Promise.all([pendingNonce, funds]);
    if (fundsCheck !== "rpc-error") walletCouldPay = fundsCheck === "ok";
    if (!chainNonce.ok) return fail("RPC_ERROR", "Failed to read the attester nonce from the chain");
    // A batch's later items of one attester are checked against the nonce EAS will have reached by then.
    const nonceRead = batch === undefined ? chainNonce : { ...chainNonce, nonce: batch.nonceFor(request.attester, chainNonce.nonce) };
    const verified = await verifyAgainstNonce(signing, deps.eas, request, signature.value, nonceRead, clientSigner, parsedSignature.value.deployment);
    if (!verified.ok) {
      // Issue 33: the same signature sent twice at once. This request passed the replay lookup before the other was
      // recorded, and read the nonce after the other was mined, so the signature no longer verifies. A signature on
      // record was verified when it was recorded: the answer is the first request's (decisions §6: 409 DUPLICATE if
      // a concurrent request got there first), never a mismatch. Storage only, and only on this refusal.
      if (verified.code === "ATTESTER_MISMATCH") {
        const first = await deps.replay.find(signature.value.hex);
        if (first !== undefined) return duplicate(first);
      }
      return verified;
    }
    // Decisions §15: a wallet that cannot pay is refused before anything is recorded, so nothing is locked.
    if (fundsCheck === "rpc-error") return fail("RPC_ERROR", "Failed to read the delegate wallet's balance from the chain");
    if (fundsCheck === "low") return cannotPay();
    if (batch !== undefined && verified.value.deploy !== undefined) {
      return fail("INVALID_INPUT", "An ERC-6492 signature of a wallet not deployed yet is sent alone (POST /v1/delegated-attest), not in a batch");
    }

    const key = signature.value.hex;
    const admitted = caller.admit === undefined ? undefined : await caller.admit(request);
    if (admitted !== undefined && "ok" in admitted) return admitted;
    const ticket = admitted as CallerTicket | undefined;
    const claim = await deps.replay.claim({
      key,
      chainId: deps.eas.chainId,
      attester: request.attester.toLowerCase(),
      nonce: nonceRead.nonce,
      deadline: request.deadline,
      createdAtMs: deps.clock.nowMs(),
    });
    if (claim === "duplicate-signature") {
      await ticket?.release();
      const winner = await deps.replay.find(key);
      return winner === undefined ? fail("DUPLICATE", "Duplicate submission") : duplicate(winner);
    }
    if (claim === "nonce-in-flight") {
      await ticket?.release();
      return fail("DUPLICATE", "Another submission for this attester and nonce is already in flight");
    }
    return { request, call, key, ticket, delegate, simulatedAhead, deploy: verified.value.deploy, nonce: nonceRead.nonce };
  }

  const delegatedAttest: DelegatedAttest = async function delegatedAttest(body, caller = {}) {
    const claimed = await check(body, caller);
    if ("ok" in claimed) return claimed;
    return await sendOne(claimed, caller);
  };
  delegatedAttest.batch = (bodies, caller = {}) => attestBatch({ deps, check }, bodies, caller);
  return delegatedAttest;

  /** Sends one checked request (`attestByDelegation`), deploying its counterfactual wallet first when it must. */
  async function sendOne(claimed: Claimed, caller: DelegatedAttestCaller): Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure> {
    const { request, call, key, ticket, simulatedAhead } = claimed;
    // Whose shares of the relay's gas budget the gas is charged to (issue 43).
    const chargedTo = { clientKey: caller.clientKey ?? "unknown", attester: request.attester };
    // Whatever ends this request before broadcast gives the caller's reservation back; gas burned keeps it (issue 23).
    const submitter = claimed.delegate;
    let signed = false;
    try {
      return await submitClaimed();
    } finally {
      if (!signed) await ticket?.release();
    }

    async function submitClaimed(): Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure> {

    const deployment = claimed.deploy;
    if (deployment !== undefined) {
      const refused = await deployCounterfactual(deployment);
      if (refused !== undefined) {
        // The signature is given back (§15: nothing was attested); the wallet's record refuses it from now on.
        await deps.replay.release(key);
        return refused;
      }
    }
    // Ahead only when no wallet was deployed since: a deployment changes what the simulation would find.
    const simulation = await (deployment === undefined && simulatedAhead !== undefined ? simulatedAhead : submitter.simulate(call));
    if (!simulation.ok) {
      await deps.replay.release(key);
      if (simulation.reason === "reverted") {
        if (simulation.errorName === "DeadlineExpired") return fail("SIGNATURE_EXPIRED", "Signature expired");
        return fail("INVALID_INPUT", `EAS rejected the attestation: ${simulation.errorName}`);
      }
      if (simulation.reason === "insufficient-funds") return cannotPay();
      return fail("RPC_ERROR", "The chain did not answer the simulation");
    }
    // The budget is charged with the simulated gas (the transaction's gas limit, so never less than it spends),
    // atomically and before signing; it is not refunded afterwards, whatever the outcome.
    if (deps.maxGasPerTx !== undefined && simulation.gas > deps.maxGasPerTx) {
      await deps.replay.release(key);
      return fail("INVALID_INPUT", `The attestation needs ${simulation.gas} gas, more than the ${deps.maxGasPerTx} allowed per transaction`);
    }
    const overBudget = await deps.guard?.charge(simulation.gas, chargedTo);
    if (overBudget !== undefined) {
      await deps.replay.release(key);
      return overBudget;
    }

    if (caller.onSubmitting !== undefined) {
      try {
        await caller.onSubmitting(key);
      } catch (error) {
        await deps.replay.release(key);
        throw error;
      }
    }
    const submission = await submitter.submit(call, {
      gas: simulation.gas,
      onSigned: async (tx) => {
        // A record the reconciler already released must not be sent under: nobody could settle it.
        if (!(await deps.replay.markSigned(key, tx))) throw new Error("The submission record was released before sending");
        await ticket?.onSigned(tx);
        signed = true;
      },
      onSent: async () => {
        await deps.replay.markSent(key);
        await ticket?.onSent();
      },
    });
    if (submission.ok) {
      await deps.replay.finish(key, {
        state: "mined",
        txHash: submission.txHash,
        uid: submission.uid,
        blockNumber: submission.blockNumber,
      });
      const value = { txHash: submission.txHash, uid: submission.uid, blockNumber: submission.blockNumber };
      await ticket?.onMined(value);
      return ok(value);
    }
    if (submission.reason === "not-broadcast") {
      // The node refused it and does not hold it: nothing can land, so the signature is given back.
      await deps.replay.release(key);
      await ticket?.release();
      return fail("SUBMISSION_FAILED", "The chain refused the transaction; nothing was sent, and the same signature may be submitted again");
    }
    if (submission.reason === "signer-unavailable") {
      // Nothing signed or sent: the signature, the gas charged and the caller's reservation are given back.
      await deps.replay.release(key);
      await deps.guard?.refund?.(simulation.gas, chargedTo);
      await ticket?.release();
      return signerUnavailable();
    }
    if (submission.reason === "reverted") {
      await deps.replay.finish(key, { state: "reverted", txHash: submission.txHash, blockNumber: submission.blockNumber });
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
     * Deploys a counterfactual wallet (ERC-6492) so that EAS finds its code. Runs under the replay claim, after the
     * signature was proven valid by a read-only call that simulated the same deployment; its gas is capped and
     * charged to the relay's budget like the attestation's, and not given back whatever the outcome.
     *
     * Issue 23: that read-only call proves little, a factory may deploy only when given more gas than the real send
     * gets and burn it otherwise. So the wallet is recorded (`factoryCalls`) before its factory call is sent, at most
     * once per wallet; a call mined without leaving code keeps the record (the wallet's ERC-6492 signatures are refused
     * before any RPC from then on) and the caller's reservation (`onBurned`: the private relay's sponsored write).
     */
    async function deployCounterfactual(target: WalletDeployment): Promise<DelegatedAttestFailure | undefined> {
      if (submitter.deployWallet === undefined) {
        return fail("INVALID_SIGNATURE", "This deployment cannot deploy counterfactual wallets; deploy the wallet first");
      }
      const chainId = deps.eas.chainId;
      let refusal: DelegatedAttestFailure | undefined;
      let recorded = false;
      const outcome = await submitter.deployWallet(request.attester, target, async (gas) => {
        if (deps.maxGasPerTx !== undefined && gas > deps.maxGasPerTx) {
          refusal = fail("INVALID_INPUT", `Deploying the wallet needs ${gas} gas, more than the ${deps.maxGasPerTx} allowed per transaction`);
          return false;
        }
        if (deps.factoryCalls !== undefined) {
          recorded = await deps.factoryCalls.begin({
            chainId,
            wallet: request.attester,
            factory: target.factory,
            calldataHash: keccak256(target.factoryCalldata),
            createdAtMs: deps.clock.nowMs(),
          });
          // Another request sent this wallet's factory call already (its outcome unknown, or it failed meanwhile).
          if (!recorded) {
            refusal = factoryCallFailedBefore();
            return false;
          }
        }
        refusal = await deps.guard?.charge(gas, chargedTo);
        if (refusal !== undefined && recorded) {
          await deps.factoryCalls?.forget(chainId, request.attester);
          recorded = false;
        }
        return refusal === undefined;
      });
      if (typeof outcome === "object") {
        await deps.factoryCalls?.failed(chainId, request.attester, { txHash: outcome.txHash, gasUsed: outcome.gasUsed }, deps.clock.nowMs());
        if (ticket?.onBurned !== undefined) {
          await ticket.onBurned({ txHash: outcome.txHash, blockNumber: outcome.blockNumber });
          // Kept charged: the `finally` above must not give it back.
          signed = true;
        }
        return fail(
          "SUBMISSION_FAILED",
          "The wallet's factory call was mined but did not deploy the attester; its gas was charged, nothing was attested, and this wallet's ERC-6492 signatures are refused from now on: deploy the wallet and send the plain signature",
          outcome.txHash,
        );
      }
      // Deployed, or nothing was sent: the wallet's record goes. An unknown outcome keeps it (the call may still land).
      if (recorded && outcome !== "rpc-error") await deps.factoryCalls?.forget(chainId, request.attester);
      if (outcome === "deployed") return undefined;
      if (outcome === "refused") return refusal ?? fail("INVALID_INPUT", "The wallet's deployment was refused");
      if (outcome === "rpc-error") return fail("RPC_ERROR", "The chain did not answer while deploying the wallet");
      return fail("SUBMISSION_FAILED", "The wallet's factory call did not deploy the attester; nothing was attested");
    }
  }
}

/** The truthful answer to a signature already on record (decisions §15): its uid, its hash, or in progress. */
function duplicate(record: ReplayRecord): DelegatedAttestFailure {
  if (record.state === "mined") return fail("DUPLICATE", "Duplicate submission: already attested", record.uid ?? record.txHash ?? undefined);
  if (record.state === "reverted") return fail("DUPLICATE", "Duplicate submission: its transaction reverted", record.txHash ?? undefined);
  if (record.txHash !== null) return fail("DUPLICATE", "Duplicate submission: its transaction is on its way", record.txHash);
  return fail("DUPLICATE", "Duplicate submission: it is being processed");
}

/** A wallet whose factory call the service already sent (issue 23): refused before any gas. */
function factoryCallFailedBefore(): DelegatedAttestFailure {
  return fail(
    "INVALID_SIGNATURE",
    "The service already sent this wallet's ERC-6492 factory call and it did not deploy the wallet; its ERC-6492 signatures are not accepted: deploy the wallet and send the plain signature",
  );
}

function cannotPay(): DelegatedAttestFailure {
  return { ...fail("SUBMISSION_FAILED", "The delegate wallet cannot pay for gas right now; nothing was recorded"), unavailable: true };
}

/**
 * Recovers the signer of the Attest message rebuilt with `nonce`; undefined when the signature does not recover. The
 * digest is {@link attestDigest}'s (the typed data is not rebuilt and re-validated by viem on every request).
 */
async function recoverSigner(
  signing: DigestCrypto,
  eas: EasReader,
  request: DelegatedRequest,
  signature: NormalizedSignature,
  nonce: bigint,
): Promise<string | undefined> {
  try {
    return await signing.recover(attestDigest(eas, toMessage(request, nonce), signing.hash), signature.hex);
  } catch {
    return undefined;
  }
}

type RecoverAddress = (hash: HexString, signature: HexString) => string | undefined | Promise<string | undefined>;

/** How the use case recovers a signer and hashes the Attest digest (the deps' faster ones, or viem's). */
type DigestCrypto = { readonly recover: RecoverAddress; readonly hash: (data: HexString) => HexString };

/** viem's recovery, when no faster one is given: an unrecoverable signature is undefined, as the port's. */
const viemRecoverAddress: RecoverAddress = (hash, signature) => recoverAddress({ hash, signature }).catch(() => undefined);

/**
 * Compares the signer of the typed data rebuilt with the on-chain nonce with the attester. `clientSigner` is the
 * signer already recovered for the client's nonce, if any. An attester that is a contract (or an ERC-6492
 * signature of one not deployed yet) is asked on chain, as EAS will ask it: `isValidSignature` of the digest with
 * the same 65 bytes EAS receives. The answer says whether the wallet must be deployed first.
 */
async function verifyAgainstNonce(
  signing: DigestCrypto,
  eas: EasReader,
  request: DelegatedRequest,
  signature: NormalizedSignature,
  nonceRead: { readonly nonce: bigint; readonly isContract?: boolean | undefined },
  clientSigner: Promise<string | undefined> | undefined,
  deployment: WalletDeployment | undefined,
): Promise<Result<{ readonly deploy?: WalletDeployment | undefined }, "INVALID_SIGNATURE" | "ATTESTER_MISMATCH" | "RPC_ERROR">> {
  const nonce = nonceRead.nonce;
  const recover = (n: bigint) =>
    clientSigner !== undefined && n === request.clientNonce ? clientSigner : recoverSigner(signing, eas, request, signature, n);
  const signer = await recover(nonce);
  if (signer !== undefined && sameAddress(signer, request.attester)) return ok({});
  const counterfactual = nonceRead.isContract !== true && deployment !== undefined;
  if ((nonceRead.isContract === true || counterfactual) && eas.checkContractSignature !== undefined) {
    const digest = attestDigest(eas, toMessage(request, nonce), signing.hash);
    const check = await eas.checkContractSignature({
      signer: request.attester,
      digest,
      signature: signature.hex,
      deployment: counterfactual ? deployment : undefined,
    });
    if (check === "rpc-error") return fail("RPC_ERROR", "Failed to ask the attester's wallet contract about the signature");
    if (check === "valid") return ok(counterfactual ? { deploy: deployment } : {});
    return fail("ATTESTER_MISMATCH", "Invalid signature: the attester's wallet contract does not accept it (ERC-1271)");
  }
  if (signer === undefined) return fail("INVALID_SIGNATURE", "Invalid signature format");
  if (request.clientNonce !== undefined && request.clientNonce !== nonce) {
    const earlier = await recover(request.clientNonce);
    if (earlier !== undefined && sameAddress(earlier, request.attester)) {
      return fail(
        "ATTESTER_MISMATCH",
        `Signed for nonce ${request.clientNonce} but the attester's nonce is now ${nonce}: fetch the nonce, re-sign and resubmit`,
        NONCE_MOVED,
      );
    }
  }
  return fail("ATTESTER_MISMATCH", "Invalid signature: attester mismatch");
}

function toMessage(request: DelegatedRequest, nonce: bigint): AttestMessage {
  return {
    attester: request.attester,
    schema: request.schema,
    recipient: request.recipient,
    expirationTime: request.expirationTime,
    revocable: request.revocable,
    refUID: request.refUID,
    data: request.data,
    value: request.value,
    nonce,
    deadline: request.deadline,
  };
}

function toCall(request: DelegatedRequest, signature: NormalizedSignature): DelegatedAttestCall {
  return {
    schema: request.schema,
    attester: request.attester,
    deadline: request.deadline,
    data: {
      recipient: request.recipient,
      expirationTime: request.expirationTime,
      revocable: request.revocable,
      refUID: request.refUID,
      data: request.data,
      value: request.value,
    },
    signature: { v: signature.v, r: signature.r, s: signature.s },
  };
}

const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
