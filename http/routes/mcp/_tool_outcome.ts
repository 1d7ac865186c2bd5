/** A tool's answer, and a write tool run under its idempotency key (decisions §20, §23). */
import { type Idempotency, keepsAnswer } from "../../../domain/idempotency/mod.ts";
import { canonicalJson } from "../../../domain/payments/mod.ts";
import type { StoredAnswer } from "../../../ports/idempotency.ts";
import { statusOf } from "../../errors.ts";

/** A tool's answer: the route's JSON, or the route's error. */
export type ToolOutcome =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly code: string; readonly message: string; readonly details?: string | undefined };

/**
 * Runs a write tool under its idempotency key (decisions §23), as the HTTP routes run theirs: the outcome is kept as
 * the route would answer it, and a retry with the same key and arguments gets it again.
 */
export async function idempotentTool(
  idempotency: Idempotency | undefined,
  request: { readonly scope: string; readonly key: string | undefined; readonly tool: string; readonly args: unknown },
  run: (attach?: (noted: string) => Promise<void>) => Promise<ToolOutcome>,
  resume?: (noted: string) => Promise<ToolOutcome | undefined>,
): Promise<ToolOutcome> {
  if (idempotency === undefined || request.key === undefined) return await run();
  // The arguments are a JSON object, whose members' order means nothing: compared with their keys sorted, so a retry
  // that lists them in another order (agents rebuild their calls) is the same call. Before, it was
  // IDEMPOTENCY_KEY_REUSED, and a client told so writes again under a new key.
  const decision = await idempotency({ scope: request.scope, key: request.key, method: "TOOL", path: request.tool, body: canonicalJson(request.args) });
  if (decision.kind === "replay") return JSON.parse(decision.answer.body) as ToolOutcome;
  if (decision.kind !== "run") return { ok: false, code: decision.code, message: decision.message };
  // A kept OUTCOME_UNKNOWN taken back to answer from the write its call noted, as a dead call's retry does; while that
  // is still on its way (or nothing can read it) the kept answer is given back, and given again.
  const kept = decision.kept;
  const givenBack = async (answer: StoredAnswer) => {
    await decision.finish(answer);
    return JSON.parse(answer.body) as ToolOutcome;
  };
  if (kept !== undefined && resume === undefined) return await givenBack(kept);
  let outcome: ToolOutcome;
  let resumed: ToolOutcome | undefined;
  try {
    // A key taken over from a call that died: answered from what that call noted (its write), never run again.
    resumed = decision.resumed !== undefined && resume !== undefined ? await resume(decision.resumed) : undefined;
    outcome = resumed ?? await run(decision.attach);
  } catch (error) {
    await decision.finish(kept);
    throw error;
  }
  const status = outcome.ok ? 200 : statusOf(outcome.code);
  // A resumed write still under way is not kept: the next retry asks again (as http/idempotency.ts does).
  if (resumed !== undefined && !outcome.ok && outcome.code === "OUTCOME_UNKNOWN") return kept === undefined ? outcome : await givenBack(kept);
  await decision.finish(keepsAnswer(status, outcome.ok ? undefined : outcome.code, outcome.ok ? {} : { details: outcome.details, error: outcome.message }) ? { status, headers: {}, body: JSON.stringify(outcome) } : undefined);
  return outcome;
}
