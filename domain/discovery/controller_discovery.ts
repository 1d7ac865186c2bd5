/**
 * Controller discovery: the keys a did:web subject publishes as its controllers, from both DNS TXT names and its
 * did.json, looked up at once under the per-domain budget.
 */
import type { DnsResolver, DidDocumentFetcher } from "../../ports/discovery.ts";
import { didWebLocation, normalizeSubjectDid } from "../did/mod.ts";
import { type IdentityRecord, resolveIdentity } from "../identity/mod.ts";
import { type RateLimiter, registrableDomain } from "../rate_limit.ts";
import { takeLookup } from "./lookup_budget.ts";
import { fail, ok } from "../result.ts";
import { canonicalControllerKey } from "./controller_values.ts";
import { didJsonEvidence } from "./did_document.ts";
import {
  type DiscoverControllers,
  type DiscoverOptions,
  type DiscoveryRateLimited,
  type DiscoveryResult,
  type EvidenceItem,
  rateLimitedLookupError,
} from "./discovery_record.ts";
import { createKeyFacts, createKeySet } from "./key_set.ts";
import { txtControllerKeys, txtDetail, txtError, txtThumbprints } from "./txt_records.ts";

/** What discovery needs. */
export type DiscoveryDeps = {
  readonly dns: DnsResolver;
  readonly didDocuments: DidDocumentFetcher;
  /** The compatibility TXT label: `_<label>.<domain>` (default `omatrust`). */
  readonly serviceDnsLabel: string;
  /**
   * Lookups per registrable domain ({@link registrableDomain}), shared by every caller of this
   * discovery (both confirm views, artifact trust, the witness): one token per discovery, which costs
   * the domain two TXT queries, an A and an AAAA query and an HTTPS fetch. Absent: unlimited.
   */
  readonly domainRate?: RateLimiter | undefined;
  /** Each client's share of `domainRate`, taken by a discovery asked with a `client` (domain/discovery/lookup_budget.ts). */
  readonly clientShare?: RateLimiter | undefined;
};

/** The warning of an answer for a subject that is no did:web: nothing is looked up. */
export const UNSUPPORTED_SUBJECT_WARNING =
  "Offchain controller discovery is currently supported only for did:web subjects.";

/** The warning of an answer for a did:web with a path: its host's DNS is not its evidence. */
export const HOST_DNS_WARNING =
  "DNS TXT records name a domain's controllers, not those of a did:web with a path: its did.json is its evidence.";

/**
 * Builds controller discovery: both TXT names and did.json are looked up at once; a non-did:web
 * subject makes no lookup at all and gets `unsupported` evidence and a warning. When the subject's
 * registrable domain has spent its budget (`domainRate`), the domain is not contacted: every source
 * is `unavailable` (we could not look) with a warning, or, with `refuseWhenRateLimited`, `RATE_LIMITED`.
 * `subject.input` is the subject as supplied; `canonical` and `label` come from the normalized DID.
 */
export function createDiscoverControllers(deps: DiscoveryDeps): DiscoverControllers {
  // One memory of key facts for every answer of this discovery (it was the module's before issue 47).
  const factsOf = createKeyFacts();
  return async function discoverControllers(
    subjectDid: string,
    options: DiscoverOptions = {},
  ): Promise<DiscoveryResult | DiscoveryRateLimited> {
    if (typeof subjectDid !== "string" || subjectDid.trim() === "") {
      return fail("INVALID_INPUT", "subjectDid is required");
    }
    // The one subject rule (issue 43): no whitespace or control character, a did:web naming a domain.
    const normalized = normalizeSubjectDid(subjectDid);
    if (!normalized.ok) return fail("INVALID_DID", "Invalid subjectDid", normalized.message);
    const subject: IdentityRecord = { ...resolveIdentity(normalized.value), input: subjectDid };
    // The subject rule has refused a did:web without a location: none here means another method.
    const location = didWebLocation(normalized.value);
    if (location === undefined) {
      return ok({
        subject,
        domain: null,
        controllerKeys: [],
        evidence: [
          { kind: "dns-txt", status: "unsupported", location: "did:web only", keys: [] },
          { kind: "did-json", status: "unsupported", location: "did:web only", keys: [] },
        ],
        warnings: [UNSUPPORTED_SUBJECT_WARNING],
      });
    }
    const { host, port, path } = location;
    const txtNames = [`_controllers.${host}`, `_${deps.serviceDnsLabel}.${host}`];
    const authority = port === undefined ? host : `${host}:${port}`;
    const didJsonUrl = path.length === 0
      ? `https://${authority}/.well-known/did.json`
      : `https://${authority}/${path.join("/")}/did.json`;
    const budget = registrableDomain(host);
    // A client past its share is refused as a spent budget is: only that client (the answer is never kept).
    const turn = takeLookup(deps, budget, options);
    if (!turn.allowed) {
      const error = rateLimitedLookupError(budget);
      if (options.refuseWhenRateLimited) {
        return { ...fail("RATE_LIMITED" as const, `${error}; try again later`), retryAfterSeconds: turn.retryAfterSeconds };
      }
      return ok({
        subject,
        domain: host,
        controllerKeys: [],
        evidence: [
          ...txtNames.map((name): EvidenceItem => ({ kind: "dns-txt", status: "unavailable", location: name, keys: [], error })),
          { kind: "did-json", status: "unavailable", location: didJsonUrl, keys: [], error },
        ],
        warnings: [`${error}; retry in ${turn.retryAfterSeconds} s`],
      });
    }
    // DNS names a domain's controllers: the DID of the host itself. A DID with a path (`did:web:host:users:alice`) is
    // another identity, whose own document is its evidence; before, the host's TXT record made its controller one of
    // every path's under it (a witness written for a controller the subject never named: a platform's key for each of
    // its users). As the reference: its TXT name is the whole did:web before `/`, which no DNS name is. A port names the
    // same host (its DNS is the host's; the e2e servers listen on one), so it keeps the host's records.
    if (path.length > 0) {
      const keySet = createKeySet(factsOf);
      const documentEvidence = didJsonEvidence(await deps.didDocuments.fetchDidDocument(authority, path), didJsonUrl, normalized.value, keySet);
      const evidence: EvidenceItem[] = [
        ...txtNames.map((name): EvidenceItem => ({ kind: "dns-txt", status: "unsupported", location: name, keys: [] })),
        documentEvidence,
      ];
      return ok({ subject, domain: host, controllerKeys: keySet.sorted(), evidence, warnings: [HOST_DNS_WARNING] });
    }
    const [txt1, txt2, document] = await Promise.all([
      deps.dns.resolveTxt(txtNames[0]!),
      deps.dns.resolveTxt(txtNames[1]!),
      deps.didDocuments.fetchDidDocument(authority, path),
    ]);
    const keySet = createKeySet(factsOf);
    const evidence: EvidenceItem[] = [];
    for (const [name, lookup] of [[txtNames[0]!, txt1], [txtNames[1]!, txt2]] as const) {
      // The keys and the notes for people read the same values: each is made canonical once (did:jwk parsing is the
      // costly part of the largest answers).
      const canonicalOf = memoized(canonicalControllerKey);
      const keys = lookup.status === "found" ? txtControllerKeys(lookup.records, canonicalOf) : [];
      for (const key of keys) keySet.add(key, "dns-txt");
      const thumbprints = lookup.status === "found" ? txtThumbprints(lookup.records) : [];
      const error = txtError(lookup);
      evidence.push({
        kind: "dns-txt",
        status: error !== undefined ? "unavailable" : keys.length > 0 || thumbprints.length > 0 ? "found" : "not-found",
        location: name,
        keys,
        ...(error === undefined ? {} : { error }),
        ...txtDetail(lookup, canonicalOf),
        ...(thumbprints.length === 0 ? {} : { thumbprints }),
      });
    }
    evidence.push(didJsonEvidence(document, didJsonUrl, normalized.value, keySet));
    return ok({ subject, domain: host, controllerKeys: keySet.sorted(), evidence, warnings: [] });
  };
}

/** `fn` with its answers remembered (for one request's values only: the map goes with it). */
function memoized<T>(fn: (value: string) => T): (value: string) => T {
  const seen = new Map<string, T>();
  return (value) => {
    if (seen.has(value)) return seen.get(value) as T;
    const answer = fn(value);
    seen.set(value, answer);
    return answer;
  };
}
