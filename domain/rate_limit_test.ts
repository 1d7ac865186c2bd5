import { describe, expect, test } from "bun:test";
import { fakeClock, fakeRateCounter } from "../ports/fakes/mod.ts";
import { createRateLimiter, createSharedRateLimiter, registrableDomain } from "./rate_limit.ts";

describe("registrableDomain()", () => {
  test("keeps the last two labels, lowercased, without a trailing dot", () => {
    expect(registrableDomain("a.b.Victim.com.")).toBe("victim.com");
    expect(registrableDomain("victim.com")).toBe("victim.com");
    expect(registrableDomain("localhost")).toBe("localhost");
  });

  test("keeps three labels under a short public-suffix-like label of a country code", () => {
    expect(registrableDomain("www.shop.example.co.uk")).toBe("example.co.uk");
    expect(registrableDomain("x.example.com.au")).toBe("example.com.au");
    expect(registrableDomain("a.example.ne.jp")).toBe("example.ne.jp");
    // Not a country code, or not a suffix-like label: two labels.
    expect(registrableDomain("a.example.co.com")).toBe("co.com");
    expect(registrableDomain("a.example.io")).toBe("example.io");
  });

  test("an IP literal is its own key", () => {
    expect(registrableDomain("192.168.1.20")).toBe("192.168.1.20");
    expect(registrableDomain("::1")).toBe("::1");
  });
});

describe("createRateLimiter()", () => {
  test("allows the burst, refuses with a retry time, refills over the minute", () => {
    const clock = fakeClock(0);
    const limiter = createRateLimiter(clock, { capacity: 2, perMinute: 2 });
    expect([limiter.take("k"), limiter.take("k")]).toEqual([{ allowed: true }, { allowed: true }]);
    expect(limiter.take("k")).toEqual({ allowed: false, retryAfterSeconds: 30 });
    expect(limiter.take("other")).toEqual({ allowed: true });
    clock.set(30_000);
    expect(limiter.take("k")).toEqual({ allowed: true });
  });
});

describe("a negative count gives tokens back", () => {
  test("in process and in the storage alike: taken again, never past the capacity", async () => {
    for (const limit of [createRateLimiter(fakeClock(), { capacity: 2, perMinute: 0.01 }), createSharedRateLimiter(fakeRateCounter(), fakeClock(), { scope: "s", capacity: 2, perMinute: 0.01 })]) {
      await limit.take("full", -1);
      expect([await limit.take("full"), await limit.take("full"), await limit.take("full")].map((d) => d.allowed)).toEqual([true, true, false]);
      await limit.take("full", -1);
      expect([await limit.take("full"), await limit.take("full")].map((d) => d.allowed)).toEqual([true, false]);
    }
  });
});

describe("createSharedRateLimiter()", () => {
  test("answers what the in-process limiter answers, burst, Retry-After and refill alike, for single takes and batches", async () => {
    const clock = fakeClock(0);
    const counter = fakeRateCounter();
    const options = { capacity: 12, perMinute: 12 };
    const local = createRateLimiter(clock, options);
    const shared = createSharedRateLimiter(counter, clock, { ...options, scope: "s" });
    const both = async (key: string, count?: number) => {
      const answers = [local.take(key, count), await shared.take(key, count)];
      expect(answers[1]).toEqual(answers[0]!);
      return answers[0]!;
    };
    expect(await both("k", 10)).toEqual({ allowed: true });
    expect(await both("k", 3)).toEqual({ allowed: false, retryAfterSeconds: 5 });
    expect(await both("k")).toEqual({ allowed: true });
    expect(await both("k")).toEqual({ allowed: true });
    expect(await both("k")).toEqual({ allowed: false, retryAfterSeconds: 5 });
    expect(await both("other", 12)).toEqual({ allowed: true });
    clock.set(5_000);
    expect(await both("k")).toEqual({ allowed: true });
    expect(await both("k")).toEqual({ allowed: false, retryAfterSeconds: 5 });
    // One counter, many limits: the scope keeps them apart.
    expect(await createSharedRateLimiter(counter, clock, { ...options, scope: "t" }).take("k", 12)).toEqual({ allowed: true });
    expect(counter.buckets.size).toBe(3);
  });
});
