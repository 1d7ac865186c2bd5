import { Elysia } from "elysia";
import type { DelegatedAttest } from "../../../domain/delegation/mod.ts";
import { parseDelegatedRequest } from "../../../domain/delegation/mod.ts";
import type { ReadNonce } from "../../../domain/delegation/mod.ts";
import { clientKeyOf } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { elapsedSince, errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS } from "../../models.ts";
import { compileRequestCheck, queryOf, readBodyText, requestDetail } from "../request.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import type { Idempotency } from "../../../domain/idempotency/mod.ts";
import { idempotent } from "../../idempotency.ts";
import { acceptedAnswer, prefersAsync, type RelayTracking, submissionAnswer, trackedRelay } from "./_tracking.ts";
import type { IdempotentRun } from "../../idempotency.ts";
import { batchAnswer, batchRequests, batchResume } from "./_batch.ts";

/** What the EAS routes need. */
export type EasRoutesDeps = {
  readonly readNonce: ReadNonce;
  readonly delegatedAttest: DelegatedAttest;
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
    const attester = (query as { attester?: unknown }).attester;
    return attester === undefined || attester === "" ? "Missing required parameter: attester" : "Invalid attester address format";
  },
});
const delegatedBody = compileRequestCheck(REQUEST_MODELS.delegatedAttest.body, {
  // The model refuses only what the domain parser refuses, so the parser words the refusal.
  explain: (body) => {
    const parsed = parseDelegatedRequest(body);
    return parsed.ok ? undefined : parsed.message;
  },
});

const batchBody = compileRequestCheck(REQUEST_MODELS.delegatedAttestBatch.body, {
  explain: (body) => {
    const read = batchRequests(body);
    return read.ok ? undefined : read.message;
  },
});

/** The nonce and delegated-attest routes, under their backend and gateway paths, and the public relay's batches. */
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
      const result = await deps.readNonce(query.attester);
      if (!result.ok) return failure(started, result.code, result.message);
      return json({
        nonce: result.value.toString(),
        chain: deps.chainName,
        chainId: deps.chainId,
        easAddress: deps.easAddress,
        elapsed: elapsedSince(started),
      });
    } catch (error) {
      return internalError(started, "nonce", error);
    }
  };

  const delegatedAttest = async ({ body, request }: { body: unknown; request: Request }) => {
    const started = performance.now();
    try {
      const clientKey = clientKeyOf(deps.clientAddress?.(request));
      // The public relay has no account: a key belongs to the client address (decisions §23).
      const tracking = deps.tracking;
      const resume = tracking === undefined
        ? undefined
        : (submissionId: string) => submissionAnswer(tracking, submissionId, { chain: deps.chainName, elapsed: elapsedSince(started) });
      const write = { scope: `client:${clientKey}`, body, resume };
      return await idempotent(deps.idempotency, request, write, (run) => attest(started, request, body, clientKey, run), (code, message, headers) => {
        const answer = failure(started, code, message);
        for (const [name, value] of Object.entries(headers ?? {})) answer.headers.set(name, value);
        return answer;
      });
    } catch (error) {
      return internalError(started, "delegated_attest", error);
    }
  };

  const attest = async (started: number, request: Request, body: unknown, clientKey: string, run: IdempotentRun) => {
    const parsed = delegatedBody.readJson(body);
    if (!parsed.ok) return failure(started, parsed.code, parsed.message);
    const tracked = await trackedRelay(deps.tracking, { scope: `client:${clientKey}`, async: prefersAsync(request), attach: run.attach }, (onSubmitting) =>
      deps.delegatedAttest(parsed.value, { clientKey, onSubmitting }));
    if (tracked.kind === "accepted") return acceptedAnswer(tracked.submissionId, { elapsed: elapsedSince(started) });
    const { result, submissionId } = tracked;
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
      chain: deps.chainName,
      ...withId,
      elapsed: elapsedSince(started),
    });
  };

  const delegatedAttestBatch = async ({ body, request }: { body: unknown; request: Request }) => {
    const started = performance.now();
    try {
      const clientKey = clientKeyOf(deps.clientAddress?.(request));
      const tracking = deps.tracking;
      const resume = tracking === undefined ? undefined : (submissionId: string) => batchResume(tracking, submissionId, { elapsed: elapsedSince(started) });
      const write = { scope: `client:${clientKey}`, body, resume };
      return await idempotent(deps.idempotency, request, write, (run) => attestBatch(started, request, body, clientKey, run), (code, message, headers) => {
        const answer = failure(started, code, message);
        for (const [name, value] of Object.entries(headers ?? {})) answer.headers.set(name, value);
        return answer;
      });
    } catch (error) {
      return internalError(started, "delegated_attest_batch", error);
    }
  };

  const attestBatch = async (started: number, request: Request, body: unknown, clientKey: string, run: IdempotentRun) => {
    const batch = deps.delegatedAttest.batch;
    if (batch === undefined) return failure(started, "NOT_FOUND", "This deployment sends no batches", undefined, 404);
    const parsed = batchBody.readJson(body);
    if (!parsed.ok) return failure(started, parsed.code, parsed.message);
    // Each request is charged to the client's and its attester's limits as the single route charges it (decisions §23).
    const context = { scope: `client:${clientKey}`, async: prefersAsync(request), attach: run.attach };
    const { response, outcome } = await batchAnswer(deps.tracking, context, (onSubmitting) =>
      batch(parsed.value.requests, { clientKey, onSubmitting }), { chain: deps.chainName, elapsed: elapsedSince(started) });
    if (outcome !== undefined) {
      deps.log.info("delegated_attest_batch", { txHash: outcome.txHash, requests: outcome.results.length, sent: outcome.results.filter((r) => r.ok).length });
    }
    return response;
  };

  const app = new Elysia({ name: "eas-routes" });
  for (const path of NONCE_PATHS) app.get(path, nonce, { detail: requestDetail(REQUEST_MODELS.nonce) });
  for (const path of DELEGATED_ATTEST_PATHS) {
    app.post(path, delegatedAttest, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.delegatedAttest) });
  }
  app.post(DELEGATED_ATTEST_BATCH_PATH, delegatedAttestBatch, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.delegatedAttestBatch) });
  return app;
}
