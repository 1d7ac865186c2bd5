/** Webhooks (decisions §22, issue 43): the `webhooks` section. */
import { type Static, Type } from "@sinclair/typebox";
import { ConfigError, declare, int, onOff, optionalInt, readSection, type ReadContext } from "./_declare.ts";

const RETRIES = "5,300,1800,7200,18000,36000,36000";

/** The `webhooks` section's variables. */
export const WebhooksSection = Type.Object({
  enabled: onOff("WEBHOOKS", { default: true, description: "off: no outbox is written and nothing sent" }),
  delivery: onOff("WEBHOOK_DELIVERY", { default: true, description: "off: this instance fans out and sends nothing" }),
  confirmations: optionalInt("WEBHOOK_CONFIRMATIONS", { doc: "INDEX_CONFIRMATIONS", maximum: 10_000, description: "how deep a block must be before its events" }),
  retrySeconds: declare(Type.Readonly(Type.Array(Type.Integer(), { description: "the delays before each retry" })), "WEBHOOK_RETRY_SECONDS", RETRIES, (text) => {
    const retries = text ?? RETRIES;
    const seconds = retries.split(",").map((s) => s.trim());
    if (seconds.length > 20 || seconds.some((s) => !/^[0-9]{1,6}$/.test(s))) {
      throw new ConfigError("WEBHOOK_RETRY_SECONDS", `expected up to 20 comma-separated whole numbers of seconds, got "${retries}"`);
    }
    return seconds.map(Number);
  }),
  maxInFlight: int("WEBHOOK_MAX_IN_FLIGHT", { default: 32, minimum: 1, maximum: 10_000, description: "deliveries one instance sends at once" }),
  // Two endpoints' worth at least, so that one slow endpoint never holds its whole account's share.
  maxInFlightPerAccount: int("WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT", {
    default: ({ values }) => Math.max(8, Math.floor(Number(values.maxInFlight) / 4)),
    doc: "a quarter of WEBHOOK_MAX_IN_FLIGHT, at least 8",
    minimum: 1,
    maximum: 10_000,
    description: "deliveries to one account's endpoints at once",
  }),
  pollMs: int("WEBHOOK_POLL_MS", { default: 500, minimum: 10, maximum: 60_000, description: "how often an instance claims due deliveries" }),
}, { title: "webhooks" });

/** Webhooks. */
export type WebhooksConfig = Static<typeof WebhooksSection>;

/** Reads the `webhooks` section. */
export function readWebhooks(ctx: Omit<ReadContext, "values">): WebhooksConfig {
  return readSection(WebhooksSection, ctx);
}
