import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createCachedDiscovery } from "./cached_discovery.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";
import { rateLimitedLookupError } from "./discovery_record.ts";

describe("createCachedDiscovery()", () => {
  function setup(options: { capacity?: number; maxEntries?: number } = {}) {
    const clock = fakeClock(0);
    const dns = fakeDnsResolver({ "_omatrust.down.example": { status: "servfail" } });
    const docs = fakeDidDocumentFetcher();
    const inner = createDiscoverControllers({
      dns,
      didDocuments: docs,
      serviceDnsLabel: "omatrust",
      domainRate: createRateLimiter(clock, { capacity: options.capacity ?? 100, perMinute: options.capacity ?? 100 }),
    });
    const discover = createCachedDiscovery(inner, { clock }, { maxEntries: options.maxEntries });
    return { clock, dns, docs, discover };
  }

  test("answers one subject from one lookup for 60 s, each caller with its own input, then looks again", async () => {
    const { clock, dns, discover } = setup();
    const first = await discover("Example.com");
    const second = await discover("did:web:www.example.com");
    expect(dns.lookups.length).toBe(2);
    expect(first.ok && first.value.subject.input).toBe("Example.com");
    expect(second.ok && second.value.subject.input).toBe("did:web:www.example.com");
    expect(second.ok && second.value.evidence).toEqual(first.ok ? first.value.evidence : []);
    clock.set(59_999);
    await discover("example.com");
    expect(dns.lookups.length).toBe(2);
    clock.set(60_000);
    await discover("example.com");
    expect(dns.lookups.length).toBe(4);
  });

  test("an answer with an unavailable source is kept 10 s only; concurrent lookups of one subject share one", async () => {
    const { clock, dns, discover } = setup();
    await Promise.all([discover("down.example"), discover("did:web:down.example"), discover("DOWN.example")]);
    expect(dns.lookups.length).toBe(2);
    clock.set(9_999);
    await discover("down.example");
    expect(dns.lookups.length).toBe(2);
    clock.set(10_000);
    await discover("down.example");
    expect(dns.lookups.length).toBe(4);
  });

  test("when the domain's budget refuses a lookup, the last real answer stands in with its age; a refusal is never kept", async () => {
    const { clock, dns, discover } = setup({ capacity: 1 });
    await discover("a.victim.example");
    clock.set(30_000);
    const refused = await discover("b.victim.example");
    expect(refused.ok && refused.value.evidence.map((e) => e.status)).toEqual(["unavailable", "unavailable", "unavailable"]);
    clock.set(61_000);
    const b = await discover("b.victim.example");
    expect(b.ok && b.value.evidence.map((e) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
    const lookups = dns.lookups.length;
    const stale = await discover("a.victim.example");
    expect(dns.lookups.length).toBe(lookups);
    expect(stale.ok && stale.value.evidence.map((e) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
    expect(stale.ok && stale.value.warnings).toEqual([`${rateLimitedLookupError("victim.example")}: this evidence was observed 61 s ago`]);
  });

  test("freshOnly (key status, controller authorization): a refused lookup is unavailable evidence, no older answer stands in", async () => {
    const { clock, discover } = setup({ capacity: 1 });
    await discover("a.victim.example");
    clock.set(61_000);
    await discover("b.victim.example");
    // The budget spent: an answer 61 s old would stand in for the views, and was given as today's to key status.
    const refused = await discover("a.victim.example", { freshOnly: true });
    expect(refused.ok && refused.value.evidence.map((e) => e.status)).toEqual(["unavailable", "unavailable", "unavailable"]);
  });

  test("the witness's refusing lookups bypass it, and it holds at most maxEntries subjects", async () => {
    const { dns, discover } = setup({ maxEntries: 2 });
    await discover("one.example");
    await discover("one.example", { refuseWhenRateLimited: true });
    expect(dns.lookups.length).toBe(4);
    await discover("two.example");
    await discover("three.example");
    await discover("one.example");
    expect(dns.lookups.length).toBe(10);
  });
});
