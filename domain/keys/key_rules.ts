/**
 * The status and trust level of a signing key for a subject (decisions §17), from the evidence already read: pure,
 * so the same rules answer the public key status, the account's key list and a receipt verifier's "was this key
 * authorised at `issuedAt`".
 *
 * Everything on chain is judged as it stood at `at` (Unix seconds): an attestation counts from its chain `time`,
 * a revocation or an expiry from the moment it took effect, so a revocation mined after `at` does not revoke at
 * `at`. The endpoint evidence (DNS TXT, did.json) can only be read today, and counts as today's.
 *
 * - A controller witness counts when an approved `controller-witness` issuer wrote it (the caller keeps only those).
 * - A key binding counts when its attester controlled the subject when it was written: the attester is the
 *   subject itself (a did:pkh subject), or a counting witness written no later than the binding names the
 *   attester's did:pkh, or the subject's endpoint evidence names it now. Anyone else's binding is ignored. A
 *   witnessed attester cut off by a revoked or expired binding naming it binds nothing until another controller binds
 *   it again ({@link countingBindings}).
 * - Status: `registered` without a counting binding written by `at`, or when the chosen binding is not yet
 *   effective at `at`; otherwise `revoked`, `expired` (payload `expiresAt` or the EAS `expirationTime`) or `active`.
 *   With several bindings, an active one wins, else the newest.
 * - Trust level: `advanced` = a witness of the key and an active binding; `intermediate` = a witness of the key;
 *   `basic` = the endpoint evidence names the key now; `none` otherwise.
 * - With an endpoint source that gave no answer, the verdict says whether its word could change it
 *   ({@link endpointsCouldChange}): the callers then answer `NETWORK_ERROR`, never a guess.
 */
import { bindingEnd, type BindingEvidence, bindingNames, countingBindings, endpointsCouldChange, newestFirst, type WitnessEvidence, witnessStood } from "../bindings/mod.ts";
import { isSameControllerId } from "../did/mod.ts";
import type { DiscoveryRecord } from "../discovery/mod.ts";

// Who may bind a key and who is never cut off is domain/bindings' one rule (binding_rules.ts), shared with controller
// authorization, artifact trust and the x402 trust tiers; named here too, where key status's callers look.
export { bindingCounts, bindingEnd, type BindingEvidence, bindingNames, countingBindings, endpointsCouldChange, type WitnessEvidence } from "../bindings/mod.ts";

/** A key's status for one subject. */
export type KeyStatusValue = "registered" | "active" | "revoked" | "expired";

/** How strongly a key is tied to a subject. */
export type TrustLevel = "none" | "basic" | "intermediate" | "advanced";

/** What the rules need. */
export type KeyTrustInput = {
  readonly subjectDid: string;
  readonly keyDid: string;
  readonly at: bigint;
  readonly chainId: number;
  readonly witnesses: readonly WitnessEvidence[];
  readonly bindings: readonly BindingEvidence[];
  /** The controller ids the subject's endpoints publish now. */
  readonly endpointKeys: readonly string[];
  /** Whether an endpoint source gave no answer: `endpointKeys` may then lack controllers they name. */
  readonly endpointUnavailable?: boolean | undefined;
};

/** The verdict, with the records behind it. */
export type KeyTrust = {
  readonly status: KeyStatusValue;
  readonly trustLevel: TrustLevel;
  readonly endpointFound: boolean;
  readonly controllerWitness: WitnessEvidence | null;
  readonly keyBinding: BindingEvidence | null;
  /**
   * Whether the word of an endpoint that did not answer could change this verdict ({@link endpointsCouldChange}):
   * false when every endpoint answered. The callers answer `NETWORK_ERROR` then, never a guess.
   */
  readonly endpointsCouldChange: boolean;
};

type BindingState = "active" | "revoked" | "expired" | "pending";

/** A binding's state at `at`. */
function stateAt(b: BindingEvidence, at: bigint): BindingState {
  if (b.revocationTime !== 0n && b.revocationTime <= at) return "revoked";
  const end = bindingEnd(b);
  if (end !== 0n && end <= at) return "expired";
  if (b.effectiveAt !== 0n && b.effectiveAt > at) return "pending";
  return "active";
}

/**
 * The endpoint evidence of a discovery record as the rules read it: the controller ids the subject's endpoints publish
 * now, and whether a source gave no answer (any, `lasting` ones too: an owner's cut may count by the endpoints' word,
 * and a did.json answering something unusable, a WAF's page anyone can provoke, must not decide it). Key status and
 * artifact trust read their records with it.
 */
export function endpointEvidenceOf(record: Pick<DiscoveryRecord, "controllerKeys" | "evidence">): Pick<KeyTrustInput, "endpointKeys" | "endpointUnavailable"> & { readonly endpointUnavailable: boolean } {
  return {
    endpointKeys: record.controllerKeys.map((k) => k.canonicalId),
    endpointUnavailable: record.evidence.some((e) => e.status === "unavailable"),
  };
}

/** The status and trust level of `keyDid` for `subjectDid` at `at` (see the file's comment for the rules). */
export function evaluateKeyTrust(input: KeyTrustInput): KeyTrust {
  const { at, keyDid, subjectDid } = input;
  const witnesses = input.witnesses.filter((w) => witnessStood(w, at));
  const keyWitness = witnesses.filter((w) => isSameControllerId(w.controller, keyDid)).sort((a, b) => -newestFirst(a, b))[0] ?? null;
  const endpointFound = input.endpointKeys.some((k) => isSameControllerId(k, keyDid));

  const counts = countingBindings(input);
  const bindings = input.bindings.filter((b) => b.time <= at && bindingNames(b, keyDid) && counts(b)).sort(newestFirst);
  // A binding the key wrote of itself before another's binding of it ended reads as revoked from then (domain/bindings).
  const cuts = counts.selfCuts(bindings, at);
  const stateOf = (b: BindingEvidence): BindingState => {
    const own = stateAt(b, at);
    return cuts.has(b) && (own === "active" || own === "pending") ? "revoked" : own;
  };
  const chosen = bindings.find((b) => stateOf(b) === "active") ?? bindings[0] ?? null;
  const state = chosen === null ? undefined : stateOf(chosen);
  const status: KeyStatusValue = state === undefined || state === "pending" ? "registered" : state;
  const trustLevel: TrustLevel = keyWitness !== null
    ? (status === "active" ? "advanced" : "intermediate")
    : endpointFound
    ? "basic"
    : "none";
  return { status, trustLevel, endpointFound, controllerWitness: keyWitness, keyBinding: chosen, endpointsCouldChange: input.endpointUnavailable === true && endpointsCouldChange(input, counts, keyDid) };
}

/** What raises a key's trust one level, for people (the console's "next step"). */
export function nextStep(trust: Pick<KeyTrust, "status" | "trustLevel">): "publish-txt" | "request-witness" | "write-key-binding" | null {
  if (trust.trustLevel === "none") return "publish-txt";
  if (trust.trustLevel === "basic") return "request-witness";
  if (trust.trustLevel === "intermediate") return "write-key-binding";
  return null;
}
