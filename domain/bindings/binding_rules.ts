/**
 * Who may bind a key to a subject, and who is never cut off (decisions §17, §25: one computation), over the evidence
 * already read: the one rule key status, controller authorization, artifact trust's `controller-authorization` basis
 * and the x402 trust tiers build their {@link BindingAuthority} with ({@link countingBindings}), and the one test of
 * whether the word of an endpoint that did not answer could change a verdict ({@link endpointsCouldChange}). Times
 * are Unix seconds; everything on chain is judged as it stood at `at`, the endpoint evidence is today's.
 */
import { type BindingAuthority, createBindingAuthority, earliestEnd } from "./binding_authority.ts";
import { didJwkToJwk, isSameControllerId, jwkToDidJwk } from "../did/mod.ts";

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

/** What the rule reads. */
export type BindingRulesInput = {
  readonly subjectDid: string;
  readonly chainId: number;
  readonly at: bigint;
  /** Witnesses from approved `controller-witness` issuers (the caller keeps only those). */
  readonly witnesses: readonly WitnessEvidence[];
  readonly bindings: readonly BindingEvidence[];
  /** The controller ids the subject's endpoints publish now. */
  readonly endpointKeys: readonly string[];
};

/** The end of a binding's authority: the earlier of its payload `expiresAt` and its EAS `expirationTime`; 0 for none. */
export function bindingEnd(b: Pick<BindingEvidence, "expiresAt" | "expirationTime">): bigint {
  return earliestEnd(b.expiresAt, b.expirationTime);
}

/** Whether a witness stood at `at`: written by then, neither revoked nor expired by then. */
export function witnessStood(w: WitnessEvidence, at: bigint): boolean {
  if (w.time > at) return false;
  if (w.revocationTime !== 0n && w.revocationTime <= at) return false;
  return w.expirationTime === 0n || w.expirationTime > at;
}

/** Newest first, then by uid (descending). */
export const newestFirst = (a: { time: bigint; uid: string }, b: { time: bigint; uid: string }) =>
  a.time === b.time ? (a.uid < b.uid ? 1 : -1) : a.time < b.time ? 1 : -1;

/**
 * Whether a key binding counts (decisions §17): its attester controlled the subject when it was written — the subject
 * itself, a controller a witness standing at `at` and written no later than the binding names, or one the endpoints
 * name now. Controller authorization (§25) applies the same rule.
 */
export function bindingCounts(
  input: Omit<BindingRulesInput, "bindings">,
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
 *
 * The one rule on who may bind a key and who is cut off (decisions §25: one computation): key status, controller
 * authorization, artifact trust's `controller-authorization` basis and the x402 trust tiers all build their
 * {@link BindingAuthority} here. Before, artifact trust and the x402 tiers built their own: neither took a controller
 * the endpoints name as one that binds or is never cut off (and artifact trust took an approved witness issuer's
 * binding as one), so an owner's revocation of a key's binding went unseen there and its claims stayed "verified".
 */
export function countingBindings<B extends BindingEvidence = BindingEvidence>(
  input: Omit<BindingRulesInput, "bindings"> & { readonly bindings: readonly B[] },
  alsoControlled: (binding: B) => boolean = () => false,
): BindingAuthority<B> {
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
function trustedOutright(input: Pick<BindingRulesInput, "subjectDid" | "chainId" | "endpointKeys">, attester: string): boolean {
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
export function endpointsCouldChange<B extends BindingEvidence>(
  input: Omit<BindingRulesInput, "bindings" | "witnesses"> & { readonly bindings: readonly B[] },
  counts: (binding: B) => boolean,
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

