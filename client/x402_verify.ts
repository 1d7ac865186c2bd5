/** Offers and receipts verified: their signatures (JWS keys from did.json over plain `fetch`) and terms. */
import { createWebCryptoJwsVerifier } from "./jws_verifier.ts";
import type { Result } from "../domain/result.ts";
import {
  type OfferPayload,
  RECEIPT_AFTER_OFFER_SLACK_SECONDS,
  type ReceiptPayload,
  type VerifiedOffer,
  type VerifiedReceipt,
  verifySignedOffer,
  verifySignedReceipt,
  type X402VerifyError,
} from "../domain/payments/mod.ts";
import type { DidDocumentFetch, DidDocumentFetcher } from "../ports/discovery.ts";
import type { JwsVerifier } from "../ports/jws_verifier.ts";
import type { FetchLike } from "./trust_anchors.ts";

/** Options of the verify helpers. */
export type X402VerifyClientOptions = {
  /** Resolves did:web kids; default plain HTTPS `fetch` of the did.json. */
  readonly didDocuments?: DidDocumentFetcher | undefined;
  readonly jws?: JwsVerifier | undefined;
  /** Unix seconds; default now. */
  readonly nowSeconds?: number | undefined;
  /**
   * Receipts: refuse older ones. Default none: a receipt stays proof of its purchase (a review proof has no age limit);
   * freshness after a payment is {@link receiptMatchesOffer}'s check (one hour by default).
   */
  readonly maxAgeSeconds?: number | undefined;
  readonly fetch?: FetchLike | undefined;
};

const verifyDeps = (options: X402VerifyClientOptions) => ({
  jws: options.jws ?? createWebCryptoJwsVerifier(),
  didDocuments: options.didDocuments ?? createFetchDidDocumentFetcher({ fetch: options.fetch }),
});
const nowOf = (options: X402VerifyClientOptions) => options.nowSeconds ?? Math.floor(Date.now() / 1000);

/** Verifies an offer's signature and terms; who signed it comes back as a controller DID. */
export function verifyOffer(offer: unknown, options: X402VerifyClientOptions = {}): Promise<Result<VerifiedOffer, X402VerifyError>> {
  return verifySignedOffer(offer, verifyDeps(options), { nowSeconds: nowOf(options) });
}

/** Verifies a receipt's signature and payload. */
export function verifyReceipt(receipt: unknown, options: X402VerifyClientOptions = {}): Promise<Result<VerifiedReceipt, X402VerifyError>> {
  return verifySignedReceipt(receipt, verifyDeps(options), { nowSeconds: nowOf(options), maxAgeSeconds: options.maxAgeSeconds });
}

/** Options of {@link receiptMatchesOffer}. */
export type ReceiptMatchOptions = {
  /**
   * A receipt issued this many seconds ago or earlier does not match: default {@link DEFAULT_RECEIPT_MAX_AGE_SECONDS}
   * (one hour, as the official `verifyReceiptMatchesOffer`); `Infinity` for no limit.
   */
  readonly maxAgeSeconds?: number | undefined;
  /** Unix seconds; default now. */
  readonly nowSeconds?: number | undefined;
};

/** How old a receipt may be and still match a current offer (x402_offer_receipt.md §4.3: the client helper's one hour). */
export const DEFAULT_RECEIPT_MAX_AGE_SECONDS = 3600;

/**
 * Tells whether a receipt answers an offer, as a client checks it right after paying: same resourceUrl and network,
 * the payer one of ours, the receipt fresh (issued less than `maxAgeSeconds` ago, default one hour; before, a receipt
 * of any age matched, so an old one for the same resource passed for this payment) and not issued after the offer
 * expired (`validUntil`, with the {@link RECEIPT_AFTER_OFFER_SLACK_SECONDS} that `receiptContradictsOffer` allows).
 * `options` may be the maximum age alone, as the official helper's fourth argument.
 */
export function receiptMatchesOffer(
  receipt: ReceiptPayload,
  offer: OfferPayload,
  payerAddresses: readonly string[],
  options: number | ReceiptMatchOptions = {},
): boolean {
  const { maxAgeSeconds = DEFAULT_RECEIPT_MAX_AGE_SECONDS, nowSeconds = Math.floor(Date.now() / 1000) } = typeof options === "number"
    ? { maxAgeSeconds: options }
    : options;
  const fresh = nowSeconds - receipt.issuedAt < maxAgeSeconds;
  // validUntil 0 (or left out of a payload read elsewhere) is no expiry (x402_offer_receipt.md §3.4).
  const withinOffer = typeof offer.validUntil !== "number" || offer.validUntil === 0 || receipt.issuedAt <= offer.validUntil + RECEIPT_AFTER_OFFER_SLACK_SECONDS;
  return receipt.resourceUrl === offer.resourceUrl && receipt.network === offer.network &&
    payerAddresses.some((a) => a.toLowerCase() === receipt.payer.toLowerCase()) && fresh && withinOffer;
}

/** Host names that always mean this machine. */
const LOOPBACK = /^(localhost|.+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * A did.json fetcher over plain `fetch`: HTTPS, no redirects, 64 KiB read at most, 5 s. A kid names the host, and a
 * kid is whatever a receipt (on chain, in a review) says, so loopback names (`localhost`, `*.localhost`, `127.x`,
 * `[::1]`) are refused unless `allowLoopback` (then over HTTP, for a service on this machine): a receipt naming
 * `did:web:localhost%3A8080:admin:reset` made every verifier send a GET to its own machine. Names that resolve to
 * private addresses cannot be told apart here (a browser has no DNS): a server that verifies what others wrote
 * passes a `fetch` that enforces its own egress rules.
 */
export function createFetchDidDocumentFetcher(
  options: { fetch?: FetchLike | undefined; timeoutMs?: number | undefined; allowLoopback?: boolean | undefined } = {},
): DidDocumentFetcher {
  const doFetch = options.fetch ?? fetch;
  return {
    async fetchDidDocument(host, path = []): Promise<DidDocumentFetch> {
      const hostname = host.replace(/:\d+$/, "");
      const loopback = LOOPBACK.test(hostname);
      const scheme = loopback ? "http" : "https";
      const url = path.length === 0 ? `${scheme}://${host}/.well-known/did.json` : `${scheme}://${host}/${path.join("/")}/did.json`;
      if (loopback && options.allowLoopback !== true) return { status: "unavailable", url, reason: "network-error" };
      let response: Response;
      try {
        response = await doFetch(url, {
          headers: { accept: "application/did+json, application/json" },
          redirect: "manual",
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        });
      } catch {
        return { status: "unavailable", url, reason: "network-error" };
      }
      if (response.status === 404 || response.status === 410) return { status: "not-found", url };
      if (response.status >= 300 && response.status < 400) return { status: "unavailable", url, reason: "redirect" };
      if (!response.ok) return { status: "unavailable", url, reason: "http-status", httpStatus: response.status };
      const text = await readCapped(response, DID_DOCUMENT_MAX_BYTES);
      if (text === undefined) return { status: "unavailable", url, reason: "too-large" };
      try {
        return { status: "ok", url, document: JSON.parse(text) as unknown };
      } catch {
        return { status: "unavailable", url, reason: "invalid-json" };
      }
    },
  };
}

const DID_DOCUMENT_MAX_BYTES = 65_536;

/** The body as text when it is at most `max` bytes, read no further; undefined past it. */
async function readCapped(response: Response, max: number): Promise<string | undefined> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > max) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}
