/** The answer to a TXT query; each record's character-strings are already joined. */
export type TxtLookup =
  | { readonly status: "found"; readonly records: readonly string[] }
  | { readonly status: "nxdomain" }
  | { readonly status: "nodata" }
  | { readonly status: "servfail" | "refused" | "timeout" | "network-error" };

/** The answer to an address query (A and AAAA together). */
export type AddressLookup =
  | { readonly status: "found"; readonly addresses: readonly string[] }
  | { readonly status: "nxdomain" | "nodata" }
  | { readonly status: "servfail" | "refused" | "timeout" | "network-error" };

/** Looks names up through the configured resolvers (`DNS_SERVERS`). */
export interface DnsResolver {
  readonly resolveTxt: (name: string) => Promise<TxtLookup>;
  readonly resolveAddresses: (host: string) => Promise<AddressLookup>;
}

/** The outcome of fetching `https://<host>/.well-known/did.json` (or `/<path>/did.json`). */
export type DidDocumentFetch =
  | { readonly status: "ok"; readonly document: unknown; readonly url: string }
  | { readonly status: "not-found"; readonly url: string }
  | {
    readonly status: "unavailable";
    readonly url: string;
    readonly reason:
      | "invalid-host"
      | "dns-failure"
      | "blocked-address"
      | "timeout"
      | "tls-error"
      | "network-error"
      | "redirect"
      | "http-status"
      | "too-large"
      | "invalid-json";
    /** For `http-status`: the status code. Never upstream body text. */
    readonly httpStatus?: number | undefined;
  };

/** Fetches a did:web DID document safely from a possibly hostile domain. */
export interface DidDocumentFetcher {
  /** `host` may carry a port (`example.com:8443`); `path` is the did:web path segments, if any. */
  readonly fetchDidDocument: (host: string, path?: readonly string[]) => Promise<DidDocumentFetch>;
  /**
   * Fetches `https://<host>/.well-known/jwks.json` under the same policy (SSRF checks, byte cap, deadline); `document`
   * is the parsed JSON (decisions §25). Absent: the fetcher reads no JWK Sets.
   */
  readonly fetchJwks?: ((host: string) => Promise<DidDocumentFetch>) | undefined;
}
