/**
 * The JWK Set of a did:web subject's domain, `https://<domain>/.well-known/jwks.json` (decisions §25), as live
 * evidence for did:jwk controllers: fetched through the did.json fetcher (same SSRF policy, byte cap and deadline),
 * under the same per-domain budget as the rest of discovery, and kept like discovery's answers for
 * `DISCOVERY_CACHE_SECONDS` (a failure for a sixth of it), with concurrent lookups of one domain sharing one fetch.
 */
import type { Clock } from "../../ports/clock.ts";
import type { DidDocumentFetch, DidDocumentFetcher } from "../../ports/discovery.ts";
import { didWebLocation, normalizeDid } from "../did/mod.ts";
import { type RateLimiter, registrableDomain } from "../rate_limit.ts";
import { didJsonError, isLastingFetchFailure } from "./did_document.ts";
import { rateLimitedLookupError } from "./discovery_record.ts";
import { type LookupClient, takeLookup } from "./lookup_budget.ts";
import { controllerKeysFromJwks } from "./jwk_keys.ts";

/** What the JWK Set of a subject's domain said. */
export type JwksEvidence = {
  readonly status: "found" | "not-found" | "unavailable" | "unsupported";
  readonly location: string;
  /** The did:jwk of each public key the set holds. */
  readonly keys: readonly string[];
  readonly error?: string | undefined;
  /** On `unavailable` only: the set was read and cannot be used, as a did.json's `lasting` (domain/discovery/did_document.ts). */
  readonly lasting?: true | undefined;
};

/** Looks up the JWK Set of a did:web subject's domain; `client`: whose share of the domain's budget a fetch also takes. */
export type LookupJwks = (subjectDid: string, options?: LookupClient) => Promise<JwksEvidence>;

/** What the JWKS lookup needs. */
export type JwksLookupDeps = {
  readonly didDocuments: DidDocumentFetcher;
  /** The per-domain budget discovery spends (one token per fetch that is not answered from the cache). */
  readonly domainRate?: RateLimiter | undefined;
  /** Each client's share of `domainRate` (domain/discovery/lookup_budget.ts). */
  readonly clientShare?: RateLimiter | undefined;
  readonly clock: Clock;
  /** How long a complete answer is kept (ms; `DISCOVERY_CACHE_SECONDS`); 0 keeps nothing. Default 60 s. */
  readonly freshMs?: number | undefined;
  /** How long a failed answer is kept (ms); default a sixth of `freshMs`. */
  readonly failureMs?: number | undefined;
  /** Domains kept at most; the oldest go first. Default 10,000. */
  readonly maxEntries?: number | undefined;
};

/** Builds the cached JWKS lookup. */
export function createJwksLookup(deps: JwksLookupDeps): LookupJwks {
  const freshMs = deps.freshMs ?? 60_000;
  const failureMs = deps.failureMs ?? Math.ceil(freshMs / 6);
  const maxEntries = deps.maxEntries ?? 10_000;
  const kept = new Map<string, { evidence: JwksEvidence; atMs: number }>();
  const inFlight = new Map<string, Promise<JwksEvidence>>();

  async function look(host: string, authority: string, location: string, options: LookupClient): Promise<JwksEvidence> {
    const turn = takeLookup(deps, registrableDomain(host), options);
    if (!turn.allowed) return { status: "unavailable", location, keys: [], error: rateLimitedLookupError(registrableDomain(host)) };
    const fetchJwks = deps.didDocuments.fetchJwks;
    if (fetchJwks === undefined) return { status: "unsupported", location, keys: [] };
    const answer: DidDocumentFetch = await fetchJwks(authority);
    if (answer.status === "not-found") return { status: "not-found", location, keys: [] };
    if (answer.status === "unavailable") {
      const error = (didJsonError(answer) ?? "Network error").replace("DID document", "JWK Set");
      return { status: "unavailable", location, keys: [], error, ...(isLastingFetchFailure(answer) ? { lasting: true as const } : {}) };
    }
    const keys = controllerKeysFromJwks(answer.document);
    if (keys === undefined) return { status: "unavailable", location, keys: [], error: "The JWK Set is not a JSON object with a keys array", lasting: true };
    return { status: keys.length > 0 ? "found" : "not-found", location, keys };
  }

  return async function lookupJwks(subjectDid, options = {}) {
    const normalized = normalizeDid(subjectDid);
    const location = normalized.ok ? didWebLocation(normalized.value) : undefined;
    if (location === undefined) return { status: "unsupported", location: "did:web only", keys: [] };
    // The host's JWK Set is the host's: a did:web with a path is another identity (its own did.json is its evidence).
    if (location.path.length > 0) return { status: "unsupported", location: "did:web without a path only", keys: [] };
    const authority = location.port === undefined ? location.host : `${location.host}:${location.port}`;
    const url = `https://${authority}/.well-known/jwks.json`;
    const now = deps.clock.nowMs();
    const known = kept.get(authority);
    if (known !== undefined && now - known.atMs < (known.evidence.status === "unavailable" ? failureMs : freshMs)) return known.evidence;
    let pending = inFlight.get(authority);
    if (pending === undefined) {
      pending = look(location.host, authority, url, options).finally(() => inFlight.delete(authority));
      inFlight.set(authority, pending);
    }
    const evidence = await pending;
    // An answer refused by the budget is never kept; the last real one is still good while fresh.
    if (evidence.error !== undefined && evidence.error.startsWith("Lookups for ")) return evidence;
    if (freshMs > 0) {
      kept.delete(authority);
      kept.set(authority, { evidence, atMs: deps.clock.nowMs() });
      if (kept.size > maxEntries) kept.delete(kept.keys().next().value!);
    }
    return evidence;
  };
}
