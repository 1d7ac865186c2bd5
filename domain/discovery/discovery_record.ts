/** What controller discovery answers: the record, its evidence and controller keys, and the discover function. */
import type { IdentityRecord } from "../identity/mod.ts";
import type { Fail, Result } from "../result.ts";
import type { LookupClient } from "./lookup_budget.ts";

/** Where a controller key was seen. */
export type KeySource = "dns-txt" | "did-json" | "account-wallet";

/** One evidence source and what it said. */
export type EvidenceItem = {
  kind: KeySource;
  status: "found" | "not-found" | "unavailable" | "unsupported";
  location: string;
  keys: string[];
  error?: string;
  /**
   * On an `unavailable` source only: the source was read and is content that can never be the subject's DID document
   * (not JSON or not the subject's DID document, over the byte cap, a redirect; or a did:web naming no usable host).
   * Absent: the source could not be read now (SERVFAIL, a timeout, a refused connection, an HTTP status other than 200
   * and 404, an address the policy refuses, a spent lookup budget), and the next read may answer
   * ({@link isLastingFetchFailure} in did_document.ts).
   */
  lasting?: true;
  /** DNS TXT only, when the name answered with TXT records: each record as published (strings joined). */
  records?: string[];
  /** Why a looked-up source gave no key, or which published values were ignored and why (for people). */
  notes?: string[];
  /**
   * DNS TXT only, present when the records carry `jkt=S256:<thumbprint>` (decisions §25): the RFC 7638 thumbprints of
   * the did:jwk controllers they name (a did:jwk may not fit in a TXT string; its thumbprint does).
   */
  thumbprints?: string[];
};

/**
 * Whether a source could not be read now (a transient failure): `unavailable` and not {@link EvidenceItem.lasting}.
 * Only such a source leaves a "not confirmed" open (502 `NETWORK_ERROR`); a lasting one is a property of the subject,
 * and the answer is decided without it.
 */
export function unreadableNow(source: { readonly status: string; readonly lasting?: true | undefined }): boolean {
  return source.status === "unavailable" && source.lasting !== true;
}

/** A controller key with the sources that published it; `basic` when an endpoint source did. */
export type ControllerKey = { id: string; canonicalId: string; label: string; sources: KeySource[]; basic: boolean };

/** The endpoint evidence of a subject. */
export type DiscoveryRecord = {
  subject: IdentityRecord;
  domain: string | null;
  controllerKeys: ControllerKey[];
  evidence: EvidenceItem[];
  warnings: string[];
};

/** Options of one discovery; `client`: whose share of the domain's budget a lookup also takes (domain/discovery/lookup_budget.ts). */
export type DiscoverOptions = LookupClient & {
  /**
   * When the subject's domain has spent its lookup budget: refuse with `RATE_LIMITED` (the witness,
   * which answers 429) instead of answering with `unavailable` evidence (the read-only views).
   */
  readonly refuseWhenRateLimited?: boolean | undefined;
  /**
   * What the endpoints hold now (key status, controller authorization, artifact trust's live check: "endpoint evidence
   * is always today's"): when the
   * domain's budget is spent, no older answer stands in; the evidence is `unavailable`. Before, an answer up to ten
   * minutes old was given as read now, and a controller removed from DNS stayed "currently verified".
   */
  readonly freshOnly?: boolean | undefined;
};

/** Discovery refused because the subject's domain has spent its lookup budget; only with `refuseWhenRateLimited`. */
export type DiscoveryRateLimited = Fail<"RATE_LIMITED"> & { readonly retryAfterSeconds: number };

/** The answer of discovery without `refuseWhenRateLimited`. */
export type DiscoveryResult = Result<DiscoveryRecord, "INVALID_INPUT" | "INVALID_DID">;

/**
 * Discovers the controller keys a did:web subject publishes (DNS TXT, did.json). `RATE_LIMITED` is
 * only ever returned to a caller that passed `refuseWhenRateLimited`.
 */
export type DiscoverControllers = (subjectDid: string, options?: DiscoverOptions) => Promise<DiscoveryResult | DiscoveryRateLimited>;

/** The `error` of evidence not looked up because the subject's domain has spent its lookup budget. */
export function rateLimitedLookupError(domain: string): string {
  return `Lookups for ${domain} are rate limited`;
}
