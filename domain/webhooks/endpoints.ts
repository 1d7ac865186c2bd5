/**
 * An account's webhook endpoints (decisions §22): create (the secret shown once), list, read, change, delete, rotate
 * the secret, send a test event, and list deliveries. Bad input is `INVALID_INPUT` naming the field; another account's
 * endpoint is `WEBHOOK_NOT_FOUND`; the limits are `WEBHOOK_LIMIT_EXCEEDED`.
 */
import type { Account } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { Random } from "../../ports/random.ts";
import type { DeliveryRecord, WebhookEndpoint, WebhookEventType, WebhookLimits, WebhookStore, WebhookTransport, WebhookUrlRefusal } from "../../ports/webhooks.ts";
import { base64UrlDecode, base64UrlEncode, normalizeSubjectDid } from "../did/mod.ts";
import { classifyAddress, isPublicAddress } from "../discovery/mod.ts";
import type { RateLimit } from "../rate_limit.ts";
import { fail, ok, type Result } from "../result.ts";
import { PREVIOUS_SECRET_MS } from "./delivery.ts";
import { randomEventId, WEBHOOK_EVENT_TYPES, webhookMessage } from "./events.ts";
import { newWebhookSecret } from "./signature.ts";

/** The limits of decisions §22. */
export const WEBHOOK_LIMITS: WebhookLimits = { endpoints: 10, subjects: 1_000 };
const MAX_URL_LENGTH = 2_048;
const MAX_DID_LENGTH = 2_048;

/** An endpoint as the account sees it: never its secret. */
export type EndpointView = {
  readonly id: string;
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  readonly subjects: readonly string[];
  readonly ownSubjects: boolean;
  readonly createdAt: string;
  readonly disabled: boolean;
};

/** A delivery as the account sees it. */
export type DeliveryView = {
  readonly eventId: string;
  readonly type: WebhookEventType;
  readonly attempts: number;
  readonly lastStatus: number | null;
  readonly nextAttemptAt: string | null;
  readonly deliveredAt: string | null;
  readonly failedAt: string | null;
};

type Code = "INVALID_INPUT" | "WEBHOOK_NOT_FOUND" | "WEBHOOK_LIMIT_EXCEEDED" | "WEBHOOK_DISABLED" | "RATE_LIMITED" | "NETWORK_ERROR";

/** `webhook.test` events one endpoint may be sent a minute (a burst of as many): each is a POST and a stored delivery. */
export const WEBHOOK_TESTS_PER_MINUTE = 20;

/** What the use cases need. */
export type WebhookEndpointsDeps = {
  readonly store: WebhookStore;
  readonly transport: Pick<WebhookTransport, "check">;
  readonly clock: Clock;
  readonly random: Random;
  /** `ALLOW_PRIVATE_NETWORK`: `http://` on loopback and private addresses allowed (development and tests). */
  readonly allowPrivateNetwork: boolean;
  readonly limits?: WebhookLimits | undefined;
  /** Test events per account ({@link WEBHOOK_TESTS_PER_MINUTE}, counted for the deployment); absent: unlimited. */
  readonly testRate?: RateLimit | undefined;
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The view of an endpoint. */
export function endpointView(e: WebhookEndpoint): EndpointView {
  return { id: e.id, url: e.url, events: e.events, subjects: e.subjects, ownSubjects: e.ownSubjects, createdAt: new Date(e.createdAtMs).toISOString(), disabled: e.disabled };
}

function deliveryView(d: DeliveryRecord): DeliveryView {
  return {
    eventId: d.eventId,
    type: d.type,
    attempts: d.attempts,
    lastStatus: d.lastStatus,
    nextAttemptAt: iso(d.nextAttemptAtMs),
    deliveredAt: iso(d.deliveredAtMs),
    failedAt: iso(d.failedAtMs),
  };
}

const LOOPBACK_NAMES = new Set(["localhost", "localhost."]);

/**
 * Checks a webhook URL's form (decisions §22): `https://`, or `http://` on a loopback host only with
 * `ALLOW_PRIVATE_NETWORK`; no credentials; an IP literal host must be public unless private networks are allowed.
 */
export function readWebhookUrl(value: unknown, allowPrivateNetwork: boolean): Result<string, "INVALID_INPUT"> {
  if (typeof value !== "string" || value.length === 0) return fail("INVALID_INPUT", "url is required");
  if (value.length > MAX_URL_LENGTH) return fail("INVALID_INPUT", `url is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail("INVALID_INPUT", "url is not an absolute URL");
  }
  if (url.username !== "" || url.password !== "") return fail("INVALID_INPUT", "url must not carry credentials");
  if (url.hash !== "") return fail("INVALID_INPUT", "url must not carry a fragment");
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const literal = classifyAddress(host);
  const loopback = LOOPBACK_NAMES.has(host) || (literal !== undefined && (literal.address.startsWith("127.") || literal.address === "::1"));
  if (url.protocol === "http:") {
    if (!allowPrivateNetwork || !loopback) return fail("INVALID_INPUT", "url must be https:// (http:// only on loopback with ALLOW_PRIVATE_NETWORK)");
  } else if (url.protocol !== "https:") {
    return fail("INVALID_INPUT", "url must be https://");
  }
  if (!allowPrivateNetwork && (LOOPBACK_NAMES.has(host) || (literal !== undefined && !isPublicAddress(literal.address)))) {
    return fail("INVALID_INPUT", "url names an address the service does not send to (private, loopback, link-local or metadata)");
  }
  return ok(url.toString());
}

const REFUSALS: Record<WebhookUrlRefusal, string> = {
  "invalid-url": "url is not a URL the service can send to",
  "dns-failure": "url's host could not be looked up now; try again",
  "not-found": "url's host does not resolve",
  "blocked-address": "url's host resolves to an address the service does not send to (private, loopback, link-local or metadata)",
};

function readEvents(value: unknown): Result<WebhookEventType[], "INVALID_INPUT"> {
  if (!Array.isArray(value) || value.length === 0) return fail("INVALID_INPUT", "events must be a non-empty array of event types");
  const out: WebhookEventType[] = [];
  for (const [i, e] of value.entries()) {
    if (typeof e !== "string" || !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e)) {
      return fail("INVALID_INPUT", `events[${i}] must be one of ${WEBHOOK_EVENT_TYPES.join(", ")}`);
    }
    if (!out.includes(e as WebhookEventType)) out.push(e as WebhookEventType);
  }
  return ok(out);
}

function readSubjects(value: unknown, limit: number): Result<string[], "INVALID_INPUT" | "WEBHOOK_LIMIT_EXCEEDED"> {
  if (!Array.isArray(value)) return fail("INVALID_INPUT", "subjects must be an array of DIDs");
  if (value.length > limit) return fail("WEBHOOK_LIMIT_EXCEEDED", `At most ${limit} watched subjects per account`);
  const out: string[] = [];
  for (const [i, s] of value.entries()) {
    // The one subject rule (issue 43): no whitespace or control characters anywhere, and a did:web names a domain
    // (no IP host): a subject no attestation can name would never be told. A DID only: no bare domain.
    const did = typeof s === "string" && s.startsWith("did:") && s.length <= MAX_DID_LENGTH ? normalizeSubjectDid(s) : undefined;
    if (did === undefined || !did.ok) return fail("INVALID_INPUT", `subjects[${i}] must be a DID`);
    if (!out.includes(did.value)) out.push(did.value);
  }
  return ok(out);
}

/** The account's endpoint use cases. */
export function createWebhookEndpoints(deps: WebhookEndpointsDeps) {
  const limits = deps.limits ?? WEBHOOK_LIMITS;
  const notFound = () => fail("WEBHOOK_NOT_FOUND", "Webhook endpoint not found");
  const limitExceeded = () =>
    fail("WEBHOOK_LIMIT_EXCEEDED", `At most ${limits.endpoints} endpoints and ${limits.subjects} watched subjects per account`);

  /**
   * The URL checked for form, then resolved and its addresses checked. A lookup that could not be made now (SERVFAIL,
   * a timeout) is 502 NETWORK_ERROR, not 400 (found by review): the host may well resolve, and a 400 was kept under the
   * request's Idempotency-Key for 24 hours after DNS answered again. A host that does not resolve is 400 (decisions §22).
   */
  async function checkUrl(value: unknown): Promise<Result<string, "INVALID_INPUT" | "NETWORK_ERROR">> {
    const url = readWebhookUrl(value, deps.allowPrivateNetwork);
    if (!url.ok) return url;
    const checked = await deps.transport.check(url.value);
    if (checked.ok) return url;
    return checked.reason === "dns-failure" ? fail("NETWORK_ERROR", "url's host could not be looked up now; try again") : fail("INVALID_INPUT", REFUSALS[checked.reason]);
  }

  /** Every field of a body but `url`, checked; `partial` for a change. */
  function readFields(body: Record<string, unknown>, partial: boolean): Result<{ events?: WebhookEventType[]; subjects?: string[]; ownSubjects?: boolean; disabled?: boolean }, Code> {
    const out: { events?: WebhookEventType[]; subjects?: string[]; ownSubjects?: boolean; disabled?: boolean } = {};
    if (body.events !== undefined || !partial) {
      const events = readEvents(body.events);
      if (!events.ok) return events;
      out.events = events.value;
    }
    if (body.subjects !== undefined) {
      const subjects = readSubjects(body.subjects, limits.subjects);
      if (!subjects.ok) return subjects;
      out.subjects = subjects.value;
    }
    if (body.ownSubjects !== undefined) {
      if (typeof body.ownSubjects !== "boolean") return fail("INVALID_INPUT", "ownSubjects must be a boolean");
      out.ownSubjects = body.ownSubjects;
    }
    if (partial && body.disabled !== undefined) {
      if (typeof body.disabled !== "boolean") return fail("INVALID_INPUT", "disabled must be a boolean");
      out.disabled = body.disabled;
    }
    const known = partial ? ["url", "events", "subjects", "ownSubjects", "disabled"] : ["url", "events", "subjects", "ownSubjects"];
    const unknown = Object.keys(body).find((k) => !known.includes(k));
    if (unknown !== undefined) return fail("INVALID_INPUT", `${unknown} is not a field of a webhook endpoint`);
    return ok(out);
  }

  return {
    /** Registers an endpoint; the answer carries the secret, the one time it is shown. */
    async create(account: Account, body: Record<string, unknown>): Promise<Result<EndpointView & { readonly secret: string }, Code>> {
      const fields = readFields(body, false);
      if (!fields.ok) return fields;
      // An account at its bound is told so before its URL is resolved (the store checks again in its transaction).
      if ((await deps.store.list(account.id)).length >= limits.endpoints) return limitExceeded();
      const url = await checkUrl(body.url);
      if (!url.ok) return url;
      const endpoint: WebhookEndpoint = {
        id: `wh_${base64UrlEncode(deps.random.bytes(12))}`,
        accountId: account.id,
        url: url.value,
        events: fields.value.events!,
        subjects: fields.value.subjects ?? [],
        ownSubjects: fields.value.ownSubjects ?? true,
        secret: newWebhookSecret(deps.random),
        previousSecret: null,
        previousSecretUntilMs: null,
        disabled: false,
        failingSinceMs: null,
        createdAtMs: deps.clock.nowMs(),
      };
      if ((await deps.store.create(endpoint, limits)) === "limit") return limitExceeded();
      return ok({ ...endpointView(endpoint), secret: endpoint.secret });
    },
    async list(account: Account): Promise<EndpointView[]> {
      return (await deps.store.list(account.id)).map(endpointView);
    },
    async get(account: Account, id: string): Promise<Result<EndpointView, Code>> {
      const found = await deps.store.get(account.id, id);
      return found === undefined ? notFound() : ok(endpointView(found));
    },
    /** Changes url, events, subjects, ownSubjects; `disabled: false` re-enables an endpoint the service disabled. */
    async update(account: Account, id: string, body: Record<string, unknown>): Promise<Result<EndpointView, Code>> {
      const fields = readFields(body, true);
      if (!fields.ok) return fields;
      if ((await deps.store.get(account.id, id)) === undefined) return notFound();
      let url: string | undefined;
      if (body.url !== undefined) {
        const checked = await checkUrl(body.url);
        if (!checked.ok) return checked;
        url = checked.value;
      }
      const updated = await deps.store.update(account.id, id, { ...fields.value, url }, limits);
      if (updated === "limit") return limitExceeded();
      return updated === undefined ? notFound() : ok(endpointView(updated));
    },
    async remove(account: Account, id: string): Promise<Result<{ readonly success: true; readonly id: string }, Code>> {
      return (await deps.store.remove(account.id, id)) ? ok({ success: true, id }) : notFound();
    },
    /** A new secret; the old one keeps signing (beside it) for 24 hours. */
    async rotate(account: Account, id: string): Promise<Result<{ readonly secret: string }, Code>> {
      const secret = newWebhookSecret(deps.random);
      const rotated = await deps.store.rotate(account.id, id, secret, deps.clock.nowMs() + PREVIOUS_SECRET_MS);
      return rotated === undefined ? notFound() : ok({ secret });
    },
    /**
     * Queues a `webhook.test` event for this endpoint (sent even if it did not subscribe to the type) to its URL as it
     * is now: sent only while the URL stays the same. A disabled endpoint is 409 `WEBHOOK_DISABLED`: its tests would
     * wait, and go out together once it is enabled.
     */
    async test(account: Account, id: string): Promise<Result<{ readonly eventId: string; readonly type: "webhook.test" }, Code> & { readonly retryAfterSeconds?: number }> {
      const found = await deps.store.get(account.id, id);
      if (found === undefined) return notFound();
      if (found.disabled) return fail("WEBHOOK_DISABLED", "The endpoint is disabled: enable it ({disabled: false}), then send a test event");
      // Per account: per endpoint id, a deleted and recreated endpoint had a fresh budget; per receiving host, another
      // port or a trailing dot was another host, and a disabled endpoint pointed at made-up hosts queued without end.
      const turn = await deps.testRate?.take(account.id);
      if (turn !== undefined && !turn.allowed) {
        return { ...fail("RATE_LIMITED", `At most ${WEBHOOK_TESTS_PER_MINUTE} test events a minute per account`), retryAfterSeconds: turn.retryAfterSeconds };
      }
      const nowMs = deps.clock.nowMs();
      const message = webhookMessage(randomEventId(deps.random), "webhook.test", nowMs, { endpointId: found.id, url: found.url });
      await deps.store.publish([message], [{ messageId: message.id, endpointId: found.id }], []);
      return ok({ eventId: message.id, type: "webhook.test" });
    },
    /** The endpoint's deliveries, newest first, in pages. */
    async deliveries(account: Account, id: string, query: { readonly limit?: string | undefined; readonly cursor?: string | undefined }): Promise<Result<{ readonly items: DeliveryView[]; readonly nextCursor: string | null }, Code>> {
      const limit = query.limit === undefined ? 25 : /^[0-9]{1,3}$/.test(query.limit) ? Number(query.limit) : 0;
      if (limit < 1 || limit > 100) return fail("INVALID_INPUT", "limit must be a whole number from 1 to 100");
      let after: { createdAtMs: number; id: string } | undefined;
      if (query.cursor !== undefined) {
        const bytes = base64UrlDecode(query.cursor);
        const match = bytes === undefined ? null : /^([0-9]{1,16}):([\x21-\x7e]{1,100})$/.exec(new TextDecoder().decode(bytes));
        if (match === null) return fail("INVALID_INPUT", "cursor is not a cursor of this list");
        after = { createdAtMs: Number(match[1]), id: match[2]! };
      }
      if ((await deps.store.get(account.id, id)) === undefined) return notFound();
      const rows = await deps.store.deliveries(id, { limit: limit + 1, after });
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const nextCursor = rows.length > limit && last !== undefined ? base64UrlEncode(new TextEncoder().encode(`${last.createdAtMs}:${last.id}`)) : null;
      return ok({ items: page.map(deliveryView), nextCursor });
    },
  };
}

/** The endpoint use cases. */
export type WebhookEndpoints = ReturnType<typeof createWebhookEndpoints>;
