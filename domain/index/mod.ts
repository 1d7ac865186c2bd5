/** The attestation index: what was indexed, how far, the reads answered from it, and the attestation list (decisions §11, §21). */
export { createIndexFollower, type FollowStep } from "./attestation_index.ts";
export { createListAttestations, type ListAttestations } from "./list_attestations.ts";
export {
  type AsOf,
  asOfHead,
  createIndexAnswers,
  INDEX_STALE_MESSAGE,
  type IndexAnswers,
  type IndexStaleCode,
  isFresh,
  type PinnedIndex,
} from "./store_reads.ts";
