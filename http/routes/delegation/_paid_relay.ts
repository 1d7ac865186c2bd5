/**
 * The private relay's writes paid with x402 (decisions §13): the payer is the identity, the write is answered when it
 * is done, and its `Idempotency-Key` is kept around the payment (http/idempotency.ts), so a retry after a crash
 * answers from the submission the dead request noted (decisions §23; http/_x402_resume.ts).
 */
import type { PrivateRelay, WriteChainNames } from "../../../domain/delegation/mod.ts";
import type { PayingAgent } from "../../../domain/payments/mod.ts";
import type { RelaySubmission } from "../../../domain/submissions/mod.ts";
import type { Account } from "../../../ports/accounts.ts";
import { clientKeyFor, type JsonBody } from "../request.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import type { KeyBegin } from "../../idempotency.ts";
import type { PaymentGate } from "../../x402_gate.ts";
import { type RelayTracking, submissionAnswer } from "./_tracking.ts";

type RelayInput = { readonly body: JsonBody; readonly caller: Account | PayingAgent };
type SingleResult = Awaited<ReturnType<PrivateRelay>> | Extract<JsonBody, { ok: false }>;
type Attach = (submissionId: string) => Promise<void>;
type Failure = (result: { code: string; message: string; details?: string | undefined }, extra?: Record<string, unknown>) => Response;

/** The paid writes over the relay's own submission run (`paid`) and its answer (`attested`). */
export function paidRelayWrites(
  deps: {
    readonly payments?: PaymentGate | undefined;
    readonly relay: { readonly chainNames?: WriteChainNames | undefined };
    readonly chainName: string;
    readonly clientAddress?: ClientAddressOf | undefined;
    readonly tracking?: RelayTracking | undefined;
  },
  run: {
    readonly paid: RelaySubmission<RelayInput, SingleResult>;
    readonly attested: (result: SingleResult, submissionId: string | undefined, accountId: string) => Response;
    readonly failure: Failure;
  },
) {
  const scopeOf = (request: Request, raw: unknown) => deps.payments!.idempotentWrite(request, raw, `client:${clientKeyFor(deps.clientAddress, request)}`);

  /**
   * An x402 payer has no account: its keys are the payer's (the gate's `idempotentWrite`, decisions §23), taken once
   * the payment is verified (`verifiedInRun`). A retry that takes over a dead request's key answers from the
   * submission it noted, and the gate settles or gives back its payment. A paid write is answered when its write is, so one still on its way is 503 `OUTCOME_UNKNOWN` with its
   * submission (not the 202 of an asynchronous write): not kept for the key, and its payment neither settled nor given
   * back until a later retry finds the write ended.
   */
  const write = (request: Request, raw: unknown, body: unknown) => {
    const chain = deps.relay.chainNames?.write(body) ?? deps.chainName;
    return {
      ...scopeOf(request, raw),
      verifiedInRun: true,
      resume: (noted: string, keyRef: string) =>
        deps.payments!.resume(request, "relay", async () => {
          const found = await deps.tracking?.status.read(noted);
          const view = found?.ok === true ? found.value : undefined;
          const ended = view?.state === "mined" || view?.state === "confirmed" || view?.state === "failed";
          const message = "The write was sent but its outcome is not known yet; retry later";
          const response = ended || view === undefined
            ? submissionAnswer(noted, view, { chain })
            : run.failure({ code: "OUTCOME_UNKNOWN", message, details: view.txHash ?? undefined }, { submissionId: noted, chain });
          return { response, ref: view?.txHash ?? undefined, unknown: !ended };
        }, keyRef),
    };
  };

  /**
   * One paid write: the gate verifies and settles around it; the key is taken once the payment is verified (`begin`),
   * and its submission noted under it (`attach`).
   */
  const attest = (request: Request, body: unknown, attach?: Attach, begin?: KeyBegin, keyRef?: string): Promise<Response> =>
    deps.payments!.handle(request, "relay", async ({ payer }) => {
      // Paid work is settled after it is done: an x402 request is answered when its write is, whatever it prefers.
      const caller: PayingAgent = { kind: "x402", address: payer };
      const outcome = (await run.paid({ scope: scopeOf(request, body).scope, async: false, input: { body: { ok: true, value: body }, caller }, attach })).outcome;
      if (outcome.kind !== "answered") throw new Error(`A paid write came to ${outcome.kind}`);
      const response = run.attested(outcome.result, outcome.submissionId, `x402:${payer}`);
      const answer = await response.clone().json() as { txHash?: string; code?: string };
      return { response, ref: answer.txHash, unknown: answer.code === "OUTCOME_UNKNOWN" };
    }, { begin, keyRef });

  return { write, attest };
}
