/**
 * Controller authorization as the reference's SDK now defines it (`getControllerAuthorization`, decisions §25), from
 * evidence already read: pure, so the route, the MCP tool and the other capabilities answer alike.
 *
 * - Witnesses: controller witnesses of the subject from approved `controller-witness` issuers (the caller keeps only
 *   those) naming this controller, written by `at` and standing then, oldest first. One whose subject is a DID URL
 *   under the subject (`did:web:x#key-1`) and whose controller is a did:jwk pins that URL to the key: `pinned`.
 * - Key bindings: those counting under §17's rule on who may bind a key, written by `at`, naming the controller by
 *   `keyId` or (for a did:jwk) by `publicKeyJwk`'s key material. `keyPurposeStatus` comes from the newest of them by
 *   `at`, revoked or not, as the reference takes the newest: `unknown` with none (or, as the reference reads it, one
 *   that lists no purpose), `matched` when it holds every requested purpose, else `mismatch`.
 * - `until`: the newest binding's revocation, only when that revocation was made by `at`.
 * - `anchoredFrom`: the first witness's EAS time; without a witness, for a did:pkh contract subject, the earliest
 *   binding whose transfer proof verified.
 * - `authorized` = no `mismatch`, and one of: a witness window open at `at` (`anchoredFrom ≤ at < until`), live
 *   evidence with no `until`, a verified transfer proof with no `until`.
 * - Live evidence describes now; the caller passes none when `at` is older than the discovery cache allows.
 * - `endpointsCouldChange`: with an endpoint that did not answer, whether its word could change the verdict (key
 *   status's rule, one computation): a binding that does not count names the controller or an attester up the chain.
 */
import { isSameControllerId } from "../did/mod.ts";
import type { LiveMethod } from "../discovery/mod.ts";
import { type BindingEvidence, bindingNames, countingBindings, endpointsCouldChange, type WitnessEvidence } from "../keys/mod.ts";

/** The W3C verification relationships a binding may grant. */
export const KEY_PURPOSES = ["authentication", "assertionMethod", "keyAgreement"] as const;
/** One of {@link KEY_PURPOSES}. */
export type KeyPurpose = (typeof KEY_PURPOSES)[number];
/** The purposes asked for when none are given (the reference's default). */
export const DEFAULT_PURPOSES: readonly KeyPurpose[] = ["authentication", "assertionMethod"];

/** How the newest binding's purposes compare with the requested ones. */
export type KeyPurposeStatus = "matched" | "mismatch" | "unknown";

/** What the rules need. Times are Unix seconds. */
export type ControllerAuthorizationInput = {
  readonly subjectDid: string;
  readonly controllerDid: string;
  readonly at: bigint;
  readonly chainId: number;
  readonly purposes: readonly KeyPurpose[];
  /** Witnesses from approved issuers (any controller; the rules pick this one's). */
  readonly witnesses: readonly WitnessEvidence[];
  /** Bindings of the subject (any key; the rules pick this controller's). */
  readonly bindings: readonly BindingEvidence[];
  /** The controller ids the endpoints name now (for §17's rule on who may bind). */
  readonly endpointKeys: readonly string[];
  /** Whether an endpoint source gave no answer: `endpointKeys` may then lack controllers they name. */
  readonly endpointUnavailable?: boolean | undefined;
  /** The live methods naming the controller now; empty when none does or when live evidence does not count at `at`. */
  readonly liveMethods: readonly LiveMethod[];
  /**
   * For a did:pkh contract subject: whether each binding's transfer proof verified, by binding uid. A verified proof
   * shows the binding's attester (the controller) took the contract's ownership, so its binding counts.
   */
  readonly transferProofs?: ReadonlyMap<string, boolean> | undefined;
};

/** One witness as the answer lists it. */
export type AuthorizationWitness = {
  readonly uid: string;
  readonly issuedAt: bigint;
  readonly attester: string;
  readonly method: string;
  /** The DID URL a key-pinning witness ties to this did:jwk. */
  readonly pinned?: string | undefined;
};

/** The verdict. */
export type ControllerAuthorizationVerdict = {
  readonly authorized: boolean;
  readonly keyPurposeStatus: KeyPurposeStatus;
  readonly anchoredFrom: bigint | null;
  readonly until: bigint | null;
  readonly currentlyVerified: boolean;
  readonly liveMethod: LiveMethod | null;
  readonly controllerWitnesses: readonly AuthorizationWitness[];
  readonly keyBindingUid: string | null;
  /** Every matching binding by `at`, newest first. */
  readonly keyBindingUids: readonly string[];
  /** Present when a transfer proof was checked (did:pkh contract subjects). */
  readonly transferProofVerified?: boolean | undefined;
  /**
   * Whether the word of an endpoint that did not answer could change this verdict (key status's
   * {@link endpointsCouldChange}, over this verdict's counting bindings): false when every endpoint answered.
   */
  readonly endpointsCouldChange: boolean;
};

/** Whether a witness stood at `at`: written by then, neither revoked nor expired by then. */
function stoodAt(w: WitnessEvidence, at: bigint): boolean {
  if (w.time > at) return false;
  if (w.revocationTime !== 0n && w.revocationTime <= at) return false;
  return w.expirationTime === 0n || w.expirationTime > at;
}

const oldestFirst = (a: { time: bigint; uid: string }, b: { time: bigint; uid: string }) =>
  a.time === b.time ? (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0) : a.time < b.time ? -1 : 1;

/** The verdict of `controllerDid` for `subjectDid` at `at` (see the file's comment for the rules). */
export function evaluateControllerAuthorization(input: ControllerAuthorizationInput): ControllerAuthorizationVerdict {
  const { at, controllerDid } = input;
  const witnesses = input.witnesses
    .filter((w) => stoodAt(w, at) && isSameControllerId(w.controller, controllerDid))
    .sort(oldestFirst);
  const counts = countingBindings(input, (b) => input.transferProofs?.get(b.uid) === true);
  const bindings = input.bindings.filter((b) => b.time <= at && bindingNames(b, controllerDid) && counts(b))
    .sort((a, b) => -oldestFirst(a, b));
  const newest = bindings[0];
  const keyPurposeStatus: KeyPurposeStatus = newest === undefined || newest.keyPurpose.length === 0
    ? "unknown"
    : input.purposes.every((p) => newest.keyPurpose.includes(p))
    ? "matched"
    : "mismatch";
  // A binding the controller wrote of itself before another's binding of it ended is revoked then (domain/bindings).
  const cut = newest === undefined ? undefined : counts.selfCuts(bindings, at).get(newest);
  const revoked = newest !== undefined && newest.revocationTime !== 0n && newest.revocationTime <= at ? newest.revocationTime : null;
  const until = cut !== undefined && (revoked === null || cut < revoked) ? cut : revoked;

  const proofs = input.transferProofs;
  const transferChecked = proofs !== undefined && input.bindings.some((b) => b.time <= at && proofs.has(b.uid));
  const transferBinding = [...bindings].reverse().find((b) => proofs?.get(b.uid) === true);
  const transferProofVerified = transferBinding !== undefined;

  const anchoredFrom = witnesses[0]?.time ?? transferBinding?.time ?? null;
  const windowOpen = witnesses.length > 0 && anchoredFrom !== null && anchoredFrom <= at && (until === null || at < until);
  const currentlyVerified = input.liveMethods.length > 0;
  const authorized = keyPurposeStatus !== "mismatch" &&
    (windowOpen || (currentlyVerified && until === null) || (transferProofVerified && until === null));

  const pinOf = (w: WitnessEvidence) => {
    const subject = w.subject ?? "";
    const hash = subject.indexOf("#");
    return hash > 0 && controllerDid.startsWith("did:jwk:") ? subject.trim() : undefined;
  };
  return {
    authorized,
    keyPurposeStatus,
    anchoredFrom,
    until,
    currentlyVerified,
    liveMethod: input.liveMethods[0] ?? null,
    controllerWitnesses: witnesses.map((w) => {
      const pinned = pinOf(w);
      return { uid: w.uid, issuedAt: w.time, attester: w.attester, method: w.method ?? "", ...(pinned === undefined ? {} : { pinned }) };
    }),
    keyBindingUid: newest?.uid ?? null,
    keyBindingUids: bindings.map((b) => b.uid),
    ...(transferChecked ? { transferProofVerified } : {}),
    endpointsCouldChange: input.endpointUnavailable === true && endpointsCouldChange(input, counts, controllerDid),
  };
}
