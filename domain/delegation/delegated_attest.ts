import { keccak256 } from "viem/utils";
import type { DelegateSubmitter } from "../../ports/eas.ts";
import { type DelegatedRequest, delegatedRequestOf } from "./delegated_request.ts";
import { fail, type Ok } from "../result.ts";
import { attestBatch, type DelegatedAttestBatch } from "./delegated_attest_batch.ts";
import { type AttestSignature, parseAttestSignature } from "./signature.ts";
import { attestCalldataBytes, MAX_CALLDATA_BYTES } from "./_calldata_size.ts";
import { type DigestCrypto, recoverSigner, sameAddress, toCall, verifyAgainstNonce, viemRecoverAddress } from "./_verify_signature.ts";
import { sendOne } from "./_send_one.ts";
import { cannotPay, duplicate, factoryCallFailedBefore, walletRefused } from "./_refusals.ts";
import type { ReplayRecord } from "../../ports/replay_store.ts";

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
import { deadlineHolds, simulationCap } from "./_delegated_attest_types.ts";

export { NONCE_AHEAD, NONCE_MOVED } from "./_verify_signature.ts";

/**
 * Verifies and submits one delegated attestation; `batch` (decisions §23) checks several as it checks one and sends
 * those that pass in one `multiAttestByDelegation` transaction (absent on fakes that do not batch).
 */
export type DelegatedAttest = ((body: unknown, caller?: DelegatedAttestCaller) => Promise<Ok<DelegatedAttestSuccess> | DelegatedAttestFailure>) & {
  batch?: DelegatedAttestBatch | undefined;
};

const DEFAULT_MAX_DEADLINE_AHEAD = 86_400;

/** What the use case's steps share: its deps, its crypto, and whether the delegate wallet could pay at its last check. */
export type AttestContext = {
  readonly deps: DelegatedAttestDeps;
  readonly maxAhead: bigint;
  /** How far ahead a deadline must be (DEADLINE_MARGIN_SECONDS). */
  readonly minAhead: bigint;
  readonly signing: DigestCrypto;
  /** A wallet that could not pay is not simulated for ahead. */
  walletCouldPay: boolean;
};

/**
 * Builds the delegated-attest use case. Checks run in the order of decisions §6, so everything
 * that needs no chain is rejected before the first RPC call, and nothing is broadcast before the
 * signature's replay record is stored.
 */
export function createDelegatedAttest(deps: DelegatedAttestDeps): DelegatedAttest {
  const ctx: AttestContext = {
    deps,
    maxAhead: BigInt(deps.maxDeadlineAheadSeconds ?? DEFAULT_MAX_DEADLINE_AHEAD),
    minAhead: BigInt(deps.deadlineMarginSeconds ?? 0),
    signing: { recover: deps.recoverAddress ?? viemRecoverAddress, hash: deps.keccak256 ?? keccak256 },
    walletCouldPay: false,
  };
  const delegatedAttest: DelegatedAttest = async function delegatedAttest(body, caller = {}) {
    const claimed = await checkRequest(ctx, body, caller);
    if ("ok" in claimed) return claimed;
    return await sendOne(deps, claimed, caller);
  };
  const check = (body: unknown, caller: DelegatedAttestCaller, batch?: BatchNonces) => checkRequest(ctx, body, caller, batch);
  const checkTakingNothing = async (body: unknown, caller: DelegatedAttestCaller) => {
    const checked = await checkBeforeGuard(ctx, body, caller, { recover: false });
    return "ok" in checked ? checked : undefined;
  };
  delegatedAttest.batch = (bodies, caller = {}) => attestBatch({ deps, check, checkTakingNothing }, bodies, caller);
  return delegatedAttest;
}

/** What the checks that need no chain found: the request, its signature, and the signer the client's nonce gives. */
type Prechecked = {
  readonly request: DelegatedRequest;
  readonly signature: AttestSignature;
  readonly clientSigner: Promise<string | undefined> | undefined;
  readonly delegate: DelegateSubmitter;
  /** The attester's hourly allowance is still to take: the signature was not yet proven the attester's (checkOnChain). */
  readonly attesterUntaken: boolean;
};

/**
 * Every check of decisions §6 (and the caller's own, `admit`) up to the replay record, which it claims: what passes
 * is ready to be sent. In a batch (`batch`), the signature is verified against the nonce the attester will have when
 * EAS reaches it within the call, and nothing is simulated ahead.
 */
async function checkRequest(ctx: AttestContext, body: unknown, caller: DelegatedAttestCaller, batch?: BatchNonces): Promise<Claimed | DelegatedAttestFailure> {
  const checked = await checkOffChain(ctx, body, caller);
  if ("ok" in checked) return checked;
  return await checkOnChain(ctx, checked, caller, batch);
}

/** The checks that need no chain (storage and the guard only), in the order of decisions §6. */
async function checkOffChain(ctx: AttestContext, body: unknown, caller: DelegatedAttestCaller): Promise<Prechecked | DelegatedAttestFailure> {
  const { deps } = ctx;
  const unguarded = await checkBeforeGuard(ctx, body, caller, { recover: true });
  if ("ok" in unguarded) return unguarded;
  const { request, clientSigner } = unguarded;
  // The guard comes after the replay lookup (storage, no RPC): a signature already on record answers with its
  // outcome whatever the limits, since resubmitting it is how a client learns what became of an OUTCOME_UNKNOWN.
  // The attester's bucket is charged only for signatures proven to be the attester's: someone else's garbage cannot
  // spend a real attester's hourly allowance. Here (before any RPC) that is a signature that recovers to the attester
  // for the nonce the client names; any other (no nonce given, a contract wallet's) takes it once verified against
  // the chain's nonce (checkOnChain). A request without a nonce used to be charged to whoever it named as attester, so
  // twenty forged requests locked any attester out of the public relay for the hour; and a contract wallet's
  // requests were charged to a fresh made-up key each, so its allowance never applied.
  let attesterUntaken = false;
  if (deps.guard !== undefined) {
    const signer = clientSigner === undefined ? undefined : await clientSigner;
    const proven = signer !== undefined && sameAddress(signer, request.attester);
    attesterUntaken = !proven;
    const refused = await deps.guard.admit({ clientKey: caller.clientKey ?? "unknown", attester: request.attester }, { attesterRate: proven });
    if (refused !== undefined) return refused;
  }
  const delegate = deps.delegate;
  if (delegate === undefined) {
    return fail("NO_DELEGATE_KEY", "Server misconfigured: no delegate key available");
  }
  return { ...unguarded, delegate, attesterUntaken };
}

/**
 * The checks before the guard: they need no chain and take nothing (no token, no ticket, no claim; storage reads and
 * the caller's `precheck` only). `recover`: start recovering the signer for the client's nonce (the guard's proof).
 */
async function checkBeforeGuard(
  ctx: AttestContext,
  body: unknown,
  caller: DelegatedAttestCaller,
  options: { readonly recover: boolean },
): Promise<Pick<Prechecked, "request" | "signature" | "clientSigner"> | DelegatedAttestFailure> {
  const { deps, maxAhead } = ctx;
  const parsed = delegatedRequestOf(body, ctx.signing.hash);
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
  const signature = parsedSignature.value;
  // Not a step of decisions §6: EAS would revert with Irrevocable in simulation; refusing it here spares the
  // RPC calls. Placed after the §6 checks that precede the replay lookup, so their precedence is unchanged.
  if (schema.revocable !== undefined && schema.revocable !== request.revocable) {
    return fail("INVALID_INPUT", `revocable must be ${schema.revocable} for schema ${schema.name}`);
  }
  // The data is not decoded here (docs/endpoints.md): bytes that do not decode under the schema cost the relay what
  // a well-formed but worthless review costs, and the same limits bound both, while the decode cost about a tenth of
  // a write's CPU (issue 43 item 4). Readers answer such a record with empty data.
  // Recovery is CPU work: done for the nonce the client says it signed, used by the guard now (no RPC) and by
  // the verdict once the chain's nonce is known (decisions §6 order).
  const clientSigner = request.clientNonce === undefined || !options.recover
    ? undefined
    : recoverSigner({ signing: ctx.signing, eas: deps.eas }, { request, signature: signature.normalized, nonce: request.clientNonce });
  // A record of another chain's EAS is not this request's (decisions §30): records are kept by (chain, signature), so
  // the same bytes on this chain (an EOA's name the other chain's domain and are refused as not the attester's; a
  // contract wallet's that ignores them may be valid here too) are checked as any other, never answered with that
  // chain's uid, and claimed on this chain as their own record.
  const known = await findOnChain(deps, signature.normalized.hex);
  if (known !== undefined) return duplicate(known);
  // A node would refuse the transaction for its size after the reads, a charge and a signature, everything given back
  // (a request could do it again and again): the size depends on the data alone, so it is refused here, before any RPC
  // or token. After the replay lookup (decisions §6): a signature on record answers 409 with its outcome, not 400.
  if (attestCalldataBytes(toCall(request, signature.normalized)) > MAX_CALLDATA_BYTES) {
    return fail("INVALID_INPUT", `The attestation's call data is more than the ${MAX_CALLDATA_BYTES} bytes a node takes in one transaction; nothing was sent`);
  }
  // So is an ERC-6492 factory call (not stored, so cheap in gas): each try cost a KMS signature and nine RPC calls for a
  // send the node refused, everything given back.
  if (signature.deployment !== undefined && (signature.deployment.factoryCalldata.length - 2) / 2 > MAX_CALLDATA_BYTES) {
    return fail("INVALID_INPUT", `The ERC-6492 signature's factory call must be at most ${MAX_CALLDATA_BYTES} bytes (a node takes no larger transaction)`);
  }
  // Too close to be mined before it passes: refused before any RPC rather than sent to revert at the delegate's cost.
  // After the replay lookup: a signature on record answers with its outcome to the end (a resend told to sign again
  // would have written the review twice).
  // The same test runs again under the delegate wallet's lock just before signing (_send_one.ts, the batch's too).
  if (!deadlineHolds(deps, request.deadline)) {
    return fail("SIGNATURE_EXPIRED", `Signature expires too soon: its deadline must be more than ${ctx.minAhead} seconds ahead, so that the transaction is mined before it; sign again with a later deadline`);
  }
  // Issue 23: a wallet whose ERC-6492 factory call the service already sent, mined, without deploying it, is not
  // deployed again (that call may burn gas whenever it is sent). Storage only: refused before any RPC or gas.
  if (signature.deployment !== undefined && deps.factoryCalls !== undefined) {
    const sent = await deps.factoryCalls.find(deps.eas.chainId, request.attester);
    if (sent?.state === "failed") return factoryCallFailedBefore();
  }
  // The caller's own refusals that need no chain (the private relay's wallet, plan and quota): after the replay lookup,
  // so a signature on record still answers with its outcome, and before the guard and any RPC, so that a request they
  // refuse costs the node nothing (found by attack: each was refused only after the nonce and balance reads).
  const precheck = caller.precheck === undefined ? undefined : await caller.precheck(request);
  if (precheck !== undefined) return precheck;
  return { request, signature, clientSigner };
}

/** The checks that read the chain (the attester's nonce, the wallet's funds), then the caller's own and the claim. */
async function checkOnChain(ctx: AttestContext, checked: Prechecked, caller: DelegatedAttestCaller, batch: BatchNonces | undefined): Promise<Claimed | DelegatedAttestFailure> {
  const { deps } = ctx;
  const { request, signature, clientSigner, delegate } = checked;
  // Issue 28: a signature already proven to be the attester's for the nonce the client names (an EOA's, no ERC-6492
  // wrapping) is simulated ahead, in the same JSON-RPC batch as the nonce read: it is a read, its answer is used
  // only once the chain's nonce is that nonce, the wallet can pay and the replay record is claimed (decisions §6
  // order of outcomes unchanged), and it saves a round trip. Anything else is simulated after the claim as before.
  // Not when the caller still has checks of its own to make (the private relay's plan, subject and refUID
  // authority): a request those refuse must cost the node nothing more than the reads that decided it (issue 23).
  const call = toCall(request, signature.normalized);
  const provenSigner = clientSigner === undefined ? undefined : await clientSigner;
  // Read in the same tick as the nonce, so all ride in one JSON-RPC batch. The attester's code is read only when the
  // signature did not already recover to the attester (issue 43): the verdict below does not ask about the code of an
  // attester whose own key signed (should EAS ask a contract there instead, the simulation before sending says so),
  // and asking for it was a JSON-RPC call on every request.
  const signedByAttester = provenSigner !== undefined && sameAddress(provenSigner, request.attester);
  const simulateAhead = batch === undefined && ctx.walletCouldPay && signature.deployment === undefined && caller.admit === undefined && signedByAttester;
  const funds = delegate.checkFunds();
  const pendingNonce = deps.eas.getAttesterNonce(request.attester, { withCode: !signedByAttester });
  const simulatedAhead = simulateAhead ? delegate.simulate(call, simulationCap(deps)) : undefined;
  const [chainNonce, fundsCheck] = await Promise.all([pendingNonce, funds]);
  if (fundsCheck !== "rpc-error") ctx.walletCouldPay = fundsCheck === "ok";
  // A refusal with nothing recorded or sent for the service's sake (a chain read that failed, 500 RPC_ERROR; a wallet
  // that cannot pay, 503) gives back the attester's token, once, if it was taken (at admission, or below once the
  // signature is proven), as after a failed read just before signing (_send_one.ts).
  let tokenTaken = !checked.attesterUntaken;
  const giveTokenBack = async (answer: DelegatedAttestFailure): Promise<DelegatedAttestFailure> => {
    if (tokenTaken) await deps.guard?.giveBackAttester?.(request.attester);
    tokenTaken = false;
    return answer;
  };
  const chainSilent = (message: string) => giveTokenBack(fail("RPC_ERROR", message));
  // The duplicate of the same signature sent at once (a client's retry racing its first try) gives its token back too
  // (found by attack: one attestation spent two of the attester's hour), unless it cost a simulation ahead: copies of
  // one signature sent at once from many addresses all pass the replay lookup before the first claim, and each gave
  // back the token that bounds what an attester's requests cost the node (found by review).
  const sameSignatureLost = async (answer: DelegatedAttestFailure) => (simulatedAhead === undefined ? await giveTokenBack(answer) : answer);
  if (!chainNonce.ok) return await chainSilent("Failed to read the attester nonce from the chain");
  // A batch's later items of one attester are checked against the nonce EAS will have reached by then.
  const nonceRead = batch === undefined ? chainNonce : { ...chainNonce, nonce: batch.nonceFor(request.attester, chainNonce.nonce) };
  const verified = await verifyAgainstNonce(
    { signing: ctx.signing, eas: deps.eas },
    { request, signature: signature.normalized, nonceRead, clientSigner, deployment: signature.deployment },
  );
  if (!verified.ok) {
    // Issue 33: the same signature sent twice at once. This request passed the replay lookup before the other was
    // recorded, and read the nonce after the other was mined, so the signature no longer verifies. A signature on
    // record was verified when it was recorded: the answer is the first request's (decisions §6: 409 DUPLICATE if
    // a concurrent request got there first), never a mismatch. Storage only, and only on this refusal.
    if (verified.code === "ATTESTER_MISMATCH") {
      const first = await findOnChain(deps, signature.normalized.hex);
      if (first !== undefined) return await sameSignatureLost(duplicate(first));
    }
    if (verified.code === "RPC_ERROR") return await chainSilent(verified.message);
    return verified;
  }
  // Decisions §15: a wallet that cannot pay is refused before anything is recorded, so nothing is locked.
  if (fundsCheck === "rpc-error") return await chainSilent("Failed to read the delegate wallet's balance from the chain");
  // 503, nothing recorded or sent: the delegate wallet's state, not the request's, so the token goes back as above.
  if (fundsCheck === "low") return await giveTokenBack(cannotPay());
  if (batch !== undefined && verified.value.deploy !== undefined) {
    return fail("INVALID_INPUT", "An ERC-6492 signature of a wallet not deployed yet is sent alone (POST /v1/delegated-attest), not in a batch");
  }
  if (verified.value.byContract === true && deps.walletRefusals !== undefined) {
    // Storage only, and only for a wallet contract: it made the delegate pay for a reverted transaction before.
    const refusal = await deps.walletRefusals.find(deps.eas.chainId, request.attester);
    if (refusal !== undefined) return walletRefused(refusal.txHash);
  }
  if (checked.attesterUntaken) {
    const refused = await deps.guard?.admitAttester(request.attester);
    if (refused !== undefined) return refused;
    tokenTaken = true;
  }
  const admitted = caller.admit === undefined ? undefined : await caller.admit(request);
  if (admitted !== undefined && "ok" in admitted) return admitted;
  const ticket = admitted as CallerTicket | undefined;
  const key = signature.normalized.hex;
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
    // The claim and this lookup are by (chain, key): another chain's record of the same bytes is never this answer.
    const winner = await deps.replay.find(deps.eas.chainId, key);
    return await sameSignatureLost(winner === undefined ? fail("DUPLICATE", "Duplicate submission") : duplicate(winner));
  }
  if (claim === "nonce-in-flight") {
    await ticket?.release();
    // Another signature over the same nonce is a request of its own that cost the node its reads: it keeps its token.
    // Given back (found by review), an attester's signatures over one nonce, sent from many addresses while the first
    // was in flight, each cost reads and a simulation ahead, all answered 409, none spending the attester's hour.
    return fail("DUPLICATE", "Another submission for this attester and nonce is already in flight");
  }
  return { request, call, key, ticket, delegate, simulatedAhead, deploy: verified.value.deploy, nonce: nonceRead.nonce, byContract: verified.value.byContract === true };
}

/** The replay record of `key` on this chain's EAS: a signature's record is its chain's alone (the store's identity is (chain, key)). */
async function findOnChain(deps: Pick<DelegatedAttestDeps, "replay" | "eas">, key: string): Promise<ReplayRecord | undefined> {
  return await deps.replay.find(deps.eas.chainId, key);
}
