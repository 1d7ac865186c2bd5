type W = import("../webhooks.ts").WebhookEndpoint;
type Delivery = { -readonly [K in keyof import("../webhooks.ts").DeliveryRecord]: import("../webhooks.ts").DeliveryRecord[K] } & {
  endpointId: string;
  state: "pending" | "delivered" | "failed";
  leaseHolder: string | null;
  leaseUntilMs: number | null;
};
type Tables = { endpoints: Map<string, W>; messages: Map<string, import("../webhooks.ts").WebhookMessage>; deliveries: Map<string, Delivery> };
type Claim = { holder: string; nowMs: number; leaseMs: number; limit: number; perEndpoint: number; perAccount: number };

/** Leases the due deliveries the way the SQL stores do, bounded per endpoint and per account. */
function claimDue({ endpoints, messages, deliveries }: Tables, { holder, nowMs, leaseMs, limit, perEndpoint, perAccount }: Claim) {
  // The SQL stores' rule (adapters/sqlite/sqlite_webhooks.ts claimableSql): bounds per endpoint and per account,
  // each account's next slot first (fewer in flight first), then the oldest.
  const byEndpoint = new Map<string, number>();
  const byAccount = new Map<string, number>();
  for (const d of deliveries.values()) {
    if (d.state !== "pending" || (d.leaseUntilMs ?? 0) <= nowMs) continue;
    byEndpoint.set(d.endpointId, (byEndpoint.get(d.endpointId) ?? 0) + 1);
    const account = endpoints.get(d.endpointId)?.accountId ?? "";
    byAccount.set(account, (byAccount.get(account) ?? 0) + 1);
  }
  const age = (a: Delivery, b: Delivery) =>
    (a.nextAttemptAtMs ?? 0) - (b.nextAttemptAtMs ?? 0) || a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const due = [...deliveries.values()]
    .filter((d) => d.state === "pending" && (d.nextAttemptAtMs ?? 0) <= nowMs && (d.leaseUntilMs ?? 0) <= nowMs && endpoints.get(d.endpointId)?.disabled === false)
    .sort(age);
  const endpointRank = new Map<string, number>();
  const ranked = due.flatMap((d) => {
    const rank = (endpointRank.get(d.endpointId) ?? 0) + 1;
    endpointRank.set(d.endpointId, rank);
    return rank <= perEndpoint - (byEndpoint.get(d.endpointId) ?? 0) ? [{ d, rank, account: endpoints.get(d.endpointId)!.accountId }] : [];
  });
  ranked.sort((a, b) => a.rank - b.rank || age(a.d, b.d));
  const accountRank = new Map<string, number>();
  const fits = ranked.flatMap((r) => {
    const rank = (accountRank.get(r.account) ?? 0) + 1;
    accountRank.set(r.account, rank);
    const slot = rank + (byAccount.get(r.account) ?? 0);
    return slot <= perAccount ? [{ d: r.d, slot }] : [];
  });
  fits.sort((a, b) => a.slot - b.slot || age(a.d, b.d));
  const out: import("../webhooks.ts").ClaimedDelivery[] = [];
  for (const { d } of fits.slice(0, limit)) {
    d.leaseHolder = holder;
    d.leaseUntilMs = nowMs + leaseMs;
    const e = endpoints.get(d.endpointId)!;
    out.push({
      id: d.id,
      endpointId: e.id,
      url: e.url,
      secret: e.secret,
      previousSecret: e.previousSecret,
      previousSecretUntilMs: e.previousSecretUntilMs,
      message: messages.get(d.eventId)!,
      attempts: d.attempts,
    });
  }
  return out;
}

/**
 * An in-memory webhook store (decisions §22): endpoints, an outbox a test fills with `outboxRows`, messages and
 * deliveries; `owners` maps a subject DID to the accounts that prove it. Claims and records follow the port's rules.
 */
export function fakeWebhookStore() {
  const endpoints = new Map<string, W>();
  const messages = new Map<string, import("../webhooks.ts").WebhookMessage>();
  const deliveries = new Map<string, Delivery>();
  /** A disabled endpoint's pending deliveries not in flight are failed (as the stores do). */
  const failPending = (endpointId: string, nowMs: number) => {
    for (const d of deliveries.values()) {
      if (d.endpointId !== endpointId || d.state !== "pending" || d.leaseHolder !== null) continue;
      d.state = "failed";
      d.failedAtMs = nowMs;
      d.nextAttemptAtMs = null;
    }
  };
  const outboxRows: import("../webhooks.ts").OutboxRow[] = [];
  const owners = new Map<string, string[]>();
  const ofAccount = (accountId: string) => [...endpoints.values()].filter((e) => e.accountId === accountId);
  const watched = (accountId: string, except: string) => ofAccount(accountId).filter((e) => e.id !== except).reduce((n, e) => n + e.subjects.length, 0);
  const store: import("../webhooks.ts").WebhookStore = {
    create(e, limits) {
      if (ofAccount(e.accountId).length >= limits.endpoints || watched(e.accountId, e.id) + e.subjects.length > limits.subjects) return Promise.resolve("limit");
      endpoints.set(e.id, e);
      return Promise.resolve("created");
    },
    list: (accountId) => Promise.resolve(ofAccount(accountId)),
    get: (accountId, id) => Promise.resolve(endpoints.get(id)?.accountId === accountId ? endpoints.get(id) : undefined),
    update(accountId, id, change, limits) {
      const e = endpoints.get(id);
      if (e === undefined || e.accountId !== accountId) return Promise.resolve(undefined);
      if (change.subjects !== undefined && watched(accountId, id) + change.subjects.length > limits.subjects) return Promise.resolve("limit" as const);
      const disabled = change.disabled ?? e.disabled;
      const next: W = {
        ...e,
        url: change.url ?? e.url,
        events: change.events ?? e.events,
        subjects: change.subjects ?? e.subjects,
        ownSubjects: change.ownSubjects ?? e.ownSubjects,
        disabled,
        failingSinceMs: disabled ? e.failingSinceMs : null,
      };
      endpoints.set(id, next);
      if (disabled && !e.disabled) failPending(id, Date.now());
      return Promise.resolve(next);
    },
    remove(accountId, id) {
      if (endpoints.get(id)?.accountId !== accountId) return Promise.resolve(false);
      endpoints.delete(id);
      for (const [key, d] of deliveries) if (d.endpointId === id) deliveries.delete(key);
      return Promise.resolve(true);
    },
    rotate(accountId, id, secret, previousUntilMs) {
      const e = endpoints.get(id);
      if (e === undefined || e.accountId !== accountId) return Promise.resolve(undefined);
      const next = { ...e, secret, previousSecret: e.secret, previousSecretUntilMs: previousUntilMs };
      endpoints.set(id, next);
      return Promise.resolve(next);
    },
    outbox: (limit, chainIds) => Promise.resolve(outboxRows.filter((r) => chainIds === undefined || chainIds.includes(r.chainId ?? -1)).slice(0, limit)),
    publish(ms, ds, consumed) {
      for (const m of ms) if (!messages.has(m.id)) messages.set(m.id, m);
      for (const d of ds) {
        const id = `${d.messageId}.${d.endpointId}`;
        if (deliveries.has(id)) continue;
        const m = messages.get(d.messageId)!;
        deliveries.set(id, {
          id,
          eventId: d.messageId,
          type: m.type,
          attempts: 0,
          lastStatus: null,
          nextAttemptAtMs: m.createdAtMs,
          deliveredAtMs: null,
          failedAtMs: null,
          createdAtMs: m.createdAtMs,
          endpointId: d.endpointId,
          state: "pending",
          leaseHolder: null,
          leaseUntilMs: null,
        });
      }
      for (const seq of consumed) {
        const at = outboxRows.findIndex((r) => r.seq === seq);
        if (at !== -1) outboxRows.splice(at, 1);
      }
      return Promise.resolve();
    },
    targets(subjectDid) {
      const accounts = new Set(owners.get(subjectDid) ?? []);
      return Promise.resolve([...endpoints.values()]
        .filter((e) => !e.disabled && (e.subjects.includes(subjectDid) || accounts.has(e.accountId)))
        .map((e) => ({
          endpointId: e.id,
          accountId: e.accountId,
          events: e.events,
          owned: accounts.has(e.accountId),
          watched: e.subjects.includes(subjectDid) || (e.ownSubjects && accounts.has(e.accountId)),
        })));
    },
    accountEndpoints: (accountId) => Promise.resolve(ofAccount(accountId).filter((e) => !e.disabled)),
    anyEnabled: () => Promise.resolve([...endpoints.values()].some((e) => !e.disabled)),
    claim: (holder, nowMs, leaseMs, limit, perEndpoint, perAccount) =>
      Promise.resolve(claimDue({ endpoints, messages, deliveries }, { holder, nowMs, leaseMs, limit, perEndpoint, perAccount })),
    record(id, holder, outcome, nowMs, disableAfterMs) {
      const d = deliveries.get(id);
      if (d === undefined || d.leaseHolder !== holder || d.state !== "pending") return Promise.resolve();
      d.attempts++;
      d.lastStatus = outcome.status;
      d.state = outcome.state === "retry" ? "pending" : outcome.state;
      d.nextAttemptAtMs = outcome.state === "retry" ? outcome.nextAttemptAtMs : null;
      d.deliveredAtMs = outcome.state === "delivered" ? nowMs : null;
      d.failedAtMs = outcome.state === "failed" ? nowMs : null;
      d.leaseHolder = null;
      d.leaseUntilMs = null;
      const e = endpoints.get(d.endpointId);
      if (e !== undefined && !(outcome.state === "failed" && outcome.skipped === true)) {
        const failingSinceMs = outcome.state === "delivered" ? null : e.failingSinceMs ?? nowMs;
        // As the stores: disabled only by a delivery failed for good, its other pending deliveries failed with it.
        const disabling = !e.disabled && outcome.state === "failed" && failingSinceMs !== null && failingSinceMs <= nowMs - disableAfterMs;
        endpoints.set(e.id, { ...e, failingSinceMs, disabled: e.disabled || disabling });
        if (disabling) failPending(e.id, nowMs);
      }
      // An attempt recorded after its endpoint was disabled is not retried.
      if (d.state === "pending" && endpoints.get(d.endpointId)?.disabled === true) {
        d.state = "failed";
        d.failedAtMs = nowMs;
        d.nextAttemptAtMs = null;
      }
      return Promise.resolve();
    },
    deliveries(endpointId, page) {
      const rows = [...deliveries.values()].filter((d) => d.endpointId === endpointId)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : -1))
        .filter((d) => page.after === undefined || d.createdAtMs < page.after.createdAtMs || (d.createdAtMs === page.after.createdAtMs && d.id < page.after.id));
      return Promise.resolve(rows.slice(0, page.limit));
    },
    prune(beforeMs) {
      let gone = 0;
      for (const [id, d] of deliveries) {
        if (d.state !== "pending" && d.createdAtMs < beforeMs) {
          deliveries.delete(id);
          gone++;
        }
      }
      for (const [id, m] of messages) if (m.createdAtMs < beforeMs && ![...deliveries.values()].some((d) => d.eventId === id)) messages.delete(id);
      return Promise.resolve(gone);
    },
    stats(nowMs) {
      const pending = [...deliveries.values()].filter((d) => d.state === "pending");
      const oldest = pending.length === 0 ? null : Math.min(...pending.map((d) => d.createdAtMs));
      return Promise.resolve({ pending: pending.length + outboxRows.length, oldestPendingMs: oldest === null ? null : nowMs - oldest });
    },
  };
  return { ...store, endpoints, messages, deliveryRows: deliveries, outboxRows, owners };
}

/** A webhook transport that records every POST and answers from `answer` (default 200); `check` refuses `refused` hosts. */
export function fakeWebhookTransport(options: {
  answer?: (url: string, headers: Readonly<Record<string, string>>, body: string) => import("../webhooks.ts").WebhookPost;
  refused?: Readonly<Record<string, import("../webhooks.ts").WebhookUrlRefusal>>;
} = {}) {
  const posts: { url: string; headers: Readonly<Record<string, string>>; body: string }[] = [];
  const transport: import("../webhooks.ts").WebhookTransport = {
    check(url) {
      const refusal = options.refused?.[new URL(url).hostname];
      return Promise.resolve(refusal === undefined ? { ok: true } : { ok: false, reason: refusal });
    },
    post(url, headers, body) {
      posts.push({ url, headers, body });
      return Promise.resolve(options.answer?.(url, headers, body) ?? { ok: true, status: 200 });
    },
  };
  return { ...transport, posts };
}
