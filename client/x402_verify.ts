/** Offers and receipts verified: their signatures (JWS keys from did.json over plain `fetch`) and terms. */
import { createWebCryptoJwsVerifier } from "./jws_verifier.ts";
import type { Result } from "../domain/result.ts";
import { type OfferPayload, type ReceiptPayload, type VerifiedOffer, type VerifiedReceipt, verifySignedOffer, verifySignedReceipt, type X402VerifyError } from "../domain/payments/mod.ts";
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
  /** Receipts: refuse older ones (the x402 client helper's default is one hour). */
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

/** Tells whether a receipt answers an offer: same resourceUrl and network, and the payer is one of ours. */
export function receiptMatchesOffer(receipt: ReceiptPayload, offer: OfferPayload, payerAddresses: readonly string[]): boolean {
  return receipt.resourceUrl === offer.resourceUrl && receipt.network === offer.network &&
    payerAddresses.some((a) => a.toLowerCase() === receipt.payer.toLowerCase());
}

/** A did.json fetcher over plain `fetch`: HTTPS (HTTP only for loopback names), no redirects, 64 KiB, 5 s. */
export function createFetchDidDocumentFetcher(options: { fetch?: FetchLike | undefined; timeoutMs?: number | undefined } = {}): DidDocumentFetcher {
  const doFetch = options.fetch ?? fetch;
  return {
    async fetchDidDocument(host, path = []): Promise<DidDocumentFetch> {
      const hostname = host.replace(/:\d+$/, "");
      const scheme = hostname === "localhost" || hostname === "127.0.0.1" ? "http" : "https";
      const url = path.length === 0 ? `${scheme}://${host}/.well-known/did.json` : `${scheme}://${host}/${path.join("/")}/did.json`;
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
      const text = await response.text();
      if (text.length > 65536) return { status: "unavailable", url, reason: "too-large" };
      try {
        return { status: "ok", url, document: JSON.parse(text) as unknown };
      } catch {
        return { status: "unavailable", url, reason: "invalid-json" };
      }
    },
  };
}
