import { describe, expect, test } from "bun:test";
import { fail, ok } from "../../../domain/result.ts";
import { submissionAnswer } from "./_tracking.ts";

const TX = `0x${"ab".repeat(32)}`;
const UID = `0x${"cd".repeat(32)}`;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe("submissionAnswer()", () => {
  const tracking = (view: Record<string, unknown> | undefined) => ({
    tracker: {} as never,
    log: quiet,
    status: { read: () => Promise.resolve(view === undefined ? fail("NOT_FOUND", "gone") : ok(view)), list: () => Promise.reject(new Error("unused")) } as never,
  });
  const ID = "A".repeat(22);
  test("answers a mined submission as the relay's success, a failed one with its error, an open one with the 202", async () => {
    const mined = await submissionAnswer(tracking({ state: "confirmed", txHash: TX, uid: UID, blockNumber: 5 }), ID, { chain: "c" });
    expect([mined.status, await mined.json()]).toEqual([200, { success: true, txHash: TX, uid: UID, blockNumber: 5, chain: "c", submissionId: ID }]);
    const failed = await submissionAnswer(tracking({ state: "failed", txHash: null, error: "SUBMISSION_FAILED" }), ID, { chain: "c" });
    expect([failed.status, ((await failed.json()) as { code: string }).code]).toEqual([500, "SUBMISSION_FAILED"]);
    const open = await submissionAnswer(tracking({ state: "replaced" }), ID, { chain: "c" });
    expect([open.status, ((await open.json()) as { state: string }).state, open.headers.get("location")]).toEqual([202, "replaced", `/v1/submissions/${ID}`]);
  });
});
