/**
 * Verifying a delegated attestation's signature (decisions §6): the signer recovered from the Attest message rebuilt
 * with a nonce, or the attester's wallet contract asked (ERC-1271, ERC-6492), and how a signature for another nonce is
 * told apart (moved, ahead). Split from delegated_attest.ts, which keeps the order of the checks.
 */
import { recoverAddress } from "viem/utils";
import type { DelegatedAttestCall, EasReader, HexString, WalletDeployment } from "../../ports/eas.ts";
import { type AttestMessage, attestDigest } from "./attest_typed_data.ts";
import type { DelegatedRequest } from "./delegated_request.ts";
import { fail, ok, type Result } from "../result.ts";
import type { NormalizedSignature } from "./signature.ts";

/** `details` of an ATTESTER_MISMATCH whose signature is valid for an older nonce: re-sign and resubmit. */
export const NONCE_MOVED = "NONCE_MOVED";
/**
 * `details` of an ATTESTER_MISMATCH whose signature is valid for a later nonce than the attester's: its earlier
 * signatures are not on chain yet (sent at once, or not sent). It said NONCE_MOVED, "the chain has moved on", which it
 * had not, and the client helper re-signed for the current nonce, which an earlier request still in flight may take.
 */
export const NONCE_AHEAD = "NONCE_AHEAD";

/**
 * Recovers the signer of the Attest message rebuilt with `nonce`; undefined when the signature does not recover. The
 * digest is {@link attestDigest}'s (the typed data is not rebuilt and re-validated by viem on every request).
 */
export async function recoverSigner(
  { signing, eas }: Verifier,
  { request, signature, nonce }: { readonly request: DelegatedRequest; readonly signature: NormalizedSignature; readonly nonce: bigint },
): Promise<string | undefined> {
  try {
    return await signing.recover(attestDigest(eas, toMessage(request, nonce), signing.hash), signature.hex);
  } catch {
    return undefined;
  }
}

type RecoverAddress = (hash: HexString, signature: HexString) => string | undefined | Promise<string | undefined>;

/** How the use case recovers a signer and hashes the Attest digest (the deps' faster ones, or viem's). */
export type DigestCrypto = { readonly recover: RecoverAddress; readonly hash: (data: HexString) => HexString };

/** What verifying a signature uses: the use case's crypto and the chain's EAS (its domain, its wallet-contract calls). */
export type Verifier = { readonly signing: DigestCrypto; readonly eas: EasReader };

/** viem's recovery, when no faster one is given: an unrecoverable signature is undefined, as the port's. */
export const viemRecoverAddress: RecoverAddress = (hash, signature) => recoverAddress({ hash, signature }).catch(() => undefined);

/**
 * Compares the signer of the typed data rebuilt with the on-chain nonce with the attester. `clientSigner` is the
 * signer already recovered for the client's nonce, if any. An attester that is a contract (or an ERC-6492
 * signature of one not deployed yet) is asked on chain, as EAS will ask it: `isValidSignature` of the digest with
 * the same 65 bytes EAS receives. The answer says whether the wallet must be deployed first.
 */
export async function verifyAgainstNonce(
  verifier: Verifier,
  input: {
    readonly request: DelegatedRequest;
    readonly signature: NormalizedSignature;
    readonly nonceRead: { readonly nonce: bigint; readonly isContract?: boolean | undefined };
    readonly clientSigner: Promise<string | undefined> | undefined;
    readonly deployment: WalletDeployment | undefined;
  },
): Promise<Result<{ readonly deploy?: WalletDeployment | undefined; readonly byContract?: boolean }, "INVALID_SIGNATURE" | "ATTESTER_MISMATCH" | "RPC_ERROR">> {
  const { signing, eas } = verifier;
  const { request, signature, nonceRead, clientSigner, deployment } = input;
  const nonce = nonceRead.nonce;
  const recover = (n: bigint) =>
    clientSigner !== undefined && n === request.clientNonce ? clientSigner : recoverSigner(verifier, { request, signature, nonce: n });
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
    if (check === "valid") return ok(counterfactual ? { deploy: deployment, byContract: true } : { byContract: true });
    return fail("ATTESTER_MISMATCH", "Invalid signature: the attester's wallet contract does not accept it (ERC-1271)");
  }
  if (signer === undefined) return fail("INVALID_SIGNATURE", "Invalid signature format");
  if (request.clientNonce !== undefined && request.clientNonce !== nonce) {
    const earlier = await recover(request.clientNonce);
    if (earlier !== undefined && sameAddress(earlier, request.attester)) {
      if (request.clientNonce > nonce) {
        return fail(
          "ATTESTER_MISMATCH",
          `Signed for nonce ${request.clientNonce}, ahead of the attester's nonce ${nonce}: send its earlier signatures first, one after the other (or in one batch), then this one`,
          NONCE_AHEAD,
        );
      }
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

/** The `attestByDelegation` call of a checked request and its normalized signature. */
export function toCall(request: DelegatedRequest, signature: NormalizedSignature): DelegatedAttestCall {
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

/** Whether two addresses are the same, whatever their case. */
export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
