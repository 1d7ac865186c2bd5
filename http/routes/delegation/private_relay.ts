import { Elysia } from "elysia";
import type { ReadNonce } from "../../../domain/delegation/mod.ts";
import type { PrivateRelay } from "../../../domain/delegation/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { parseJsonBody, queryOf, readBodyText } from "../request.ts";
import { tokenOf } from "../session.ts";
import type { PaymentGate } from "../../x402_gate.ts";

/** What the private relay's routes need. */
export type PrivateRelayRoutesDeps = {
  readonly sessions: Sessions;
  readonly relay: PrivateRelay;
  readonly readNonce: ReadNonce;
  readonly chainName: string;
  readonly chainId: number;
  readonly easAddress: string;
  readonly log: Logger;
  /** x402 payments instead of a session (decisions §13); absent: none taken. */
  readonly payments?: PaymentGate | undefined;
};

/** `GET /api/private/relay/eas/nonce` and `POST /api/private/relay/eas/delegated-attest` (decisions §12), session required. */
export function privateRelayRoutes(deps: PrivateRelayRoutesDeps) {
  const failure = (result: { code: string; message: string; details?: string | undefined; status?: number; unavailable?: true; retryAfterSeconds?: number }) => {
    const answer = json(errorBody(result.code, result.message, result.details), result.status ?? (result.unavailable ? 503 : statusOf(result.code)));
    if (result.retryAfterSeconds !== undefined) answer.headers.set("retry-after", String(result.retryAfterSeconds));
    return answer;
  };
  const guarded = <T>(name: string, run: () => Promise<T>) =>
    run().catch((error: unknown) => {
      deps.log.error(`${name}_error`, { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  const routes = new Elysia({ name: "private-relay-routes" })
    .get("/api/private/relay/eas/nonce", ({ request }) =>
      guarded("relay_nonce", async () => {
        const auth = await deps.sessions.authenticate(tokenOf(request));
        if (!auth.ok) return failure(auth);
        const attester = queryOf(request.url).attester;
        const nonce = await deps.readNonce(attester);
        if (!nonce.ok) return failure(nonce);
        return json({ nonce: nonce.value.toString(), chainId: deps.chainId, chain: deps.chainName, easAddress: deps.easAddress });
      }))
    .post("/api/private/relay/eas/delegated-attest", ({ request, body }) =>
      guarded("relay_delegated_attest", async () => {
        const parsed = parseJsonBody(body);
        if (!parsed.ok) return failure(parsed);
        const auth = await deps.sessions.authenticate(tokenOf(request));
        const gate = deps.payments;
        if (!auth.ok && gate?.offers("relay")) {
          // No session: an agent pays for this write with x402, the payer being the attester (decisions §13).
          return await gate.handle(request, "relay", async ({ payer }) => {
            const response = await attest(parsed.value, { kind: "x402", address: payer });
            const answer = await response.clone().json() as { txHash?: string; code?: string };
            return { response, ref: answer.txHash, unknown: answer.code === "OUTCOME_UNKNOWN" };
          });
        }
        if (!auth.ok) return failure(auth);
        return await attest(parsed.value, auth.value.account);
      }), { parse: readBodyText });

  return routes;

  async function attest(body: unknown, caller: Parameters<PrivateRelay>[1]): Promise<Response> {
    const result = await deps.relay(body, caller);
    if (!result.ok) {
      if (statusOf(result.code) >= 500) deps.log.warn("relay_delegated_attest_failed", { code: result.code });
      return failure(result);
    }
    deps.log.info("relay_delegated_attest", { accountId: "kind" in caller ? `x402:${caller.address}` : caller.id, txHash: result.value.txHash, uid: result.value.uid });
    return json({
      success: true,
      txHash: result.value.txHash,
      uid: result.value.uid,
      blockNumber: Number(result.value.blockNumber),
      chain: deps.chainName,
    });
  }
}
