import type { DidDocumentFetch, DnsResolver, DidDocumentFetcher, TxtLookup } from "../../ports/discovery.ts";
import type { Clock } from "../../ports/clock.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import {
  buildDidPkhFromCaip10,
  controllerIdentity,
  extractAddressFromDid,
  isSameControllerId,
  jwkToDidJwk,
  normalizeDid,
  normalizeSubjectDid,
  didWebLocation,
} from "../did/mod.ts";
import { type IdentityRecord, resolveIdentity } from "../identity/mod.ts";
import { type RateLimiter, registrableDomain } from "../rate_limit.ts";
import { type Fail, fail, ok, type Result } from "../result.ts";
import { readJktValue } from "./jwk_keys.ts";

/** Where a controller key was seen. */
export type KeySource = "dns-txt" | "did-json" | "account-wallet";

/** One evidence source and what it said. */
export type EvidenceItem = {
  kind: KeySource;
  status: "found" | "not-found" | "unavailable" | "unsupported";
  location: string;
  keys: string[];
  error?: string;
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

/** Options of one discovery. */
export type DiscoverOptions = {
  /**
   * When the subject's domain has spent its lookup budget: refuse with `RATE_LIMITED` (the witness,
   * which answers 429) instead of answering with `unavailable` evidence (the read-only views).
   */
  readonly refuseWhenRateLimited?: boolean | undefined;
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
};

export const UNSUPPORTED_SUBJECT_WARNING =
  "Offchain controller discovery is currently supported only for did:web subjects.";

/** The `error` of evidence not looked up because the subject's domain has spent its lookup budget. */
export function rateLimitedLookupError(domain: string): string {
  return `Lookups for ${domain} are rate limited`;
}

/**
 * Canonical form of a published controller value: a signing-key DID (did:pkh, did:ethr, did:key,
 * did:jwk) normalized, keeping the case of did:jwk and did:key (decisions §3), or a CAIP-10 account id
 * as did:pkh. Anything else is not a controller key.
 */
export function canonicalControllerKey(value: string): string | undefined {
  if (value.length > MAX_CONTROLLER_VALUE) return undefined;
  const trimmed = trimQuotes(value.trim()).trim();
  if (trimmed === "") return undefined;
  if (trimmed.startsWith("did:")) {
    const normalized = normalizeDid(trimmed);
    if (!normalized.ok) return undefined;
    return /^did:(pkh|ethr|key|jwk):/.test(normalized.value) ? normalized.value : undefined;
  }
  const pkh = buildDidPkhFromCaip10(trimmed);
  return pkh.ok ? pkh.value : undefined;
}

/**
 * The longest controller value read (a did:jwk of a P-256 key is about 150 characters, of an RSA-4096 key about
 * 950); longer text is not a key, and is refused before any parsing.
 *
 * The other bounds on remote text: a TXT record (its character-strings joined) is at most what one DNS message
 * carries (64 KiB over TCP), a did.json at most 64 KiB (adapters/https/https_did_document.ts). Every parser of them is
 * linear in its input: quotes trimmed by index, the record split once, keys deduplicated by
 * {@link controllerIdentity} in a `Set` (comparing every pair of did:jwk keys took 2 s for 192 RSA keys).
 */
export const MAX_CONTROLLER_VALUE = 2_048;

/** The most controller keys taken from one TXT name (all its records) or one DID document; the rest are ignored. */
export const MAX_CONTROLLERS_PER_SOURCE = 64;

/**
 * Strips leading and trailing `"` by index, in linear time. (A regular expression such as `/^"+|"+$/g`
 * retries its second branch from every position of a run of quotes: quadratic, 1.9 s of CPU for 60,000 `"`.)
 */
function trimQuotes(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) === 34) start++;
  while (end > start && text.charCodeAt(end - 1) === 34) end--;
  return text.slice(start, end);
}

/**
 * Reads the controller keys of one TXT record (its character-strings already joined):
 * `v=1;controller=<did>;controller=<did>`. Every `controller=` counts; a record whose `v` is present
 * and not `1` yields nothing.
 */
export function parseControllerTxtRecord(record: string, canonicalOf: (value: string) => string | undefined = canonicalControllerKey): string[] {
  return txtRecordValues(record, "controller", canonicalOf);
}

/**
 * The distinct values of one key (`controller`, `jkt`) in a `v=1;…` TXT record, each read by `read` (undefined:
 * skipped), at most {@link MAX_CONTROLLERS_PER_SOURCE}; a record whose `v` is present and not `1` yields nothing.
 */
function txtRecordValues(record: string, name: string, read: (value: string) => string | undefined): string[] {
  const out: string[] = [];
  let version: string | undefined;
  for (const entry of record.split(/[;\s]+/)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const key = entry.slice(0, eq).trim().toLowerCase();
    const value = entry.slice(eq + 1).trim();
    if (value === "") continue;
    if (key === "v") version = value;
    else if (key === name && out.length < MAX_CONTROLLERS_PER_SOURCE) {
      const kept = read(value);
      if (kept !== undefined && !out.includes(kept)) out.push(kept);
    }
  }
  return version === undefined || version === "1" ? out : [];
}

/**
 * Reads the controller keys of a DID document: `blockchainAccountId` (CAIP-10, kept with its own
 * chain id) as did:pkh, `publicKeyJwk` as did:jwk (public members, sorted keys). A document that is
 * not an object, has no `id` or names another DID as `id` (the `id` must be the subject DID), or has
 * a non-array `verificationMethod` is invalid.
 */
export function controllerKeysFromDidDocument(document: unknown, subjectDid: string): Result<string[], "INVALID_INPUT"> {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return fail("INVALID_INPUT", "DID document is not a JSON object");
  }
  const doc = document as Record<string, unknown>;
  if (doc.id === undefined) return fail("INVALID_INPUT", "DID document has no id");
  const id = typeof doc.id === "string" ? normalizeDid(doc.id) : undefined;
  if (!id?.ok || id.value !== subjectDid) return fail("INVALID_INPUT", "DID document id does not match the subject");
  const methods = doc.verificationMethod ?? [];
  if (!Array.isArray(methods)) return fail("INVALID_INPUT", "DID document verificationMethod is not an array");
  const keys: string[] = [];
  const seen = new Set<string>();
  const add = (key: string | undefined) => {
    if (key === undefined) return;
    const identity = controllerIdentity(key) ?? key;
    if (seen.has(identity)) return;
    seen.add(identity);
    keys.push(key);
  };
  for (const method of methods) {
    if (keys.length >= MAX_CONTROLLERS_PER_SOURCE) break;
    if (typeof method !== "object" || method === null) continue;
    const m = method as Record<string, unknown>;
    if (typeof m.blockchainAccountId === "string") add(canonicalControllerKey(m.blockchainAccountId));
    if (typeof m.publicKeyJwk === "object" && m.publicKeyJwk !== null && !Array.isArray(m.publicKeyJwk)) {
      const did = jwkToDidJwk(m.publicKeyJwk as Record<string, unknown>, { publicOnly: true });
      if (did.ok) add(did.value);
    }
  }
  return ok(keys);
}

const txtError = (lookup: TxtLookup): string | undefined =>
  lookup.status === "servfail" ? "DNS server failure" :
  lookup.status === "refused" ? "DNS query refused" :
  lookup.status === "timeout" ? "DNS lookup timed out" :
  lookup.status === "network-error" ? "DNS resolver unreachable" : undefined;

export const didJsonError = (fetch: DidDocumentFetch): string | undefined => {
  if (fetch.status !== "unavailable") return undefined;
  switch (fetch.reason) {
    case "http-status":
      return `HTTP ${fetch.httpStatus ?? "error"}`;
    case "blocked-address":
      return "Host resolves to a non-public address";
    case "too-large":
      return "DID document exceeds 64 KiB";
    case "invalid-json":
      return "DID document is not valid JSON";
    case "redirect":
      return "Redirects are not followed";
    case "timeout":
      return "DID document fetch timed out";
    case "tls-error":
      return "TLS verification failed";
    case "dns-failure":
      return "Host name lookup failed";
    case "invalid-host":
      return "Invalid host";
    default:
      return "Network error";
  }
};

/**
 * A key's identity and display label, remembered for the last {@link KEY_FACTS_KEPT} keys: a did:jwk is parsed for
 * both, and the same keys come back in every source, in controller confirm and in the next request for the domain.
 */
const keyFacts = new Map<string, { identity: string; label: string }>();
const KEY_FACTS_KEPT = 1_024;
function factsOf(key: string): { identity: string; label: string } {
  const known = keyFacts.get(key);
  if (known !== undefined) return known;
  const facts = { identity: controllerIdentity(key) ?? `invalid:${key}`, label: resolveIdentity(key).label };
  if (keyFacts.size >= KEY_FACTS_KEPT) keyFacts.clear();
  keyFacts.set(key, facts);
  return facts;
}

/** A builder of controller keys that merges by controller id and keeps their sources in order. */
export function createKeySet() {
  const keys: ControllerKey[] = [];
  // By controllerIdentity (a key that is no valid DID only matches itself): one lookup per key, not a scan.
  const byIdentity = new Map<string, ControllerKey>();
  return {
    add(key: string, source: KeySource) {
      const { identity, label } = factsOf(key);
      let entry = byIdentity.get(identity);
      if (entry === undefined) {
        entry = { id: key, canonicalId: key, label, sources: [], basic: false };
        keys.push(entry);
        byIdentity.set(identity, entry);
      }
      if (!entry.sources.includes(source)) entry.sources.push(source);
      if (source !== "account-wallet") entry.basic = true;
    },
    sorted(): ControllerKey[] {
      return [...keys].sort((a, b) =>
        a.basic === b.basic ? (a.canonicalId < b.canonicalId ? -1 : a.canonicalId > b.canonicalId ? 1 : 0) : a.basic ? -1 : 1
      );
    },
  };
}

/**
 * Builds controller discovery: both TXT names and did.json are looked up at once; a non-did:web
 * subject makes no lookup at all and gets `unsupported` evidence and a warning. When the subject's
 * registrable domain has spent its budget (`domainRate`), the domain is not contacted: every source
 * is `unavailable` (we could not look) with a warning, or, with `refuseWhenRateLimited`, `RATE_LIMITED`.
 * `subject.input` is the subject as supplied; `canonical` and `label` come from the normalized DID.
 */
export function createDiscoverControllers(deps: DiscoveryDeps): DiscoverControllers {
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
    const location = didWebLocation(normalized.value);
    if (location === undefined) {
      const isWeb = normalized.value.startsWith("did:web:");
      if (isWeb) return fail("INVALID_DID", "Invalid subjectDid", "did:web host is not a domain name");
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
    const turn = deps.domainRate?.take(budget) ?? { allowed: true };
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
    const [txt1, txt2, document] = await Promise.all([
      deps.dns.resolveTxt(txtNames[0]!),
      deps.dns.resolveTxt(txtNames[1]!),
      deps.didDocuments.fetchDidDocument(authority, path),
    ]);
    const keySet = createKeySet();
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

function didJsonEvidence(
  document: DidDocumentFetch,
  location: string,
  subjectDid: string,
  keySet: ReturnType<typeof createKeySet>,
): EvidenceItem {
  if (document.status === "not-found") {
    return { kind: "did-json", status: "not-found", location, keys: [], notes: ["No DID document there (HTTP 404, or the host has no address)"] };
  }
  if (document.status === "unavailable") {
    return { kind: "did-json", status: "unavailable", location, keys: [], error: didJsonError(document)! };
  }
  const keys = controllerKeysFromDidDocument(document.document, subjectDid);
  if (!keys.ok) return { kind: "did-json", status: "unavailable", location, keys: [], error: keys.message };
  for (const key of keys.value) keySet.add(key, "did-json");
  if (keys.value.length === 0) {
    return { kind: "did-json", status: "not-found", location, keys: [], notes: ["The DID document names no blockchainAccountId or publicKeyJwk"] };
  }
  return { kind: "did-json", status: "found", location, keys: keys.value };
}

const unique = (values: string[]) => [...new Set(values)];

/** The most TXT records, and characters of each, an answer repeats back in `records`. */
export const MAX_SHOWN_TXT_RECORDS = 16;
const MAX_SHOWN_TXT_LENGTH = 1_024;
const shorten = (text: string) => text.length > MAX_SHOWN_TXT_LENGTH ? `${text.slice(0, MAX_SHOWN_TXT_LENGTH)}…` : text;

/** `records` and `notes` of a TXT lookup that answered (nothing for a failed one: its `error` says why). */
function txtDetail(lookup: TxtLookup, canonicalOf: (value: string) => string | undefined): Pick<EvidenceItem, "records" | "notes"> {
  if (lookup.status === "nxdomain") return { notes: ["No such name (NXDOMAIN): nothing is published here"] };
  if (lookup.status === "nodata") return { notes: ["The name exists but has no TXT record"] };
  if (lookup.status !== "found") return {};
  const shown = lookup.records.slice(0, MAX_SHOWN_TXT_RECORDS);
  const notes: string[] = [];
  // One budget of parsed values for the whole name, as the parser has (adversarial_input_test).
  let budget = MAX_CONTROLLERS_PER_SOURCE;
  for (const record of shown) {
    const explained = explainControllerTxtRecord(record, { maxValues: budget, canonicalOf });
    budget -= explained.valuesRead;
    for (const note of explained.notes) if (!notes.includes(note)) notes.push(note);
  }
  if (lookup.records.length > shown.length) notes.push(`${lookup.records.length - shown.length} more records not shown`);
  return { records: shown.map(shorten), ...(notes.length === 0 ? {} : { notes }) };
}

/**
 * What one TXT record (strings joined) says as a controller record, for people: the keys it names (as
 * {@link parseControllerTxtRecord} reads them) and a sentence for each thing that is ignored (another version, a
 * value that is no signing-key DID, no `controller=` at all). One pass; at most {@link MAX_CONTROLLERS_PER_SOURCE}
 * values are parsed, like the parser itself.
 */
export function explainControllerTxtRecord(
  record: string,
  options: { maxValues?: number | undefined; canonicalOf?: ((value: string) => string | undefined) | undefined } = {},
): { keys: string[]; notes: string[]; valuesRead: number } {
  const maxValues = options.maxValues ?? MAX_CONTROLLERS_PER_SOURCE;
  const canonicalOf = options.canonicalOf ?? canonicalControllerKey;
  const keys: string[] = [];
  const notes: string[] = [];
  let version: string | undefined;
  let controllers = 0;
  let jkts = 0;
  for (const entry of record.split(/[;\s]+/)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const key = entry.slice(0, eq).trim().toLowerCase();
    const value = entry.slice(eq + 1).trim();
    if (key === "v" && value !== "") version = value;
    if (key === "jkt") {
      jkts++;
      if (readJktValue(value) === undefined && notes.length < 8) notes.push(`"jkt=${value.slice(0, 80)}" is not S256:<base64url RFC 7638 thumbprint>`);
      continue;
    }
    if (key !== "controller") continue;
    controllers++;
    if (controllers > maxValues) continue;
    const canonical = value === "" ? undefined : canonicalOf(value);
    if (canonical !== undefined) {
      if (!keys.includes(canonical)) keys.push(canonical);
    } else if (notes.length < 8) {
      notes.push(value === "" ? "A controller= entry is empty" : `"${value.slice(0, 80)}" is not a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id`);
    }
  }
  const valuesRead = Math.min(controllers, maxValues);
  if (controllers > maxValues) notes.push(`Only the first ${MAX_CONTROLLERS_PER_SOURCE} controller= values of a name are read`);
  if (version !== undefined && version !== "1") {
    return { keys: [], notes: [`The record says v=${version.slice(0, 16)}; only v=1 is read, so it is ignored`, ...notes], valuesRead };
  }
  if (controllers === 0 && jkts === 0) notes.push(`A record without controller= is not a controller record: "${record.slice(0, 80)}"`);
  return { keys, notes, valuesRead };
}

/** The TXT record that names `controllerDid` as a controller of a did:web subject or bare domain, or why there is none. */
export function controllerTxtRecordFor(subject: string, controllerDid: string): Result<{ name: string; value: string }, "INVALID_DID"> {
  const normalized = normalizeSubjectDid(subject);
  if (!normalized.ok) return fail("INVALID_DID", "Invalid subject", normalized.message);
  const location = didWebLocation(normalized.value);
  if (location === undefined) return fail("INVALID_DID", "The subject must be a domain or a did:web");
  const key = canonicalControllerKey(controllerDid);
  if (key === undefined) return fail("INVALID_DID", "The controller must be a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id");
  return ok({ name: `_controllers.${location.host}`, value: `v=1;controller=${key}` });
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

/**
 * The `jkt=S256:<thumbprint>` values of one TXT record (strings joined), as {@link parseControllerTxtRecord} reads
 * `controller=`: a record whose `v` is present and not `1` yields nothing; malformed values are skipped.
 */
export function parseJktTxtRecord(record: string): string[] {
  return txtRecordValues(record, "jkt", readJktValue);
}

/** The distinct thumbprints of one TXT name's records, at most {@link MAX_CONTROLLERS_PER_SOURCE}. */
function txtThumbprints(records: readonly string[]): string[] {
  const out = new Set<string>();
  for (const record of records) {
    for (const t of parseJktTxtRecord(record)) {
      if (out.size >= MAX_CONTROLLERS_PER_SOURCE) return [...out];
      out.add(t);
    }
  }
  return [...out];
}

/** The distinct controller keys of one TXT name's records, at most {@link MAX_CONTROLLERS_PER_SOURCE}. */
function txtControllerKeys(records: readonly string[], canonicalOf: (value: string) => string | undefined): string[] {
  const keys = new Set<string>();
  for (const record of records) {
    for (const key of parseControllerTxtRecord(record, canonicalOf)) {
      if (keys.size >= MAX_CONTROLLERS_PER_SOURCE) return [...keys];
      keys.add(key);
    }
  }
  return [...keys];
}

/** The approved-issuer block of controller confirm. */
export type ApprovedIssuerBlock = {
  status: "approved" | "not-approved" | "unavailable" | "not-configured";
  checkedIdentifiers: string[];
  registryUrl: string | null;
};

/** The controller-confirm record: discovery plus the wallet candidate and the approved-issuer check. */
export type ControllerConfirmRecord = DiscoveryRecord & { approvedIssuer: ApprovedIssuerBlock };

/** What controller confirm adds to discovery. */
export type ControllerConfirmDeps = {
  readonly discover: DiscoverControllers;
  readonly trustAnchors: TrustAnchors;
  readonly clock: Clock;
  /** Where the registry is published (the service's trust-anchors URL). */
  readonly registryUrl: string;
};

/**
 * Controller confirm: endpoint evidence, the connected wallet as an `account-wallet` candidate,
 * and whether the wallet is an active approved issuer in the configured registry.
 */
export function createControllerConfirm(deps: ControllerConfirmDeps) {
  return async function controllerConfirm(
    subjectDid: string | undefined,
    walletDid: string | undefined,
  ): Promise<Result<ControllerConfirmRecord, "INVALID_INPUT" | "INVALID_DID"> | DiscoveryRateLimited> {
    if (walletDid !== undefined && walletDid.trim() === "") return fail("INVALID_INPUT", "walletDid must not be empty");
    const discovered = await deps.discover(subjectDid ?? "");
    if (!discovered.ok) return discovered;
    const record = discovered.value;
    const approvedIssuer = approvedIssuerStatus(deps, walletDid);
    if (walletDid === undefined) return ok({ ...record, approvedIssuer });
    const wallet = canonicalControllerKey(walletDid);
    if (wallet === undefined) return ok({ ...record, approvedIssuer });
    const keySet = createKeySet();
    for (const key of record.controllerKeys) for (const source of key.sources) keySet.add(key.canonicalId, source);
    keySet.add(wallet, "account-wallet");
    return ok({
      ...record,
      controllerKeys: keySet.sorted(),
      evidence: [
        { kind: "account-wallet", status: "found", location: "request.walletDid", keys: [wallet] },
        ...record.evidence,
      ],
      approvedIssuer,
    });
  };
}

function approvedIssuerStatus(deps: ControllerConfirmDeps, walletDid: string | undefined): ApprovedIssuerBlock {
  if (walletDid === undefined) return { status: "not-configured", checkedIdentifiers: [], registryUrl: null };
  const canonical = canonicalControllerKey(walletDid);
  const checkedIdentifiers = unique([walletDid, canonical ?? walletDid]);
  const issuers = deps.trustAnchors.registries.filter((r) => r.type === "approved-issuers").flatMap((r) => r.issuers);
  if (issuers.length === 0) return { status: "not-configured", checkedIdentifiers, registryUrl: null };
  const nowMs = deps.clock.nowMs();
  const forms = new Set<string>();
  for (const id of checkedIdentifiers) {
    forms.add(id.toLowerCase());
    const normalized = normalizeDid(id);
    if (normalized.ok) forms.add(normalized.value.toLowerCase());
    const address = extractAddressFromDid(id);
    if (address.ok) forms.add(address.value.toLowerCase());
  }
  const approved = issuers.some((issuer) => {
    if (!isActive(issuer, nowMs)) return false;
    const issuerForms = [issuer.address.toLowerCase()];
    const address = extractAddressFromDid(issuer.address);
    if (address.ok) issuerForms.push(address.value.toLowerCase());
    return issuerForms.some((f) => forms.has(f)) || checkedIdentifiers.some((id) => isSameControllerId(id, issuer.address));
  });
  return { status: approved ? "approved" : "not-approved", checkedIdentifiers, registryUrl: deps.registryUrl };
}

function isActive(issuer: { status?: string | undefined; validFrom?: string | undefined; revokedAt?: string | undefined }, nowMs: number) {
  if (issuer.status !== undefined && issuer.status !== "active" && issuer.revokedAt === undefined) return false;
  if (issuer.validFrom !== undefined) {
    const from = Date.parse(issuer.validFrom);
    if (Number.isNaN(from) || from > nowMs) return false;
  }
  if (issuer.revokedAt !== undefined) {
    const revoked = Date.parse(issuer.revokedAt);
    if (Number.isNaN(revoked) || revoked <= nowMs) return false;
  }
  return true;
}

/** How long {@link createCachedDiscovery} keeps answers. */
export type DiscoveryCacheOptions = {
  /** A complete answer (no source unavailable); default 60 s, about a typical DNS TTL. */
  readonly freshMs?: number | undefined;
  /** An answer with an unavailable source; default 10 s, so a broken endpoint is not asked on every request. */
  readonly failureMs?: number | undefined;
  /** How old an answer may be to stand in for one refused by the domain's lookup budget; default 10 min. */
  readonly staleMs?: number | undefined;
  /** Subjects kept at most; the oldest go first. Default 10,000. */
  readonly maxEntries?: number | undefined;
};

type CachedAnswer = { readonly record: DiscoveryRecord; readonly atMs: number; readonly complete: boolean };

/**
 * Discovery for the read-only callers (both confirm views, artifact trust): answers are kept per normalized
 * subject for a short while, and concurrent lookups of one subject share one. So the lookups a domain receives
 * through us are bounded per subject however much traffic a popular artifact or page draws, and the per-domain
 * budget only bites on floods of distinct subjects; when it does, the last real answer (up to `staleMs` old)
 * stands in, with a warning saying how old it is, rather than `unavailable` evidence. An answer refused by the
 * budget is never kept. Not for the witness, which records what it observes and so always looks afresh.
 */
export function createCachedDiscovery(
  discover: DiscoverControllers,
  deps: { readonly clock: Clock },
  options: DiscoveryCacheOptions = {},
): DiscoverControllers {
  const freshMs = options.freshMs ?? 60_000;
  const failureMs = options.failureMs ?? 10_000;
  const staleMs = options.staleMs ?? 600_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const answers = new Map<string, CachedAnswer>();
  const inFlight = new Map<string, Promise<DiscoveryResult | DiscoveryRateLimited>>();

  const asSupplied = (record: DiscoveryRecord, input: string, warnings: string[] = record.warnings): DiscoveryRecord => ({
    ...record,
    subject: { ...record.subject, input },
    warnings,
  });

  return async function cachedDiscovery(subjectDid, callOptions = {}) {
    if (callOptions.refuseWhenRateLimited || typeof subjectDid !== "string") return await discover(subjectDid, callOptions);
    const normalized = normalizeDid(subjectDid);
    if (!normalized.ok) return await discover(subjectDid, callOptions);
    const key = normalized.value;
    const now = deps.clock.nowMs();
    const kept = answers.get(key);
    if (kept !== undefined && now - kept.atMs < (kept.complete ? freshMs : failureMs)) {
      return ok(asSupplied(kept.record, subjectDid));
    }
    let pending = inFlight.get(key);
    if (pending === undefined) {
      pending = discover(key, callOptions).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    const result = await pending;
    if (!result.ok) return result;
    const record = result.value;
    const refusal = rateLimitedLookupError(registrableDomain(record.domain ?? ""));
    if (record.evidence.some((e) => e.error === refusal)) {
      const previous = answers.get(key);
      if (previous === undefined || now - previous.atMs >= staleMs) return ok(asSupplied(record, subjectDid));
      const ageSeconds = Math.round((now - previous.atMs) / 1000);
      const warning = `${refusal}: this evidence was observed ${ageSeconds} s ago`;
      return ok(asSupplied(previous.record, subjectDid, [...previous.record.warnings, warning]));
    }
    answers.delete(key);
    answers.set(key, { record, atMs: deps.clock.nowMs(), complete: !record.evidence.some((e) => e.status === "unavailable") });
    if (answers.size > maxEntries) answers.delete(answers.keys().next().value!);
    return ok(asSupplied(record, subjectDid));
  };
}
