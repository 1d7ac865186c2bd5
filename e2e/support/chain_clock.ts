import type { PublicClient } from "viem";

/**
 * Waits until the chain's own clock is past `seconds`: the pending block's time (what the node would stamp on a block
 * mined now) is at least `seconds + 1`, so the next block mined is at least a second later than `seconds`, and a time
 * between the two exists.
 *
 * Not the wall clock: Anvil's block times follow it only up to an offset of its own, and a fresh-clone CI run had a
 * controller witness and a key binding written a wall-clock second apart land in blocks stamped with the same second
 * (e2e/key_trust_test.ts, blocks 2019 and 2020 both at 1795960330).
 */
export async function afterChainSecond(client: Pick<PublicClient, "getBlock">, seconds: bigint | number): Promise<void> {
  const past = BigInt(seconds) + 1n;
  while ((await client.getBlock({ blockTag: "pending" })).timestamp < past) await Bun.sleep(20);
}
