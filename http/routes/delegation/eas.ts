import { Elysia } from "elysia";
import type { DelegatedAttest } from "../../../domain/delegation/mod.ts";
import { parseDelegatedRequest } from "../../../domain/delegation/mod.ts";
import type { BatchRefusal as ChainBatchRefusal, ReadChainNonce, ReadNonce, WriteChainNames } from "../../../domain/delegation/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { elapsedSince, errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS } from "../../models.ts";
import { clientKeyFor, compileRequestCheck, parseJsonBody, queryOf, readBodyText, requestDetail } from "../request.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import type { Idempotency } from "../../../domain/idempotency/mod.ts";
import type { DelegatedRequest } from "../../../domain/delegation/mod.ts";
import { createRelaySubmission, type RelayWrite } from "../../../domain/submissions/mod.ts";
import { fail, ok, type Fail, type Ok, type Result } from "../../../domain/result.ts";
import { namedChain } from "../../../domain/chains/mod.ts";
import type { KeccakHex } from "../../../domain/address.ts";
import type { RateLimiter } from "../../../domain/rate_limit.ts";
import { acceptedAnswer, type RelayTracking, submissionAnswer } from "./_tracking.ts";
import { relayAnswer, relayWrite } from "./_relay_answer.ts";
import { type BatchRelayResult, batchRequests, batchSend, batchWords } from "./_batch.ts";

/** What the EAS routes need. */
export type EasRoutesDeps = {
  /** One chain's nonce (`createReadNonce`), or every served chain's by `chainId` (decisions §30). */
  readonly readNonce: ReadNonce | ReadChainNonce;
  /** With several chains, `batchRefusal` refuses a batch of no served chain or of two, before anything is recorded. */
  readonly delegatedAttest: DelegatedAttest & { readonly batchRefusal?: ChainBatchRefusal | undefined; readonly chainNames?: WriteChainNames | undefined };
  readonly chainName: string;
  readonly chainId: number;
  readonly easAddress: string;
  readonly log: Logger;
  /** The client address of a request (the public relay's per-address limit). */
  readonly clientAddress?: ClientAddressOf | undefined;
  /** Idempotency keys of writes (decisions §23), per client address here; absent: `Idempotency-Key` is ignored. */
  readonly idempotency?: Idempotency | undefined;
  /** Submission records (decisions §23): answers carry `submissionId`, `Prefer: respond-async` is honoured. */
  readonly tracking?: RelayTracking | undefined;
  /**
   * Nonce reads per client address (`NONCE_RATE_PER_MINUTE`): each costs an `eth_call`, so past it 429 RATE_LIMITED
   * with Retry-After, before any call; a refused query takes no turn. Absent: unlimited (tests of other things).
   */
  readonly nonceRate?: RateLimiter | undefined;
  /**
   * Writes under an `Idempotency-Key` per client address, checked before the key is stored: past it 429 RATE_LIMITED
   * (not stored). The public relay has no account, and every answer once its checks began is kept for 24 hours, so
   * one address sent 5,000 refused requests under new keys and left 5,000 rows (about 1 KB each) with no limit met.
   * A retry its key answers (a kept answer, 422, 409) takes one of `keyLookupRate` instead (WriteRate in
   * domain/submissions/relay_submission.ts). Absent: unlimited.
   */
  readonly keyRate?: RateLimiter | undefined;
  /**
   * The client address's lookups of keys answered without a turn of `keyRate`: a retry replayed from its key, and past
   * `keyRate` the one read of a key's record that finds a kept answer (or finds none: 429). Found by review: the turn
   * was taken before the lookup, so retries spent the address's writes and, at its limit, got 429 instead of their
   * kept answer. Absent: every keyed write takes a turn of `keyRate` first (as before).
   */
  readonly keyLookupRate?: RateLimiter | undefined;
  /** keccak-256 for the addresses' checksums when the body is read (the service's in WebAssembly; absent: viem's). */
  readonly keccak256?: KeccakHex | undefined;
  /**
   * `PUBLIC_RELAY=off`: the refusal (403 PUBLIC_RELAY_DISABLED) of a request read, before a key is stored or a turn
   * taken. The batch route answered 200 with each item refused, kept under the key for a day. Absent: open.
   */
  readonly publicRelayClosed?: (() => { readonly code: string; readonly message: string } | undefined) | undefined;
};

/** The paths of the nonce route. */
export const NONCE_PATHS = ["/api/eas/nonce", "/v1/nonce"] as const;
/** The paths of the delegated-attest route. */
export const DELEGATED_ATTEST_PATHS = ["/api/eas/delegated-attest", "/v1/delegated-attest"] as const;
/** The path of the public relay's batches (decisions §23). */
export const DELEGATED_ATTEST_BATCH_PATH = "/v1/delegated-attest/batch";
/** Paths whose every answer, errors included, carries `elapsed` (decisions §2). */
export const EAS_PATHS: readonly string[] = [...NONCE_PATHS, ...DELEGATED_ATTEST_PATHS, DELEGATED_ATTEST_BATCH_PATH];

/** The nonce query's check, with the reference's wording; the private relay's nonce route checks with it too. */
export const nonceQuery = compileRequestCheck(REQUEST_MODELS.nonce.query, {
  // The wording of the reference (reference_behaviour §7).
  explain: (query) => {
    const { attester, chainId, chain } = query as { attester?: unknown; chainId?: unknown; chain?: unknown };
    if (attester === undefined || attester === "") return "Missing required parameter: attester";
    if (typeof attester !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(attester)) return "Invalid attester address format";
    if (Array.isArray(chainId)) return "chainId must be given once";
    if (Array.isArray(chain)) return "chain must be given once";
    return "Invalid attester address format";
  },
});
/**
 * The single route's body read once into the typed request the use case takes (issue 47 item 2): JSON, then the domain
 * parser, whose refusals are the published model's (the model refuses only what the parser refuses).
 */
function readDelegated(body: unknown, hash: KeccakHex | undefined): Ok<DelegatedRequest> | Fail<string> {
  const json = parseJsonBody(body);
  if (!json.ok) return fail(json.code, json.message);
  return parseDelegatedRequest(json.value, hash);
}

type SingleInput = { readonly clientKey: string; readonly request: Ok<DelegatedRequest> | Fail<string> };
type SingleResult = Awaited<ReturnType<DelegatedAttest>> | (Fail<string> & { readonly unavailable?: undefined; readonly retryAfterSeconds?: undefined });
type BatchRefusal = { readonly code: string; readonly message: string; readonly status: number };
type BatchInput = { readonly clientKey: string; readonly requests: readonly unknown[] } | { readonly refused: BatchRefusal };
type BatchResult = BatchRelayResult | { readonly ok: false; readonly code: string; readonly refused: BatchRefusal };

const batchBody = compileRequestCheck(REQUEST_MODELS.delegatedAttestBatch.body, {
  explain: (body) => {
    const read = batchRequests(body);
    return read.ok ? undefined : read.message;
  },
});

/** The nonce and delegated-attest routes, under their backend and gateway paths, and the public relay's batches. */
/** A batch body read into its requests, or refused as a whole (each request is the single route's body). */
/** A batch body read into its requests, or refused as a whole (each request is the single route's body). */
function readBatch(deps: EasRoutesDeps, body: unknown, clientKey: string): BatchInput {
  if (deps.delegatedAttest.batch === undefined) return { refused: { code: "NOT_FOUND", message: "This deployment sends no batches", status: 404 } };
  const parsed = batchBody.readJson(body);
  if (!parsed.ok) return { refused: { code: parsed.code, message: parsed.message, status: statusOf(parsed.code) } };
  // Decisions §30: a batch holds one served chain, refused whole (400) before anything is recorded or spent.
  const refused = deps.delegatedAttest.batchRefusal?.(parsed.value.requests);
  if (refused !== undefined) return { refused: { code: refused.code, message: refused.message, status: statusOf(refused.code) } };
  const closed = deps.publicRelayClosed?.();
  if (closed !== undefined) return { refused: { ...closed, status: 403 } };
  // Each request is charged to the client's and its attester's limits as the single route charges it (decisions §23).
  return { clientKey, requests: parsed.value.requests };
}

export function easRoutes(deps: EasRoutesDeps) {
  const failure = (started: number, code: string, message: string, details?: string, status = statusOf(code), extra: Record<string, unknown> = {}) =>
    json({ ...errorBody(code, message, details), ...extra, elapsed: elapsedSince(started) }, status);
  const internalError = (started: number, route: string, error: unknown) => {
    deps.log.error(`${route}_error`, { error: error instanceof Error ? error.message : String(error) });
    return failure(started, "INTERNAL_ERROR", "Internal error");
  };

  const nonce = async ({ request }: { request: Request }) => {
    const started = performance.now();
    try {
      const query = queryOf(request.url);
      if (!nonceQuery.check(query)) return failure(started, "INVALID_INPUT", nonceQuery.explain(query));
      const turn = deps.nonceRate?.take(clientKeyFor(deps.clientAddress, request));
      if (turn !== undefined && !turn.allowed) {
        const refused = failure(started, "RATE_LIMITED", "Too many nonce reads from this address; try again later");
        refused.headers.set("retry-after", String(turn.retryAfterSeconds));
        return refused;
      }
      const chain = nonceChainOf(query);
      if (!chain.ok) return failure(started, chain.code, chain.message);
      const result = await deps.readNonce(query.attester, chain.value);
      if (!result.ok) return failure(started, result.code, result.message);
      return json({ ...nonceRecord(result.value, deps), elapsed: elapsedSince(started) });
    } catch (error) {
      return internalError(started, "nonce", error);
    }
  };

  const refuseWith = (started: number) => (code: string, message: string, headers?: Record<string, string>) => {
    const answer = failure(started, code, message);
    for (const [name, value] of Object.entries(headers ?? {})) answer.headers.set(name, value);
    return answer;
  };

  // One write, one use case (issue 47 item 2): idempotency, submission record, relay and settlement run in the domain;
  // this route reads the request into a typed value and words the outcome.
  const single = createRelaySubmission<SingleInput, SingleResult>(deps, (input, onSubmitting) =>
    input.request.ok ? deps.delegatedAttest(input.request.value, { clientKey: input.clientKey, onSubmitting }) : Promise.resolve(input.request));
  const batches = createRelaySubmission<BatchInput, BatchResult>(deps, (input, onSubmitting) => {
    if ("refused" in input) return Promise.resolve({ ok: false, code: input.refused.code, refused: input.refused });
    const batch = deps.delegatedAttest.batch!;
    return batchSend((requests, recording) => batch(requests, { clientKey: input.clientKey, onSubmitting: recording }))(input.requests, onSubmitting);
  });

  const delegatedAttest = async ({ body, request }: { body: unknown; request: Request }) => {
    const started = performance.now();
    try {
      const clientKey = clientKeyFor(deps.clientAddress, request);
      // The public relay has no account: a key belongs to the client address (decisions §23).
      const read = relayWrite(request, `client:${clientKey}`, body, { clientKey, request: readDelegated(body, deps.keccak256) });
      if (!read.ok) return failure(started, read.code, read.message);
      const closed = read.write.input.request.ok ? deps.publicRelayClosed?.() : undefined;
      if (closed !== undefined) return failure(started, closed.code, closed.message, undefined, 403);
      const run = await single(keyTurns(read.write, clientKey));
      return await relayAnswer(run, {
        refuse: refuseWith(started),
        resumed: (submissionId, view) => submissionAnswer(submissionId, view, { chain: writeChain(read.write.input), elapsed: elapsedSince(started) }),
        accepted: (submissionId) => acceptedAnswer(submissionId, { chain: writeChain(read.write.input), elapsed: elapsedSince(started) }),
        answered: (result, submissionId) => attested(started, result, submissionId),
      });
    } catch (error) {
      return internalError(started, "delegated_attest", error);
    }
  };

  /**
   * A keyed write's turns of the client's `keyRate` (a write without a key takes none here): past them 429 before the
   * key is stored, unless the key already answers the request (WriteRate: a retry costs no turn of new work).
   */
  const keyTurns = <In>(write: RelayWrite<In>, clientKey: string): RelayWrite<In> => {
    if (write.keyed === undefined || deps.keyRate === undefined) return write;
    const message = (seconds: number) => `Too many writes under an Idempotency-Key from this address; try again in ${seconds} s`;
    return { ...write, rate: { key: clientKey, turns: deps.keyRate, lookups: deps.keyLookupRate, message } };
  };

  // The chain a write goes to (decisions §30), for the answers given before the relay names it.
  const writeChain = (input: SingleInput) =>
    (input.request.ok ? deps.delegatedAttest.chainNames?.write(input.request.value) : undefined) ?? deps.chainName;
  const batchChain = (input: BatchInput) =>
    ("requests" in input ? deps.delegatedAttest.chainNames?.batch(input.requests) : undefined) ?? deps.chainName;

  const attested = (started: number, result: SingleResult, submissionId: string | undefined) => {
    const withId = submissionId === undefined ? {} : { submissionId };
    if (!result.ok) {
      if (statusOf(result.code) >= 500) deps.log.warn("delegated_attest_failed", { code: result.code });
      // A wallet that cannot pay is the service's own state, not a failed submission: 503 (decisions §15).
      const answer = failure(started, result.code, result.message, result.details, result.unavailable ? 503 : statusOf(result.code), withId);
      if (result.retryAfterSeconds !== undefined) answer.headers.set("retry-after", String(result.retryAfterSeconds));
      return answer;
    }
    deps.log.info("delegated_attest", { txHash: result.value.txHash, uid: result.value.uid });
    return json({
      success: true,
      txHash: result.value.txHash,
      uid: result.value.uid,
      blockNumber: Number(result.value.blockNumber),
      chain: result.value.chainName ?? deps.chainName,
      ...withId,
      elapsed: elapsedSince(started),
    });
  };

  const delegatedAttestBatch = async ({ body, request }: { body: unknown; request: Request }) => {
    const started = performance.now();
    try {
      const clientKey = clientKeyFor(deps.clientAddress, request);
      const input = readBatch(deps, body, clientKey);
      // A closed relay answers before a key is stored or a turn taken, as the single route does.
      if ("refused" in input && input.refused.code === "PUBLIC_RELAY_DISABLED") return failure(started, input.refused.code, input.refused.message, undefined, 403);
      const read = relayWrite(request, `client:${clientKey}`, body, input);
      if (!read.ok) return failure(started, read.code, read.message);
      const run = await batches(keyTurns(read.write, clientKey));
      const words = batchWords(refuseWith(started), () => ({ chain: batchChain(read.write.input), elapsed: elapsedSince(started) }));
      return await relayAnswer(run, {
        ...words,
        resumed: (submissionId, view) => batchWords(refuseWith(started), () => ({ elapsed: elapsedSince(started) })).resumed(submissionId, view),
        answered: (result, submissionId) => {
          if ("refused" in result) return failure(started, result.refused.code, result.refused.message, undefined, result.refused.status);
          const outcome = result.batch;
          deps.log.info("delegated_attest_batch", { txHash: outcome.txHash, requests: outcome.results.length, sent: outcome.results.filter((r) => r.ok).length });
          // The chain the batch was sent on (decisions §30).
          const chain = result.batch.chainName ?? deps.chainName;
          return batchWords(refuseWith(started), () => ({ chain, elapsed: elapsedSince(started) })).answered(result, submissionId);
        },
      });
    } catch (error) {
      return internalError(started, "delegated_attest_batch", error);
    }
  };

  const app = new Elysia({ name: "eas-routes" });
  for (const path of NONCE_PATHS) app.get(path, nonce, { detail: requestDetail(REQUEST_MODELS.nonce) });
  for (const path of DELEGATED_ATTEST_PATHS) {
    app.post(path, delegatedAttest, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.delegatedAttest) });
  }
  app.post(DELEGATED_ATTEST_BATCH_PATH, delegatedAttestBatch, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.delegatedAttestBatch) });
  return app;
}

/**
 * The chain a nonce query names (decisions §30): `chainId`, or `chain` as every other public read names it (both
 * only when they name the same chain); absent, the default chain. The query passed `nonceQuery`, so each is given
 * at most once. A `chain` the nonce route ignored would answer another chain's nonce, and a signature over it fails.
 */
export function nonceChainOf(query: Record<string, string | string[]>): Result<string | undefined, "INVALID_INPUT"> {
  return namedChain(typeof query.chain === "string" ? query.chain : undefined, typeof query.chainId === "string" ? query.chainId : undefined);
}

/** A nonce answer: the chain it was read on when the read names it, else the deployment's one chain. */
export function nonceRecord(read: bigint | { readonly nonce: bigint; readonly chainId: number; readonly easAddress: string; readonly chainName: string }, deps: Pick<EasRoutesDeps, "chainName" | "chainId" | "easAddress">) {
  if (typeof read === "bigint") return { nonce: read.toString(), chain: deps.chainName, chainId: deps.chainId, easAddress: deps.easAddress };
  return { nonce: read.nonce.toString(), chain: read.chainName, chainId: read.chainId, easAddress: read.easAddress };
}
