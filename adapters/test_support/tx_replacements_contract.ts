import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of fee-bump replacements; registered inside its describe, `open` gives the storage under test. */
export function txReplacementsContract(open: () => Promise<Storage>) {
  const tx = (n: number) => ({ txHash: `0x${n.toString(16).padStart(64, "0")}` as const, raw: `0x02${n}` as const, wallet: "0x00000000000000000000000000000000000000aa" as const, nonce: 7 });

  test("fee-bump replacements: kept per book and submission, oldest first, one row per hash, pruned by age", async () => {
    const storage = await open();
    const k1 = fresh("0xbump");
    await storage.txReplacements.add("delegated_attestations", 1, k1, { tx: tx(1), createdAtMs: 1_000 });
    await storage.txReplacements.add("delegated_attestations", 1, k1, { tx: tx(2), createdAtMs: 2_000 });
    await storage.txReplacements.add("delegated_attestations", 1, k1, { tx: tx(1), createdAtMs: 3_000 });
    await storage.txReplacements.add("sponsored_writes", 1, k1, { tx: tx(3), createdAtMs: 1_500 });
    expect(await storage.txReplacements.list("delegated_attestations", 1, k1)).toEqual([
      { tx: tx(1), createdAtMs: 1_000 },
      { tx: tx(2), createdAtMs: 2_000 },
    ]);
    expect((await storage.txReplacements.list("sponsored_writes", 1, k1)).map((r) => r.tx.txHash)).toEqual([tx(3).txHash]);
    expect(await storage.txReplacements.list("delegated_attestations", 1, "other")).toEqual([]);
    expect(await storage.txReplacements.prune(1_600)).toBe(2);
    expect((await storage.txReplacements.list("delegated_attestations", 1, k1)).map((r) => r.createdAtMs)).toEqual([2_000]);
  });

  test("fee-bump replacements: one submission id on two chains (one signature live on both, decisions §30) keeps each chain's apart; a chain unknown (null) lists both", async () => {
    const storage = await open();
    const key = fresh("0xbump-chains");
    await storage.txReplacements.add("delegated_attestations", 31337, key, { tx: tx(11), createdAtMs: 5_000_000 });
    await storage.txReplacements.add("delegated_attestations", 31338, key, { tx: tx(12), createdAtMs: 5_000_001 });
    await storage.txReplacements.add("delegated_attestations", 31337, key, { tx: tx(13), createdAtMs: 5_000_002 });
    const hashes = async (chainId: number | null) => (await storage.txReplacements.list("delegated_attestations", chainId, key)).map((r) => r.tx.txHash);
    expect(await hashes(31337)).toEqual([tx(11).txHash, tx(13).txHash]);
    expect(await hashes(31338)).toEqual([tx(12).txHash]);
    expect(await hashes(8453)).toEqual([]);
    expect(await hashes(null)).toEqual([tx(11).txHash, tx(12).txHash, tx(13).txHash]);
  });
}
