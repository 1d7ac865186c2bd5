/** The "Webhooks" panel (decisions §22): the account's endpoints, an endpoint's recent deliveries, a test event. */
import { createWebhook, deleteWebhook, listWebhookDeliveries, listWebhooks, rotateWebhookSecret, sendTestWebhook, updateWebhook, type WebhookDeliveryView, type WebhookEndpointView, type WebhookEventType } from "../client/mod.ts";
import { h, byId, api, setStatus, describeError, type Warning, busy, copyButton, subjectDidOf } from "./_dom.ts";

/** The endpoint whose deliveries are shown, its rows so far and the cursor of the next page. */
let shown: { endpoint: WebhookEndpointView; items: WebhookDeliveryView[]; cursor: string | null } | undefined;
/** Bumped whenever another endpoint is shown: a test event's watch stops when it no longer matches. */
let watching = 0;

type DeliveryState = "delivered" | "failed" | "retrying" | "pending";
const DELIVERY_STATE_TEXT: Record<DeliveryState, string> = { delivered: "Delivered", failed: "Failed", retrying: "Retrying", pending: "Queued" };

function deliveryState(d: WebhookDeliveryView): DeliveryState {
  if (d.deliveredAt !== null) return "delivered";
  if (d.failedAt !== null) return "failed";
  return d.attempts > 0 ? "retrying" : "pending";
}

/** An ISO 8601 time as a person reads it, in UTC. */
const when = (iso: string | null) => (iso === null ? "—" : iso.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC"));

/** The last answer of a delivery: its status, or why there was none. */
const lastAnswer = (d: WebhookDeliveryView) => (d.lastStatus !== null ? `HTTP ${d.lastStatus}` : d.attempts === 0 ? "—" : "none (timeout or refused)");

function deliveryRow(d: WebhookDeliveryView): HTMLTableRowElement {
  const state = deliveryState(d);
  // A queued event has no time worth showing: it goes out at the next round, or once a disabled endpoint is enabled.
  const detail = state === "delivered" ? when(d.deliveredAt) : state === "failed" ? when(d.failedAt) : state === "retrying" ? `next attempt ${when(d.nextAttemptAt)}` : "";
  return h("tr", { "data-event-id": d.eventId, "data-state": state },
    h("td", { "data-label": "Event" }, h("code", {}, d.eventId)),
    h("td", { "data-label": "Type" }, h("code", {}, d.type)),
    h("td", { "data-label": "Attempts", class: "number" }, String(d.attempts)),
    h("td", { "data-label": "Last answer" }, lastAnswer(d)),
    h("td", { "data-label": "Outcome" }, h("span", {}, h("span", { class: `badge ${state}` }, DELIVERY_STATE_TEXT[state]), detail === "" ? null : h("span", { class: "when" }, detail))));
}

function renderDeliveries(): void {
  const target = byId("webhook-deliveries");
  if (shown === undefined) {
    target.replaceChildren(h("p", { class: "help" }, "Choose Deliveries on an endpoint, or send it a test event."));
    return;
  }
  const { endpoint, items, cursor } = shown;
  const refresh = h("button", { type: "button", class: "secondary", id: "webhook-deliveries-refresh" }, "Refresh");
  refresh.addEventListener("click", () => void busy(null, "webhook-status", "Reading the deliveries…", async () => {
    await showDeliveries(endpoint);
    return `Deliveries to ${endpoint.url} read`;
  }));
  const more = cursor === null ? null : h("button", { type: "button", class: "secondary", id: "webhook-deliveries-more" }, "Show more");
  more?.addEventListener("click", () => void busy(null, "webhook-status", "Reading more deliveries…", async () => {
    await showDeliveries(endpoint, true);
  }));
  target.replaceChildren(
    h("div", { class: "buttons" }, h("p", { class: "help" }, "To ", h("code", { id: "webhook-deliveries-url" }, endpoint.url), ", newest first."), refresh),
    items.length === 0
      ? h("p", { id: "webhook-deliveries-none" }, "No deliveries yet.")
      : h("table", { class: "deliveries", id: "webhook-delivery-table" },
        h("thead", {}, h("tr", {}, ["Event", "Type", "Attempts", "Last answer", "Outcome"].map((name) => h("th", { scope: "col" }, name)))),
        h("tbody", {}, items.map(deliveryRow))),
    ...(more === null ? [] : [more]),
  );
}

/** Reads an endpoint's deliveries (the first page, or the next with `more`) and shows them. */
async function showDeliveries(endpoint: WebhookEndpointView, more = false): Promise<WebhookDeliveryView[]> {
  if (shown?.endpoint.id !== endpoint.id) watching++;
  const page = await listWebhookDeliveries(endpoint.id, { limit: 10, cursor: more ? shown?.cursor ?? undefined : undefined }, api);
  const items = more && shown?.endpoint.id === endpoint.id ? [...shown.items, ...page.items] : page.items;
  shown = { endpoint, items, cursor: page.nextCursor };
  renderDeliveries();
  return page.items;
}

/**
 * Re-reads the deliveries until the test event's first attempt is known (delivered, or an answer that will be
 * retried) and says how it went. Stops when another endpoint is shown, or after a few minutes.
 */
async function watchTestEvent(endpoint: WebhookEndpointView, eventId: string): Promise<string | Warning | void> {
  const mine = watching;
  const started = Date.now();
  for (let wait = 250; Date.now() - started < 300_000; wait = Math.min(wait * 2, 5_000)) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (mine !== watching) return;
    const items = await showDeliveries(endpoint).catch(() => undefined);
    if (mine !== watching) return;
    const delivery = items?.find((d) => d.eventId === eventId);
    if (delivery === undefined || deliveryState(delivery) === "pending") continue;
    const state = deliveryState(delivery);
    if (state === "delivered") return `Test event delivered to ${endpoint.url} (${lastAnswer(delivery)})`;
    return { warn: `Test event not delivered to ${endpoint.url}: last answer ${lastAnswer(delivery)}; ${state === "failed" ? "no more attempts" : `next attempt ${when(delivery.nextAttemptAt)}`}` };
  }
  return { warn: "The test event is still queued; Refresh to see its delivery" };
}

/**
 * The card that shows a secret once, with the reason it cannot be shown again: placed after the status line of the
 * action that made it (the form's, or the endpoints'), scrolled to and focused, so it is not missed.
 */
function showSecret(title: string, secret: string, note: string, after: string): void {
  const card = byId("webhook-secret");
  byId(after).after(card);
  const done = h("button", { type: "button", class: "secondary", id: "webhook-secret-done" }, "I have copied it");
  done.addEventListener("click", forgetWebhookSecret);
  card.replaceChildren(
    h("h4", {}, title),
    h("p", { class: "box warn", id: "webhook-secret-note" }, h("strong", {}, "Shown once: copy it now. "), note),
    h("div", { class: "buttons" }, h("code", { id: "webhook-new-secret", class: "secret-value" }, secret), copyButton(secret, "webhook secret")),
    h("p", { class: "help" }, "Receivers verify each delivery's webhook-signature with it (any Standard Webhooks library does)."),
    done,
  );
  card.hidden = false;
  card.scrollIntoView({ block: "nearest" });
  card.focus({ preventScroll: true });
}

function endpointCard(endpoint: WebhookEndpointView): HTMLElement {
  const action = (label: string, kind: string, aria: string, progress: string, work: () => Promise<string | Warning | void>) => {
    const button = h("button", { type: "button", class: `secondary webhook-${kind}`, "aria-label": `${aria} ${endpoint.url}` }, label);
    button.addEventListener("click", () => void busy(null, "webhook-status", progress, work));
    return button;
  };
  const test = action("Send test event", "test", "Send a test event to", "Queuing a test event…", async () => {
    const queued = await sendTestWebhook(endpoint.id, api);
    await showDeliveries(endpoint);
    setStatus("webhook-status", "progress", `Sending test event ${queued.eventId} to ${endpoint.url}…`);
    return await watchTestEvent(endpoint, queued.eventId);
  });
  // The service refuses a disabled endpoint's test (409 WEBHOOK_DISABLED): its tests would wait and go out together.
  if (endpoint.disabled) {
    (test as HTMLButtonElement).disabled = true;
    test.title = "Enable the endpoint to send a test event";
  }
  const deliveries = action("Deliveries", "deliveries", "Show the deliveries to", "Reading the deliveries…", async () => {
    await showDeliveries(endpoint);
    return `Deliveries to ${endpoint.url} read`;
  });
  const toggle = action(endpoint.disabled ? "Enable" : "Disable", "toggle", endpoint.disabled ? "Enable" : "Disable", endpoint.disabled ? "Enabling…" : "Disabling…", async () => {
    const updated = await updateWebhook(endpoint.id, { disabled: !endpoint.disabled }, api);
    await refreshWebhooks();
    return `${updated.disabled ? "Disabled" : "Enabled"} ${updated.url}`;
  });
  const rotate = action("Rotate secret", "rotate", "Rotate the secret of", "Rotating the secret…", async () => {
    const { secret } = await rotateWebhookSecret(endpoint.id, api);
    showSecret(`New secret of ${endpoint.url}`, secret, "The old secret keeps signing beside it for 24 hours (two signatures on each delivery), so switch your receiver within a day.", "webhook-status");
    return `Secret of ${endpoint.url} rotated`;
  });
  const remove = action("Delete", "delete", "Delete", "Deleting the endpoint…", async () => {
    await deleteWebhook(endpoint.id, api);
    if (shown?.endpoint.id === endpoint.id) {
      shown = undefined;
      watching++;
      renderDeliveries();
    }
    byId("webhook-secret").hidden = true;
    await refreshWebhooks();
    return `Deleted ${endpoint.url}; nothing more is sent to it`;
  });
  return h("article", { class: "card webhook", "data-id": endpoint.id, "data-disabled": String(endpoint.disabled) },
    h("h4", {}, h("code", {}, endpoint.url), " ", h("span", { class: `badge ${endpoint.disabled ? "disabled" : "enabled"}` }, endpoint.disabled ? "Disabled" : "Enabled")),
    endpoint.disabled
      ? h("p", { class: "box warn" }, "Nothing is sent to this endpoint while it is disabled (the service disables an endpoint whose deliveries all failed for 5 days). Enable it to send again.")
      : null,
    h("dl", {},
      h("dt", {}, "Events"), h("dd", { class: "webhook-events" }, endpoint.events.flatMap((e, i) => [i > 0 ? ", " : "", h("code", {}, e)])),
      h("dt", {}, "Subjects"), h("dd", { class: "webhook-subjects" }, endpoint.subjects.length === 0
        ? "none listed"
        : h("ul", {}, endpoint.subjects.map((s) => h("li", {}, h("code", {}, s))))),
      h("dt", {}, "Own subjects"), h("dd", { class: "webhook-own" }, endpoint.ownSubjects ? "yes: the subjects this account has proven" : "no"),
      h("dt", {}, "Created"), h("dd", {}, when(endpoint.createdAt)),
      h("dt", {}, "Id"), h("dd", {}, h("code", {}, endpoint.id))),
    h("div", { class: "buttons" }, test, deliveries, toggle, rotate, remove));
}

export async function refreshWebhooks(): Promise<void> {
  let endpoints: WebhookEndpointView[];
  try {
    endpoints = await listWebhooks(api);
  } catch (error) {
    byId("webhook-list").replaceChildren(h("p", { class: "help", id: "webhooks-none" }, `Webhooks are not available: ${describeError(error)}`));
    byId("webhooks-signed-out").hidden = true;
    byId("webhooks-panel").hidden = false;
    return;
  }
  byId("webhooks-signed-out").hidden = true;
  byId("webhooks-panel").hidden = false;
  byId("webhook-list").replaceChildren(endpoints.length === 0
    ? h("p", { class: "help", id: "webhooks-none" }, "No endpoints yet: add one below.")
    : h("div", { id: "webhooks-list" }, endpoints.map(endpointCard)));
  // The endpoint shown keeps its deliveries, with its card's current state.
  const current = shown === undefined ? undefined : endpoints.find((e) => e.id === shown!.endpoint.id);
  if (shown !== undefined && current !== undefined) shown.endpoint = current;
}

/** Empties and hides the webhook secret card (a secret is shown once, to its own account: decisions §22). */
export function forgetWebhookSecret(): void {
  const card = byId("webhook-secret");
  card.hidden = true;
  card.replaceChildren();
}

/**
 * Forgets the account the panel showed (signed out, or another account signed in on the page): its secret, its
 * endpoints, the deliveries shown (a test event's watch stops), the status lines and the form, and hides the panel.
 */
export function forgetWebhooks(): void {
  forgetWebhookSecret();
  shown = undefined;
  watching++;
  renderDeliveries();
  byId("webhook-list").replaceChildren();
  setStatus("webhook-status", "", "");
  setStatus("webhook-form-status", "", "");
  byId<HTMLFormElement>("webhook-form").reset();
  byId("webhooks-panel").hidden = true;
  byId("webhooks-signed-out").hidden = false;
}

/** A DID or a domain (made a did:web) as typed; anything else goes as typed, for the service to refuse by name. */
const watchedSubject = (input: string) => (input.startsWith("did:") || /^[A-Za-z0-9.-]+$/.test(input) ? subjectDidOf(input) : input);

export function setUpWebhooks(): void {
  const form = byId<HTMLFormElement>("webhook-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(form, "webhook-form-status", "Checking the URL and adding the endpoint…", async () => {
      const events = Array.from(form.querySelectorAll<HTMLInputElement>("input[name=event]:checked"), (box) => box.value as WebhookEventType);
      if (events.length === 0) return { warn: "Tick at least one event" };
      const subjects = byId<HTMLTextAreaElement>("webhook-subjects").value.split(/[\n,]+/).map((s) => s.trim()).filter((s) => s !== "").map(watchedSubject);
      const created = await createWebhook({
        url: byId<HTMLInputElement>("webhook-url").value.trim(),
        events,
        subjects,
        ownSubjects: byId<HTMLInputElement>("webhook-own").checked,
      }, api);
      showSecret(`Secret of ${created.url}`, created.secret, "The service never shows it again; if it is lost, rotate the secret.", "webhook-form-status");
      form.reset();
      await refreshWebhooks();
      return `Added ${created.url}`;
    });
  });
}
