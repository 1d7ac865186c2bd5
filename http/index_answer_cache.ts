/**
 * Whole answers of the public reads answered from the attestation index (artifact trust, key status, the attestation
 * list; decisions §21, issue 34), kept per instance and keyed by the index's poll generation: "an answer cache keyed by
 * the index head … it must never serve an answer older than the head it names".
 *
 * - **The generation** is the shared index's head as the store says it (block, hash) and when the follower last
 *   completed a poll (`checkedAtMs`): a completed poll or a moved head (a new block, a rewind) is a new generation, and
 *   every answer of an older one is dead (dropped at once). Each request reads it from the store (the head the domain
 *   itself reads first), so every instance, follower or not, sees the poll another instance completed as soon as the
 *   store holds it. The reads of concurrent requests are batched: a request takes the first head read that starts
 *   after it arrived (one in flight at a time), so it never takes a generation older than the one it would have read
 *   alone, and a burst of reads costs one query.
 * - **Stale first.** The same freshness rule as the reads (`INDEX_STALL_SECONDS`, domain/index/store_reads.ts
 *   `isFresh`) is applied to that head on every request before a kept answer is served: when it fails, nothing kept is
 *   served and the read runs, which answers 503 `INDEX_STALE` itself. A kept answer never hides a stalled index.
 * - **The wall clock.** Some answers depend on now as well as on the head: key status evaluated at now (`at`
 *   omitted), artifact trust's validity windows (`effectiveAt`, `expiresAt`), live DNS and did.json evidence through
 *   the discovery cache. The clock is not part of what `asOf` names, so instead a kept answer also lives at most one
 *   poll interval (`INDEX_POLL_MS`) from when it was computed, and for a route with live evidence at most
 *   `DISCOVERY_CACHE_SECONDS` (0: those routes are never kept). That is the `max-age` every downstream cache may keep
 *   the same answer anyway (http/http_cache.ts), and on a healthy deployment the generation changes sooner (each poll);
 *   it matters when the follower stops polling: until the index is stale, an answer about a validity window is never
 *   more than one poll behind the clock.
 * - **What is kept**: a 200's bytes and their ETag (weak, over the answer without `asOf`: {@link indexAnswer}), by route (both paths of a route give the same bytes), its
 *   normalized query (the parameters the route reads, in a fixed order; others are ignored by the route too) and the
 *   generation. No request header is part of the key: these answers depend on none (no `Vary`, credentials ignored,
 *   CORS the same for every origin). An answer is kept only when its `asOf` names the generation the request read (a
 *   poll completed while it was computed: served, not kept). Errors, 503 `INDEX_STALE` included, are never kept.
 * - **Within one generation** identical reads are one lookup: concurrent misses of one key wait for the first.
 * - **Bounded**: at most `maxBytes` in all (a text counted two bytes a unit), an answer above `maxEntryBytes` not
 *   kept; the oldest kept first out.
 */
import type { AsOf } from "../domain/index/mod.ts";
import { isFresh } from "../domain/index/mod.ts";
import type { IndexHead } from "../ports/attestation_index.ts";
import type { Clock } from "../ports/clock.ts";
import { stringify } from "./errors.ts";
import { strongEtag, weakEtag, withKnownBody } from "./http_cache.ts";

/** The default bound of all kept answers. */
export const DEFAULT_INDEX_ANSWER_BYTES = 32 * 1024 * 1024;
/** The largest answer kept (a list of 100 attestations is about 100 KB). */
export const MAX_INDEX_ANSWER_BYTES = 1024 * 1024;

/**
 * What a read computed: a 200's text and the `asOf` it names, or any other answer (never kept). `validator`: the
 * answer's text without `asOf` and its other evaluation times, over which its weak ETag is computed (decisions §21
 * amended: the same across polls while the answer is); absent, the ETag is a strong one of `text`.
 */
export type ComputedAnswer =
  | { readonly ok: true; readonly text: string; readonly asOf: AsOf | undefined; readonly validator?: string | undefined }
  | { readonly ok: false; readonly response: Response };

/** The ETag of a computed 200: weak over its validator when it has one, else strong over its text. */
function etagOf(computed: { readonly text: string; readonly validator?: string | undefined }): string {
  return computed.validator === undefined ? strongEtag(computed.text) : weakEtag(computed.validator);
}

/**
 * The 200 of a public read of the index (decisions §21 amended, "Revalidation"): its text, its `asOf`, and its
 * validator, the same value with `asOf` left out and, through `timeless`, any other field that only says when the
 * answer was evaluated (key status's `at` and `endpointEvidence.checkedAt`, which move with the clock): so a client
 * holding the answer of an earlier poll revalidates it (304) for as long as what it says is unchanged. The validator
 * is one more `JSON.stringify` of the value, once per computed answer (a kept answer is not computed again).
 */
export function indexAnswer<T extends { readonly asOf?: AsOf | undefined }>(
  value: T,
  timeless: (rest: Omit<T, "asOf">) => unknown = (rest) => rest,
): ComputedAnswer {
  const { asOf, ...rest } = value;
  return { ok: true, text: stringify(value), asOf, validator: stringify(timeless(rest)) };
}

/** One cacheable read: its route's name and its normalized query. */
export type AnswerKey = {
  /** The route, the same for its paths (`artifact-trust`, `key-status`, `attestations`). */
  readonly route: string;
  /** The parameters the route reads, in a fixed order (undefined for an absent one). */
  readonly query: readonly (string | undefined)[];
  /** Whether the answer carries live DNS or did.json evidence (kept at most `DISCOVERY_CACHE_SECONDS`). */
  readonly live?: boolean | undefined;
};

/** What the cache needs. */
export type IndexAnswerCacheDeps = {
  /** The shared index's head as the store holds it now (`IndexStore.head`). */
  readonly head: () => Promise<IndexHead | undefined>;
  readonly clock: Clock;
  /** `INDEX_STALL_SECONDS`. */
  readonly stallSeconds: number;
  /** `INDEX_POLL_MS`: the longest a kept answer lives. */
  readonly pollMs: number;
  /** `DISCOVERY_CACHE_SECONDS`: the longest an answer with live evidence lives (0: never kept). */
  readonly discoverySeconds: number;
  /** The bound of all kept answers ({@link DEFAULT_INDEX_ANSWER_BYTES}). */
  readonly maxBytes?: number | undefined;
  /** The largest answer kept ({@link MAX_INDEX_ANSWER_BYTES}). */
  readonly maxEntryBytes?: number | undefined;
  /**
   * `INDEX_HEAD_REUSE_MS`: how long one head read of the store serves the requests after it (0: each burst reads
   * its own). A poll this instance completes ends it at once ({@link IndexAnswerCache.headChanged}).
   */
  readonly headReuseMs?: number | undefined;
};

/** The answer cache of the index reads. */
export type IndexAnswerCache = {
  /** The answer to `key`: kept for the current generation, or computed by `compute` (and kept when it may be). */
  readonly answer: (key: AnswerKey, compute: () => Promise<ComputedAnswer>) => Promise<Response>;
  /** What is kept now (tests, metrics). */
  readonly size: () => { readonly entries: number; readonly bytes: number };
  /** The store's head has moved (a poll this instance completed): the next request reads it again. */
  readonly headChanged: () => void;
  /**
   * The kept answer to `key`, synchronously, when one is current with nothing to read first: the reused head
   * (`INDEX_HEAD_REUSE_MS`) is fresh and names the kept answers' generation, and the answer has not outlived its
   * lifetime; otherwise undefined, and the request takes {@link IndexAnswerCache.answer}'s way. For the server's
   * edge (http/edge_routes.ts), which answers such a request without Elysia.
   */
  readonly peek: (key: AnswerKey, headers?: Readonly<Record<string, string>> | undefined) => Response | undefined;
};

/** A kept answer: its text, its UTF-8 bytes (encoded once, as a server of fixed bytes keeps them), its ETag. */
type Entry = { readonly text: string; readonly bytes: Uint8Array<ArrayBuffer>; readonly etag: string; readonly size: number; readonly expiresAtMs: number };

const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": "application/json; charset=utf-8" };
const encoder = new TextEncoder();

/** The generation a head is: block, hash and the poll it was seen at. */
function generationOf(head: IndexHead): string {
  return `${head.blockNumber}:${head.blockHash}:${head.checkedAtMs}`;
}

/** Whether `asOf` names `head` (the seconds of its poll); an answer without one names nothing. */
function names(asOf: AsOf | undefined, head: IndexHead): boolean {
  return asOf !== undefined && BigInt(asOf.blockNumber) === head.blockNumber && asOf.blockHash === head.blockHash &&
    asOf.checkedAt === Math.floor((head.checkedAtMs ?? 0) / 1000);
}

/**
 * A kept answer as a fresh Response of its bytes, its ETag known (http/http_cache.ts does not hash it again); `headers`
 * (the JSON content type by default) are its headers.
 */
function served(entry: Entry, headers: Readonly<Record<string, string>> = JSON_HEADERS): Response {
  return withKnownBody(new Response(entry.bytes, { headers }), entry.text, entry.etag);
}

/**
 * Head reads batched: a caller takes the first read that starts after it called, one read in flight at a time (the
 * callers that arrived during a read share the next one). With `reuseMs` above 0, a read that started at most that
 * long ago also serves (the change signal of this instance's own polls, `forget`, ends it early).
 */
function batchedHeads(head: () => Promise<IndexHead | undefined>, clock: Clock, reuseMs: number) {
  let inFlight: Promise<unknown> | undefined;
  let next: Promise<IndexHead | undefined> | undefined;
  let last: { readonly head: IndexHead | undefined; readonly startedMs: number } | undefined;
  /** Bumped by `forget`: a read that started before it is not reused. */
  let epoch = 0;
  const start = (): Promise<IndexHead | undefined> => {
    const startedMs = clock.nowMs();
    const startedEpoch = epoch;
    const read = head();
    // The next read starts once this one is done, whether it answered or failed.
    inFlight = read.then((h) => {
      if (reuseMs > 0 && startedEpoch === epoch) last = { head: h, startedMs };
    }, () => undefined).finally(() => {
      inFlight = undefined;
    });
    return read;
  };
  return {
    read(): Promise<IndexHead | undefined> {
      if (last !== undefined && clock.nowMs() - last.startedMs < reuseMs) return Promise.resolve(last.head);
      if (inFlight === undefined) return start();
      next ??= inFlight.then(() => {
        next = undefined;
        return start();
      });
      return next;
    },
    forget() {
      epoch++;
      last = undefined;
    },
    /** The head a read may take now without reading the store (within the reuse time); undefined: none. */
    reused(): IndexHead | undefined {
      return last !== undefined && clock.nowMs() - last.startedMs < reuseMs ? last.head : undefined;
    },
  };
}

/** Builds the answer cache of the index reads (one per app). */
export function createIndexAnswerCache(deps: IndexAnswerCacheDeps): IndexAnswerCache {
  const maxBytes = deps.maxBytes ?? DEFAULT_INDEX_ANSWER_BYTES;
  const maxEntryBytes = deps.maxEntryBytes ?? MAX_INDEX_ANSWER_BYTES;
  const heads = batchedHeads(deps.head, deps.clock, deps.headReuseMs ?? 0);
  /** The generation the kept answers belong to; a request that reads another drops them all. */
  let generation = "";
  /** The head object `generation` was last read from (a reused head is the same object: no need to name it again). */
  let generationHead: IndexHead | undefined;
  const entries = new Map<string, Entry>();
  const pending = new Map<string, Promise<Entry | undefined>>();
  let bytes = 0;

  const moveTo = (current: string) => {
    if (current === generation) return;
    generation = current;
    entries.clear();
    pending.clear();
    bytes = 0;
  };
  const keep = (id: string, entry: Entry) => {
    if (entry.size > maxEntryBytes) return;
    const old = entries.get(id);
    if (old !== undefined) {
      entries.delete(id);
      bytes -= old.size;
    }
    for (const [oldest, kept] of entries) {
      if (bytes + entry.size <= maxBytes) break;
      entries.delete(oldest);
      bytes -= kept.size;
    }
    if (bytes + entry.size > maxBytes) return;
    entries.set(id, entry);
    bytes += entry.size;
  };

  const lifetimeOf = (key: AnswerKey) => key.live === true ? Math.min(deps.pollMs, deps.discoverySeconds * 1000) : deps.pollMs;
  // JSON: a parameter given is a string, one absent is null, and no value reads as another (joined with \u0000 and
  // an absent one written \u0001, `schema=%01` had the key of no schema, and was answered that query's 200, not its 400).
  const idOf = (key: AnswerKey) => JSON.stringify([key.route, ...key.query.map((q) => q ?? null)]);

  return {
    size: () => ({ entries: entries.size, bytes }),
    headChanged: () => heads.forget(),
    peek(key, headers) {
      if (lifetimeOf(key) <= 0) return undefined;
      const head = heads.reused();
      const nowMs = deps.clock.nowMs();
      if (head === undefined || !isFresh(head, { nowMs, stallSeconds: deps.stallSeconds })) return undefined;
      if (head !== generationHead && generationOf(head) !== generation) return undefined;
      const kept = entries.get(idOf(key));
      return kept !== undefined && kept.expiresAtMs > nowMs ? served(kept, headers) : undefined;
    },
    async answer(key, compute) {
      const lifetimeMs = lifetimeOf(key);
      const run = async () => answerOf(await compute());
      if (lifetimeMs <= 0) return run();
      const head = await heads.read();
      const nowMs = deps.clock.nowMs();
      // A stalled index: nothing kept is served; the read itself answers 503 INDEX_STALE.
      if (head === undefined || !isFresh(head, { nowMs, stallSeconds: deps.stallSeconds })) return run();
      const current = generationOf(head);
      moveTo(current);
      generationHead = head;
      const id = idOf(key);
      const kept = entries.get(id);
      if (kept !== undefined) {
        if (kept.expiresAtMs > nowMs) return served(kept);
        entries.delete(id);
        bytes -= kept.size;
      }
      const waiting = pending.get(id);
      if (waiting !== undefined) {
        const entry = await waiting;
        if (entry !== undefined) return served(entry);
        return run();
      }
      let response: Response | undefined;
      const computing = (async (): Promise<Entry | undefined> => {
        const result = await compute();
        if (!result.ok) {
          response = result.response;
          return undefined;
        }
        const bytes = encoder.encode(result.text);
        const entry = { text: result.text, bytes, etag: etagOf(result), size: 2 * result.text.length + bytes.byteLength, expiresAtMs: nowMs + lifetimeMs };
        response = served(entry);
        // Kept only when it names the generation read for it, and that generation is still the current one.
        if (names(result.asOf, head) && generation === current) keep(id, entry);
        return entry;
      })();
      pending.set(id, computing);
      try {
        await computing;
      } finally {
        if (pending.get(id) === computing) pending.delete(id);
      }
      return response!;
    },
  };
}

/** The answer a read computed, not kept (no cache, or one that may not keep it): its 200 as `json` gives it, or its error. */
export function answerOf(computed: ComputedAnswer): Response {
  if (!computed.ok) return computed.response;
  const response = new Response(computed.text, { headers: { "content-type": "application/json; charset=utf-8" } });
  return withKnownBody(response, computed.text, computed.validator === undefined ? undefined : etagOf(computed));
}
