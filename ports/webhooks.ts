/** The event types an endpoint may subscribe to (decisions §22). */
export type WebhookEventType = "attestation.created" | "attestation.revoked" | "key.status_changed" | "submission.settled" | "webhook.test";

/** A webhook endpoint of an account, as stored (the secrets included: deliveries are signed with them). */
export type WebhookEndpoint = {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  /** Normalized DIDs watched explicitly. */
  readonly subjects: readonly string[];
  /** Also the account's proven subjects (decisions §22). */
  readonly ownSubjects: boolean;
  /** `whsec_` + base64. */
  readonly secret: string;
  /** The secret before the last rotation, still signed with until `previousSecretUntilMs`. */
  readonly previousSecret: string | null;
  readonly previousSecretUntilMs: number | null;
  readonly disabled: boolean;
  /** Since when every attempt failed (null: the last attempt succeeded, or none yet). */
  readonly failingSinceMs: number | null;
  readonly createdAtMs: number;
};

/** The limits of one account (decisions §22): endpoints, and watched subjects of all its endpoints together. */
export type WebhookLimits = { readonly endpoints: number; readonly subjects: number };

/** A change of an endpoint. */
export type WebhookChange = {
  readonly url?: string | undefined;
  readonly events?: readonly WebhookEventType[] | undefined;
  readonly subjects?: readonly string[] | undefined;
  readonly ownSubjects?: boolean | undefined;
  readonly disabled?: boolean | undefined;
};

/**
 * A row of the outbox the index store writes in the same transaction as the index rows that produce it (decisions
 * §22): an attestation or a revocation that crossed `WEBHOOK_CONFIRMATIONS`.
 */
export type OutboxRow = {
  readonly seq: number;
  readonly kind: "attested" | "revoked";
  readonly uid: string;
  readonly blockNumber: bigint;
  /** The transaction of the attestation or of the revocation; null where the index did not keep it. */
  readonly txHash: string | null;
  /** The chain and EAS contract whose index wrote the row (decisions §30: events carry `chain`); the stores fill both. */
  readonly chainId?: number | undefined;
  readonly eas?: string | undefined;
};

/** One event as delivered: its id (the same at every endpoint and on every retry), type and JSON body. */
export type WebhookMessage = {
  readonly id: string;
  readonly type: WebhookEventType;
  /** The exact body sent: `{type, timestamp, data}` as JSON. */
  readonly body: string;
  readonly createdAtMs: number;
};

/** An endpoint that should receive an event about a subject. */
export type WebhookTarget = {
  readonly endpointId: string;
  readonly accountId: string;
  readonly events: readonly WebhookEventType[];
  /** The subject is one of the account's proven subjects (not only watched). */
  readonly owned: boolean;
  /** The endpoint watches it: explicitly, or through `ownSubjects`. */
  readonly watched: boolean;
};

/** A delivery claimed by one worker: what to send, where, and with which secrets. */
export type ClaimedDelivery = {
  readonly id: string;
  readonly endpointId: string;
  readonly url: string;
  readonly secret: string;
  readonly previousSecret: string | null;
  readonly previousSecretUntilMs: number | null;
  readonly message: WebhookMessage;
  /** Attempts made before this one. */
  readonly attempts: number;
};

/** What one attempt came to. */
export type AttemptOutcome =
  | { readonly state: "delivered"; readonly status: number }
  | { readonly state: "retry"; readonly status: number | null; readonly nextAttemptAtMs: number }
  /** `skipped`: never sent (a test event whose URL changed since it was asked for): the endpoint is not failing for it. */
  | { readonly state: "failed"; readonly status: number | null; readonly skipped?: true | undefined };

/** One delivery as the account lists it. */
export type DeliveryRecord = {
  readonly id: string;
  readonly eventId: string;
  readonly type: WebhookEventType;
  readonly attempts: number;
  /** The last response's status; null for none (a timeout, a refused connection) or no attempt yet. */
  readonly lastStatus: number | null;
  readonly nextAttemptAtMs: number | null;
  readonly deliveredAtMs: number | null;
  readonly failedAtMs: number | null;
  readonly createdAtMs: number;
};

/** Where a page of deliveries starts: after this one (newest first). */
export type DeliveryCursor = { readonly createdAtMs: number; readonly id: string };

/** The queue as metrics report it. */
export type WebhookQueueStats = { readonly pending: number; readonly oldestPendingMs: number | null };

/**
 * Webhook endpoints, the outbox, the messages and their deliveries (decisions §22), in the same database as the index
 * so the outbox is written in the index's transaction.
 */
export interface WebhookStore {
  /** Inserts an endpoint unless the account's limits would be passed (counted in the insert's transaction). */
  readonly create: (endpoint: WebhookEndpoint, limits: WebhookLimits) => Promise<"created" | "limit">;
  /** The account's endpoints, oldest first. */
  readonly list: (accountId: string) => Promise<WebhookEndpoint[]>;
  /** One endpoint of the account; undefined for another account's or an unknown id. */
  readonly get: (accountId: string, id: string) => Promise<WebhookEndpoint | undefined>;
  /** Changes an endpoint (re-enabling clears its failing time); `limit` when the subjects would pass the limit. */
  readonly update: (accountId: string, id: string, change: WebhookChange, limits: WebhookLimits) => Promise<WebhookEndpoint | "limit" | undefined>;
  /** Removes an endpoint and its pending deliveries; false when unknown. */
  readonly remove: (accountId: string, id: string) => Promise<boolean>;
  /** Replaces the secret, keeping the old one until `previousUntilMs`. */
  readonly rotate: (accountId: string, id: string, secret: string, previousUntilMs: number) => Promise<WebhookEndpoint | undefined>;
  /**
   * The outbox's oldest rows; with `chainIds`, only the rows of those chains (decisions §30: an instance tells the
   * chains it follows, so rows of another chain never hold back its own).
   */
  readonly outbox: (limit: number, chainIds?: readonly number[] | undefined) => Promise<OutboxRow[]>;
  /**
   * Stores the messages and their deliveries (at most one per message and endpoint) and removes the outbox rows
   * `consumed`, in one transaction: a crash before it leaves the rows for the next fan-out, a race of two instances
   * inserts nothing twice.
   */
  readonly publish: (messages: readonly WebhookMessage[], deliveries: readonly { readonly messageId: string; readonly endpointId: string }[], consumed: readonly number[]) => Promise<void>;
  /** The enabled endpoints that may get an event about `subjectDid`: watching it, or owning it (their account's subject). */
  readonly targets: (subjectDid: string) => Promise<WebhookTarget[]>;
  /** The enabled endpoints of an account. */
  readonly accountEndpoints: (accountId: string) => Promise<WebhookEndpoint[]>;
  /**
   * Whether any endpoint is enabled: a fan-out round that finds none consumes its rows without reading their events
   * (issue 43 item 4: decoding every new attestation for nobody was a share of each write's CPU).
   */
  readonly anyEnabled: () => Promise<boolean>;
  /**
   * Claims up to `limit` due deliveries of enabled endpoints for `holder` until `nowMs + leaseMs`, at most
   * `perEndpoint` of one endpoint and `perAccount` of one account's endpoints in flight (counting the leases every
   * holder has), in a fair order: each account's next slot before any account's slot after it (fewer in flight first),
   * then the oldest (issue 43). Each delivery is claimed by one holder at a time.
   */
  readonly claim: (holder: string, nowMs: number, leaseMs: number, limit: number, perEndpoint: number, perAccount: number) => Promise<ClaimedDelivery[]>;
  /**
   * Records an attempt of a delivery `holder` claimed (nothing when the claim was lost); a failed attempt disables
   * the endpoint when every attempt failed for `disableAfterMs`.
   */
  readonly record: (id: string, holder: string, outcome: AttemptOutcome, nowMs: number, disableAfterMs: number) => Promise<void>;
  /** An endpoint's deliveries, newest first. */
  readonly deliveries: (endpointId: string, page: { readonly limit: number; readonly after?: DeliveryCursor | undefined }) => Promise<DeliveryRecord[]>;
  readonly stats: (nowMs: number) => Promise<WebhookQueueStats>;
  /** Drops delivered and failed deliveries created before `beforeMs`, and messages left with none; how many deliveries. */
  readonly prune: (beforeMs: number) => Promise<number>;
}

/** Why a URL may not be sent to. */
export type WebhookUrlRefusal = "invalid-url" | "dns-failure" | "not-found" | "blocked-address";

/** What one POST came to; library errors never cross. */
export type WebhookPost =
  | { readonly ok: true; readonly status: number }
  | { readonly ok: false; readonly reason: WebhookUrlRefusal | "timeout" | "network-error" | "tls-error" };

/**
 * Sends webhook requests safely (decisions §22): the host resolved and every address checked against the discovery
 * IP policy, the connection made to the checked address (DNS rebinding), no redirect followed, the response body read
 * up to 64 KiB and discarded.
 */
export interface WebhookTransport {
  /** Resolves the URL's host and checks its addresses (registration). */
  readonly check: (url: string) => Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: WebhookUrlRefusal }>;
  readonly post: (url: string, headers: Readonly<Record<string, string>>, body: string) => Promise<WebhookPost>;
}
