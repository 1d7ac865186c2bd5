/**
 * HTTP caching of the service's answers (decisions §21, issue 34 item 3). Each route declares one policy where it is
 * published (`cache` in http/route_docs.ts); the app applies it to every answer at its one way in (http/app.ts: the
 * Elysia app's `handle` and the server's edge routes), after the route answered, so a route never sets caching
 * headers itself and a new route cannot be published without saying how its answers may be kept.
 *
 * - A public read (`public`) answers 200 with an `ETag` and `Cache-Control: public,
 *   max-age=<s>, stale-while-revalidate=<s>`, `<s>` the shortest of what the answer is made of (the index: the poll
 *   interval; DNS and did.json evidence: the discovery cache; the service's own files: {@link STATIC_SECONDS}). The
 *   `ETag` of an answer of the index (one carrying `asOf`) is weak, over the answer without `asOf` and its other
 *   evaluation times ({@link weakEtag}, made by the route: http/index_answer_cache.ts `indexAnswer`), so it stays the
 *   same across polls while the answer does; any other public answer's is a strong one of its bytes. A
 *   matching `If-None-Match` (weak comparison, RFC 9110 §13.1.2) is 304 with no body and the same validators. Its
 *   400 and 404 are kept a short while ({@link ERROR_SECONDS} at most), every other error never (5xx included: an
 *   index behind the chain answers 503 and must be asked again).
 * - `revalidate` (the console's page and assets): `no-cache` with an `ETag`, so each use is a conditional request.
 * - `no-store`: writes and reads that must be live (a nonce about to be signed, health, metrics).
 * - `private`: routes with a session, a token or a payment: `private, no-store` on every answer.
 *
 * `credentials: "private"` on a policy says its answer depends on who asks: a request carrying a credential
 * (`Authorization`, a cookie, an x402 payment) is answered `private, no-store`. `vary` names the request headers an
 * answer depends on. CORS preflights (OPTIONS) are left as they are: `Access-Control-Max-Age` governs them.
 */
import { createHash } from "node:crypto";

/** What a public answer is made of, each with how long it may be kept. */
export type Freshness = "index" | "discovery" | "static";

/** How the answers of one route may be kept. */
export type CachePolicy =
  | {
    readonly kind: "public";
    readonly freshness: readonly Freshness[];
    readonly vary?: readonly string[] | undefined;
    readonly credentials?: "private" | undefined;
  }
  | { readonly kind: "revalidate"; readonly credentials?: "private" | undefined }
  | { readonly kind: "no-store"; readonly credentials?: "private" | undefined }
  | { readonly kind: "private" };

/** The policies every route picks from (http/route_docs.ts). */
export const CACHE = {
  /** Answered from the attestation index. */
  index: { kind: "public", freshness: ["index"] },
  /** Answered from DNS TXT and did.json evidence (through the discovery cache). */
  discovery: { kind: "public", freshness: ["discovery"] },
  /** The index and live evidence together. */
  indexAndDiscovery: { kind: "public", freshness: ["index", "discovery"] },
  /** The service's own files: trust anchors, its DID document and metadata, its API description. */
  static: { kind: "public", freshness: ["static"] },
  /** Revalidated at every use. */
  revalidate: { kind: "revalidate" },
  /** Never kept. */
  noStore: { kind: "no-store" },
  /** Never kept, and `private` when the request carries a credential (the answer depends on it). */
  noStoreCredentialed: { kind: "no-store", credentials: "private" },
  /** A session, a token or a payment: `private, no-store`. */
  private: { kind: "private" },
} as const satisfies Record<string, CachePolicy>;

/** How long the service's own files may be kept: they change when the service is reconfigured and restarted. */
export const STATIC_SECONDS = 300;
/** The longest a 400 or a 404 of a public read is kept (an attestation not indexed yet is 404 for one poll). */
export const ERROR_SECONDS = 10;

/** The ages the policies are read with, from the configuration. */
export type HttpCacheSettings = {
  /** `INDEX_POLL_MS` in seconds, rounded up: an answer from the index is current for one poll. */
  readonly indexSeconds: number;
  /** `DISCOVERY_CACHE_SECONDS`: how long the service itself reuses DNS and did.json evidence (0: never). */
  readonly discoverySeconds: number;
};

/** The settings for an index polled every `indexPollMs` and a discovery cache of `discoveryCacheSeconds`. */
export function httpCacheSettings(options: { readonly indexPollMs: number; readonly discoveryCacheSeconds: number }): HttpCacheSettings {
  return { indexSeconds: Math.max(1, Math.ceil(options.indexPollMs / 1000)), discoverySeconds: Math.max(0, Math.floor(options.discoveryCacheSeconds)) };
}

/** The configuration's defaults (`INDEX_POLL_MS` 1000, `DISCOVERY_CACHE_SECONDS` 60): what tests get. */
export const DEFAULT_HTTP_CACHE_SETTINGS: HttpCacheSettings = httpCacheSettings({ indexPollMs: 1_000, discoveryCacheSeconds: 60 });

/** How long an answer made of `freshness` may be kept: the shortest of its parts. */
export function maxAgeOf(freshness: readonly Freshness[], settings: HttpCacheSettings): number {
  let age = STATIC_SECONDS;
  for (const part of freshness) {
    age = Math.min(age, part === "index" ? settings.indexSeconds : part === "discovery" ? settings.discoverySeconds : STATIC_SECONDS);
  }
  return age;
}

/**
 * A header a route sets on a public 200 that must be kept no longer than it says (seconds), below its route's
 * freshness: a confirm view built while a lookup failed (a transient outage a shared cache would hold a minute or two).
 * Read and removed by {@link applyCachePolicy}; never sent.
 */
export const MAX_AGE_HEADER = "x-ats-max-age";

/** The `Cache-Control` of a public 200 kept `maxAge` seconds; 0 is stored but revalidated at every use. */
export function publicCacheControl(maxAge: number): string {
  return maxAge > 0 ? `public, max-age=${maxAge}, stale-while-revalidate=${maxAge}` : "public, no-cache";
}

/** A strong entity tag of an answer's bytes (a text: its UTF-8): SHA-256, base64url, quoted. */
export function strongEtag(bytes: Uint8Array | string): string {
  return `"${createHash("sha256").update(bytes).digest("base64url")}"`;
}

/**
 * A weak entity tag (`W/"…"`, RFC 9110 §8.8.1) of what an answer says, `validator` being the answer's text without
 * what only says when it was computed (`asOf`, an evaluation time): the public reads of the index (decisions §21
 * amended, "Revalidation"), whose bytes change at every poll while the answer itself does not.
 */
export function weakEtag(validator: string): string {
  return `W/${strongEtag(validator)}`;
}

/** The opaque-tags of an `If-None-Match` list (RFC 9110 §8.8.3), `W/` dropped; a comma may stand inside a tag. */
const ENTITY_TAG = /(?:W\/)?("[^"]*")/g;

/**
 * Whether `If-None-Match` matches `etag` (RFC 9110 §13.1.2): `*` matches any current answer, else one of the listed
 * entity tags does by the weak comparison (opaque-tags equal, `W/` ignored on both sides).
 */
export function ifNoneMatchMatches(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header.trim() === "*") return true;
  const opaque = etag.startsWith("W/") ? etag.slice(2) : etag;
  if (!header.includes(opaque)) return false;
  for (const match of header.matchAll(ENTITY_TAG)) if (match[1] === opaque) return true;
  return false;
}

/** Whether a request carries a credential: an `Authorization` header, a cookie or an x402 payment. */
export function carriesCredentials(request: Request): boolean {
  const headers = request.headers;
  return headers.has("authorization") || headers.has("cookie") || headers.has("payment-signature") || headers.has("x-payment");
}

/** `Vary` with `names` added to what the answer already says. */
function mergeVary(current: string | null, names: readonly string[]): string {
  const listed = (current ?? "").split(",").map((n) => n.trim()).filter((n) => n !== "");
  const seen = new Set(listed.map((n) => n.toLowerCase()));
  for (const name of names) {
    if (!seen.has(name.toLowerCase())) {
      listed.push(name);
      seen.add(name.toLowerCase());
    }
  }
  return listed.join(", ");
}

/** The answer with `Cache-Control: value` (its headers are its own: every Response copies the headers it is made with). */
function withCacheControl(response: Response, value: string): Response {
  response.headers.set("cache-control", value);
  return response;
}

/** Headers a 304 does not repeat: they describe a body it does not have (RFC 9110 §15.4.5). */
const BODY_HEADERS = ["content-type", "content-length", "content-encoding"] as const;

/** The text each answer the service made of a string was made of (http/errors.ts `json`, the trust anchors), and its ETag when known. */
const knownBodies = new WeakMap<Response, { readonly text: string; readonly etag: string | undefined }>();

/**
 * Notes the text `response` was made of, so that its ETag is computed from the text, at once, instead of reading the
 * body back (issue 28's cheap routes answer synchronously; reading a body is a promise, and a new Response after it).
 * `etag`: the text's {@link strongEtag}, when the caller keeps it already (http/index_answer_cache.ts): not hashed again.
 */
export function withKnownBody(response: Response, text: string, etag?: string | undefined): Response {
  knownBodies.set(response, { text, etag });
  return response;
}

/**
 * The last answer of each route and its ETag: a read asked for again and again (the case caching is for) answers the
 * same bytes, which compare equal far faster than they hash (3 KB: about 0.1 µs against 2 µs; the same text, as the
 * trust anchors and /openapi.json answer, at once). Bounded: answers up to {@link MEMO_ANSWER_BYTES}, at most
 * {@link MEMO_BYTES} in all (a text counted two bytes a unit); past the bound it starts again.
 */
export type EtagMemo = {
  readonly entries: Map<string, { readonly bytes: Uint8Array | string; readonly etag: string }>;
  bytes: number;
};
const MEMO_ANSWER_BYTES = 1024 * 1024;
const MEMO_BYTES = 16 * 1024 * 1024;

/** A memo for {@link applyCachePolicy}, one per app. */
export function createEtagMemo(): EtagMemo {
  return { entries: new Map(), bytes: 0 };
}

const sizeOf = (body: Uint8Array | string) => typeof body === "string" ? 2 * body.length : body.byteLength;

/** Whether two bodies are the same bytes (a text is its UTF-8). */
function sameBody(a: Uint8Array | string, b: Uint8Array | string): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/** The ETag of an answer: the memo's when `key`'s last answer was these very bytes, else hashed (and kept). */
function etagOf(bytes: Uint8Array | string, key: string, memo: EtagMemo | undefined): string {
  const size = sizeOf(bytes);
  if (memo === undefined || size > MEMO_ANSWER_BYTES) return strongEtag(bytes);
  const last = memo.entries.get(key);
  if (last !== undefined && sameBody(last.bytes, bytes)) return last.etag;
  const etag = strongEtag(bytes);
  memo.bytes += size - (last === undefined ? 0 : sizeOf(last.bytes));
  if (memo.bytes > MEMO_BYTES) {
    memo.entries.clear();
    memo.bytes = size;
  }
  memo.entries.set(key, { bytes, etag });
  return etag;
}

/**
 * A 200 with its validators: the `ETag` of its bytes, `cacheControl`, `vary`; 304 with no body when the request's
 * `If-None-Match` matches. The body is read once (a string, bytes or a Blob alike) and the answer made again of it.
 */
async function validated(
  request: Request,
  response: Response,
  cacheControl: string,
  options: { readonly vary: readonly string[] | undefined; readonly memo: EtagMemo | undefined; readonly key: string },
): Promise<Response> {
  const bytes = await response.bytes();
  const conditional = withValidators(request, response.headers, etagOf(bytes, options.key, options.memo), cacheControl, options.vary);
  return conditional ?? new Response(bytes, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** {@link validated} for an answer whose text is known ({@link withKnownBody}): the answer itself, or its 304, at once. */
function validatedText(
  request: Request,
  response: Response,
  known: { readonly text: string; readonly etag: string | undefined },
  cacheControl: string,
  options: { readonly vary: readonly string[] | undefined; readonly memo: EtagMemo | undefined; readonly key: string },
): Response {
  const etag = known.etag ?? etagOf(known.text, options.key, options.memo);
  return withValidators(request, response.headers, etag, cacheControl, options.vary) ?? response;
}

/** Sets the validators on `headers`; the 304 when `If-None-Match` matches `etag`, else undefined. */
function withValidators(request: Request, headers: Headers, etag: string, cacheControl: string, vary: readonly string[] | undefined): Response | undefined {
  headers.set("cache-control", cacheControl);
  headers.set("etag", etag);
  if (vary !== undefined && vary.length > 0) headers.set("vary", mergeVary(headers.get("vary"), vary));
  if (!ifNoneMatchMatches(request.headers.get("if-none-match"), etag)) return undefined;
  for (const name of BODY_HEADERS) headers.delete(name);
  return new Response(null, { status: 304, headers });
}

/** How {@link applyCachePolicy} reads a policy. */
export type ApplyCachePolicyOptions = {
  readonly policy: CachePolicy;
  readonly settings: HttpCacheSettings;
  /** Last answers by route ({@link createEtagMemo}); absent: every answer hashed. */
  readonly memo?: EtagMemo | undefined;
  /** The answer's key in the memo: its path (the app's routes are few; a path parameter's values are bounded by bytes). */
  readonly route?: string | undefined;
};

/**
 * The answer to `request` under its route's policy: its `Cache-Control` set, and for a public 200 (or a revalidated
 * one) its `ETag`, `Vary` and, when `If-None-Match` matches, the 304 in its place. Synchronous unless the body must
 * be read.
 */
export function applyCachePolicy(request: Request, response: Response, options: ApplyCachePolicyOptions): Response | Promise<Response> {
  const { policy, settings } = options;
  const method = request.method;
  if (method === "OPTIONS") return response;
  if (policy.kind === "private" || (policy.credentials === "private" && carriesCredentials(request))) {
    return withCacheControl(response, "private, no-store");
  }
  if (policy.kind === "no-store" || (method !== "GET" && method !== "HEAD")) return withCacheControl(response, "no-store");
  const status = response.status;
  const own = response.headers.get(MAX_AGE_HEADER);
  if (own !== null) response.headers.delete(MAX_AGE_HEADER);
  const routeAge = policy.kind === "public" ? maxAgeOf(policy.freshness, settings) : 0;
  const maxAge = own !== null && /^[0-9]+$/.test(own) ? Math.min(routeAge, Number(own)) : routeAge;
  if (status === 200) {
    const cacheControl = policy.kind === "public" ? publicCacheControl(maxAge) : "no-cache";
    const validation = { vary: policy.kind === "public" ? policy.vary : undefined, memo: options.memo, key: options.route ?? "" };
    const known = knownBodies.get(response);
    if (known !== undefined) return validatedText(request, response, known, cacheControl, validation);
    return validated(request, response, cacheControl, validation);
  }
  // Errors are not kept, except a public read's 400 and 404 for a short while (both say so again at once, cheaply).
  const errorAge = Math.min(maxAge, ERROR_SECONDS);
  if (policy.kind === "public" && (status === 400 || status === 404) && errorAge > 0) {
    return withCacheControl(response, `public, max-age=${errorAge}`);
  }
  return withCacheControl(response, "no-store");
}

/** One route's policy in a table: its method and paths (`{name}` for a path parameter). */
export type CachePolicyEntry = { readonly method: string; readonly paths: readonly string[]; readonly cache: CachePolicy };

/** A path the app does not serve: its 404 is kept a short while (a scan asks again and again). */
const UNKNOWN_PATH: CachePolicy = CACHE.static;

/**
 * The policy of each request, from the table of routes: the route's own for a method and path it declares; no-store
 * for another method on a declared path (405); `private` for any path of the session area (`isPrivate`), served or
 * not; the unknown path's otherwise.
 */
export function createPolicyLookup(entries: readonly CachePolicyEntry[], isPrivate: (path: string) => boolean) {
  const exact = new Map<string, CachePolicy>();
  const knownPaths = new Set<string>();
  const patterns: { readonly method: string; readonly shape: readonly string[]; readonly cache: CachePolicy }[] = [];
  for (const entry of entries) {
    const method = entry.method.toUpperCase();
    for (const path of entry.paths) {
      if (path.includes("{")) patterns.push({ method, shape: path.split("/"), cache: entry.cache });
      else {
        exact.set(`${method} ${path}`, entry.cache);
        knownPaths.add(path);
      }
    }
  }
  const matches = (shape: readonly string[], parts: readonly string[]) =>
    shape.length === parts.length && shape.every((p, i) => p.startsWith("{") ? parts[i] !== "" : p === parts[i]);
  return (method: string, path: string): CachePolicy => {
    const own = exact.get(`${method} ${path}`);
    if (own !== undefined) return own;
    if (isPrivate(path)) return CACHE.private;
    if (knownPaths.has(path)) return CACHE.noStore;
    if (patterns.length > 0) {
      const parts = path.split("/");
      let known = false;
      for (const pattern of patterns) {
        if (!matches(pattern.shape, parts)) continue;
        if (pattern.method === method) return pattern.cache;
        known = true;
      }
      if (known) return CACHE.noStore;
    }
    return UNKNOWN_PATH;
  };
}

/** Words for a policy's `Cache-Control` on a 200, for the API description (the ages as the configuration sets them). */
export function describeCacheControl(policy: CachePolicy): string {
  switch (policy.kind) {
    case "private":
      return "private, no-store";
    case "no-store":
      return policy.credentials === "private" ? "no-store (private, no-store with a credential)" : "no-store";
    case "revalidate":
      return "no-cache, with an ETag";
    case "public": {
      const ages = policy.freshness.map((f) =>
        f === "index" ? "INDEX_POLL_MS in seconds, rounded up" : f === "discovery" ? "DISCOVERY_CACHE_SECONDS" : `${STATIC_SECONDS}`
      );
      const age = ages.length === 1 ? ages[0]! : `the least of ${ages.join(" and ")}`;
      return `public, max-age=<s>, stale-while-revalidate=<s>, <s> = ${age} (public, no-cache when it is 0)`;
    }
  }
}

/** Whether a policy's 200 carries an `ETag` (and a matching `If-None-Match` gets a 304). */
export function isRevalidated(policy: CachePolicy): boolean {
  return policy.kind === "public" || policy.kind === "revalidate";
}
