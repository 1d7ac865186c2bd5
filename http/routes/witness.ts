/**
 * The controller witness (decisions §8) under the gateway (`/v1/controller-witness`) and backend
 * (`/api/private/controller-witness`) paths, and its x402-only alias (`/v1/paid/controller-witness`, decisions §13).
 * A paid write: the account's sponsored writes with a session or a bearer token, or one x402 payment.
 */
import { Elysia } from "elysia";
import { type ControllerWitness, parseWitnessBody, WITNESS_GIVEN_BACK_MESSAGE, WITNESS_UNKNOWN_MESSAGE } from "../../domain/witness/mod.ts";
import { authenticateRequest } from "../credentials.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { idempotent, type KeyBegin } from "../idempotency.ts";
import { REQUEST_MODELS } from "../models.ts";
import { PAID_ALIASES } from "../x402_gate.ts";
import { clientKeyFor, compileRequestCheck, readBodyText, requestDetail } from "./request.ts";
import { readCheckedBody, sessionFailure, type SessionRoutesDeps } from "./session.ts";

/** What the witness routes need: the session's credentials, the use case, x402 and idempotency. */
export type WitnessRoutesDeps = Pick<
  SessionRoutesDeps,
  "sessions" | "witness" | "witnessResume" | "log" | "payments" | "metrics" | "clientAddress" | "bearer" | "idempotency"
>;

const witnessBody = compileRequestCheck(REQUEST_MODELS.controllerWitness.body, {
  // The model refuses only what the domain's body reader refuses, so the reader words the refusal.
  explain: (body) => {
    const parsed = parseWitnessBody(body);
    return parsed.ok ? undefined : parsed.message;
  },
});

/** `POST /v1/controller-witness` and its aliases. */
export function witnessRoutes(deps: WitnessRoutesDeps) {
  const witness = async ({ body, request }: { body: unknown; request: Request }) => {
    const parsed = readCheckedBody(body, witnessBody);
    if (!parsed.ok) {
      // Counted as the use case counts a refused body.
      if (parsed.invalid) deps.metrics?.increment("ats_sponsored_writes_total", { outcome: "invalid_input" });
      return parsed.response;
    }
    const auth = await authenticateRequest(request, deps, "witness:write");
    if (auth.ok) {
      const account = auth.caller.account;
      // The write's id is noted under the key once reserved; a retry after a crash answers from it (decisions §23).
      const write = { scope: `account:${account.id}`, body, resume: (noted: string) => resumedWitness(noted) };
      return await idempotent(deps.idempotency, request, write, ({ attach }) =>
        witnessAnswer(parsed.value, { ok: true, value: account }, undefined, attach));
    }
    // No credential: an agent may pay for this one witness with x402 instead (decisions §13); without a payment
    // the contract's 401, naming both ways in (decisions §13 amended).
    const gate = deps.payments;
    if (auth.carried) {
      deps.metrics?.increment("ats_sponsored_writes_total", { outcome: "refused_token" });
      return auth.response();
    }
    if (gate?.offers("witness") && request.headers.has("payment-signature")) {
      return await idempotent(deps.idempotency, request, paidWrite(request, body), ({ attach, begin, keyRef }) => paidWitness(request, parsed.value, attach, begin, keyRef));
    }
    // The use case answers (its checks before the session's first, decisions §8), and its 401 names the ways in.
    const answer = await witnessAnswer(parsed.value, { ok: false, code: "UNAUTHENTICATED", message: auth.message }, undefined);
    if (answer.status !== 401) return answer;
    const terms = gate?.offers("witness") ? await gate.terms(request, "witness") : {};
    for (const [name, value] of Object.entries({ ...auth.challenge, ...terms })) answer.headers.set(name, value);
    return answer;
  };

  /**
   * One witness paid with x402, the payer standing in for an account (decisions §13). Its write is noted under the
   * request's key once reserved, as a signed-in one's is, so a retry after a crash answers from it (`paidWrite`).
   */
  const paidWitness = (request: Request, body: unknown, attach?: (noted: string) => Promise<void>, begin?: KeyBegin, keyRef?: string) =>
    deps.payments!.handle(request, "witness", async ({ payer }) =>
      await paidWork(await witnessAnswer(body, { ok: false, code: "UNAUTHENTICATED", message: "Unauthenticated" }, payer, attach)), { begin, keyRef });

  /** A witness answer as the payment gate reads it: what it wrote, and whether its outcome is unknown. */
  const paidWork = async (response: Response) => {
    const answer = response.status === 200 ? await response.clone().json() as { txHash?: string } : undefined;
    const code = response.status === 200 ? undefined : (await response.clone().json() as { code?: string }).code;
    return { response, ref: answer?.txHash, unknown: code === "OUTCOME_UNKNOWN" };
  };

  /** `POST /v1/paid/controller-witness`: x402 only, 402 until paid (decisions §13 amended). */
  const paidAlias = async ({ body, request }: { body: unknown; request: Request }) => {
    const parsed = readCheckedBody(body, witnessBody);
    if (!parsed.ok) return parsed.response;
    if (!deps.payments?.offers("witness")) return json(errorBody("NOT_FOUND", "Paying with x402 is not offered here"), 404);
    return await idempotent(deps.idempotency, request, paidWrite(request, body), ({ attach, begin, keyRef }) => paidWitness(request, parsed.value, attach, begin, keyRef));
  };

  /**
   * An x402 payer has no account: its keys are the payer's (the gate's `idempotentWrite`, decisions §23), taken once
   * the payment is verified (`verifiedInRun`). A retry that takes over a dead request's key answers from the write it
   * noted, and the gate settles or gives back its payment.
   */
  const paidWrite = (request: Request, body: unknown) => ({
    ...deps.payments!.idempotentWrite(request, body, `client:${clientKeyFor(deps.clientAddress, request)}`),
    verifiedInRun: true,
    resume: (noted: string, keyRef: string) =>
      deps.payments!.resume(request, "witness", async () => {
        const resumed = await resumedWitness(noted);
        return resumed === undefined ? undefined : await paidWork(resumed);
      }, keyRef),
  });

  /**
   * What a retry of a request that died, or of one whose kept 503 `OUTCOME_UNKNOWN` is taken back, answers (see
   * domain/witness createWitnessResume); undefined: nothing was signed, run it again. A write given back on a proven
   * cause is the relay's failure (500 `SUBMISSION_FAILED`), kept under the key, and a paid one's payment is given back
   * with it; one given back on a cause that proves nothing is 503 `OUTCOME_UNKNOWN` (not kept; a kept 503 is kept as
   * it was), its payment kept `work_unknown`.
   */
  const resumedWitness = async (noted: string): Promise<Response | undefined> => {
    const found = await deps.witnessResume?.(noted);
    if (found === undefined || found.kind === "nothing") return undefined;
    if (found.kind === "written") return json(found.value);
    if (found.kind === "given-back") return json(errorBody("SUBMISSION_FAILED", WITNESS_GIVEN_BACK_MESSAGE, found.txHash ?? undefined), statusOf("SUBMISSION_FAILED"));
    if (found.kind === "unknown") return json(errorBody("OUTCOME_UNKNOWN", WITNESS_UNKNOWN_MESSAGE, found.txHash ?? undefined), 503);
    return json(errorBody("OUTCOME_UNKNOWN", "The witness transaction was sent but its outcome is not known yet; it will be settled", found.txHash ?? undefined), 503);
  };

  const witnessAnswer = async (body: unknown, session: Parameters<ControllerWitness>[1], paidBy: string | undefined, onReserved?: (noted: string) => Promise<void>) => {
    try {
      const { result, deprecation } = await deps.witness(body, session, { paidBy, onReserved });
      const headers: Record<string, string> = deprecation === undefined ? {} : { deprecation };
      deps.metrics?.increment("ats_sponsored_writes_total", { outcome: result.ok ? "committed" : result.code.toLowerCase() });
      if (result.ok) {
        deps.log.info("controller_witness", { uid: result.value.uid, txHash: result.value.txHash, method: result.value.method });
        return json(result.value, 200, headers);
      }
      if (result.retryAfterSeconds !== undefined) headers["retry-after"] = String(result.retryAfterSeconds);
      if (statusOf(result.code) >= 500) deps.log.warn("controller_witness_failed", { code: result.code, reason: result.message });
      return sessionFailure(result, headers);
    } catch (error) {
      deps.log.error("controller_witness_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("SERVER_ERROR", "Witness submission failed"), 500);
    }
  };

  const witnessDetail = requestDetail(REQUEST_MODELS.controllerWitness);
  return new Elysia({ name: "witness-routes" })
    .post("/v1/controller-witness", witness, { parse: readBodyText, detail: witnessDetail })
    .post("/api/private/controller-witness", witness, { parse: readBodyText, detail: witnessDetail })
    .post(PAID_ALIASES.witness, paidAlias, { parse: readBodyText, detail: witnessDetail });
}
