import type { HexString } from "../eas.ts";

/** A signed transaction of a fake wallet: hash and bytes made from a counter. */
export function fakeSignedTx(wallet: HexString, counter: number, fill: string): import("../eas.ts").SignedTx {
  const txHash = `0x${counter.toString(16).padStart(64, fill)}` as HexString;
  return { txHash, raw: `0x02${txHash.slice(2)}` as HexString, wallet: wallet.toLowerCase() as HexString, nonce: counter - 1 };
}
