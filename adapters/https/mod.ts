/** did.json fetched over HTTPS from an address that passed the network policy. */
export { createHttpsDidDocumentFetcher } from "./https_did_document.ts";
export { createHttpsWebhookTransport, type HttpsWebhookTransportOptions } from "./https_webhook_transport.ts";
export { createExplorerTxList, type ExplorerTxListOptions } from "./https_explorer.ts";
export type { PinnedJsonFetcher } from "./https_did_document.ts";
export { readCapped } from "./_read_capped.ts";
