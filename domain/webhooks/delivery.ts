/**
 * From the outbox to the receivers (decisions §22): the fan-out turns outbox rows into messages and per-endpoint
 * deliveries (one transaction: the rows go as the deliveries come), and the delivery step claims due deliveries
 * (each by one worker at a time, whatever the number of instances) and sends them with Standard Webhooks headers,
 * retrying on `WEBHOOK_RETRY_SECONDS` and failing after the last.
 */
import type { StoredAttestation } from "../../ports/attestation_index.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { AttemptOutcome, ClaimedDelivery, OutboxRow, WebhookStore, WebhookTarget, WebhookTransport } from "../../ports/webhooks.ts";
import { attestationEvent, type Publication, publicationsOf } from "./events.ts";
import { webhookHeaders } from "./signature.ts";

/** The retry delays of decisions §22, in seconds: 8 attempts in all. */
export const DEFAULT_RETRY_SECONDS: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];
/** An endpoint whose attempts all failed this long is disabled (decisions §22). */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60_000;
/** How long the previous secret still signs after a rotation. */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60_000;

/** What the fan-out needs. */
export type FanOutDeps = {
  readonly store: Pick<WebhookStore, "outbox" | "publish" | "targets" | "anyEnabled">;
  /**
   * The stored records of uids in the index of the row's chain and EAS (decisions §30: each attestation chain has its
   * own index; a row names the one that wrote it, a row without them is the default chain's).
   */
  readonly records: (uids: readonly HexString[], chain: { readonly chainId?: number | undefined; readonly eas?: string | undefined }) => Promise<StoredAttestation[]>;
  /** Schema names by lowercase UID (the trust anchors'). */
  readonly schemaNames: ReadonlyMap<string, string>;
  readonly clock: Clock;
  /** Rows per round; default 200. */
  readonly batch?: number | undefined;
  /** The chains whose rows this instance tells (the ones it follows); absent: every row. */
  readonly chainIds?: readonly number[] | undefined;
  /** The default chain: its events keep the ids they always had; another chain's ids name their chain. */
  readonly defaultChainId?: number | undefined;
};

/**
 * One round of the fan-out: publishes up to a batch of outbox rows; how many rows it consumed. A row whose
 * attestation the index does not hold now stays in the outbox: the follower wrote both in one transaction, so that is
 * an operator's `ops index rebuild` under way (it keeps the webhook boundary and the outbox), and the row is told
 * once the rebuilt index holds its record again.
 */
export function createWebhookFanOut(deps: FanOutDeps): () => Promise<number> {
  const batch = deps.batch ?? 200;
  return async function fanOut() {
    const rows = await deps.store.outbox(batch, deps.chainIds);
    if (rows.length === 0) return 0;
    const records = await recordsOfRows(rows, deps.records);
    // Nobody to tell: the rows are consumed as told (those the index holds), their events never read.
    const anyone = await deps.store.anyEnabled();
    const targetsOf = new Map<string, WebhookTarget[]>();
    const publications: Publication[] = [];
    const consumed: number[] = [];
    const nowMs = deps.clock.nowMs();
    for (const row of rows) {
      const record = records.get(recordKey(row, row.uid));
      if (record === undefined) continue;
      consumed.push(row.seq);
      if (!anyone) continue;
      const event = attestationEvent(row, record, deps.schemaNames);
      if (event === undefined) continue;
      let targets = targetsOf.get(event.subject);
      if (targets === undefined) targetsOf.set(event.subject, targets = await deps.store.targets(event.subject));
      publications.push(...publicationsOf(row, event, targets, nowMs, deps.defaultChainId));
    }
    await deps.store.publish(
      publications.map((p) => p.message),
      publications.flatMap((p) => p.endpointIds.map((endpointId) => ({ messageId: p.message.id, endpointId }))),
      consumed,
    );
    return consumed.length;
  };
}

/** A record's place in the fan-out's lookup: its chain, EAS and uid (the same uid may exist on two chains). */
function recordKey(chain: { readonly chainId?: number | undefined; readonly eas?: string | undefined }, uid: string): string {
  return `${chain.chainId ?? ""}:${(chain.eas ?? "").toLowerCase()}:${uid.toLowerCase()}`;
}

/** The records the rows name, each read from its own chain's index: one lookup per chain and EAS. */
async function recordsOfRows(rows: readonly OutboxRow[], records: FanOutDeps["records"]): Promise<Map<string, StoredAttestation>> {
  const byChain = new Map<string, { chain: { chainId?: number | undefined; eas?: string | undefined }; uids: Set<HexString> }>();
  for (const row of rows) {
    const key = recordKey(row, "");
    let group = byChain.get(key);
    if (group === undefined) byChain.set(key, group = { chain: { chainId: row.chainId, eas: row.eas }, uids: new Set() });
    group.uids.add(row.uid as HexString);
  }
  const found = new Map<string, StoredAttestation>();
  for (const { chain, uids } of byChain.values()) {
    for (const record of await records([...uids], chain)) found.set(recordKey(chain, record.uid), record);
  }
  return found;
}

/** The outcome of an attempt that ended with `status` (null: no answer) as the `attempt`-th. */
export function attemptOutcome(attempt: number, status: number | null, nowMs: number, retrySeconds: readonly number[]): AttemptOutcome {
  if (status !== null && status >= 200 && status < 300) return { state: "delivered", status };
  const delay = retrySeconds[attempt - 1];
  if (delay === undefined) return { state: "failed", status };
  return { state: "retry", status, nextAttemptAtMs: nowMs + delay * 1000 };
}

/** What the delivery step needs. */
export type DeliveryDeps = {
  readonly store: Pick<WebhookStore, "claim" | "record">;
  readonly transport: WebhookTransport;
  readonly clock: Clock;
  /** This worker, as its claims name it. */
  readonly holder: string;
  readonly retrySeconds: readonly number[];
  /** `WEBHOOK_MAX_IN_FLIGHT`: deliveries this worker sends at once. */
  readonly maxInFlight: number;
  /** Deliveries to one endpoint at once (decisions §22: 4). */
  readonly perEndpoint: number;
  /**
   * Deliveries to one account's endpoints at once, all instances together (issue 43: one account's slow receivers
   * cannot hold every slot; claims are fair between accounts).
   */
  readonly perAccount: number;
  /** How long a claim holds (longer than an attempt's deadline). */
  readonly leaseMs: number;
  readonly disableAfterMs?: number | undefined;
  /** Told of each attempt's outcome (metrics, logs). */
  readonly onAttempt?: ((delivery: ClaimedDelivery, outcome: AttemptOutcome, reason: string | undefined) => void) | undefined;
  /** Told when an attempt could not be recorded (the delivery is claimed again once its lease runs out). */
  readonly onError?: ((delivery: ClaimedDelivery, error: unknown) => void) | undefined;
};

/** The secrets a delivery is signed with now: the current one, and the previous one while it is still live. */
export function liveSecrets(delivery: Pick<ClaimedDelivery, "secret" | "previousSecret" | "previousSecretUntilMs">, nowMs: number): string[] {
  const previous = delivery.previousSecret !== null && (delivery.previousSecretUntilMs ?? 0) > nowMs ? [delivery.previousSecret] : [];
  return [delivery.secret, ...previous];
}

/**
 * The delivery worker: `run()` claims as many due deliveries as it has free slots and starts them; it returns how many
 * it started. `idle()` resolves once none is in flight. Each attempt is recorded under the claim (a worker whose claim
 * ran out records nothing, and the delivery is sent again: at least once).
 */
export function createWebhookDelivery(deps: DeliveryDeps) {
  let inFlight = 0;
  const running = new Set<Promise<void>>();
  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    if (delivery.message.type === "webhook.test" && testedUrl(delivery.message.body) !== delivery.url) {
      // A test event goes only to the URL it was asked for. The endpoint's URL changed since: not sent (a queue of test
      // events asked for one host was sent in one burst to another, once the URL was pointed there).
      const outcome = { state: "failed", status: null, skipped: true } as const;
      await deps.store.record(delivery.id, deps.holder, outcome, deps.clock.nowMs(), deps.disableAfterMs ?? DISABLE_AFTER_MS);
      deps.onAttempt?.(delivery, outcome, "url-changed");
      return;
    }
    const nowMs = deps.clock.nowMs();
    const timestamp = Math.floor(nowMs / 1000);
    const headers = webhookHeaders(liveSecrets(delivery, nowMs), delivery.message.id, timestamp, delivery.message.body);
    const posted = await deps.transport.post(delivery.url, headers, delivery.message.body);
    const status = posted.ok ? posted.status : null;
    const outcome = attemptOutcome(delivery.attempts + 1, status, deps.clock.nowMs(), deps.retrySeconds);
    await deps.store.record(delivery.id, deps.holder, outcome, deps.clock.nowMs(), deps.disableAfterMs ?? DISABLE_AFTER_MS);
    deps.onAttempt?.(delivery, outcome, posted.ok ? undefined : posted.reason);
  }
  return {
    async run(): Promise<number> {
      const free = deps.maxInFlight - inFlight;
      if (free <= 0) return 0;
      const claimed = await deps.store.claim(deps.holder, deps.clock.nowMs(), deps.leaseMs, free, deps.perEndpoint, deps.perAccount);
      for (const delivery of claimed) {
        inFlight++;
        const done: Promise<void> = attempt(delivery)
          .catch((error: unknown) => deps.onError?.(delivery, error))
          .finally(() => {
            inFlight--;
            running.delete(done);
          });
        running.add(done);
      }
      return claimed.length;
    },
    inFlight: () => inFlight,
    async idle(): Promise<void> {
      while (running.size > 0) await Promise.all([...running]);
    },
  };
}

/** The delivery worker. */
export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>;

/** The URL a `webhook.test` event was asked for (its `data.url`), or undefined. */
function testedUrl(body: string): string | undefined {
  try {
    const url = (JSON.parse(body) as { data?: { url?: unknown } }).data?.url;
    return typeof url === "string" ? url : undefined;
  } catch {
    return undefined;
  }
}
