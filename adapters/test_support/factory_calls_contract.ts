import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of factory calls (issue 23); registered inside its describe, `open` gives the storage under test. */
export function factoryCallsContract(open: () => Promise<Storage>) {
  test("factory calls (issue 23): one record per chain and wallet, even in parallel; failed keeps the transaction; forget frees it", async () => {
    const { factoryCalls } = await open();
    const wallet = `0x${fresh("w").replace(/[^0-9a-z]/g, "").padStart(40, "0").slice(-40)}`;
    const attempt = { chainId: 31337, wallet: wallet.toUpperCase().replace("0X", "0x"), factory: "0xFAC7", calldataHash: "0xAB", createdAtMs: 5 };
    const begun = await Promise.all(Array.from({ length: 10 }, () => factoryCalls.begin(attempt)));
    expect(begun.filter(Boolean)).toHaveLength(1);
    expect(await factoryCalls.find(31337, wallet)).toMatchObject({ wallet, factory: "0xfac7", calldataHash: "0xab", state: "sent", txHash: null, gasUsed: null });
    expect(await factoryCalls.find(1, wallet)).toBeUndefined();
    await factoryCalls.failed(31337, wallet, { txHash: "0xbee", gasUsed: 712_345n }, 9);
    expect(await factoryCalls.find(31337, wallet)).toMatchObject({ state: "failed", txHash: "0xbee", gasUsed: 712_345n, createdAtMs: 5, updatedAtMs: 9 });
    expect(await factoryCalls.begin(attempt)).toBe(false);
    await factoryCalls.forget(31337, wallet);
    expect(await factoryCalls.find(31337, wallet)).toBeUndefined();
    expect(await factoryCalls.begin(attempt)).toBe(true);
  });
}
