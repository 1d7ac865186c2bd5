/** The attestation index: what was indexed, how far, and the attestation list read from it (decisions §11). */
export { createIndexedAttestations, createIndexFollower, type FollowStep } from "./attestation_index.ts";
export { createListAttestations, type ListAttestations } from "./list_attestations.ts";
