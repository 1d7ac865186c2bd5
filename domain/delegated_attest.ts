import { recoverTypedDataAddress } from "viem/utils";
import type { Clock } from "../ports/clock.ts";
import type { DelegatedAttestCall, DelegateSubmitter, EasReader, HexString } from "../ports/eas.ts";
import type { ReplayStore } from "../ports/replay_store.ts";
import { type AttestMessage, buildAttestTypedData } from "./attest_typed_data.ts";
import { type DelegatedRequest, parseDelegatedRequest } from "./delegated_request.ts";
import { fail, ok, type Result } from "./result.ts";
import { normalizeSignature, type NormalizedSignature } from "./signature.ts";

/** Codes a delegated attestation can fail with; the HTTP layer maps each to a status. */
export type DelegatedAttestCode =
  | "INVALID_INPUT"
  | "MAINNET_NOT_SUPPORTED"
  | "SCHEMA_NOT_SUBSIDIZED"
  | "SIGNATURE_EXPIRED"
  | "INVALID_SIGNATURE"
  | "DUPLICATE"
  | "NO_DELEGATE_KEY"
  | "RPC_ERROR"
  | "ATTESTER_MISMATCH"
  | "SUBMISSION_FAILED";

/** `details` of an ATTESTER_MISMATCH whose signature is valid for an older nonce: re-sign and resubmit. */
export const NONCE_MOVED = "NONCE_MOVED";

/** A subsidised schema: its name, and its revocability when the service knows it. */
export type SubsidizedSchema = { readonly name: string; readonly revocable?: boolean | undefined };

/** What a mined delegated attestation returns. */
export type DelegatedAttestSuccess = {
  readonly txHash: HexString;
  readonly uid: HexString | null;
  readonly blockNumber: bigint;
};

/** Everything the delegated-attest use case needs. */
export type DelegatedAttestDeps = {
  readonly clock: Clock;
  readonly eas: EasReader;
  readonly delegate?: DelegateSubmitter | undefined;
  readonly replay: ReplayStore;
  /** `NEXT_PUBLIC_ACTIVE_CHAIN` is a mainnet setting. */
  readonly mainnet: boolean;
  /** Subsidised schema UIDs, lowercase, to their schema. */
  readonly subsidized: ReadonlyMap<string, SubsidizedSchema>;
  /** Furthest a deadline may lie ahead, in seconds; bounds how long replay records are kept. */
  readonly maxDeadlineAheadSeconds?: number | undefined;
};

/** Verifies and submits one delegated attestation. */
export type DelegatedAttest = (body: unknown) => Promise<Result<DelegatedAttestSuccess, DelegatedAttestCode>>;

const DEFAULT_MAX_DEADLINE_AHEAD = 86_400;

/**
 * Builds the delegated-attest use case. Checks run in the order of decisions §6, so everything
 * that needs no chain is rejected before the first RPC call, and nothing is broadcast before the
 * signature's replay record is stored.
 */
export function createDelegatedAttest(deps: DelegatedAttestDeps): DelegatedAttest {
  const maxAhead = BigInt(deps.maxDeadlineAheadSeconds ?? DEFAULT_MAX_DEADLINE_AHEAD);

  return async function delegatedAttest(body) {
    const parsed = parseDelegatedRequest(body);
    if (!parsed.ok) return parsed;
    const request = parsed.value;

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
    const signature = normalizeSignature(request.signature);
    if (!signature.ok) return signature;
    // Not a step of decisions §6: EAS would revert with Irrevocable in simulation; refusing it here spares the
    // RPC calls. Placed after the §6 checks that precede the replay lookup, so their precedence is unchanged.
    if (schema.revocable !== undefined && schema.revocable !== request.revocable) {
      return fail("INVALID_INPUT", `revocable must be ${schema.revocable} for schema ${schema.name}`);
    }
    if (await deps.replay.has(signature.value.hex)) return fail("DUPLICATE", "Duplicate submission");
    const delegate = deps.delegate;
    if (delegate === undefined) {
      return fail("NO_DELEGATE_KEY", "Server misconfigured: no delegate key available");
    }

    const pendingNonce = deps.eas.getAttesterNonce(request.attester);
    // Recovery is CPU work: done for the nonce the client says it signed while the chain answers, and used only
    // if the chain's nonce is that one. The verdict still waits for the on-chain nonce (decisions §6 order).
    const clientSigner =
      request.clientNonce === undefined ? undefined : recoverSigner(deps.eas, request, signature.value, request.clientNonce);
    const nonceRead = await pendingNonce;
    if (!nonceRead.ok) return fail("RPC_ERROR", "Failed to read the attester nonce from the chain");
    const verified = await verifyAgainstNonce(deps.eas, request, signature.value, nonceRead.nonce, clientSigner);
    if (!verified.ok) return verified;

    const claim = await deps.replay.claim({
      key: signature.value.hex,
      chainId: deps.eas.chainId,
      attester: request.attester.toLowerCase(),
      nonce: nonceRead.nonce,
      deadline: request.deadline,
      createdAtMs: deps.clock.nowMs(),
    });
    if (claim === "duplicate-signature") return fail("DUPLICATE", "Duplicate submission");
    if (claim === "nonce-in-flight") {
      return fail("DUPLICATE", "Another submission for this attester and nonce is already in flight");
    }

    const call = toCall(request, signature.value);
    const simulation = await delegate.simulate(call);
    if (!simulation.ok) {
      await deps.replay.release(signature.value.hex);
      if (simulation.reason === "reverted") {
        if (simulation.errorName === "DeadlineExpired") return fail("SIGNATURE_EXPIRED", "Signature expired");
        return fail("INVALID_INPUT", `EAS rejected the attestation: ${simulation.errorName}`);
      }
      if (simulation.reason === "insufficient-funds") {
        return fail("SUBMISSION_FAILED", "The delegate wallet cannot pay for gas");
      }
      return fail("RPC_ERROR", "The chain did not answer the simulation");
    }

    const submission = await delegate.submit(call, {
      gas: simulation.gas,
      onSigned: (txHash) => deps.replay.markBroadcast(signature.value.hex, txHash),
    });
    if (submission.ok) {
      await deps.replay.finish(signature.value.hex, {
        state: "done",
        txHash: submission.txHash,
        uid: submission.uid,
        blockNumber: submission.blockNumber,
      });
      return ok({ txHash: submission.txHash, uid: submission.uid, blockNumber: submission.blockNumber });
    }
    if (submission.reason === "not-broadcast") {
      await deps.replay.release(signature.value.hex);
      return fail("RPC_ERROR", "The transaction could not be sent");
    }
    if (submission.reason === "reverted") {
      await deps.replay.finish(signature.value.hex, { state: "failed", txHash: submission.txHash });
      return fail("SUBMISSION_FAILED", "The attestation transaction reverted");
    }
    return fail("SUBMISSION_FAILED", `The transaction ${submission.txHash} was sent but its receipt is not known yet`);
  };
}

/** Recovers the signer of the typed data rebuilt with `nonce`; undefined when the signature does not recover. */
async function recoverSigner(
  eas: EasReader,
  request: DelegatedRequest,
  signature: NormalizedSignature,
  nonce: bigint,
): Promise<string | undefined> {
  try {
    return await recoverTypedDataAddress({ ...buildAttestTypedData(eas, toMessage(request, nonce)), signature: signature.hex });
  } catch {
    return undefined;
  }
}

/**
 * Compares the signer of the typed data rebuilt with the on-chain nonce with the attester. `clientSigner` is the
 * signer already recovered for the client's nonce, if any.
 */
async function verifyAgainstNonce(
  eas: EasReader,
  request: DelegatedRequest,
  signature: NormalizedSignature,
  nonce: bigint,
  clientSigner: Promise<string | undefined> | undefined,
): Promise<Result<true, "INVALID_SIGNATURE" | "ATTESTER_MISMATCH">> {
  const recover = (n: bigint) =>
    clientSigner !== undefined && n === request.clientNonce ? clientSigner : recoverSigner(eas, request, signature, n);
  const signer = await recover(nonce);
  if (signer === undefined) return fail("INVALID_SIGNATURE", "Invalid signature format");
  if (sameAddress(signer, request.attester)) return ok(true);
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
