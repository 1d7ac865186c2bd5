import type { AccountStore, SponsoredWriteLedger } from "./accounts.ts";
import type { IndexStore } from "./attestation_index.ts";
import type { FactoryCallStore } from "./factory_calls.ts";
import type { WalletRefusalStore } from "./wallet_refusals.ts";
import type { GasBudget } from "./gas_budget.ts";
import type { OAuthStore } from "./oauth.ts";
import type { PremiumReadLedger } from "./premium_reads.ts";
import type { SubjectStore } from "./subjects.ts";
import type { SigningKeyStore } from "./signing_keys.ts";
import type { ReplayStore } from "./replay_store.ts";
import type { PaymentLedger } from "./payments.ts";
import type { TxReplacementStore } from "./tx_replacements.ts";
import type { RateCounter } from "./rate_counter.ts";
import type { McpSessionStore } from "./mcp_sessions.ts";
import type { IdempotencyStore } from "./idempotency.ts";
import type { SubmissionRecordStore } from "./submission_records.ts";
import type { WebhookStore } from "./webhooks.ts";
import type { DeploymentSecrets } from "./deployment_secrets.ts";

/**
 * Everything the service keeps: replay records, accounts, challenges, sessions and the
 * sponsored-write quota. One adapter per database; they behave identically (one contract test suite).
 */
export interface Storage {
  /** `sqlite` for one machine, `postgres` for several instances sharing one database. */
  readonly kind: "sqlite" | "postgres";
  /** SQL statements run since opened (SQLite; issue 43's budget test counts them); undefined where not counted. */
  readonly statements?: (() => number) | undefined;
  readonly replay: ReplayStore;
  readonly accounts: AccountStore;
  readonly ledger: SponsoredWriteLedger;
  /** Shared nonce bookkeeping of the service's wallets; only where several instances share the database. */
  readonly walletNonces?: WalletNonces | undefined;
  /** The public relay's gas budget (decisions §12), shared by the instances on one database. */
  readonly gasBudget: GasBudget;
  /** The private relay's hourly gas budget (issue 23), shared likewise. */
  readonly privateGasBudget: GasBudget;
  /** The ERC-6492 factory calls the service sent, one per wallet (issue 23). */
  readonly factoryCalls: FactoryCallStore;
  /** Contract wallets the relays no longer send for: a signature accepted in simulation and refused on chain. */
  readonly walletRefusals: WalletRefusalStore;
  /** Premium reads per account and year (decisions §12). */
  readonly premiumReads: PremiumReadLedger;
  /** The subjects accounts hold (decisions §12). */
  readonly subjects: SubjectStore;
  /** The signing keys accounts registered (decisions §17). */
  readonly signingKeys: SigningKeyStore;
  /** OAuth clients, codes, grants, tokens and token-signing keys (decisions §19). */
  readonly oauth: OAuthStore;
  /** x402 payments taken (replay keys, outcomes) and the paid-plan periods they bought (decisions §13). */
  readonly payments: PaymentLedger;
  /** Fee-bump replacements of open submissions' transactions. */
  readonly txReplacements: TxReplacementStore;
  /**
   * Token buckets of the limits that guard money or storage (decisions §21): counted once for every instance on the
   * database.
   */
  readonly rateCounter: RateCounter;
  /** MCP session records, so that any instance answers any `/mcp` request (decisions §21). */
  readonly mcpSessions: McpSessionStore;
  /** Idempotency keys of writes (decisions §23), in the same database as the submission records. */
  readonly idempotency: IdempotencyStore;
  /** The relay submissions callers track by id (decisions §23). */
  readonly submissions: SubmissionRecordStore;
  /** Webhook endpoints, the outbox the index writes, messages and deliveries (decisions §22). */
  readonly webhooks: WebhookStore;
  /** Secrets of the deployment (the query cursors' key, issue 43), made once and read by every instance on the database. */
  readonly secrets: DeploymentSecrets;
  /** The attestation index of one EAS contract, kept in this database (its tables are made on first use). */
  readonly indexStore: (scope: { chainId: number; easAddress: string }) => Promise<IndexStore>;
  /** True when the database answers. */
  readonly ping: () => Promise<boolean>;
  readonly close: () => Promise<void>;
}

/** What one locked send did: the nonce it broadcast with (undefined when nothing left), and its result. */
export type LockedSend<T> = { readonly used: number | undefined; readonly value: T };

/**
 * Serializes a wallet's transaction nonces across every instance sharing the database: `send` runs
 * while the wallet's row is locked and receives the next nonce the instances have recorded (0 for
 * a wallet never seen); the nonce it reports as used is recorded before the lock is released.
 */
export interface WalletNonces {
  readonly withLock: <T>(chainId: number, address: string, send: (storedNext: number) => Promise<LockedSend<T>>) => Promise<T>;
}
