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
import { type BindingAuthority, createBindingAuthority, earliestEnd } from "../bindings/mod.ts";
import { didJwkToJwk, isSameControllerId, jwkToDidJwk } from "../did/mod.ts";

/** A key's status for one subject. */
export type KeyStatusValue = "registered" | "active" | "revoked" | "expired";

/** How strongly a key is tied to a subject. */
export type TrustLevel = "none" | "basic" | "intermediate" | "advanced";

/** A controller witness of the subject, from an approved issuer (times in Unix seconds; 0 = none). */
export type WitnessEvidence = {
  readonly uid: string;
  readonly attester: string;
  readonly controller: string;
  readonly observedAt: bigint;
  /** The attestation's chain time. */
  readonly time: bigint;
  readonly revocationTime: bigint;
  readonly expirationTime: bigint;
  /** The payload's `subject` as written: a DID URL (`did:web:x#key-1`) makes the witness a key pin (decisions §25). */
  readonly subject?: string | undefined;
  /** The payload's `method` (`dns-txt`, `did-json`, ...). */
  readonly method?: string | undefined;
};

/** A key binding of the subject, as written (times in Unix seconds; 0 = none). */
export type BindingEvidence = {
  readonly uid: string;
  readonly attester: string;
  readonly keyId: string;
  readonly keyPurpose: readonly string[];
  readonly effectiveAt: bigint;
  /** The payload's `expiresAt`. */
  readonly expiresAt: bigint;
  readonly time: bigint;
  readonly revocationTime: bigint;
  /** The EAS `expirationTime`. */
  readonly expirationTime: bigint;
  /** The payload's `publicKeyJwk` (a JSON string), when it carries one. */
  readonly publicKeyJwk?: string | undefined;
  /** The payload's `proofs` (JSON strings). */
  readonly proofs?: readonly string[] | undefined;
  /** The block it was written in, where the index says (§25's transfer proofs must be mined by then). */
  readonly blockNumber?: bigint | undefined;
};

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

/** The end of a binding's authority: the earlier of its payload `expiresAt` and its EAS `expirationTime`; 0 for none. */
export function bindingEnd(b: Pick<BindingEvidence, "expiresAt" | "expirationTime">): bigint {
  return earliestEnd(b.expiresAt, b.expirationTime);
}

/** A binding's state at `at`. */
function stateAt(b: BindingEvidence, at: bigint): BindingState {
  if (b.revocationTime !== 0n && b.revocationTime <= at) return "revoked";
  const end = bindingEnd(b);
  if (end !== 0n && end <= at) return "expired";
  if (b.effectiveAt !== 0n && b.effectiveAt > at) return "pending";
  return "active";
}

/** Whether a witness stood at `at`: written by then, neither revoked nor expired by then. */
function witnessStood(w: WitnessEvidence, at: bigint): boolean {
  if (w.time > at) return false;
  if (w.revocationTime !== 0n && w.revocationTime <= at) return false;
  return w.expirationTime === 0n || w.expirationTime > at;
}

const newestFirst = (a: { time: bigint; uid: string }, b: { time: bigint; uid: string }) =>
  a.time === b.time ? (a.uid < b.uid ? 1 : -1) : a.time < b.time ? 1 : -1;

/**
 * Whether a key binding counts (decisions §17): its attester controlled the subject when it was written — the subject
 * itself, a controller a witness standing at `at` and written no later than the binding names, or one the endpoints
 * name now. Controller authorization (§25) applies the same rule.
 */
export function bindingCounts(
  input: Pick<KeyTrustInput, "subjectDid" | "chainId" | "witnesses" | "endpointKeys" | "at">,
  binding: Pick<BindingEvidence, "attester" | "time">,
): boolean {
  const pkh = `did:pkh:eip155:${input.chainId}:${binding.attester.toLowerCase()}`;
  return isSameControllerId(input.subjectDid, pkh) ||
    input.witnesses.some((w) => witnessStood(w, input.at) && w.time <= binding.time && isSameControllerId(w.controller, pkh)) ||
    input.endpointKeys.some((k) => isSameControllerId(k, pkh));
}

/**
 * The bindings that count for the subject at `input.at`: {@link bindingCounts} (or `alsoControlled`, controller
 * authorization's verified transfer proofs), and the attester not cut off by a revoked or expired binding naming it
 * when it wrote the binding (domain/bindings: a stolen controller key cannot bind itself or another key again). The
 * subject itself and a controller its endpoints publish now are never cut off.
 */
export function countingBindings(
  input: Pick<KeyTrustInput, "subjectDid" | "chainId" | "witnesses" | "endpointKeys" | "at" | "bindings">,
  alsoControlled: (binding: BindingEvidence) => boolean = () => false,
): BindingAuthority<BindingEvidence> {
  return createBindingAuthority({
    bindings: input.bindings.filter((b) => b.time <= input.at),
    chainId: input.chainId,
    controlled: (b) => bindingCounts(input, b) || alsoControlled(b),
    lasting: (b) => trustedOutright(input, b.attester),
    names: bindingNames,
    // A revocation counts once made, by `at`.
    endOf: (b) => earliestEnd(bindingEnd(b), b.revocationTime <= input.at ? b.revocationTime : 0n),
    revokedAt: (b) => (b.revocationTime <= input.at ? b.revocationTime : 0n),
  });
}

/** Whether an attester is never cut off: the subject itself, or a controller its endpoints name now. */
function trustedOutright(input: Pick<KeyTrustInput, "subjectDid" | "chainId" | "endpointKeys">, attester: string): boolean {
  const pkh = `did:pkh:eip155:${input.chainId}:${attester.toLowerCase()}`;
  return isSameControllerId(input.subjectDid, pkh) || input.endpointKeys.some((k) => isSameControllerId(k, pkh));
}

/**
 * Whether the endpoints' word could change a verdict on `keyDid` resting on the counting bindings (`counts`, the
 * verdict's own): key status and controller authorization ask it alike when an endpoint did not answer (decisions §25:
 * one computation), and answer `NETWORK_ERROR` when it could. A binding that does not count may count by their word
 * (its attester one they name, and such an attester is never cut off). So the verdict is open when a binding written
 * by `at` that does not count names the key, or names the attester of a counting binding the verdict rests on, written
 * no later than that binding (it may have cut the attester off before it wrote it), and so on up the chain: the
 * bindings that gave such an attester its authority back rest on their own attesters. An attester trusted outright
 * now (the subject, a controller the endpoints that answered name) is never cut off: the chain stops there. Before,
 * only bindings naming the key were looked at: an owner named by an unreadable did.json had cut off a controller that
 * then bound the key again, and that binding counted, the key authorized again.
 */
export function endpointsCouldChange(
  input: Pick<KeyTrustInput, "subjectDid" | "chainId" | "endpointKeys" | "at" | "bindings">,
  counts: (binding: BindingEvidence) => boolean,
  keyDid: string,
): boolean {
  const written = input.bindings.filter((b) => b.time <= input.at).sort(newestFirst);
  // Each attester up the chain, by address: the latest time of a binding by it the verdict rests on.
  const restsUntil = new Map<string, bigint>();
  const queued = new Set<string>();
  const queue: string[] = [];
  /** True when a binding naming `did`, written by `until`, does not count; queues the attesters of those that do. */
  const open = (did: string, until: bigint): boolean => {
    for (const b of written) {
      if (b.time > until || !bindingNames(b, did)) continue;
      if (!counts(b)) return true;
      const attester = b.attester.toLowerCase();
      const known = restsUntil.get(attester);
      if (trustedOutright(input, attester) || (known !== undefined && known >= b.time)) continue;
      restsUntil.set(attester, b.time);
      if (!queued.has(attester)) {
        queued.add(attester);
        queue.push(attester);
      }
    }
    return false;
  };
  if (open(keyDid, input.at)) return true;
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    queued.delete(next);
    if (open(`did:pkh:eip155:${input.chainId}:${next}`, restsUntil.get(next)!)) return true;
  }
  return false;
}

/**
 * Whether a binding names the controller: by `keyId`, or for a did:jwk by its `publicKeyJwk`'s key material. Key
 * status and controller authorization both read bindings with it (decisions §25: one computation); key status matched
 * by `keyId` only, so a revoked binding naming the key by its JWK left it "registered".
 */
export function bindingNames(binding: Pick<BindingEvidence, "keyId" | "publicKeyJwk">, controllerDid: string): boolean {
  if (isSameControllerId(binding.keyId, controllerDid)) return true;
  if (!controllerDid.startsWith("did:jwk:") || binding.publicKeyJwk === undefined || !didJwkToJwk(controllerDid).ok) return false;
  let jwk: unknown;
  try {
    jwk = JSON.parse(binding.publicKeyJwk);
  } catch {
    return false;
  }
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) return false;
  const did = jwkToDidJwk(jwk as Record<string, unknown>, { publicOnly: true });
  return did.ok && isSameControllerId(did.value, controllerDid);
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
