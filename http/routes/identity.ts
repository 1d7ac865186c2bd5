import { Elysia } from "elysia";
import { identifierListRefusal, resolveIdentity } from "../../domain/identity/mod.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { REQUEST_MODELS, IdentityResolveResponse, type RouteDoc } from "../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "./request.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";

/** The paths of identity-resolve. */
export const IDENTITY_RESOLVE_PATHS = ["/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"] as const;
/** The body's check: the list bound the MCP tool resolve_identities checks too (domain/identity), in the same words. */
const identifiersBody = compileRequestCheck(REQUEST_MODELS.identityResolve.body, { explain: identifierListRefusal });

/** Limits of a cache of identity-resolve (its records, its answers). */
export type RecordCacheLimits = {
  /** Total size of the kept keys (two bytes a UTF-16 unit) and values (their bytes), plus a per-entry overhead. */
  readonly maxBytes: number;
  /** Longer keys are worked out every time: they are rare, and would crowd out the common ones. */
  readonly maxKeyLength: number;
};

/** 16 MiB of keys and records; identifiers up to 512 characters. */
export const DEFAULT_CACHE_LIMITS: RecordCacheLimits = { maxBytes: 16 * 1024 * 1024, maxKeyLength: 512 };

/** What one cached entry is charged besides its strings: the Map slot and the two string headers. */
const ENTRY_OVERHEAD = 96;

/** A cache of values bounded by bytes, oldest dropped first. */
export type BoundedCache<V> = {
  readonly get: (key: string) => V | undefined;
  readonly set: (key: string, value: V) => void;
  /** Whether a value under `key` could be kept at all (its length within `maxKeyLength`). */
  readonly keeps: (key: string) => boolean;
  /** The bytes charged for what is kept now. */
  readonly bytes: () => number;
  readonly size: () => number;
};

/** A cache of serialized identity records (UTF-8 JSON) by identifier. */
export type RecordCache = BoundedCache<Uint8Array>;

/**
 * A cache bounded by bytes: a key costs two bytes a UTF-16 unit, a value `sizeOf` bytes, an entry
 * {@link ENTRY_OVERHEAD} more; keys over `maxKeyLength` and values over the whole bound are never kept.
 */
function createBoundedCache<V>(limits: RecordCacheLimits, sizeOf: (value: V) => number): BoundedCache<V> {
  const entries = new Map<string, V>();
  let bytes = 0;
  const cost = (key: string, value: V) => 2 * key.length + sizeOf(value) + ENTRY_OVERHEAD;
  return {
    get: (key) => entries.get(key),
    keeps: (key) => key.length <= limits.maxKeyLength,
    set(key, value) {
      if (key.length > limits.maxKeyLength || entries.has(key)) return;
      const charge = cost(key, value);
      if (charge > limits.maxBytes) return;
      while (bytes + charge > limits.maxBytes) {
        const [oldestKey, oldestValue] = entries.entries().next().value!;
        entries.delete(oldestKey);
        bytes -= cost(oldestKey, oldestValue);
      }
      entries.set(key, value);
      bytes += charge;
    },
    bytes: () => bytes,
    size: () => entries.size,
  };
}

/** Builds the record cache of identity-resolve. */
export function createRecordCache(limits: RecordCacheLimits = DEFAULT_CACHE_LIMITS): RecordCache {
  return createBoundedCache<Uint8Array>(limits, (record) => record.byteLength);
}

/** Whole 200 answers (as Blobs, which a Response shares instead of copying) by the body's exact text. */
export type AnswerCache = BoundedCache<Blob>;

/** 8 MiB of bodies and answers; bodies up to 16,384 characters (100 identifiers of about 160). */
export const DEFAULT_ANSWER_CACHE_LIMITS: RecordCacheLimits = { maxBytes: 8 * 1024 * 1024, maxKeyLength: 16 * 1024 };

/** Builds the answer cache of identity-resolve. */
export function createAnswerCache(limits: RecordCacheLimits = DEFAULT_ANSWER_CACHE_LIMITS): AnswerCache {
  return createBoundedCache<Blob>(limits, (answer) => answer.size);
}

const encoder = new TextEncoder();
const OPEN = encoder.encode('{"identities":[');
const CLOSE = encoder.encode("]}");
const COMMA = 0x2c;

/** Answers up to this size are assembled in one buffer kept for the next request; larger ones in a buffer of their own. */
const SCRATCH_BYTES = 256 * 1024;

/**
 * `{"identities":[r1,r2,…]}` assembled from the records' bytes; `size` is their total. The bytes are written into
 * `scratch` when they fit: a Response or Blob copies a typed array's bytes when it is made (http/identity_routes_test.ts
 * checks that answers made one after another keep their own bytes), so the same buffer serves every request and the answer costs no allocation of its own for the
 * collector to reclaim (issue 28: a fresh 17.7 KB buffer per request measured a fifth of the route's CPU).
 */
function identitiesBody(records: readonly Uint8Array[], size: number, scratch: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  const length = OPEN.byteLength + size + Math.max(0, records.length - 1) + CLOSE.byteLength;
  const out = length <= scratch.byteLength ? scratch.subarray(0, length) : new Uint8Array(length);
  out.set(OPEN, 0);
  let offset = OPEN.byteLength;
  for (let i = 0; i < records.length; i++) {
    if (i > 0) out[offset++] = COMMA;
    out.set(records[i]!, offset);
    offset += records[i]!.byteLength;
  }
  out.set(CLOSE, offset);
  return out;
}

/** identity-resolve's answer to the body {@link readBodyText} gave: 200 with one record per identifier, or the refusal. */
export type IdentityResolve = (body: unknown) => Response;

/**
 * Builds identity-resolve's answer. Resolution is a pure function of the string, so each identifier's serialized
 * record is kept, as UTF-8 bytes, in a cache bounded by bytes: clients ask for the same identifiers again and again.
 * The answer is assembled from those bytes (measured: half the cost of joining strings and encoding the result).
 *
 * The answer is then a pure function of the body's text, so each 200 answer is kept too, by that exact text, in a
 * second cache bounded by bytes (issue 28): a list asked for again (a page of attestations shown to each of its
 * visitors, a client polling its list) is answered without parsing it again, by one lookup of the text, as a raw
 * server answers bytes it computed beforehand. Any other text, a byte apart or the same list spaced otherwise, is
 * parsed, checked and assembled from the records; refusals are not kept. `answers: null` turns it off (the
 * benchmark's measure of the assembled answer).
 *
 * `headers` are added to every answer, refusals included (the app gives its CORS headers, so that the same answer
 * serves the Elysia route and the server's edge, http/edge_routes.ts). Everything per request is a plain loop over
 * values made once: the compiled check, the header set, the caches (issue 28).
 */
export function createIdentityResolve(
  options: {
    cache?: RecordCache | undefined;
    answers?: AnswerCache | null | undefined;
    headers?: Readonly<Record<string, string>> | undefined;
  } = {},
): IdentityResolve {
  const cache = options.cache ?? createRecordCache();
  const answers = options.answers === null ? undefined : options.answers ?? createAnswerCache();
  const extra = options.headers ?? {};
  // A Headers object is copied by each Response more cheaply than a plain object is converted.
  const init = { headers: new Headers({ "content-type": "application/json; charset=utf-8", ...extra }) };
  const scratch = new Uint8Array(SCRATCH_BYTES);
  return (body) => {
    // A body too long to be kept is neither looked up (hashing it) nor copied for the cache.
    const keep = answers !== undefined && typeof body === "string" && answers.keeps(body);
    if (keep) {
      const kept = answers.get(body);
      if (kept !== undefined) return new Response(kept, init);
    }
    const parsed = identifiersBody.readJson(body);
    if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code), extra);
    const identifiers = parsed.value.identifiers;
    const records = new Array<Uint8Array>(identifiers.length);
    let size = 0;
    for (let i = 0; i < identifiers.length; i++) {
      const identifier = identifiers[i]!;
      let record = cache.get(identifier);
      if (record === undefined) {
        record = encoder.encode(JSON.stringify(resolveIdentity(identifier)));
        cache.set(identifier, record);
      }
      records[i] = record;
      size += record.byteLength;
    }
    const answer = identitiesBody(records, size, scratch);
    if (!keep) return new Response(answer, init);
    // The Blob takes its own copy of the bytes (the scratch buffer serves the next request), and every Response
    // made of it shares that copy.
    const kept = new Blob([answer]);
    answers.set(body, kept);
    return new Response(kept, init);
  };
}

/**
 * identity-resolve under its three paths: display labels only, never used for authorization. `resolve` is the
 * answer the app shares with its edge; without it, one is built on `cache`.
 */
export function identityRoutes(options: { cache?: RecordCache | undefined; resolve?: IdentityResolve | undefined } = {}) {
  const resolve = options.resolve ?? createIdentityResolve({ cache: options.cache });
  const handler = ({ body }: { body: unknown }) => resolve(body);
  const app = new Elysia({ name: "identity-routes" });
  for (const path of IDENTITY_RESOLVE_PATHS) app.post(path, handler, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.identityResolve) });
  return app;
}

/** identity-resolve: route declarations, gathered by http/route_docs.ts. */
export const IDENTITY_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: IDENTITY_RESOLVE_PATHS,
    edge: "answer",
    auth: "public",
    cache: CACHE.noStore,
    summary: "Canonical identifiers and display labels (display only, not for authorization)",
    request: REQUEST_MODELS.identityResolve,
    responses: {
      200: { description: "One record per input, in order", schema: IdentityResolveResponse },
      400: err("INVALID_JSON, INVALID_INPUT"),
      405: err("METHOD_NOT_ALLOWED (Allow header)"),
      413: err("PAYLOAD_TOO_LARGE: body over 8 MiB"),
    },
  },
];
