import { describe, expect, test } from "bun:test";
import { isAtsClientError } from "./errors.ts";
import { submitDelegatedAttestation } from "./delegated_attest.ts";
import { fetchSubmission, newIdempotencyKey, submitDelegatedAttestationAsync, submitDelegatedAttestBatchAsync, waitForSubmission } from "./submissions.ts";

/** A service answering from a list, recording what it was asked. */
function service(answers: Array<{ status: number; body: unknown }>) {
  const seen: { url: string; headers: Headers }[] = [];
  const fetchFn = ((url: string, init?: RequestInit) => {
    seen.push({ url, headers: new Headers(init?.headers) });
    const next = answers.shift() ?? { status: 500, body: { code: "INTERNAL_ERROR", error: "none left" } };
    return Promise.resolve(new Response(JSON.stringify(next.body), { status: next.status }));
  }) as typeof fetch;
  return { fetch: fetchFn, seen, baseUrl: "http://svc" };
}

const body = { prepared: {} as never, signature: "0x", attester: "0x1" };
const view = (state: string) => ({ submissionId: "s".repeat(22), state, txHash: null, uid: null, blockNumber: null, confirmations: 0, feeBumps: 0, createdAt: "", updatedAt: "" });

describe("submissions from the client", () => {
  test("newIdempotencyKey() gives a fresh UUID each time", () => {
    const [a, b] = [newIdempotencyKey(), newIdempotencyKey()];
    expect(a).toMatch(/^[0-9a-f-]{36}$/);
    expect(a).not.toBe(b);
  });

  test("submitDelegatedAttestation sends the idempotency key; the async submit asks respond-async and returns the id", async () => {
    const svc = service([
      { status: 200, body: { success: true, txHash: "0x01", submissionId: "a".repeat(22) } },
      { status: 202, body: { submissionId: "b".repeat(22), state: "pending" } },
    ]);
    expect((await submitDelegatedAttestation(body, { ...svc, idempotencyKey: "k1" })).submissionId).toBe("a".repeat(22));
    expect(svc.seen[0]!.headers.get("idempotency-key")).toBe("k1");
    expect(await submitDelegatedAttestationAsync(body, { ...svc, idempotencyKey: "k2" })).toEqual({ submissionId: "b".repeat(22), accepted: true });
    expect([svc.seen[1]!.headers.get("prefer"), svc.seen[1]!.headers.get("idempotency-key")]).toEqual(["respond-async", "k2"]);
  });

  test("waitForSubmission polls until a settled state; past its tries it throws SUBMISSION_NOT_SETTLED", async () => {
    const svc = service([{ status: 200, body: view("pending") }, { status: 200, body: view("sent") }, { status: 200, body: view("mined") }]);
    expect((await waitForSubmission("s".repeat(22), { ...svc, intervalMs: 0 })).state).toBe("mined");
    expect(svc.seen.map((s) => s.url)).toEqual(Array(3).fill(`http://svc/v1/submissions/${"s".repeat(22)}`));
    const stuck = service([{ status: 200, body: view("sent") }, { status: 200, body: view("sent") }]);
    const error = await waitForSubmission("s".repeat(22), { ...stuck, intervalMs: 0, tries: 2 }).catch((e: unknown) => e);
    expect(isAtsClientError(error, "SUBMISSION_NOT_SETTLED")).toBe(true);
  });

  test("submitDelegatedAttestBatchAsync asks respond-async: a 202 is the submission to wait for, a 200 the batch's full answer", async () => {
    const full = { submissionId: null, txHash: null, results: [{ status: 400, code: "INVALID_INPUT", error: "bad" }], chain: "x" };
    const svc = service([{ status: 202, body: { submissionId: "c".repeat(22), state: "pending" } }, { status: 200, body: full }]);
    expect(await submitDelegatedAttestBatchAsync([body], { ...svc, idempotencyKey: "k3" })).toEqual({ accepted: true, submissionId: "c".repeat(22) });
    expect([svc.seen[0]!.url, svc.seen[0]!.headers.get("prefer"), svc.seen[0]!.headers.get("idempotency-key")]).toEqual([
      "http://svc/v1/delegated-attest/batch",
      "respond-async",
      "k3",
    ]);
    expect(await submitDelegatedAttestBatchAsync([body], svc)).toEqual({ accepted: false, result: full });
  });

  test("an unknown submission throws NOT_FOUND", async () => {
    const svc = service([{ status: 404, body: { code: "NOT_FOUND", error: "Submission not found" } }]);
    const error = await fetchSubmission("x".repeat(22), svc).catch((e: unknown) => e);
    expect(isAtsClientError(error, "NOT_FOUND")).toBe(true);
  });
});
