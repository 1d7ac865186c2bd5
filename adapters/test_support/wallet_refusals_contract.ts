import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of refused wallets; registered inside its describe, `open` gives the storage under test. */
export function walletRefusalsContract(open: () => Promise<Storage>) {
  test("refused wallets: one record per chain and wallet, the first kept, found in any case", async () => {
    const { walletRefusals } = await open();
    const wallet = `0x${fresh("w").replace(/[^0-9a-z]/g, "").padStart(40, "0").slice(-40)}`;
    await Promise.all(Array.from({ length: 5 }, (_, i) => walletRefusals.refuse({ chainId: 31337, wallet: wallet.toUpperCase().replace("0X", "0x"), txHash: `0x${i}`, createdAtMs: 7 })));
    const found = await walletRefusals.find(31337, wallet.toUpperCase().replace("0X", "0x"));
    expect(found).toMatchObject({ chainId: 31337, wallet, createdAtMs: 7 });
    await walletRefusals.refuse({ chainId: 31337, wallet, txHash: "0xlater", createdAtMs: 9 });
    expect((await walletRefusals.find(31337, wallet))?.txHash).toBe(found!.txHash);
    expect(await walletRefusals.find(1, wallet)).toBeUndefined();
  });
}
