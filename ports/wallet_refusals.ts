/**
 * Contract wallets the relays no longer send for, by chain: a wallet that accepted a signature when the service
 * simulated the attestation and refused it on chain, so the delegate paid for a reverted transaction. A wallet can
 * tell a simulation from a real transaction (`tx.gasprice` is 0 in most nodes' `eth_call`), so without the mark it
 * could do that again and again at no cost to its owner. For good, as a failed ERC-6492 factory call (ports/factory_calls.ts).
 */
export type WalletRefusal = {
  readonly chainId: number;
  /** The attester, lowercase. */
  readonly wallet: string;
  /** The reverted transaction. */
  readonly txHash: string;
  readonly createdAtMs: number;
};

/** The durable record of refused wallets (SQLite and PostgreSQL alike: adapters/test_support/wallet_refusals_contract.ts). */
export interface WalletRefusalStore {
  /** Records the refusal; a wallet already refused keeps its first record. */
  readonly refuse: (refusal: WalletRefusal) => Promise<void>;
  readonly find: (chainId: number, wallet: string) => Promise<WalletRefusal | undefined>;
}
