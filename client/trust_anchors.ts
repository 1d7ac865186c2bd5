/**
 * Client helpers for the trust-anchors record (interface.md "GET /v1/trust-anchors", reference §4.3).
 *
 * Like the reference SDK, these helpers throw an {@link AtsClientError}; they are for callers of the service.
 */
import { findApprovedIssuer } from "../domain/identity/mod.ts";
import type { ChainAnchors, TrustAnchors } from "../ports/trust_anchors.ts";
import { AtsClientError } from "./errors.ts";
import { serviceUrl } from "./http.ts";

/** Where {@link fetchTrustAnchors} looks when no URL is given: a local service. */
export const DEFAULT_TRUST_ANCHORS_URL = "http://127.0.0.1:8080/v1/trust-anchors";

/** How long a fetched record is reused. */
export const TRUST_ANCHORS_CACHE_TTL_MS = 5 * 60 * 1000;

/** The part of `fetch` the helpers use; the global `fetch` fits. */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** Options of {@link fetchTrustAnchors}. */
export type FetchTrustAnchorsOptions = {
  /** The trust-anchors URL; default `<baseUrl>/v1/trust-anchors`. */
  readonly url?: string | undefined;
  /** The service, as every other helper names it (before, only `url` was read and `baseUrl` silently ignored). */
  readonly baseUrl?: string | undefined;
  readonly fetch?: FetchLike | undefined;
  /** Milliseconds since the epoch; drives cache expiry. */
  readonly now?: (() => number) | undefined;
};

/** The contracts and schema UIDs anchored on any chain. */
export type Allowlists = { readonly allowedContracts: string[]; readonly allowedSchemas: string[] };

type CacheEntry = { readonly anchors: TrustAnchors; readonly expiresAt: number };

const cache = new Map<string, CacheEntry>();
const pending = new Map<string, Promise<TrustAnchors>>();

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Fetches the trust anchors, reusing a record fetched from the same URL in the last five minutes. */
export function fetchTrustAnchors(options: FetchTrustAnchorsOptions = {}): Promise<TrustAnchors> {
  const url = options.url ?? (options.baseUrl === undefined ? DEFAULT_TRUST_ANCHORS_URL : serviceUrl(options.baseUrl, "/v1/trust-anchors"));
  const now = options.now ?? Date.now;
  const cached = cache.get(url);
  if (cached !== undefined && now() < cached.expiresAt) return Promise.resolve(cached.anchors);
  // Callers that ask at the same time share one request.
  const inFlight = pending.get(url);
  if (inFlight !== undefined) return inFlight;
  const request = download(url, options.fetch ?? fetch).then(
    (anchors) => {
      if (pending.get(url) === request) {
        cache.set(url, { anchors, expiresAt: now() + TRUST_ANCHORS_CACHE_TTL_MS });
        pending.delete(url);
      }
      return anchors;
    },
    (error: unknown) => {
      if (pending.get(url) === request) pending.delete(url);
      throw error;
    },
  );
  pending.set(url, request);
  return request;
}

/** Forgets every cached trust-anchors record. */
export function clearTrustAnchorsCache(): void {
  cache.clear();
  pending.clear();
}

async function download(url: string, fetchFn: FetchLike): Promise<TrustAnchors> {
  let response: Response;
  let text: string;
  try {
    response = await fetchFn(url, { method: "GET", headers: { accept: "application/json" } });
    text = await response.text();
  } catch (cause) {
    throw new AtsClientError("NETWORK_ERROR", "Failed to fetch trust anchors", { cause });
  }
  const body = parseJson(text);
  if (!response.ok) {
    throw new AtsClientError("NETWORK_ERROR", `Failed to fetch trust anchors: HTTP ${response.status}`, {
      status: response.status,
      body: body === undefined ? text : body,
    });
  }
  if (!isRecord(body) || !body.version || !isRecord(body.chains)) {
    throw new AtsClientError("INVALID_INPUT", "Invalid trust anchors format", { status: response.status, body: body ?? text });
  }
  return body as TrustAnchors;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Returns the anchors of a chain given by chain id (`66238`) or CAIP-2 id (`eip155:66238`). */
export function getChainAnchors(anchors: TrustAnchors, chain: number | string): ChainAnchors {
  const chains: unknown = anchors?.chains;
  const key = typeof chain === "number" || /^[0-9]+$/.test(String(chain).trim()) ? `eip155:${String(chain).trim()}` : String(chain).trim();
  // Older records keyed chains by the bare chain id.
  const legacy = key.startsWith("eip155:") ? key.slice("eip155:".length) : undefined;
  if (isRecord(chains)) {
    for (const candidate of [key, legacy]) {
      if (candidate === undefined || !Object.hasOwn(chains, candidate)) continue;
      const found = chains[candidate];
      if (isRecord(found)) return found as ChainAnchors;
    }
  }
  throw new AtsClientError("UNSUPPORTED_CHAIN", `Chain ${String(chain)} is not in the trust anchors`);
}

/** Returns the UID of a schema anchored on a chain. */
export function getSchemaAnchor(anchors: TrustAnchors, chain: number | string, schemaName: string): string {
  const schemas: unknown = getChainAnchors(anchors, chain).schemas;
  const uid = isRecord(schemas) && Object.hasOwn(schemas, schemaName) ? schemas[schemaName] : undefined;
  if (typeof uid !== "string" || uid === "") {
    throw new AtsClientError("INVALID_INPUT", `Schema ${schemaName} is not anchored on chain ${String(chain)}`);
  }
  return uid;
}

/** Collects the EAS contracts and schema UIDs of every chain, each once (compared without case). */
export function extractAllowlists(anchors: TrustAnchors): Allowlists {
  const contracts = new Map<string, string>();
  const schemas = new Map<string, string>();
  const chains: unknown = anchors?.chains;
  for (const chain of isRecord(chains) ? Object.values(chains) : []) {
    if (!isRecord(chain)) continue;
    if (typeof chain.easContract === "string" && chain.easContract !== "") {
      if (!contracts.has(chain.easContract.toLowerCase())) contracts.set(chain.easContract.toLowerCase(), chain.easContract);
    }
    for (const uid of isRecord(chain.schemas) ? Object.values(chain.schemas) : []) {
      if (typeof uid === "string" && uid !== "" && !schemas.has(uid.toLowerCase())) schemas.set(uid.toLowerCase(), uid);
    }
  }
  return { allowedContracts: [...contracts.values()], allowedSchemas: [...schemas.values()] };
}

/**
 * Tells whether an address or DID is an approved issuer of a schema at a time (default now). With `chainId` (the chain
 * the attestation is on), an issuer listed as an eip155 did:pkh counts only on the chain it names. The service's own
 * rule (`domain/identity/approved_issuers.ts`): an entry whose `status` is present and not "active" never counts, even
 * before its `revokedAt`; an active one counts from `validFrom` until `revokedAt`.
 */
export function isApprovedIssuer(
  anchors: TrustAnchors,
  address: string,
  schemaName: string,
  atTime: Date = new Date(),
  chainId?: number,
): boolean {
  const at = atTime instanceof Date ? atTime.getTime() : Number.NaN;
  const chain = typeof chainId === "number" && Number.isSafeInteger(chainId) && chainId > 0 ? chainId : undefined;
  if (chainId !== undefined && chain === undefined) return false;
  return findApprovedIssuer(anchors, address, schemaName, at, chain) !== undefined;
}
