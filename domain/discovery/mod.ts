/**
 * Controller discovery: which keys control a did:web, from DNS TXT and did.json (decisions §8). The witness that writes
 * it on chain is its own capability, `domain/witness/`, which depends on this one.
 */
export { createCachedDiscovery } from "./cached_discovery.ts";
export { type ControllerConfirmRecord, createControllerConfirm } from "./controller_confirm.ts";
export { createDiscoverControllers } from "./controller_discovery.ts";
export { canonicalControllerKey } from "./controller_values.ts";
export {
  type ControllerKey,
  type DiscoverControllers,
  type DiscoverOptions,
  type DiscoveryRecord,
  type EvidenceItem,
  unreadableNow,
} from "./discovery_record.ts";
export { isLastingFetchFailure } from "./did_document.ts";
export { controllerTxtRecordFor, parseJktTxtRecord } from "./txt_records.ts";
export { classifyAddress, isIpLiteral, isPublicAddress } from "./ip_policy.ts";
export {
  controllerKeysFromJwks,
  didJwkThumbprint,
  JKT_PREFIX,
  jwkThumbprint,
  plainDidJwkThumbprint,
  readJktValue,
} from "./jwk_keys.ts";
export { createJwksLookup, type JwksEvidence, type JwksLookupDeps, type LookupJwks } from "./jwks_lookup.ts";
export { clientShareOf, type LookupBudget, type LookupClient, takeLookup } from "./lookup_budget.ts";
export { type LiveControllerEvidence, liveControllerEvidence, type LiveMethod } from "./live_evidence.ts";
