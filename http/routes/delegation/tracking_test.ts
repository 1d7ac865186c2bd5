import { describe, expect, test } from "bun:test";
import { submissionAnswer } from "./_tracking.ts";

const TX = `0x${"ab".repeat(32)}`;
const UID = `0x${"cd".repeat(32)}`;

describe("submissionAnswer()", () => {
  const view = (fields: Record<string, unknown>) => fields as never;
  const ID = "A".repeat(22);
  test("answers a mined submission as the relay's success, a failed one with its error, an open one with the 202", async () => {
    const mined = submissionAnswer(ID, view({ state: "confirmed", txHash: TX, uid: UID, blockNumber: 5 }), { chain: "c" });
    expect([mined.status, await mined.json()]).toEqual([200, { success: true, txHash: TX, uid: UID, blockNumber: 5, chain: "c", submissionId: ID }]);
    const failed = submissionAnswer(ID, view({ state: "failed", txHash: null, error: "SUBMISSION_FAILED" }), { chain: "c" });
    expect([failed.status, ((await failed.json()) as { code: string }).code]).toEqual([500, "SUBMISSION_FAILED"]);
    const open = submissionAnswer(ID, view({ state: "replaced" }), { chain: "c" });
    expect([open.status, ((await open.json()) as { state: string }).state, open.headers.get("location")]).toEqual([202, "replaced", `/v1/submissions/${ID}`]);
  });

  test("a submission no longer known is 503 OUTCOME_UNKNOWN with its id", async () => {
    const gone = submissionAnswer(ID, undefined, { chain: "c" });
    expect([gone.status, await gone.json()]).toMatchObject([503, { code: "OUTCOME_UNKNOWN", submissionId: ID }]);
  });
});
