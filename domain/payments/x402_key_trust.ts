/**
 * How far an x402 signing key is authorized to speak for the resource's did:web (x402_offer_receipt.md §4.3,
 * interface "Trust tiers"): tier 3 a key binding written by a controller witnessed before it, tier 2 a controller
 * witness covering `issuedAt`, tier 1 live endpoint evidence, 0 none.
 */
import { isSameControllerId, jwkToDidJwk, normalizeDid } from "../did/mod.ts";
import { type BindingEvidence, countingBindings, earliestEnd, endpointsCouldChange } from "../bindings/mod.ts";
import { didKeyToJwk } from "./did_key.ts";
import type { VerifiedSigner } from "./x402_verify.ts";

/** A controller witness of the subject as read from the chain. */
export type WitnessEvidence = {
  readonly controller: string;
  /** Unix seconds: when the controller was observed; authorization is proven from here on. */
  readonly observedAt: bigint;
  /** Unix seconds: the attestation's chain time. */
  readonly time: bigint;
  /** The attester is an active approved `controller-witness` issuer at `time`. */
  readonly approvedIssuer: boolean;
  readonly revoked: boolean;
};

/** A key binding of the subject as read from the chain. */
export type KeyBindingEvidence = {
  readonly uid: string;
  readonly keyId: string;
  readonly keyPurpose: readonly string[];
  readonly attester: string;
  readonly time: bigint;
  readonly effectiveAt: bigint;
  /** 0 = none. */
  readonly expiresAt: bigint;
  /** 0 = not revoked. */
  readonly revocationTime: bigint;
};

/** What the trust decision looks at. */
export type KeyTrustEvidence = {
  /** Controller ids published by the subject's endpoints (DNS TXT, did.json); undefined when not looked up or unavailable. */
  readonly endpointKeys?: readonly string[] | undefined;
  /** Whether an endpoint source gave no answer: `endpointKeys` may then lack controllers they name. */
  readonly endpointUnavailable?: boolean | undefined;
  readonly witnesses?: readonly WitnessEvidence[] | undefined;
  readonly keyBindings?: readonly KeyBindingEvidence[] | undefined;
  /** The chain id, for the did:pkh of a key binding's attester. */
  readonly chainId?: number | undefined;
};

/** The trust decision. */
export type KeyTrust = {
  readonly tier: 0 | 1 | 2 | 3;
  /** The OMA3 trust table's words. */
  readonly level: "low" | "moderate" | "high" | "highest";
  readonly basis: "none" | "endpoint-evidence" | "did-json-kid" | "controller-witness" | "key-binding";
  /** The key binding or witness that decided, when one did. */
  readonly evidenceUid?: string | undefined;
  /**
   * Present (true) when an endpoint source gave no answer and its word could change this decision (key status's
   * `endpointsCouldChange`, decisions §25: one computation): the caller answers `NETWORK_ERROR`, never a guess.
   */
  readonly endpointsCouldChange?: true | undefined;
};

const LEVELS = ["low", "moderate", "high", "highest"] as const;

/** Decides the trust tier of a verified signer for a subject at the artifact's `issuedAt`. */
export function evaluateKeyTrust(input: {
  readonly subjectDid: string;
  readonly signer: VerifiedSigner;
  /** The receipt's `issuedAt` (an offer: when it was seen). */
  readonly at: number;
  readonly evidence: KeyTrustEvidence;
}): KeyTrust {
  const subject = normalizeDid(input.subjectDid);
  const at = BigInt(input.at);
  const ids = [input.signer.controllerDid];
  const matches = (id: string) => ids.some((own) => isSameControllerId(own, asControllerId(id)));
  const witnesses = (input.evidence.witnesses ?? []).filter((w) => w.approvedIssuer && !w.revoked);
  const chainId = input.evidence.chainId ?? 1;
  const bindings = input.evidence.keyBindings ?? [];
  // Who may bind a key and who is cut off: key status's rule (domain/bindings `countingBindings`, decisions §25: one
  // computation). The attester controlled the subject when it wrote the binding (a witnessed controller, or one the
  // endpoints name now), and a controller cut off by a revoked or expired binding naming it binds nothing after, unless
  // the endpoints name it now (domain/bindings). Before, this file had its own rule (no endpoint-named controller, none
  // trusted outright): an owner the endpoints name, once cut by a stale binding, then revoking a leaked key's binding,
  // left that key rated "high" where key status said `revoked`.
  const endOf = (binding: KeyBindingEvidence) => earliestEnd(binding.expiresAt, binding.revocationTime);
  const asEvidence = new Map<KeyBindingEvidence, BindingEvidence>();
  const read = bindings.map((b) => {
    // x402's `expiresAt` is already the earlier of the payload's and the EAS one; a keyId's fragment is ignored here,
    // and a did:key is read as the did:jwk of its key, as `matches` reads it (the rule's `endpointsCouldChange` missed
    // a binding naming the signer by its did:key, and a source unread then left tier 3 standing).
    const r: BindingEvidence = { ...b, keyId: asControllerId(b.keyId.split("#")[0]!), expirationTime: 0n };
    asEvidence.set(b, r);
    return r;
  });
  const rules = {
    subjectDid: subject.ok ? subject.value : input.subjectDid,
    chainId,
    at,
    witnesses: witnesses.map((w) => ({ uid: "", attester: "", controller: w.controller, observedAt: w.observedAt, time: w.time, revocationTime: 0n, expirationTime: 0n })),
    endpointKeys: input.evidence.endpointKeys ?? [],
    bindings: read,
  };
  const authority = countingBindings(rules);
  const counts = (binding: KeyBindingEvidence) => authority(asEvidence.get(binding)!);
  // Tier 3 still asks more (interface "Trust tiers": a key binding requires a controller witness): its attester witnessed before it.
  const witnessed = (binding: KeyBindingEvidence) => {
    const attesterDid = `did:pkh:eip155:${chainId}:${binding.attester.toLowerCase()}`;
    return witnesses.some((w) => w.time <= binding.time && isSameControllerId(w.controller, attesterDid));
  };
  const open = input.evidence.endpointUnavailable === true &&
    endpointsCouldChange(rules, authority, input.signer.controllerDid);
  const decided = (decision: KeyTrust): KeyTrust => (open ? { ...decision, endpointsCouldChange: true } : decision);

  // The key's bindings, and when another's cut ended those it wrote of itself before it (domain/bindings).
  const standing = bindings.filter((b) => b.time <= at && matches(b.keyId.split("#")[0]!) && counts(b));
  const selfCuts = authority.selfCuts(standing.map((b) => asEvidence.get(b)!), at);
  const cutOf = (b: KeyBindingEvidence) => selfCuts.get(asEvidence.get(b)!);
  const endOfStanding = (b: KeyBindingEvidence) => earliestEnd(endOf(b), cutOf(b) ?? 0n);
  for (const binding of standing) {
    if (cutOf(binding) !== undefined || !witnessed(binding)) continue;
    if (binding.keyPurpose.length > 0 && !binding.keyPurpose.includes("assertionMethod")) continue;
    if (binding.effectiveAt > at || binding.time > at) continue;
    if (binding.expiresAt !== 0n && binding.expiresAt <= at) continue;
    if (binding.revocationTime !== 0n && binding.revocationTime <= at) continue;
    return decided(trust(3, "key-binding", binding.uid));
  }
  // Decisions §25 (x402 §4.3's `until`): the key's newest binding written by `at` closes its window at its revocation
  // or expiry, and one whose purposes leave out assertionMethod refuses it. Neither a witness nor live evidence stands
  // for the key after that: a leaked key whose binding was revoked kept signing receipts rated "high".
  const newest = [...standing]
    .sort((a, b) => (a.time === b.time ? (a.uid < b.uid ? 1 : -1) : a.time < b.time ? 1 : -1))[0];
  if (newest !== undefined) {
    if (newest.keyPurpose.length > 0 && !newest.keyPurpose.includes("assertionMethod")) return decided(trust(0, "none"));
    const end = endOfStanding(newest);
    if (end !== 0n && end <= at) return decided(trust(0, "none"));
  }
  for (const w of witnesses) {
    // Authorised from when it was observed (x402 §4.3), and not before the chain holds it (decisions §25: a window
    // opens at the witness's EAS time): a witness written later naming an earlier observedAt covers nothing before.
    const from = w.observedAt > w.time ? w.observedAt : w.time;
    if (matches(w.controller) && from <= at) return decided(trust(2, "controller-witness"));
  }
  if (input.evidence.endpointKeys?.some(matches)) return decided(trust(1, "endpoint-evidence"));
  if (subject.ok && input.signer.keyDocumentDid !== undefined && input.signer.keyDocumentDid === subject.value) {
    return decided(trust(1, "did-json-kid"));
  }
  return decided(trust(0, "none"));
}

/** A did:key evidence id as the did:jwk of its key, so both spellings of one key compare equal. */
function asControllerId(id: string): string {
  if (!id.startsWith("did:key:")) return id;
  const jwk = didKeyToJwk(id);
  const did = jwk.ok ? jwkToDidJwk(jwk.value, { publicOnly: true }) : undefined;
  return did?.ok ? did.value : id;
}

function trust(tier: KeyTrust["tier"], basis: KeyTrust["basis"], evidenceUid?: string): KeyTrust {
  return { tier, level: LEVELS[tier], basis, ...(evidenceUid === undefined ? {} : { evidenceUid }) };
}
