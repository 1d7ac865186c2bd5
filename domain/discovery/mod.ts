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
} from "./controller_discovery.ts";
export {
  type ControllerWitness,
  createControllerWitness,
  LEGACY_WITNESS_DEPRECATION_HEADER,
  parseWitnessBody,
} from "./controller_witness.ts";
export { classifyAddress, isIpLiteral, isPublicAddress } from "./ip_policy.ts";
