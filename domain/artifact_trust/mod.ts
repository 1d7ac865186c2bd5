/**
 * Artifact trust: every verified claim about a did:artifact, and the proofs that make a claim verified (decisions
 * §7).
 */
export {
  type ArtifactTrust,
  type ArtifactTrustItem,
  type ArtifactTrustRecord,
  createArtifactTrust,
  INVALID_ARTIFACT_DID_MESSAGE,
} from "./artifact_trust.ts";
export {
  OMA_TRUST_PROOF_DOMAIN,
  OMA_TRUST_PROOF_TYPES,
  parseProofWrappers,
  readUint,
  verifyProofWrapper,
} from "./proofs.ts";
