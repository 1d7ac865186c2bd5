/**
 * The chain through viem and plain JSON-RPC: EAS reads and writes, transactions, the witness writer, ownership reads,
 * the attestation index's log reads.
 */
export { createFetchRawRpc } from "./fetch_raw_rpc.ts";
export { createViemAttestationIndex } from "./viem_attestation_index.ts";
export * from "./viem_eas.ts";
export { createViemOwnershipChain } from "./viem_ownership_chain.ts";
export { createViemAuthorizationUses } from "./viem_authorization_uses.ts";
export { createViemPayerBalances } from "./viem_payer_balances.ts";
export * from "./viem_witness.ts";
export { createWsNewHeads, wsChainId } from "./ws_new_heads.ts";
export { createViemTxReceiptReader } from "./viem_receipts.ts";
export { signEip1559Digest } from "./eip1559.ts";
export { createHttp1Post, type Http1Post, http1Serves } from "./http1_post.ts";
export { createViemProofChains, type ProofChainSource, type ViemProofChainsOptions } from "./viem_proof_chains.ts";
export { type ChainCheck, type ChainCheckGate, type ChainGateState, ChainNotCheckedError, createChainCheckGate } from "./chain_check_gate.ts";
