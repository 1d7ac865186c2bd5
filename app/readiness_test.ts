import { describe, expect, test } from "bun:test";
import type { ChainIndex } from "./attestation_index.ts";
import { atMostOnceASecond, chainNodes, otherChainsReadiness } from "./http.ts";
import type { IndexStatus } from "./index_follower.ts";

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

describe("/readyz's held chains (decisions §30: a served chain whose node did not answer its chain id at start is held closed)", () => {
  /** An index whose store says a poll completed just now (a restart within INDEX_STALL_SECONDS, or another instance's). */
  const freshIndex = () => {
    const status: IndexStatus = { indexedBlock: 40, head: 40, lagBlocks: 0, catchingUp: false, checkedAt: 1_795_734_267, stale: false, doubted: false, follower: false };
    return { chain: { caip2: "eip155:31338" }, index: { refresh: () => Promise.resolve(status), status: () => status } } as unknown as ChainIndex;
  };

  test("a held attestation chain's index is never reported fresh, however recent its last poll; it carries its node's state", async () => {
    for (const node of ["unchecked", "wrong"] as const) {
      const chains = await otherChainsReadiness([freshIndex()], new Map([["eip155:31338", node]]));
      expect(chains).toEqual({ "eip155:31338": { index: false, node, indexedBlock: 40, head: 40, lagBlocks: 0, catchingUp: false, checkedAt: 1_795_734_267, stale: false, doubted: false } });
    }
    // Checked (at start, or its gate opened since): fresh as its index says.
    for (const held of [new Map(), new Map([["eip155:31338", "checked" as const]])]) {
      const chains = await otherChainsReadiness([freshIndex()], held);
      expect(chains?.["eip155:31338"]).toMatchObject({ index: true, node: "checked" });
    }
  });

  test("nodes: every served chain by CAIP-2 id, checked unless held; absent with one chain served", () => {
    const list = [{ caip2: "eip155:31337" }, { caip2: "eip155:31338" }, { caip2: "eip155:31339" }];
    expect(chainNodes(list, new Map([["eip155:31338", "unchecked"], ["eip155:31339", "wrong"]]))).toEqual({
      "eip155:31337": "checked",
      "eip155:31338": "unchecked",
      "eip155:31339": "wrong",
    });
    expect(chainNodes(list, new Map())).toEqual({ "eip155:31337": "checked", "eip155:31338": "checked", "eip155:31339": "checked" });
    expect(chainNodes([{ caip2: undefined }], new Map())).toBeUndefined();
  });
});
