import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { fakeClock } from "../../ports/fakes/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { buildSiweMessage, parseSiweMessage, type SiweMessage, verifySiweSignature } from "./siwe.ts";

const wallet = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const message: SiweMessage = {
  domain: "app.example",
  address: wallet.address,
  statement: "Sign in",
  uri: "https://app.example/login",
  version: "1",
  chainId: 1,
  nonce: "abcdef123456",
  issuedAt: "2026-11-23T00:00:00.000Z",
  expirationTime: "2026-11-23T00:10:00.000Z",
  resources: ["https://app.example/terms"],
};

describe("EIP-4361 messages", () => {
  test("build and parse are inverse, in the standard's layout", () => {
    const text = buildSiweMessage(message);
    expect(text).toBe([
      `app.example wants you to sign in with your Ethereum account:`,
      wallet.address,
      "",
      "Sign in",
      "",
      "URI: https://app.example/login",
      "Version: 1",
      "Chain ID: 1",
      "Nonce: abcdef123456",
      "Issued At: 2026-11-23T00:00:00.000Z",
      "Expiration Time: 2026-11-23T00:10:00.000Z",
      "Resources:",
      "- https://app.example/terms",
    ].join("\n"));
    const parsed = parseSiweMessage(text);
    expect(parsed.ok && parsed.value).toMatchObject({ ...message, scheme: undefined });
  });

  test("parsing is strict: a lower-case address, a short nonce, extra lines or a missing field fail", () => {
    const text = buildSiweMessage(message);
    for (const bad of [
      text.replace(wallet.address, wallet.address.toLowerCase()),
      text.replace("abcdef123456", "abc"),
      `${text}\nextra`,
      text.replace("Version: 1\n", ""),
      text.replace("Chain ID: 1", "Chain ID: one"),
      "hello",
    ]) {
      expect(parseSiweMessage(bad).ok).toBe(false);
    }
    expect(() => buildSiweMessage({ ...message, statement: "two\nlines" })).toThrow(TypeError);
  });

  test("a personal_sign by the address verifies; anything else does not", async () => {
    const text = buildSiweMessage(message);
    const signature = await wallet.signMessage({ message: text });
    expect(await verifySiweSignature(text, signature, wallet.address)).toBe(true);
    expect(await verifySiweSignature(`${text} `, signature, wallet.address)).toBe(false);
    expect(await verifySiweSignature(text, signature, "0x0000000000000000000000000000000000000001")).toBe(false);
    expect(await verifySiweSignature(text, "0xzz", wallet.address)).toBe(false);
  });
});

describe("createRateLimiter()", () => {
  test("allows a burst, refills over time, and keys are independent", () => {
    const clock = fakeClock(0);
    const limiter = createRateLimiter(clock, { capacity: 2, perMinute: 2 });
    expect([limiter.take("a"), limiter.take("a"), limiter.take("b")].map((d) => d.allowed)).toEqual([true, true, true]);
    const refused = limiter.take("a");
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: 30 });
    clock.set(30_000);
    expect(limiter.take("a").allowed).toBe(true);
    expect(limiter.take("a").allowed).toBe(false);
  });

  test("forgets keys beyond maxKeys without letting a full key overspend", () => {
    const clock = fakeClock(0);
    const limiter = createRateLimiter(clock, { capacity: 1, perMinute: 1, maxKeys: 3 });
    for (const key of ["a", "b", "c", "d", "e"]) expect(limiter.take(key).allowed).toBe(true);
    expect(limiter.take("e").allowed).toBe(false);
  });
});
