import { describe, expect, test } from "bun:test";
import { atMostOnceASecond } from "./http.ts";

describe("/readyz's chain part: read at most once a second (a public route's rate was the provider's rate of calls)", () => {
  test("calls while a read runs share it; for a second after it was asked for too; then a new read; a read that threw is not kept", async () => {
    let now = 0;
    let reads = 0;
    let fail = false;
    let finish: (() => void) | undefined;
    const read = atMostOnceASecond(() => {
      reads++;
      return new Promise<number>((resolve, reject) => (finish = () => (fail ? reject(new Error("down")) : resolve(reads))));
    }, () => now);
    // Twenty at once, the read slower than a second: one read.
    const first = Array.from({ length: 20 }, () => read());
    now += 5_000;
    const later = read();
    finish!();
    const all: number[] = await Promise.all([...first, later]);
    expect(all).toEqual(new Array<number>(21).fill(1));
    expect(reads).toBe(1);
    // Done: kept for a second from when it was asked for (5 s ago here), so the next call reads again.
    const second = read();
    finish!();
    expect([await second, reads]).toEqual([2, 2]);
    now += 999;
    expect([await read(), reads]).toEqual([2, 2]);
    now += 1;
    fail = true;
    const failing = read();
    finish!();
    await expect(failing).rejects.toThrow("down");
    fail = false;
    const again = read();
    finish!();
    expect([await again, reads]).toEqual([4, 4]);
  });
});
