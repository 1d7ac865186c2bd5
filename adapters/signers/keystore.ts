/**
 * Web3 Secret Storage v3 files (decisions §27), as geth, Foundry's `cast wallet`, OpenZeppelin Relayer and Python's
 * eth-account write them: scrypt or PBKDF2-HMAC-SHA256, AES-128-CTR, the MAC keccak-256(derived key[16..32] ‖
 * ciphertext).
 */
import { createDecipheriv, pbkdf2Sync, scryptSync, timingSafeEqual } from "node:crypto";
import { keccak256 } from "viem";
import { SignerError } from "./_digest_signer.ts";
import { scryptUnbounded } from "./_scrypt.ts";

/** The fields of a v3 keystore read here. */
type KeystoreV3 = {
  readonly version: number;
  readonly crypto?: KeystoreCrypto;
  /** geth wrote `Crypto` in its early files. */
  readonly Crypto?: KeystoreCrypto;
};
type KeystoreCrypto = {
  readonly cipher: string;
  readonly cipherparams: { readonly iv: string };
  readonly ciphertext: string;
  readonly kdf: string;
  readonly kdfparams: Record<string, unknown>;
  readonly mac: string;
};

/** The largest scrypt cost accepted (geth's "standard" is 2^18): more is a file meant to stall the start. */
const MAX_SCRYPT_N = 1 << 20;
/**
 * The most memory scrypt may take (128·n·r bytes): geth's standard file (n = 2^18, r = 8) takes exactly this. Each
 * field's own cap (n ≤ 2^20, r ≤ 64, p ≤ 64) let a file ask for 8 GiB and about 27 minutes of synchronous work at start.
 */
const MAX_SCRYPT_MEMORY = 256 * 2 ** 20;
/**
 * The most scrypt work accepted (n·r·p, linear in time): four times geth's standard file, about 5 s on a shared core.
 * Every standard keystore is within it (geth standard 2^18·8·1, geth light 2^12·8·6, ethers and web3 2^17 or 2^18·8·1).
 */
const MAX_SCRYPT_WORK = 2 ** 18 * 8 * 4;
/** The largest PBKDF2 iteration count accepted: about 1.3 s, below the scrypt bound (geth writes 262,144). */
const MAX_PBKDF2_C = 10_000_000;

/**
 * The 32-byte private key of a v3 keystore `json` under `password`. Throws SignerError "config" naming what is wrong
 * (a wrong password is "the MAC does not match"): the caller stops the start with it.
 */
export function decryptKeystore(json: string, password: string): Uint8Array {
  let file: KeystoreV3;
  try {
    file = JSON.parse(json) as KeystoreV3;
  } catch {
    throw new SignerError("config", "The keystore is not JSON");
  }
  const crypto = file?.crypto ?? file?.Crypto;
  if (file?.version !== 3 || crypto === undefined) throw new SignerError("config", "The keystore is not a version 3 Web3 Secret Storage file");
  if (crypto.cipher !== "aes-128-ctr") throw new SignerError("config", `The keystore's cipher ${String(crypto.cipher)} is not aes-128-ctr`);
  const hex = (value: unknown, what: string) => {
    if (typeof value !== "string" || !/^(0x)?([0-9a-fA-F]{2})+$/.test(value)) throw new SignerError("config", `The keystore's ${what} is not hex`);
    return Buffer.from(value.replace(/^0x/, ""), "hex");
  };
  const p = crypto.kdfparams ?? {};
  const int = (value: unknown, what: string, max: number) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > max) {
      throw new SignerError("config", `The keystore's ${what} is not a number from 1 to ${max}`);
    }
    return value;
  };
  const salt = hex(p.salt, "salt");
  const dklen = int(p.dklen, "dklen", 64);
  if (dklen < 32) throw new SignerError("config", "The keystore's dklen is below 32");
  const secret = Buffer.from(password.normalize("NFKC"), "utf8");
  let derived: Buffer;
  if (crypto.kdf === "scrypt") {
    const N = int(p.n, "scrypt n", MAX_SCRYPT_N);
    const r = int(p.r, "scrypt r", 64);
    const par = int(p.p, "scrypt p", 64);
    // n = 1 is a power of two that scrypt refuses (node:crypto threw its own RangeError, which stopped the start with a stack).
    if (N < 2 || (N & (N - 1)) !== 0) throw new SignerError("config", "The keystore's scrypt n is not a power of two from 2");
    if (128 * N * r > MAX_SCRYPT_MEMORY) {
      throw new SignerError("config", "The keystore's scrypt parameters ask for more than 256 MiB (128·n·r bytes; geth's standard n = 2^18, r = 8 takes 256 MiB)");
    }
    if (N * r * par > MAX_SCRYPT_WORK) {
      throw new SignerError("config", "The keystore's scrypt parameters ask for more work than 2^23 (n·r·p; four times geth's standard n = 2^18, r = 8, p = 1)");
    }
    // RFC 7914 bounds n below 2^(16r), which node:crypto enforces: Python eth-account's default files (n = 2^18, r = 1,
    // p = 8, as the Web3 Secret Storage definition's vector) break it, and are derived by scryptUnbounded (about 2 s).
    derived = N < 2 ** (16 * r)
      ? scryptSync(secret, salt, dklen, { N, r, p: par, maxmem: 256 * N * r + 64 * r * par + (1 << 20) })
      : scryptUnbounded(secret, salt, N, r, par, dklen);
  } else if (crypto.kdf === "pbkdf2") {
    if (p.prf !== "hmac-sha256") throw new SignerError("config", `The keystore's PBKDF2 function ${String(p.prf)} is not hmac-sha256`);
    derived = pbkdf2Sync(secret, salt, int(p.c, "PBKDF2 c", MAX_PBKDF2_C), dklen, "sha256");
  } else {
    throw new SignerError("config", `The keystore's key derivation ${String(crypto.kdf)} is neither scrypt nor pbkdf2`);
  }
  const ciphertext = hex(crypto.ciphertext, "ciphertext");
  const mac = hex(crypto.mac, "mac");
  const expected = Buffer.from(keccak256(Buffer.concat([derived.subarray(16, 32), ciphertext])).slice(2), "hex");
  if (mac.length !== 32 || !timingSafeEqual(mac, expected)) {
    throw new SignerError("config", "The keystore's MAC does not match: a wrong password, or a damaged file");
  }
  const decipher = createDecipheriv("aes-128-ctr", derived.subarray(0, 16), hex(crypto.cipherparams?.iv, "iv"));
  const key = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  if (key.length !== 32) throw new SignerError("config", "The keystore does not hold a 32-byte key");
  return new Uint8Array(key);
}
