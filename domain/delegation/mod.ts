/**
 * Delegated attestation: the signed Attest message rebuilt and checked, the public relay's guard, the private relay's
 * rules, and the submission outcomes (decisions §6, §12, §15).
 */
export {
  ATTEST_TYPES,
  attestDigest,
  type AttestMessage,
  buildAttestTypedData,
  EAS_DOMAIN_VERSION,
  ZERO_ADDRESS,
  ZERO_UID,
} from "./attest_typed_data.ts";
export { createDelegatedAttest, type DelegatedAttest, NONCE_AHEAD, NONCE_MOVED } from "./delegated_attest.ts";
export {
  type BatchItemResult,
  type BatchLayout,
  type DelegatedAttestBatch,
  type DelegatedAttestBatchCaller,
  type DelegatedAttestBatchOutcome,
  MAX_BATCH_ITEMS,
} from "./delegated_attest_batch.ts";
export { type DelegatedRequest, parseDelegatedRequest } from "./delegated_request.ts";
export { createReadNonce, type ReadNonce } from "./nonce.ts";
export { createPrivateRelay, type PrivateRelay, REFERENCED_AUTHORITY } from "./private_relay.ts";
export { createRelayGuard, GAS_WINDOW_MS } from "./relay_guard.ts";
export { normalizeSignature } from "./signature.ts";
export { attestCalldataBytes, batchCalldataBytes, MAX_CALLDATA_BYTES } from "./_calldata_size.ts";
export * from "./submission_reconciler.ts";
export {
  type BatchRefusal,
  type ChainNonce,
  type ChainSet,
  createReadChainNonce,
  type OnChain,
  pickBatchChain,
  pickWriteChain,
  type ReadChainNonce,
  routeDelegatedAttest,
  routePrivateRelay,
  type WriteChainNames,
  writeChainOf,
} from "./write_chains.ts";
