import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { T0, fresh } from "./_helpers.ts";

/** The storage contract's tests of rate buckets; registered inside its describe, `open` gives the storage under test. */
export function rateCounterContract(open: () => Promise<Storage>) {
  test("rate buckets: a key starts full and takes `count` at a time; refused, it is told the tokens left; it refills with time up to its capacity", async () => {
    const { rateCounter } = await open();
    const bucket = { scope: fresh("scope"), capacity: 5, perMinute: 6 };
    const key = fresh("key");
    const take = (count: number, nowMs: number) => rateCounter.take(bucket, key, { count, nowMs });
    expect(await take(3, T0)).toEqual({ allowed: true, tokens: 2 });
    expect(await take(3, T0)).toEqual({ allowed: false, tokens: 2 });
    expect(await take(2, T0)).toEqual({ allowed: true, tokens: 0 });
    // Six a minute: one every 10 s (half of one after 5 s).
    const half = await take(1, T0 + 5_000);
    expect([half.allowed, Math.round(half.tokens * 1000)]).toEqual([false, 500]);
    const whole = await take(1, T0 + 10_010);
    expect([whole.allowed, Math.round(whole.tokens * 1000)]).toEqual([true, 1]);
    // Never more than the capacity, however long the key rested; a clock behind the stored one refills nothing.
    expect(await take(1, T0 + 3_600_000)).toEqual({ allowed: true, tokens: 4 });
    expect(await take(1, T0)).toEqual({ allowed: true, tokens: 3 });
    // Another key, or another limit with the same key, has its own bucket.
    expect(await rateCounter.take(bucket, fresh("key"), { count: 5, nowMs: T0 })).toEqual({ allowed: true, tokens: 0 });
    expect(await rateCounter.take({ ...bucket, scope: fresh("scope") }, key, { count: 5, nowMs: T0 })).toEqual({ allowed: true, tokens: 0 });
    // A take larger than the capacity is refused and spends nothing.
    expect(await rateCounter.take(bucket, fresh("key"), { count: 6, nowMs: T0 })).toEqual({ allowed: false, tokens: 5 });
  });

  test("rate buckets: forty parallel takes of a bucket of ten admit exactly ten", async () => {
    const { rateCounter } = await open();
    const bucket = { scope: fresh("scope"), capacity: 10, perMinute: 10 };
    const key = fresh("key");
    const taken = await Promise.all(Array.from({ length: 40 }, () => rateCounter.take(bucket, key, { count: 1, nowMs: T0 })));
    expect(taken.filter((t) => t.allowed)).toHaveLength(10);
    expect(taken.filter((t) => !t.allowed).every((t) => t.tokens === 0)).toBe(true);
  });

  test("rate buckets: prune forgets the buckets full again, and a forgotten key starts full", async () => {
    const { rateCounter } = await open();
    const late = T0 + 10 * 86_400_000;
    await rateCounter.prune(late);
    const bucket = { scope: fresh("scope"), capacity: 2, perMinute: 2 };
    const key = fresh("key");
    await rateCounter.take(bucket, key, { count: 2, nowMs: late });
    await rateCounter.take(bucket, fresh("key"), { count: 1, nowMs: late });
    // Full again after 60 s (the first) and 30 s (the second).
    expect(await rateCounter.prune(late + 29_000)).toBe(0);
    expect(await rateCounter.prune(late + 31_000)).toBe(1);
    expect(await rateCounter.prune(late + 59_000)).toBe(0);
    expect(await rateCounter.prune(late + 61_000)).toBe(1);
    expect(await rateCounter.take(bucket, key, { count: 2, nowMs: late + 61_000 })).toEqual({ allowed: true, tokens: 0 });
  });
}
