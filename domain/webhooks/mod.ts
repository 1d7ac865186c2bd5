/** Signed webhooks (decisions §22): endpoints of accounts, the events of the index and the relays, and their delivery. */
export {
  attemptOutcome,
  createWebhookDelivery,
  createWebhookFanOut,
  DEFAULT_RETRY_SECONDS,
  DISABLE_AFTER_MS,
  liveSecrets,
  PREVIOUS_SECRET_MS,
  type WebhookDelivery,
} from "./delivery.ts";
export { createWebhookEndpoints, type DeliveryView, type EndpointView, endpointView, readWebhookUrl, WEBHOOK_LIMITS, WEBHOOK_TESTS_PER_MINUTE, type WebhookEndpoints } from "./endpoints.ts";
export { attestationEvent, derivedEventId, outboxChain, publicationsOf, randomEventId, WEBHOOK_EVENT_TYPES, webhookMessage } from "./events.ts";
export { createSubmissionEvents, settlementConcerns } from "./submission_events.ts";
export { base64Decode, base64Encode, hmacSha256, newWebhookSecret, secretKey, signMessage, webhookHeaders } from "./signature.ts";
