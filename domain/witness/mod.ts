/**
 * The controller witness (decisions §8): a paid write that records on chain, as a non-revocable attestation, the
 * controller key a did:web publishes. Depends on `domain/discovery/`, `domain/accounts/` and `domain/payments/`
 * through their `mod.ts`, in one direction: none of them imports it.
 */
export {
  type ControllerWitness,
  createControllerWitness,
  LEGACY_WITNESS_DEPRECATION_HEADER,
  parseWitnessBody,
} from "./controller_witness.ts";
export { createWitnessResume, WITNESS_GIVEN_BACK_MESSAGE, WITNESS_UNKNOWN_MESSAGE, WITNESS_WRITE_PREFIX, type WitnessResumed } from "./witness_resume.ts";
