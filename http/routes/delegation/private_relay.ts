import { Elysia } from "elysia";
import type { BatchRefusal, ReadChainNonce, ReadNonce, WriteChainNames } from "../../../domain/delegation/mod.ts";
import type { PrivateRelay } from "../../../domain/delegation/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS } from "../../models.ts";
import { type JsonBody, parseJsonBody, queryOf, readBodyText, requestDetail } from "../request.ts";
import { nonceChainOf, nonceQuery, nonceRecord } from "./eas.ts";
import { authenticateRequest, type BearerAccess } from "../../credentials.ts";
import { PAID_ALIASES, type PaymentGate } from "../../x402_gate.ts";
import type { Idempotency } from "../../../domain/idempotency/mod.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import { idempotent } from "../../idempotency.ts";
import type { Account } from "../../../ports/accounts.ts";
import type { PayingAgent } from "../../../domain/payments/mod.ts";
import { createRelaySubmission, type OnSubmitting, type RelayWrite } from "../../../domain/submissions/mod.ts";
import { acceptedAnswer, type RelayTracking, submissionAnswer } from "./_tracking.ts";
import { relayAnswer, relayWrite } from "./_relay_answer.ts";
import type { RateLimiter } from "../../../domain/rate_limit.ts";
import { type BatchRelayResult, batchRequests, batchSend, batchWords } from "./_batch.ts";
import { paidRelayWrites } from "./_paid_relay.ts";

/** A single write's body as read (a malformed one is answered inside the keyed run, so its 400 is kept for the key). */
type RelayInput = { readonly body: JsonBody; readonly caller: Account | PayingAgent };
/** The relay's answer, or the refusal of a body that is not JSON. */
type SingleResult = Awaited<ReturnType<PrivateRelay>> | Extract<JsonBody, { ok: false }>;
type BatchRefused = { readonly code: string; readonly message: string; readonly status: number };
type BatchInput = { readonly requests: readonly unknown[]; readonly caller: Account } | { readonly refused: BatchRefused };
type BatchResult = BatchRelayResult | { readonly ok: false; readonly code: string; readonly refused: BatchRefused };

/** The private relay's batches (decisions §23). */
export const PRIVATE_RELAY_BATCH_PATH = "/api/private/relay/eas/delegated-attest/batch";

/** What the private relay's routes need. */
export type PrivateRelayRoutesDeps = {
  readonly sessions: Sessions;
  /** With several chains, `batchRefusal` refuses a batch of no served chain or of two, before anything is recorded. */
  readonly relay: PrivateRelay & { readonly batchRefusal?: BatchRefusal | undefined; readonly chainNames?: WriteChainNames | undefined };
  /** One chain's nonce, or every served chain's by `chainId` (decisions §30). */
  readonly readNonce: ReadNonce | ReadChainNonce;
  readonly chainName: string;
  readonly chainId: number;
  readonly easAddress: string;
  readonly log: Logger;
  /** x402 payments instead of a session (decisions §13); absent: none taken. */
  readonly payments?: PaymentGate | undefined;
  /** OAuth access tokens with `relay:write` (decisions §19); absent: sessions (and x402) only. */
  readonly bearer?: BearerAccess | undefined;
  /** Idempotency keys of writes (decisions §23); absent: `Idempotency-Key` is ignored. */
  readonly idempotency?: Idempotency | undefined;
  /** The client address of a request: whose keys an x402 payer's are, as it has no account. */
  readonly clientAddress?: ClientAddressOf | undefined;
  /** Submission records (decisions §23): answers carry `submissionId`, `Prefer: respond-async` is honoured. */
  readonly tracking?: RelayTracking | undefined;
  /**
   * An account's writes, single or batch (`PRIVATE_RELAY_ACCOUNT_RATE_PER_MINUTE`): 429 before any JSON-RPC call and
   * before a key is stored. Found by attack: a throwaway account's batches of 50 refused bodies under fresh keys stored
   * 5 KB each, 300 in half a second, and its refused writes cost two JSON-RPC calls each, with nothing to stop either.
   */
  readonly accountRate?: RateLimiter | undefined;
  /**
   * The account's lookups of keys answered without a turn of `accountRate` (WriteRate in
   * domain/submissions/relay_submission.ts): a retry replayed from its key, and past `accountRate` the one read of a
   * key's record that finds its kept answer (or none: 429). Found by review: the account's turn was taken before the
   * lookup, so retries spent its writes and, at its limit, got 429 instead of their kept answer. Absent: every write
   * takes a turn first (as before).
   */
  readonly accountLookupRate?: RateLimiter | undefined;
  /** An account's nonce reads (`NONCE_RATE_PER_MINUTE`, one `eth_call` each), as the public route's per address. */
  readonly nonceRate?: RateLimiter | undefined;
};

/**
 * A write's turns of the account's `accountRate` (single or batch, with or without a key): past them 429 before any
 * RPC or stored key, unless the key already answers the request (WriteRate: a retry costs no turn of new work).
 */
function accountTurns<In>(deps: PrivateRelayRoutesDeps, write: RelayWrite<In>, accountId: string): RelayWrite<In> {
  if (deps.accountRate === undefined) return write;
  const message = (seconds: number) => `Too many writes from this account; try again in ${seconds} s`;
  return { ...write, rate: { key: `account:${accountId}`, turns: deps.accountRate, lookups: deps.accountLookupRate, message } };
}

/** `GET /api/private/relay/eas/nonce` and `POST /api/private/relay/eas/delegated-attest` (decisions §12), session required. */
export function privateRelayRoutes(deps: PrivateRelayRoutesDeps) {
  const failure = (result: { code: string; message: string; details?: string | undefined; status?: number; unavailable?: true; retryAfterSeconds?: number }, extra: Record<string, unknown> = {}) => {
    const answer = json({ ...errorBody(result.code, result.message, result.details), ...extra }, result.status ?? (result.unavailable ? 503 : statusOf(result.code)));
    if (result.retryAfterSeconds !== undefined) answer.headers.set("retry-after", String(result.retryAfterSeconds));
    return answer;
  };
  const guarded = <T>(name: string, run: () => Promise<T>) =>
    run().catch((error: unknown) => {
      deps.log.error(`${name}_error`, { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  // One write, one use case (issue 47 item 2): idempotency, submission record, relay and settlement in the domain.
  const send = (input: RelayInput, onSubmitting: OnSubmitting | undefined): Promise<SingleResult> =>
    input.body.ok ? deps.relay(input.body.value, input.caller, { onSubmitting }) : Promise.resolve(input.body);
  const single = createRelaySubmission(deps, send);
  const x402 = paidRelayWrites(deps, { paid: createRelaySubmission({ tracking: deps.tracking }, send), attested, failure });
  const batches = createRelaySubmission<BatchInput, BatchResult>(deps, (input, onSubmitting) => {
    if ("refused" in input) return Promise.resolve({ ok: false, code: input.refused.code, refused: input.refused });
    return batchSend((requests, recording) => deps.relay.batch!(requests, input.caller, { onSubmitting: recording }))(input.requests, onSubmitting);
  });
  /** An account's request past its turns (`rate`): 429 with `Retry-After`, before any RPC or stored key (never kept). */
  const limited = (rate: RateLimiter | undefined, accountId: string, what: string): Response | undefined => {
    const turn = rate?.take(`account:${accountId}`);
    if (turn === undefined || turn.allowed) return undefined;
    return failure({ code: "RATE_LIMITED", message: `Too many ${what} from this account; try again in ${turn.retryAfterSeconds} s`, retryAfterSeconds: turn.retryAfterSeconds });
  };
  const plainRefusal = (code: string, message: string, headers: Record<string, string> = {}) => json(errorBody(code, message), statusOf(code), headers);

  const routes = new Elysia({ name: "private-relay-routes" })
    .get("/api/private/relay/eas/nonce", ({ request }) =>
      guarded("relay_nonce", async () => {
        const auth = await authenticateRequest(request, deps, "relay:write");
        if (!auth.ok) return auth.response();
        // The published query model (`attester`, once), checked as the public nonce route checks it.
        const query = queryOf(request.url);
        if (!nonceQuery.check(query)) return failure({ code: "INVALID_INPUT", message: nonceQuery.explain(query) });
        const named = nonceChainOf(query);
        if (!named.ok) return failure(named);
        const refused = limited(deps.nonceRate, auth.caller.account.id, "nonce reads");
        if (refused !== undefined) return refused;
        const nonce = await deps.readNonce(query.attester, named.value);
        if (!nonce.ok) return failure(nonce);
        const { nonce: value, chainId, chain, easAddress } = nonceRecord(nonce.value, deps);
        return json({ nonce: value, chainId, chain, easAddress });
      }), { detail: requestDetail(REQUEST_MODELS.nonce) })
    .post("/api/private/relay/eas/delegated-attest", ({ request, body }) =>
      guarded("relay_delegated_attest", async () => {
        const parsed = parseJsonBody(body);
        const auth = await authenticateRequest(request, deps, "relay:write");
        if (auth.ok) {
          const account = auth.caller.account;
          // The body is read inside the keyed run (decisions §23): a malformed one's 400 is kept for its key, so the
          // same key with another body is 422, as on the public relay (before, it ran the other body).
          const read = relayWrite(request, `account:${account.id}`, body, { body: parsed, caller: account });
          if (!read.ok) return failure(read);
          const chain = () => (parsed.ok ? deps.relay.chainNames?.write(parsed.value) : undefined) ?? deps.chainName;
          return await relayAnswer(await single(accountTurns(deps, read.write, account.id)), {
            refuse: plainRefusal,
            resumed: (submissionId, view) => submissionAnswer(submissionId, view, { chain: chain() }),
            accepted: (submissionId) => acceptedAnswer(submissionId, { chain: chain() }),
            answered: (result, submissionId) => attested(result, submissionId, account.id),
          });
        }
        if (!parsed.ok) return failure(parsed);
        const gate = deps.payments;
        if (!auth.carried && gate?.offers("relay")) {
          // No credential: an agent pays for this write with x402, the payer being the attester (decisions §13);
          // without a payment the 401 names both ways in (decisions §13 amended).
          if (request.headers.has("payment-signature")) {
            return await idempotent(deps.idempotency, request, x402.write(request, body, parsed.value), ({ attach, begin, keyRef }) => x402.attest(request, parsed.value, attach, begin, keyRef));
          }
          return auth.response(await gate.terms(request, "relay"));
        }
        return auth.response();
      }), { parse: readBodyText })
    .post(PRIVATE_RELAY_BATCH_PATH, ({ request, body }) =>
      guarded("relay_delegated_attest_batch", async () => {
        const parsed = parseJsonBody(body);
        // A batch is an account's (a session or an access token): x402 pays for one write at a time.
        const auth = await authenticateRequest(request, deps, "relay:write");
        // A malformed body is 400 whoever sends it; a signed-in caller's is answered inside the keyed run below.
        if (!auth.ok) return parsed.ok ? auth.response() : failure(parsed);
        if (deps.relay.batch === undefined) return failure({ code: "NOT_FOUND", message: "This deployment sends no batches", status: 404 });
        const account = auth.caller.account;
        // Read inside the keyed run (decisions §23): a refused batch's 400 is kept for its key, as on the public relay.
        const input: BatchInput = parsed.ok
          ? readBatch(parsed.value, account)
          : { refused: { code: parsed.code, message: parsed.message, status: statusOf(parsed.code) } };
        const write = relayWrite(request, `account:${account.id}`, body, input);
        if (!write.ok) return failure(write);
        // The chain the batch goes to (decisions §30), named by its 202 and a retry's answer too.
        const chain = () => ("requests" in input ? deps.relay.chainNames?.batch(input.requests) : undefined) ?? deps.chainName;
        const words = batchWords(plainRefusal, () => ({ chain: chain() }));
        return await relayAnswer(await batches(accountTurns(deps, write.write, account.id)), {
          ...words,
          answered: (result, submissionId) => {
            if ("refused" in result) return failure(result.refused);
            const outcome = result.batch;
            deps.log.info("relay_delegated_attest_batch", { accountId: account.id, txHash: outcome.txHash, requests: outcome.results.length });
            const chain = outcome.chainName ?? deps.chainName;
            return batchWords(plainRefusal, () => ({ chain })).answered(result, submissionId);
          },
        });
      }), { parse: readBodyText })
    .post(PAID_ALIASES.relay, ({ request, body }) =>
      guarded("paid_delegated_attest", async () => {
        // x402 only, the private relay's rules with the payer as identity: 402 until paid (decisions §13 amended).
        const parsed = parseJsonBody(body);
        if (!parsed.ok) return failure(parsed);
        if (!deps.payments?.offers("relay")) return json(errorBody("NOT_FOUND", "Paying with x402 is not offered here"), 404);
        return await idempotent(deps.idempotency, request, x402.write(request, body, parsed.value), ({ attach, begin, keyRef }) => x402.attest(request, parsed.value, attach, begin, keyRef));
      }), { parse: readBodyText });

  return routes;

  /** A batch's requests, or its refusal as a whole: not `{requests: [1..50]}`, or not of one served chain (§30). */
  function readBatch(body: unknown, caller: Account): BatchInput {
    const read = batchRequests(body);
    if (!read.ok) return { refused: { code: "INVALID_INPUT", message: read.message, status: 400 } };
    // Decisions §30: a batch holds one served chain, refused whole (400) before anything is recorded or spent.
    const refused = deps.relay.batchRefusal?.(read.requests);
    if (refused !== undefined) return { refused: { code: refused.code, message: refused.message, status: statusOf(refused.code) } };
    return { requests: read.requests, caller };
  }

  function attested(result: SingleResult, submissionId: string | undefined, accountId: string): Response {
    const withId = submissionId === undefined ? {} : { submissionId };
    if (!result.ok) {
      if (statusOf(result.code) >= 500) deps.log.warn("relay_delegated_attest_failed", { code: result.code });
      return failure(result, withId);
    }
    deps.log.info("relay_delegated_attest", { accountId, txHash: result.value.txHash, uid: result.value.uid });
    return json({
      success: true,
      txHash: result.value.txHash,
      uid: result.value.uid,
      blockNumber: Number(result.value.blockNumber),
      chain: result.value.chainName ?? deps.chainName,
      ...withId,
    });
  }
}
