import { describe, expect, test } from "bun:test";
import { Keystore } from "ox";
import { scryptSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { scryptUnbounded } from "./_scrypt.ts";
import { decryptKeystore } from "./keystore.ts";

// The two test vectors of the Web3 Secret Storage definition (password "testpassword").
const SECRET = "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d";
const PBKDF2_VECTOR = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "6087dab2f9fdbbfaddc31a909735c1e6" },
    ciphertext: "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
    kdf: "pbkdf2",
    kdfparams: { c: 262144, dklen: 32, prf: "hmac-sha256", salt: "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd" },
    mac: "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};
const SCRYPT_VECTOR = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "83dbcc02d8ccb40e466191a123791e0e" },
    ciphertext: "d172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c",
    kdf: "scrypt",
    kdfparams: { dklen: 32, n: 262144, p: 8, r: 1, salt: "ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19" },
    mac: "2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("Web3 Secret Storage v3", () => {
  test("the definition's PBKDF2 vector opens to its secret", () => {
    expect(hex(decryptKeystore(JSON.stringify(PBKDF2_VECTOR), "testpassword"))).toBe(SECRET);
  });

  // The definition's scrypt vector (n = 2^18 with r = 1) breaks RFC 7914's bound n < 2^(16r), which node:crypto and
  // @noble/hashes enforce, as Python eth-account's default files do: scryptUnbounded derives those (before, refused).
  test("the definition's scrypt vector (n = 2^18, r = 1, p = 8) opens to its secret", () => {
    expect(hex(decryptKeystore(JSON.stringify(SCRYPT_VECTOR), "testpassword"))).toBe(SECRET);
  });

  test("a file Python's eth-account writes by default (made with pycryptodome, testdata/) opens to its key", () => {
    const file = readFileSync(join(import.meta.dir, "testdata", "eth_account_default.json"), "utf8");
    expect(JSON.parse(file).crypto.kdfparams).toMatchObject({ n: 262_144, r: 1, p: 8 });
    const key = decryptKeystore(file, "eth-account default");
    expect(privateKeyToAccount(`0x${hex(key)}`).address.toLowerCase()).toBe(`0x${JSON.parse(file).address}`);
  });

  test("scryptUnbounded(): RFC 7914's vectors, and node:crypto's bytes wherever both run", () => {
    const text = (s: string) => new TextEncoder().encode(s);
    expect(scryptUnbounded(text(""), text(""), 16, 1, 1, 64).toString("hex")).toBe(
      "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906",
    );
    expect(scryptUnbounded(text("password"), text("NaCl"), 1024, 8, 16, 64).toString("hex")).toBe(
      "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640",
    );
    for (const [n, r, p] of [[1024, 1, 1], [2048, 2, 3], [256, 3, 2], [1 << 14, 8, 1]] as const) {
      expect(scryptUnbounded(text("pw"), text("salt"), n, r, p, 32)).toEqual(scryptSync("pw", "salt", 32, { N: n, r, p, maxmem: 1 << 28 }));
    }
  });

  // geth, cast and OpenZeppelin Relayer write r = 8, which the files below use.
  test("a scrypt file with geth's parameters (r = 8, p = 1) opens to its key", () => {
    const [key, options] = Keystore.scrypt({ password: "testpassword", n: 1 << 14, r: 8, p: 1 });
    const file = Keystore.encrypt(`0x${SECRET}`, key, options);
    expect(file.crypto.kdfparams).toMatchObject({ n: 1 << 14, r: 8, p: 1 });
    expect(hex(decryptKeystore(JSON.stringify(file), "testpassword"))).toBe(SECRET);
  });

  test("a wrong password is refused by the MAC, and the message names neither password", () => {
    let message = "";
    try {
      decryptKeystore(JSON.stringify(PBKDF2_VECTOR), "not the password");
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("MAC does not match");
    expect(message).not.toContain("not the password");
  });

  test("files another implementation writes (ox, scrypt and pbkdf2) open to their keys", async () => {
    const secret = `0x${"42".repeat(32)}` as const;
    for (const kdf of ["scrypt", "pbkdf2"] as const) {
      const [key, options] = kdf === "scrypt"
        ? Keystore.scrypt({ password: "hunter2", n: 1 << 12 })
        : Keystore.pbkdf2({ password: "hunter2", iterations: 1000 });
      const file = Keystore.encrypt(secret, key, options);
      expect(hex(decryptKeystore(JSON.stringify(file), "hunter2"))).toBe("42".repeat(32));
    }
  });

  test("malformed files and unknown algorithms stop with what is wrong", () => {
    const attempt = (json: string) => {
      try {
        decryptKeystore(json, "x");
        return "opened";
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(attempt("{")).toBe("The keystore is not JSON");
    expect(attempt(JSON.stringify({ ...PBKDF2_VECTOR, version: 2 }))).toContain("not a version 3");
    expect(attempt(JSON.stringify({ ...PBKDF2_VECTOR, crypto: { ...PBKDF2_VECTOR.crypto, kdf: "argon2" } }))).toContain("neither scrypt nor pbkdf2");
    const scrypt = { ...PBKDF2_VECTOR.crypto, kdf: "scrypt", kdfparams: { dklen: 32, n: 1 << 30, r: 8, p: 1, salt: "00" } };
    expect(attempt(JSON.stringify({ ...PBKDF2_VECTOR, crypto: scrypt }))).toContain("scrypt n");
    // n = 1 (found by review): node:crypto's own RangeError, not a line naming what is wrong.
    const one = { ...scrypt, kdfparams: { ...scrypt.kdfparams, n: 1 } };
    expect(attempt(JSON.stringify({ ...PBKDF2_VECTOR, crypto: one }))).toBe("The keystore's scrypt n is not a power of two from 2");
  });

  test("scrypt beyond 256 MiB or four times geth's standard work is refused before any work; every standard keystore's parameters are taken", () => {
    // Found by attack: each field was capped alone (n ≤ 2^20, r ≤ 64, p ≤ 64), so a file could ask for 8 GiB and about
    // 27 minutes of synchronous work at start (the time is linear in p).
    const scrypt = (n: number, r: number, p: number) =>
      JSON.stringify({ ...PBKDF2_VECTOR, crypto: { ...PBKDF2_VECTOR.crypto, kdf: "scrypt", kdfparams: { dklen: 32, n, r, p, salt: "00".repeat(32) } } });
    const attempt = (json: string) => {
      const started = performance.now();
      try {
        decryptKeystore(json, "x");
        return { message: "opened", ms: performance.now() - started };
      } catch (error) {
        return { message: (error as Error).message, ms: performance.now() - started };
      }
    };
    for (const [n, r, p] of [[1 << 15, 8, 64], [1 << 12, 64, 64], [1 << 18, 8, 5]] as const) {
      const refused = attempt(scrypt(n, r, p));
      expect(refused.message).toContain("more work than 2^23 (n·r·p");
      expect(refused.ms).toBeLessThan(50);
    }
    expect(attempt(scrypt(1 << 16, 64, 1)).message).toContain("more than 256 MiB");
    expect(attempt(scrypt(1 << 19, 8, 1)).message).toContain("more than 256 MiB");
    // Taken: the derivation runs and the (made-up) MAC is what refuses. geth standard and light, ethers' and web3's.
    for (const [n, r, p] of [[1 << 18, 8, 1], [1 << 12, 8, 6], [1 << 17, 8, 1]] as const) {
      expect(attempt(scrypt(n, r, p)).message).toContain("MAC does not match");
    }
    // PBKDF2 was already bounded (10,000,000 rounds, about 1.3 s).
    const pbkdf2 = { ...PBKDF2_VECTOR, crypto: { ...PBKDF2_VECTOR.crypto, kdfparams: { ...PBKDF2_VECTOR.crypto.kdfparams, c: 10_000_001 } } };
    expect(attempt(JSON.stringify(pbkdf2)).message).toContain("PBKDF2 c is not a number from 1 to 10000000");
  });
});
