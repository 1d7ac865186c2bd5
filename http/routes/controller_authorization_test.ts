import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../adapters/observability/mod.ts";
import { createRateLimiter } from "../../domain/rate_limit.ts";
import { fail, ok } from "../../domain/result.ts";
import { fakeClock } from "../../ports/fakes/mod.ts";
import { controllerAuthorizationRoutes } from "./controller_authorization.ts";

const Q = "subjectDid=did:web:a.test&controllerDid=did:pkh:eip155:1:0x00000000000000000000000000000000000000b1";

function app(answer: () => Promise<unknown>, capacity = 1_000) {
  const asked: unknown[] = [];
  const routes = controllerAuthorizationRoutes({
    authorize: ((request: unknown) => (asked.push(request), answer())) as never,
    resolveDidUrl: ((didUrl: string) => Promise.resolve(didUrl.endsWith("#key-1") ? ok({ didUrl }) : fail("NOT_FOUND", "No such method"))) as never,
    clientRate: createRateLimiter(fakeClock(), { capacity, perMinute: capacity }),
    maxInFlight: 10,
    log: silentLogger,
  });
  return { asked, get: (path: string) => routes.handle(new Request(`http://localhost${path}`)) };
}

describe("controllerAuthorizationRoutes()", () => {
  test("both paths pass the query to the use case; INDEX_STALE is 503 with Retry-After; NETWORK_ERROR 502", async () => {
    const stale = app(() => Promise.resolve(fail("INDEX_STALE", "The attestation index is not keeping up")));
    const res = await stale.get(`/v1/controller-authorization?${Q}&purpose=keyAgreement&at=1800000000`);
    expect([res.status, res.headers.get("retry-after"), await res.json()]).toEqual([503, "5", { error: "The attestation index is not keeping up", code: "INDEX_STALE" }]);
    expect(stale.asked[0]).toMatchObject({ subjectDid: "did:web:a.test", purpose: "keyAgreement", at: "1800000000" });
    const down = app(() => Promise.resolve(fail("NETWORK_ERROR", "down")));
    expect((await down.get(`/api/public/controller-authorization?${Q}`)).status).toBe(502);
  });

  test("a bad query is 400 INVALID_INPUT naming the parameter, before the rate or the use case", async () => {
    const s = app(() => Promise.resolve(ok({})), 1);
    for (const [query, error] of [
      ["subjectDid=did:web:a.test", "controllerDid is required"],
      [`${Q}&at=soon`, "at must be Unix seconds (a whole number)"],
      [`${Q}&subjectDid=did:web:b.test`, "subjectDid must be given once"],
    ] as const) {
      const res = await s.get(`/v1/controller-authorization?${query}`);
      expect([res.status, await res.json()]).toEqual([400, { error, code: "INVALID_INPUT" }]);
    }
    expect(s.asked).toEqual([]);
    expect((await s.get(`/v1/controller-authorization?${Q}`)).status).toBe(200);
    expect((await s.get(`/v1/controller-authorization?${Q}`)).status).toBe(429);
  });

  test("DID URL resolution: 200, 404 NOT_FOUND, 400 without didUrl", async () => {
    const s = app(() => Promise.resolve(ok({})));
    expect((await s.get("/v1/did-url/resolve?didUrl=did:web:a.test%23key-1")).status).toBe(200);
    expect((await s.get("/api/public/did-url/resolve?didUrl=did:web:a.test%23key-2")).status).toBe(404);
    const missing = await s.get("/v1/did-url/resolve");
    expect([missing.status, await missing.json()]).toEqual([400, { error: "didUrl is required", code: "INVALID_INPUT" }]);
  });
});
