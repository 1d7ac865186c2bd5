/** The attestation index: what was indexed, how far, the reads answered from it, and the queries of it (decisions §11, §21, §24). */
export { createIndexFollower, type FollowStep } from "./attestation_index.ts";
export { createSubjectOf, type SubjectOf } from "./record_subject.ts";
export {
  type AttestationCount,
  type AttestationItem,
  type AttestationPage,
  type CountAttestations,
  createCountAttestations,
  createGetAttestation,
  createListAttestations,
  type FilterQuery,
  type GetAttestation,
  type ListAttestations,
  type ListedAttestation,
  type ListQuery,
} from "./list_attestations.ts";
export {
  type AsOf,
  asOfHead,
  createIndexAnswers,
  INDEX_STALE_MESSAGE,
  type IndexAnswers,
  type IndexStaleCode,
  isDoubted,
  isFresh,
  type PinnedIndex,
} from "./store_reads.ts";
