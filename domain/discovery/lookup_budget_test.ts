import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createCachedDiscovery } from "./cached_discovery.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";
import { rateLimitedLookupError } from "./discovery_record.ts";
import { createJwksLookup } from "./jwks_lookup.ts";
import { clientShareOf, takeLookup } from "./lookup_budget.ts";

const A = "0x1111111111111111111111111111111111111111";

/** A domain budget of 30 a minute and each client's share of it, as app/discovery.ts builds them. */
function budgets(clock = fakeClock(0), perMinute = 30) {
  const share = clientShareOf(perMinute);
  return {
    clock,
    domainRate: createRateLimiter(clock, { capacity: perMinute, perMinute }),
    clientShare: createRateLimiter(clock, { capacity: share, perMinute: share }),
  };
}

describe("takeLookup()", () => {
  test("a client's share is a third of the domain's budget, rounded up", () => {
    expect([clientShareOf(30), clientShareOf(5), clientShareOf(1)]).toEqual([10, 2, 1]);
  });

  test("a lookup needs both the domain's budget and the client's share; a client past its share spends none of the domain's", () => {
    const budget = budgets();
    for (let i = 0; i < 10; i++) expect(takeLookup(budget, "victim.test", { client: "203.0.113.7" })).toEqual({ allowed: true });
    // The spender is refused, with a time to come back, and its refusals take nothing from the domain's budget.
    for (let i = 0; i < 50; i++) expect(takeLookup(budget, "victim.test", { client: "203.0.113.7" })).toMatchObject({ allowed: false, retryAfterSeconds: 6 });
    // Its share is per domain: another domain's budget is its own.
    expect(takeLookup(budget, "other.test", { client: "203.0.113.7" }).allowed).toBe(true);
    // Two more clients spend their shares: 30 of the domain's 30.
    for (const client of ["198.51.100.1", "198.51.100.2"]) {
      for (let i = 0; i < 10; i++) expect(takeLookup(budget, "victim.test", { client }).allowed).toBe(true);
    }
    // Now the domain's budget is spent, for a fourth client and for internal calls (no client) alike.
    expect(takeLookup(budget, "victim.test", { client: "198.51.100.3" }).allowed).toBe(false);
    expect(takeLookup(budget, "victim.test").allowed).toBe(false);
  });

  test("calls without a client take the domain's budget alone; a budget without shares counts no client", () => {
    const budget = budgets();
    for (let i = 0; i < 30; i++) expect(takeLookup(budget, "victim.test").allowed).toBe(true);
    expect(takeLookup(budget, "victim.test").allowed).toBe(false);
    const noShares = { domainRate: createRateLimiter(fakeClock(0), { capacity: 12, perMinute: 12 }) };
    for (let i = 0; i < 12; i++) expect(takeLookup(noShares, "victim.test", { client: "203.0.113.7" }).allowed).toBe(true);
    expect(takeLookup(noShares, "victim.test", { client: "203.0.113.7" }).allowed).toBe(false);
    expect(takeLookup({}, "victim.test", { client: "203.0.113.7" })).toEqual({ allowed: true });
  });
});

describe("discovery under a client's share", () => {
  test("one client's lookups of 30 made-up subdomains leave the domain to another client; the spender alone is refused", async () => {
    const { clock, domainRate, clientShare } = budgets();
    const dns = fakeDnsResolver({ "_controllers.victim.test": { status: "found", records: [`v=1;controller=did:pkh:eip155:1:${A}`] } });
    const discover = createCachedDiscovery(
      createDiscoverControllers({ dns, didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust", domainRate, clientShare }),
      { clock },
    );
    const error = rateLimitedLookupError("victim.test");
    const refused = (r: Awaited<ReturnType<typeof discover>>) => r.ok && r.value.evidence.every((e) => e.error === error);
    const flood = [];
    for (let i = 0; i < 30; i++) flood.push(refused(await discover(`did:web:x${i}.victim.test`, { freshOnly: true, client: "attacker" })));
    expect(flood.filter((r) => !r)).toHaveLength(10);
    expect(refused(await discover("did:web:victim.test", { freshOnly: true, client: "attacker" }))).toBe(true);
    // Before the share, the flood had spent all 30 tokens and this was refused too.
    const answer = await discover("did:web:victim.test", { freshOnly: true, client: "someone else" });
    expect(answer.ok && answer.value.controllerKeys.map((k) => k.canonicalId)).toEqual([`did:pkh:eip155:1:${A}`]);
  });

  test("the JWKS lookup takes the client's share too", async () => {
    const { clock, domainRate, clientShare } = budgets(fakeClock(0), 3);
    const lookup = createJwksLookup({ didDocuments: fakeDidDocumentFetcher(), domainRate, clientShare, clock, freshMs: 60_000 });
    expect((await lookup("did:web:a.victim.test", { client: "attacker" })).error).toBeUndefined();
    expect(await lookup("did:web:b.victim.test", { client: "attacker" })).toMatchObject({ status: "unavailable", error: rateLimitedLookupError("victim.test") });
    expect((await lookup("did:web:victim.test", { client: "someone else" })).error).toBeUndefined();
  });
});
