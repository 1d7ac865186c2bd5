/** The rules a candidate passes before its schema's policy, and the policies of the four schemas. */
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { JwsVerifier } from "../../ports/jws_verifier.ts";
import { isSameControllerId, normalizeDid } from "../did/mod.ts";
import { findApprovedIssuer } from "../identity/mod.ts";
import { isEvidencePointer, parseProofWrappers, readUint, verifyProofWrapper } from "./proofs.ts";
import type { ArtifactTrustContext, ExclusionReason, PendingClaim, Policy, Screened, VerificationBasis } from "./_types.ts";
import { decodePayload, pkhOf } from "./_util.ts";

const RESPONSIBILITY_BASIS: readonly VerificationBasis[] = ["controller-authorization", "authorization-window"];
const LINKED_BASIS: readonly VerificationBasis[] = ["proof", "controller-authorization", "authorization-window"];
const ISSUER_BASIS: readonly VerificationBasis[] = ["approved-issuer"];

/** What a step does with a candidate: excludes it with a reason, or accepts it on a basis. */
export type Verdicts = {
  readonly exclude: (uid: string, reason: ExclusionReason) => void;
  readonly accept: (s: Screened, basis: readonly VerificationBasis[], label?: string) => void;
};

/**
 * The schema policies (step 7): approved issuers decided now; the responsibility claims and linked identifiers
 * that pass their payload rules are returned, to wait for their controller authorization.
 */
export async function applyPolicies(
  ctx: ArtifactTrustContext,
  screened: readonly Screened[],
  step: Verdicts & { readonly artifactDid: string; readonly nowSeconds: bigint },
): Promise<PendingClaim[]> {
  const { exclude, accept, artifactDid, nowSeconds } = step;
  const pending: PendingClaim[] = [];
  const linkedChecks: Promise<PendingClaim | ExclusionReason>[] = [];
  const linkedOf: Screened[] = [];
  for (const s of screened) {
    if (s.name === "security-assessment" || s.name === "certification") {
      const issuer = findApprovedIssuer(ctx.trustAnchors, s.attestation.attester, s.name, Number(s.attestation.time) * 1000, ctx.chainId);
      if (issuer === undefined) exclude(s.attestation.uid, "issuer-not-approved");
      else accept(s, ISSUER_BASIS, issuer.label);
    } else if (s.name === "responsibility-claim") {
      const claim = responsibilityClaim(s, ctx.chainId);
      if (typeof claim === "string") exclude(s.attestation.uid, claim);
      else pending.push(claim);
    } else {
      linkedOf.push(s);
      linkedChecks.push(linkedIdentifier(s, artifactDid, ctx.chainId, nowSeconds, ctx.deps.jws));
    }
  }
  const linked = await Promise.all(linkedChecks);
  linked.forEach((claim, i) => {
    if (typeof claim === "string") exclude(linkedOf[i]!.attestation.uid, claim);
    else pending.push(claim);
  });
  return pending;
}

/** The generic rules of reference §5.3 step 6; the subject must be present and exactly the artifact DID. */
export function screen(
  a: IndexedAttestation,
  policy: Policy,
  recipient: string,
  artifactDid: string,
  nowSeconds: bigint,
  schemaStrings: ReadonlyMap<string, string>,
): Screened | ExclusionReason {
  const name = policy.names.get(a.schema.toLowerCase());
  const schema = schemaStrings.get(a.schema.toLowerCase());
  if (name === undefined || schema === undefined) return "schema-not-anchored";
  if (a.recipient.toLowerCase() !== recipient) return "wrong-recipient";
  if (a.revocationTime !== 0n) return "revoked";
  if (a.expirationTime !== 0n && a.expirationTime <= nowSeconds) return "expired";
  const decoded = decodePayload(schema, a.data);
  if (!decoded.ok) return "undecodable";
  const data = decoded.value;
  if (data.subject !== artifactDid) return "wrong-subject";
  if (Object.hasOwn(data, "effectiveAt")) {
    const effectiveAt = readUint(data.effectiveAt);
    if (effectiveAt === undefined || (effectiveAt !== 0n && effectiveAt > nowSeconds)) return "not-yet-effective";
  }
  if (Object.hasOwn(data, "expiresAt")) {
    const expiresAt = readUint(data.expiresAt);
    if (expiresAt === undefined || (expiresAt !== 0n && expiresAt <= nowSeconds)) return "payload-expired";
  }
  return { attestation: a, name, data };
}

/** The party DID of a claim: a DID (not a bare domain), normalized. */
function partyOf(value: unknown): string | undefined {
  if (typeof value !== "string" || !value.trim().startsWith("did:")) return undefined;
  const normalized = normalizeDid(value);
  return normalized.ok ? normalized.value : undefined;
}

/** Responsibility-claim payload rules (reference §5.3, SDK `verifyResponsibilityClaim`). */
function responsibilityClaim(s: Screened, chainId: number): PendingClaim | ExclusionReason {
  const party = partyOf(s.data.responsibleParty);
  const types = s.data.responsibilityType;
  const issuedAt = readUint(s.data.issuedAt);
  if (party === undefined || !Array.isArray(types) || types.length === 0 || issuedAt === undefined || issuedAt === 0n) {
    return "invalid-payload";
  }
  return { ...s, party, controller: pkhOf(chainId, s.attestation.attester), issuedAt, basis: RESPONSIBILITY_BASIS };
}

/**
 * Linked-identifier rules: a linkedId DID and proofs from both sides of the link (reference §5.3, SDK
 * `verifyLinkedIdentifierProofs`), two distinct entries of `proofs`, purpose `shared-control`:
 * - the linkedId side: a valid pop-eip712 or pop-jws that names the artifact DID as the authorized
 *   entity (`aud`) and whose signer is the same controller as linkedId. The attester's signature does
 *   not do here: the attestation already is the attester's word, and the proof must show that the
 *   holder of linkedId itself agreed to be linked to this artifact.
 * - the artifact side: a did:artifact is content-addressed and has no key, so nobody can sign for it.
 *   As in the reference, an `evidence-pointer` counts without being fetched; so does a valid
 *   pop-eip712 or pop-jws naming the artifact signed by the attester, whose control of linkedId
 *   (controller authorization and window) is checked next in any case.
 * One proof never stands for both sides, even when the attester is linkedId itself.
 */
async function linkedIdentifier(
  s: Screened,
  artifactDid: string,
  chainId: number,
  nowSeconds: bigint,
  jws: JwsVerifier,
): Promise<PendingClaim | ExclusionReason> {
  const party = partyOf(s.data.linkedId);
  if (party === undefined) return "invalid-payload";
  const wrappers = parseProofWrappers(s.data.proofs, { distinct: true });
  if (wrappers.length === 0) return "invalid-proofs";
  const controller = pkhOf(chainId, s.attestation.attester);
  const context = { nowSeconds, purpose: "shared-control", chainId, jws };
  const proofs = await Promise.all(wrappers.map((w) => verifyProofWrapper(w, context)));
  const namesArtifact = proofs.map((proof) => proof !== undefined && proof.audiences.includes(artifactDid));
  const signedBy = (i: number, did: string) => namesArtifact[i]! && proofs[i]!.signers.some((signer) => isSameControllerId(signer, did));
  const linkedSide = wrappers.flatMap((_, i) => (signedBy(i, party) ? [i] : []));
  const artifactSide = wrappers.flatMap((w, i) => (isEvidencePointer(w, context) || signedBy(i, controller) ? [i] : []));
  const bothSides = linkedSide.some((i) => artifactSide.some((j) => j !== i));
  if (!bothSides) return "invalid-proofs";
  const issuedAt = readUint(s.data.issuedAt);
  if (issuedAt === undefined) return "invalid-payload";
  return { ...s, party, controller, issuedAt: issuedAt === 0n ? s.attestation.time : issuedAt, basis: LINKED_BASIS };
}
