/**
 * `POST /api/verify/subject-ownership`'s per-client bound (`SUBJECT_OWNERSHIP_RATE_PER_MINUTE`, found by attacking the
 * route: anonymous, each proof may ask the chain a contract's code and owner(), and nothing bounded them): past it a
 * client is 429 with Retry-After before any lookup; another client is not held by it.
 */
import { expect, test } from "bun:test";
import { Elysia } from "elysia";
import { createRateLimiter } from "../../../domain/rate_limit.ts";
import { ok } from "../../../domain/result.ts";
import { fakeClock } from "../../../ports/fakes/mod.ts";
import { subjectOwnershipRoutes } from "./subject_ownership.ts";

test("a client past its proofs a minute is 429 with Retry-After and nothing looked up; another client still is served", async () => {
  let lookups = 0;
  const verify = (() => (lookups++, Promise.resolve(ok({ ok: false, status: "failed", subjectDid: "did:web:a.example", connectedWalletDid: "did:pkh:eip155:1:0x1" })))) as never;
  const clientRate = createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 });
  const app = new Elysia().use(subjectOwnershipRoutes({
    verify,
    log: { debug() {}, info() {}, warn() {}, error() {} },
    limit: { clientRate, clientAddress: (request) => request.headers.get("x-test-client") ?? "unknown" },
  }));
  const post = (client: string) => app.handle(new Request("http://localhost/api/verify/subject-ownership", {
    method: "POST",
    headers: { "content-type": "application/json", "x-test-client": client === "a" ? "192.0.2.1" : "192.0.2.2" },
    body: JSON.stringify({ subjectDid: "did:web:a.example", connectedWalletDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001" }),
  }));
  expect([(await post("a")).status, (await post("a")).status]).toEqual([200, 200]);
  const refused = await post("a");
  expect([refused.status, (await refused.json() as { code: string }).code, refused.headers.get("retry-after")]).toEqual([429, "RATE_LIMITED", "30"]);
  expect(lookups).toBe(2);
  expect((await post("b")).status).toBe(200);
  expect(lookups).toBe(3);
});
