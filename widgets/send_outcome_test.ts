import { describe, expect, test } from "bun:test";
import { AtsClientError } from "../client/errors.ts";
import { afterSendFailure, submissionOutcome, unsureText } from "./send_outcome.ts";

const answered = (status: number, code: string, body: Record<string, unknown> = {}) =>
  new AtsClientError(code, "refused", { status, body: { error: "refused", code, ...body } });

describe("a send that did not answer with the uid", () => {
  test("OUTCOME_UNKNOWN is unsure, with the submission and transaction it names", () => {
    expect(afterSendFailure(answered(503, "OUTCOME_UNKNOWN", { submissionId: "q3XtV0gk3rVbq1u2Xo3hZg", details: "0xabc" }))).toEqual({
      kind: "unsure",
      why: "outcome-unknown",
      submissionId: "q3XtV0gk3rVbq1u2Xo3hZg",
      txHash: "0xabc",
    });
  });

  test("no answer (a dropped connection, anything not the client's error) is unsure", () => {
    expect(afterSendFailure(new AtsClientError("NETWORK_ERROR", "Failed to fetch"))).toEqual({ kind: "unsure", why: "no-answer" });
    expect(afterSendFailure(new TypeError("Failed to fetch"))).toEqual({ kind: "unsure", why: "no-answer" });
  });

  test("a 5xx that is not the service's word (a proxy's page), or an unknown server error, is unsure", () => {
    expect(afterSendFailure(new AtsClientError("NETWORK_ERROR", "Bad gateway", { status: 502 }))).toEqual({ kind: "unsure", why: "no-answer" });
    expect(afterSendFailure(new AtsClientError("INVALID_RESPONSE", "not JSON", { status: 504 }))).toEqual({ kind: "unsure", why: "no-answer" });
    expect(afterSendFailure(answered(500, "INTERNAL"))).toEqual({ kind: "unsure", why: "no-answer" });
  });

  test("the key still held by the first send is unsure", () => {
    expect(afterSendFailure(answered(409, "IDEMPOTENCY_KEY_IN_USE"))).toEqual({ kind: "unsure", why: "in-use" });
  });

  test("refusals and server errors that did nothing are refused: the review was not written", () => {
    for (const [status, code] of [
      [400, "INVALID_SIGNATURE"],
      [409, "DUPLICATE"],
      [429, "RATE_LIMITED"],
      [500, "RPC_ERROR"],
      [500, "SUBMISSION_FAILED"],
      [503, "SUBMISSION_FAILED"],
      [503, "SIGNER_UNAVAILABLE"],
      [503, "SHUTTING_DOWN"],
    ] as const) {
      expect({ code, outcome: afterSendFailure(answered(status, code)) }).toEqual({ code, outcome: { kind: "refused" } });
    }
  });
});

describe("a submission read after an unsure send", () => {
  test("mined or confirmed is written, failed is not, the rest still on its way", () => {
    expect(submissionOutcome({ state: "confirmed", uid: "0x01", txHash: "0x02" })).toEqual({ kind: "written", uid: "0x01", txHash: "0x02" });
    expect(submissionOutcome({ state: "mined", uid: null, txHash: "0x02" })).toEqual({ kind: "written", uid: null, txHash: "0x02" });
    expect(submissionOutcome({ state: "failed", uid: null, txHash: "0x02", error: "SUBMISSION_FAILED" })).toEqual({ kind: "failed", code: "SUBMISSION_FAILED" });
    for (const state of ["pending", "sent", "replaced"] as const) expect(submissionOutcome({ state, uid: null, txHash: null })).toEqual({ kind: "waiting" });
  });

  test("the unsure view never asks for a new signature, and names the transaction when known", () => {
    expect(unsureText({ kind: "unsure", why: "outcome-unknown", txHash: "0xabc" })).toContain("Its transaction: 0xabc.");
    expect(unsureText({ kind: "unsure", why: "outcome-unknown" })).toContain("do not sign it again");
    expect(unsureText({ kind: "unsure", why: "no-answer" })).toContain("never written twice");
    expect(unsureText({ why: "waiting", txHash: null })).toBe("The review's transaction is still on its way. Check again in a minute.");
  });
});

describe("a send answered 202: its submission still on its way", () => {
  test("is unsure (waiting) with the submission it names, never refused or written; the text names the submission", () => {
    const pending = new AtsClientError("SUBMISSION_NOT_SETTLED", "on its way", { status: 202, body: { submissionId: "khFvxbyajZsaWUYk5v5LWA", state: "sent", chain: "x" } });
    const outcome = afterSendFailure(pending);
    expect(outcome).toEqual({ kind: "unsure", why: "waiting", submissionId: "khFvxbyajZsaWUYk5v5LWA" });
    expect(unsureText(outcome as Extract<typeof outcome, { kind: "unsure" }>)).toBe(
      "The review's transaction is still on its way. Its submission: khFvxbyajZsaWUYk5v5LWA. Check again in a minute.",
    );
    // A 202 naming no submission: Check again sends the same bytes under the same key.
    expect(afterSendFailure(new AtsClientError("SUBMISSION_NOT_SETTLED", "on its way", { status: 202, body: {} }))).toEqual({ kind: "unsure", why: "no-answer" });
    // A 2xx that is not the relay's success (client/delegated_attest.ts: INVALID_RESPONSE) says nothing was not written.
    expect(afterSendFailure(new AtsClientError("INVALID_RESPONSE", "not the success", { status: 200, body: { uid: null } }))).toEqual({ kind: "unsure", why: "no-answer" });
  });
});
