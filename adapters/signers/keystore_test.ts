import { describe, expect, test } from "bun:test";
import { Keystore } from "ox";
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
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("Web3 Secret Storage v3", () => {
  test("the definition's PBKDF2 vector opens to its secret", () => {
    expect(hex(decryptKeystore(JSON.stringify(PBKDF2_VECTOR), "testpassword"))).toBe(SECRET);
  });

  // The definition's scrypt vector (n = 2^18 with r = 1) breaks RFC 7914's bound n < 2^(16r), which BoringSSL and
  // @noble/hashes enforce; geth, cast and OpenZeppelin Relayer write r = 8, which the files below use.
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
  });
});
