/** A DNS resolver answering from a table; unknown names are NXDOMAIN. Counts lookups. */
export function fakeDnsResolver(
  txt: Record<string, import("../discovery.ts").TxtLookup> = {},
  addresses: Record<string, import("../discovery.ts").AddressLookup> = {},
) {
  const resolver = {
    txt,
    addresses,
    lookups: [] as string[],
    resolveTxt(name: string) {
      resolver.lookups.push(`TXT ${name}`);
      return Promise.resolve(txt[name] ?? { status: "nxdomain" as const });
    },
    resolveAddresses(host: string) {
      resolver.lookups.push(`A ${host}`);
      return Promise.resolve(addresses[host] ?? { status: "nxdomain" as const });
    },
  };
  return resolver satisfies import("../discovery.ts").DnsResolver;
}

/** A did.json fetcher answering from a table keyed by host; unknown hosts are 404. */
export function fakeDidDocumentFetcher(
  answers: Record<string, import("../discovery.ts").DidDocumentFetch> = {},
  jwks: Record<string, import("../discovery.ts").DidDocumentFetch> = {},
) {
  const fetcher = {
    answers,
    jwks,
    fetches: [] as string[],
    /** The hosts whose `/.well-known/jwks.json` was fetched, in order (unknown hosts are 404). */
    jwksFetches: [] as string[],
    fetchDidDocument(host: string, path: readonly string[] = []) {
      fetcher.fetches.push([host, ...path].join("/"));
      return Promise.resolve(answers[host] ?? { status: "not-found" as const, url: `https://${host}/.well-known/did.json` });
    },
    fetchJwks(host: string) {
      fetcher.jwksFetches.push(host);
      return Promise.resolve(jwks[host] ?? { status: "not-found" as const, url: `https://${host}/.well-known/jwks.json` });
    },
  };
  return fetcher satisfies import("../discovery.ts").DidDocumentFetcher;
}
