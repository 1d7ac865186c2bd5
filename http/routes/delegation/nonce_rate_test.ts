/**
 * `GET /v1/nonce` per client address (NONCE_RATE_PER_MINUTE): each read is an `eth_call` the service pays for, so past
 * the rate it is 429 RATE_LIMITED with Retry-After before any call; a query refused as invalid takes no turn; another
 * address is unaffected; the minute gives the turns back.
 */
import { describe, expect, test } from "bun:test";
import { createReadNonce } from "../../../domain/delegation/mod.ts";
import { createRateLimiter } from "../../../domain/rate_limit.ts";
import { fakeClock, fakeEasReader } from "../../../ports/fakes/mod.ts";
import { createApp } from "../../app.ts";
import { minimalAppDeps } from "../../testing.ts";

const ATTESTER = `0x${"ab".repeat(20)}`;

function setup(perMinute: number) {
  const clock = fakeClock();
  const eas = fakeEasReader();
  let reads = 0;
  const readNonce = createReadNonce({ ...eas, getAttesterNonce: (attester) => (reads++, eas.getAttesterNonce(attester)) });
  const base = minimalAppDeps();
  const app = createApp({
    ...base,
    eas: {
      ...base.eas,
      readNonce,
      nonceRate: createRateLimiter(clock, { capacity: perMinute, perMinute }),
      clientAddress: (request) => request.headers.get("x-test-client") ?? undefined,
    },
  });
  const get = async (query: string, client: string) => {
    const response = await app.handle(new Request(`http://localhost/v1/nonce?${query}`, { headers: { "x-test-client": client } }));
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() as Record<string, unknown> };
  };
  return { get, clock, reads: () => reads };
}

describe("GET /v1/nonce per client address", () => {
  test("past the rate: 429 RATE_LIMITED with Retry-After and no chain read; another address and the next minute are served", async () => {
    const env = setup(3);
    for (let i = 0; i < 3; i++) expect((await env.get(`attester=${ATTESTER}`, "198.51.100.1")).status).toBe(200);
    const refused = await env.get(`attester=${ATTESTER}`, "198.51.100.1");
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("RATE_LIMITED");
    expect(typeof refused.body.error).toBe("string");
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(env.reads()).toBe(3);
    expect((await env.get(`attester=${ATTESTER}`, "198.51.100.2")).status).toBe(200);
    env.clock.set(env.clock.nowMs() + 60_000);
    expect((await env.get(`attester=${ATTESTER}`, "198.51.100.1")).status).toBe(200);
    expect(env.reads()).toBe(5);
  });

  test("an invalid query is 400 and takes no turn", async () => {
    const env = setup(1);
    for (let i = 0; i < 3; i++) expect((await env.get("attester=nope", "198.51.100.3")).status).toBe(400);
    expect((await env.get(`attester=${ATTESTER}`, "198.51.100.3")).status).toBe(200);
    expect(env.reads()).toBe(1);
  });

  test("1,000 reads at once from one address: exactly the rate's turns reach the chain, the rest are 429", async () => {
    const env = setup(120);
    const answers = await Promise.all(Array.from({ length: 1_000 }, () => env.get(`attester=${ATTESTER}`, "198.51.100.4")));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200).length).toBe(120);
    expect(statuses.filter((s) => s === 429).length).toBe(880);
    expect(env.reads()).toBe(120);
  });
});
