/**
 * scrypt (RFC 7914) without the RFC's bound n < 2^(16r), for keystores whose parameters break it. Python's eth-account
 * (eth-keyfile) writes n = 2^18 with r = 1 and p = 8 by default, as the Web3 Secret Storage definition's own scrypt
 * vector does; pycryptodome derives such keys, while OpenSSL and BoringSSL (node:crypto's `scryptSync`, Bun's) and
 * @noble/hashes refuse the parameters, so those files could not be opened. The bound is a parameter check only: the
 * derivation is the same function, and this one gives `scryptSync`'s bytes wherever both run (keystore_test.ts).
 *
 * Synchronous and about as slow as the work asked (n·r·p), within the keystore's own caps (adapters/signers/keystore.ts:
 * 256 MiB, 2^23 work). Used only where `scryptSync` refuses.
 */
import { pbkdf2Sync } from "node:crypto";

/** The derived key of `password` and `salt` under scrypt(n, r, p), `dkLen` bytes; `n` a power of two. */
export function scryptUnbounded(password: Uint8Array, salt: Uint8Array, n: number, r: number, p: number, dkLen: number): Buffer {
  const blockBytes = 128 * r;
  const words = blockBytes / 4;
  const b = pbkdf2Sync(password, salt, 1, p * blockBytes, "sha256");
  const x = new Uint32Array(words);
  const y = new Uint32Array(words);
  const v = new Uint32Array(words * n);
  const t = new Uint32Array(16);
  for (let lane = 0; lane < p; lane++) {
    const offset = lane * blockBytes;
    for (let k = 0; k < words; k++) x[k] = b.readUInt32LE(offset + 4 * k);
    // ROMix: fill V with the successive block mixes, then mix in the entries the state itself picks.
    for (let i = 0; i < n; i++) {
      v.set(x, i * words);
      blockMix(x, y, t, r);
    }
    const last = (2 * r - 1) * 16;
    for (let i = 0; i < n; i++) {
      const j = (x[last]! & (n - 1)) * words;
      for (let k = 0; k < words; k++) x[k]! ^= v[j + k]!;
      blockMix(x, y, t, r);
    }
    for (let k = 0; k < words; k++) b.writeUInt32LE(x[k]!, offset + 4 * k);
  }
  return pbkdf2Sync(password, b, 1, dkLen, "sha256");
}

/** BlockMix with Salsa20/8 over the 2r 64-byte blocks of `b`, in place (`y` and `t` are scratch). */
function blockMix(b: Uint32Array, y: Uint32Array, t: Uint32Array, r: number): void {
  t.set(b.subarray((2 * r - 1) * 16, 2 * r * 16));
  for (let i = 0; i < 2 * r; i++) {
    for (let k = 0; k < 16; k++) t[k]! ^= b[i * 16 + k]!;
    salsa20_8(t);
    // The even blocks first, then the odd ones.
    y.set(t, ((i & 1) === 0 ? i >> 1 : r + (i >> 1)) * 16);
  }
  b.set(y);
}

const rotl = (a: number, n: number) => (a << n) | (a >>> (32 - n));

/** The Salsa20/8 core over 16 words, in place: four double rounds, the input added to the result. */
function salsa20_8(s: Uint32Array): void {
  let x0 = s[0]!, x1 = s[1]!, x2 = s[2]!, x3 = s[3]!, x4 = s[4]!, x5 = s[5]!, x6 = s[6]!, x7 = s[7]!;
  let x8 = s[8]!, x9 = s[9]!, x10 = s[10]!, x11 = s[11]!, x12 = s[12]!, x13 = s[13]!, x14 = s[14]!, x15 = s[15]!;
  for (let round = 0; round < 8; round += 2) {
    // Columns.
    x4 ^= rotl(x0 + x12, 7), x8 ^= rotl(x4 + x0, 9), x12 ^= rotl(x8 + x4, 13), x0 ^= rotl(x12 + x8, 18);
    x9 ^= rotl(x5 + x1, 7), x13 ^= rotl(x9 + x5, 9), x1 ^= rotl(x13 + x9, 13), x5 ^= rotl(x1 + x13, 18);
    x14 ^= rotl(x10 + x6, 7), x2 ^= rotl(x14 + x10, 9), x6 ^= rotl(x2 + x14, 13), x10 ^= rotl(x6 + x2, 18);
    x3 ^= rotl(x15 + x11, 7), x7 ^= rotl(x3 + x15, 9), x11 ^= rotl(x7 + x3, 13), x15 ^= rotl(x11 + x7, 18);
    // Rows.
    x1 ^= rotl(x0 + x3, 7), x2 ^= rotl(x1 + x0, 9), x3 ^= rotl(x2 + x1, 13), x0 ^= rotl(x3 + x2, 18);
    x6 ^= rotl(x5 + x4, 7), x7 ^= rotl(x6 + x5, 9), x4 ^= rotl(x7 + x6, 13), x5 ^= rotl(x4 + x7, 18);
    x11 ^= rotl(x10 + x9, 7), x8 ^= rotl(x11 + x10, 9), x9 ^= rotl(x8 + x11, 13), x10 ^= rotl(x9 + x8, 18);
    x12 ^= rotl(x15 + x14, 7), x13 ^= rotl(x12 + x15, 9), x14 ^= rotl(x13 + x12, 13), x15 ^= rotl(x14 + x13, 18);
  }
  s[0]! += x0, s[1]! += x1, s[2]! += x2, s[3]! += x3, s[4]! += x4, s[5]! += x5, s[6]! += x6, s[7]! += x7;
  s[8]! += x8, s[9]! += x9, s[10]! += x10, s[11]! += x11, s[12]! += x12, s[13]! += x13, s[14]! += x14, s[15]! += x15;
}
