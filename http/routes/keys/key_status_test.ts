import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../adapters/observability/mod.ts";
import { createRateLimiter } from "../../../domain/rate_limit.ts";
import { fail } from "../../../domain/result.ts";
import { fakeClock } from "../../../ports/fakes/mod.ts";
import { keyStatusRoutes } from "./key_status.ts";

const URL_OK = "http://localhost/v1/key-status?subjectDid=did:web:a.test&keyDid=did:key:z6Mk";

describe("keyStatusRoutes()", () => {
  test("past the client's rate a lookup is 429 with Retry-After and never reaches the use case; clients are counted apart", async () => {
    const looked: string[] = [];
    const app = keyStatusRoutes({
      keyStatus: (subjectDid) => {
        looked.push(subjectDid);
        return Promise.resolve(fail("NETWORK_ERROR", "down"));
      },
      clientRate: createRateLimiter(fakeClock(), { capacity: 3, perMinute: 3 }),
      maxInFlight: 100,
      clientAddress: (request) => request.headers.get("x-test-client") ?? undefined,
      log: silentLogger,
    });
    const ask = (client: string) => app.handle(new Request(URL_OK, { headers: { "x-test-client": client } }));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await ask("203.0.113.1")).status);
    expect(statuses).toEqual([502, 502, 502, 429, 429]);
    const refused = await ask("203.0.113.1");
    expect([refused.headers.get("retry-after"), await refused.json()]).toEqual(["20", { error: "Too many key-status lookups; try again later", code: "RATE_LIMITED" }]);
    expect((await ask("203.0.113.2")).status).toBe(502);
    expect(looked).toHaveLength(4);
  });

  test("past the lookups in flight a lookup is 429 at once; a bad query is 400 before the rate is taken", async () => {
    const waiting: (() => void)[] = [];
    const app = keyStatusRoutes({
      keyStatus: () => new Promise((resolve) => waiting.push(() => resolve(fail("NETWORK_ERROR", "down")))),
      clientRate: createRateLimiter(fakeClock(), { capacity: 1_000, perMinute: 1_000 }),
      maxInFlight: 2,
      log: silentLogger,
    });
    const running = [app.handle(new Request(URL_OK)), app.handle(new Request(URL_OK))];
    while (waiting.length < 2) await Bun.sleep(1);
    const third = await app.handle(new Request(URL_OK));
    expect([third.status, third.headers.get("retry-after")]).toEqual([429, "1"]);
    for (const release of waiting) release();
    expect((await Promise.all(running)).map((r) => r.status)).toEqual([502, 502]);
    const bad = await app.handle(new Request("http://localhost/v1/key-status?subjectDid=did:web:a.test&keyDid=did:key:z&keyDid=did:key:y"));
    expect([bad.status, await bad.json()]).toEqual([400, { error: "keyDid must be given once", code: "INVALID_INPUT" }]);
  });
});
