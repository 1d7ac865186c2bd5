/**
 * The signed-in account's webhook endpoints (decisions §22), browser-ready: create (the secret shown once), list,
 * change, delete, rotate the secret, send a test event, and list an endpoint's deliveries. A non-2xx answer throws an
 * {@link AtsClientError} with the service's `code` (`INVALID_INPUT` naming the field, `WEBHOOK_NOT_FOUND`,
 * `WEBHOOK_LIMIT_EXCEEDED`, …).
 */
import type { DeliveryView, EndpointView } from "../domain/webhooks/mod.ts";
import type { WebhookEventType } from "../ports/webhooks.ts";
import type { ServiceOptions } from "./api.ts";
import { DEFAULT_BASE_URL, requestJson } from "./http.ts";

export type { WebhookEventType } from "../ports/webhooks.ts";
export { WEBHOOK_EVENT_TYPES } from "../domain/webhooks/mod.ts";

/** An endpoint as the service lists it (never its secret). */
export type WebhookEndpointView = EndpointView;
/** A new endpoint: its secret (`whsec_…`) is in this answer only. */
export type CreatedWebhookEndpoint = EndpointView & { readonly secret: string };
/** One event sent (or being sent) to an endpoint, with its attempts. */
export type WebhookDeliveryView = DeliveryView;

/** What {@link createWebhook} sends. */
export type WebhookInput = {
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  /** Subject DIDs watched (did:web, did:pkh, did:artifact…). */
  readonly subjects?: readonly string[] | undefined;
  /** Also the account's proven subjects (the service's default: true). */
  readonly ownSubjects?: boolean | undefined;
};

/** What {@link updateWebhook} may change; `disabled: false` re-enables an endpoint the service disabled. */
export type WebhookPatch = Partial<WebhookInput> & { readonly disabled?: boolean | undefined };

async function call<T>(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, body: unknown, options: ServiceOptions): Promise<T> {
  const headers: Record<string, string> = {};
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  if (options.origin !== undefined) headers.origin = options.origin;
  return (await requestJson<T>(path, { baseUrl: options.baseUrl ?? DEFAULT_BASE_URL, fetch: options.fetch, method, body, headers, credentials: "include" })).body;
}

const at = (id: string, rest = "") => `/api/private/webhooks/${encodeURIComponent(id)}${rest}`;

/** Registers an endpoint; the answer carries its secret, the one time the service shows it. */
export function createWebhook(input: WebhookInput, options: ServiceOptions = {}): Promise<CreatedWebhookEndpoint> {
  return call<CreatedWebhookEndpoint>("POST", "/api/private/webhooks", input, options);
}

/** The account's endpoints. */
export async function listWebhooks(options: ServiceOptions = {}): Promise<WebhookEndpointView[]> {
  return (await call<{ webhooks: WebhookEndpointView[] }>("GET", "/api/private/webhooks", undefined, options)).webhooks;
}

/** Changes an endpoint (only the fields given). */
export function updateWebhook(id: string, patch: WebhookPatch, options: ServiceOptions = {}): Promise<WebhookEndpointView> {
  return call<WebhookEndpointView>("PATCH", at(id), patch, options);
}

/** Deletes an endpoint: nothing more is sent to it. */
export async function deleteWebhook(id: string, options: ServiceOptions = {}): Promise<void> {
  await call("DELETE", at(id), undefined, options);
}

/** A new secret, shown this once; the old one keeps signing beside it for 24 hours. */
export function rotateWebhookSecret(id: string, options: ServiceOptions = {}): Promise<{ secret: string }> {
  return call<{ secret: string }>("POST", at(id, "/rotate-secret"), {}, options);
}

/** Queues a `webhook.test` event for the endpoint; its delivery then appears in {@link listWebhookDeliveries}. */
export function sendTestWebhook(id: string, options: ServiceOptions = {}): Promise<{ eventId: string; type: "webhook.test" }> {
  return call<{ eventId: string; type: "webhook.test" }>("POST", at(id, "/test"), {}, options);
}

/** The endpoint's deliveries, newest first; `nextCursor` (null on the last page) asks for the next page. */
export function listWebhookDeliveries(
  id: string,
  page: { readonly limit?: number | undefined; readonly cursor?: string | undefined } = {},
  options: ServiceOptions = {},
): Promise<{ items: WebhookDeliveryView[]; nextCursor: string | null }> {
  const params = new URLSearchParams();
  if (page.limit !== undefined) params.set("limit", String(page.limit));
  if (page.cursor !== undefined) params.set("cursor", page.cursor);
  const search = params.toString();
  return call<{ items: WebhookDeliveryView[]; nextCursor: string | null }>("GET", at(id, `/deliveries${search === "" ? "" : `?${search}`}`), undefined, options);
}
