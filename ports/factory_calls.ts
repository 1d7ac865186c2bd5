/**
 * The ERC-6492 factory calls the service sent to deploy counterfactual wallets (issue 23, finding 2), keyed by
 * chain and wallet: a wallet is deployed by the service at most once. The row is written before the factory call is
 * sent and removed once the wallet has code; one left `failed` (the call was mined and the wallet has no code)
 * makes that wallet's ERC-6492 signatures refused before any RPC, one left `sent` (the outcome was not learnt, or
 * the process stopped) makes the next deployment attempt refused before any gas.
 */
export type FactoryCallState = "sent" | "failed";

/** One recorded factory call. */
export type FactoryCallRecord = {
  readonly chainId: number;
  /** The counterfactual wallet (the attester), lowercase. */
  readonly wallet: string;
  /** The factory, lowercase, and the keccak256 of the calldata it was sent. */
  readonly factory: string;
  readonly calldataHash: string;
  readonly state: FactoryCallState;
  /** The factory transaction, once mined without deploying the wallet. */
  readonly txHash: string | null;
  readonly gasUsed: bigint | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
};

/** What {@link FactoryCallStore.begin} records. */
export type FactoryCallAttempt = {
  readonly chainId: number;
  readonly wallet: string;
  readonly factory: string;
  readonly calldataHash: string;
  readonly createdAtMs: number;
};

/** The durable record of factory calls (SQLite and PostgreSQL behave alike: adapters/test_support/factory_calls_contract.ts). */
export interface FactoryCallStore {
  /** Records, before the factory call is sent, that it will be; false (nothing written) when the wallet is already on record. */
  readonly begin: (attempt: FactoryCallAttempt) => Promise<boolean>;
  /** The factory call was mined and the wallet has no code: it stays on record for good. */
  readonly failed: (chainId: number, wallet: string, burn: { readonly txHash: string; readonly gasUsed: bigint | null }, nowMs: number) => Promise<void>;
  /** Removes the record: the wallet has code, or nothing was sent after all. */
  readonly forget: (chainId: number, wallet: string) => Promise<void>;
  readonly find: (chainId: number, wallet: string) => Promise<FactoryCallRecord | undefined>;
}
