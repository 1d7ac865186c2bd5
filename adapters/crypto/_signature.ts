/** Checks shared by both implementations, so they refuse exactly the same inputs. */

/** The order of the secp256k1 group. */
export const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** A 32-byte digest and a 65-byte r‖s‖v signature, checked and split; undefined when either is malformed. */
export function parseRecoverable(
  hash: string,
  signature: string,
): { readonly hash: Uint8Array; readonly rs: Uint8Array; readonly r: bigint; readonly s: bigint; readonly recovery: 0 | 1 } | undefined {
  if (!/^0x[0-9a-fA-F]{64}$/.test(hash) || !/^0x[0-9a-fA-F]{130}$/.test(signature)) return undefined;
  const v = Number.parseInt(signature.slice(130, 132), 16);
  const recovery = v === 27 || v === 0 ? 0 : v === 28 || v === 1 ? 1 : undefined;
  if (recovery === undefined) return undefined;
  const r = BigInt(`0x${signature.slice(2, 66)}`);
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  if (r === 0n || s === 0n || r >= CURVE_ORDER || s >= CURVE_ORDER) return undefined;
  return { hash: Buffer.from(hash.slice(2), "hex"), rs: Buffer.from(signature.slice(2, 130), "hex"), r, s, recovery };
}

/** Both implementations sign only a 32-byte digest with a 32-byte key (noble alone would take a digest of any length). */
export function checkSigningInput(hash: Uint8Array, privateKey: Uint8Array): void {
  if (hash.length !== 32 || privateKey.length !== 32) throw new Error("A digest and a private key are 32 bytes each");
}
