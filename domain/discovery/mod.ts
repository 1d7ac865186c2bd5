/**
 * Controller discovery and the controller witness: which keys control a did:web, from DNS TXT and did.json, and the
 * immutable witness of it (decisions §8).
 */
export {
  type ControllerConfirmRecord,
  type ControllerKey,
  controllerTxtRecordFor,
  createCachedDiscovery,
  createControllerConfirm,
  createDiscoverControllers,
  type DiscoverControllers,
  type DiscoveryRecord,
  type EvidenceItem,
  parseJktTxtRecord,
} from "./controller_discovery.ts";
export {
  type ControllerWitness,
  createControllerWitness,
  LEGACY_WITNESS_DEPRECATION_HEADER,
  parseWitnessBody,
} from "./controller_witness.ts";
export { classifyAddress, isIpLiteral, isPublicAddress } from "./ip_policy.ts";
export {
  controllerKeysFromJwks,
  didJwkThumbprint,
  JKT_PREFIX,
  jwkThumbprint,
  readJktValue,
} from "./jwk_keys.ts";
export { createJwksLookup, type JwksEvidence, type JwksLookupDeps, type LookupJwks } from "./jwks_lookup.ts";
export { type LiveControllerEvidence, liveControllerEvidence, type LiveMethod } from "./live_evidence.ts";
