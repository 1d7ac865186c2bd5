import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { fakeAccountStore, fakeClock, fakeRandom } from "../ports/fakes.ts";
import { constantTimeEqual, createSessions, hashSessionToken } from "./sessions.ts";
import { parseSiweMessage } from "./siwe.ts";

const wallet = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const walletDid = `did:pkh:eip155:31337:${wallet.address}`;

function setup(siweDomains: string[] = ["app.example:443", "127.0.0.1:8080"]) {
  const clock = fakeClock(1_800_000_000_000);
  const accounts = fakeAccountStore();
  const sessions = createSessions({
    accounts,
    clock,
    random: fakeRandom(),
    policy: { sessionTtlHours: 2, challengeTtlMinutes: 10, siweDomains },
  });
  return { clock, accounts, sessions };
}

const challengeBody = { walletDid, chainId: 31337, domain: "127.0.0.1:8080", uri: "http://127.0.0.1:8080/login" };

async function signIn(s: ReturnType<typeof setup>, signer = wallet) {
  const challenge = await s.sessions.challenge(challengeBody);
  if (!challenge.ok) throw new Error(challenge.message);
  const signature = await signer.signMessage({ message: challenge.value.siweMessage });
  return { challenge: challenge.value, signature, result: await s.sessions.verify({ ...challenge.value, signature }) };
}

describe("createSessions().challenge()", () => {
  test("issues an EIP-4361 message for the checksummed wallet, its chain, the domain and a 10-minute expiry", async () => {
    const s = setup();
    const result = await s.sessions.challenge(challengeBody);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const parsed = parseSiweMessage(result.value.siweMessage);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value).toMatchObject({
      domain: "127.0.0.1:8080",
      address: wallet.address,
      chainId: 31337,
      uri: "http://127.0.0.1:8080/login",
      nonce: result.value.nonce,
      issuedAt: new Date(1_800_000_000_000).toISOString(),
      expirationTime: result.value.expiresAt,
    });
    expect(Date.parse(result.value.expiresAt) - 1_800_000_000_000).toBe(600_000);
    expect(s.accounts.challenges.get(result.value.challengeId)?.address).toBe(wallet.address.toLowerCase());
  });

  test("refuses a domain off the allowlist, a wallet on another chain and malformed bodies, storing nothing", async () => {
    const s = setup();
    const cases: [unknown, string][] = [
      [{ ...challengeBody, domain: "evil.example" }, "CLIENT_NOT_ALLOWED"],
      [{ ...challengeBody, chainId: 1 }, "INVALID_DID"],
      [{ ...challengeBody, walletDid: "did:pkh:eip155:31337:0x1234" }, "INVALID_DID"],
      [{ ...challengeBody, walletDid: "did:web:example.com" }, "INVALID_DID"],
      [{ ...challengeBody, walletDid: undefined }, "INVALID_INPUT"],
      [{ ...challengeBody, uri: "not a url" }, "INVALID_INPUT"],
      [{ ...challengeBody, uri: "javascript:alert(1)" }, "INVALID_INPUT"],
      // The URL parser accepts these; an EIP-4361 message cannot carry them.
      [{ ...challengeBody, uri: "https://example.com/a b" }, "INVALID_INPUT"],
      [{ ...challengeBody, uri: " https://example.com/" }, "INVALID_INPUT"],
      [{ ...challengeBody, uri: "https://example.com/\nNonce: 0" }, "INVALID_INPUT"],
      [{ ...challengeBody, domain: "a/b" }, "INVALID_INPUT"],
      [{ ...challengeBody, chainId: "31337" }, "INVALID_INPUT"],
      [[], "INVALID_INPUT"],
      [null, "INVALID_INPUT"],
    ];
    for (const [body, code] of cases) {
      const result = await s.sessions.challenge(body);
      expect({ body, code: result.ok ? "ok" : result.code }).toEqual({ body, code });
    }
    expect(s.accounts.challenges.size).toBe(0);
  });

  test("an empty allowlist allows any domain", async () => {
    const s = setup([]);
    expect((await s.sessions.challenge({ ...challengeBody, domain: "anything.example" })).ok).toBe(true);
  });
});

describe("createSessions().verify()", () => {
  test("the first sign-in creates a free account and a session whose token is stored only hashed", async () => {
    const s = setup();
    const { result } = await signIn(s);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.created).toBe(true);
    expect(result.value.account).toMatchObject({ address: wallet.address.toLowerCase(), plan: "free" });
    expect(result.value.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(result.value.expiresAtMs).toBe(1_800_000_000_000 + 2 * 3_600_000);
    expect([...s.accounts.sessions.keys()]).toEqual([hashSessionToken(result.value.token)]);
    expect(JSON.stringify([...s.accounts.sessions.values()])).not.toContain(result.value.token);

    const again = await signIn(s);
    expect(again.result.ok && again.result.value.created).toBe(false);
    expect(again.result.ok && again.result.value.account.id).toBe(result.value.account.id);
    expect(s.accounts.accounts.size).toBe(1);
  });

  test("a challenge is single-use", async () => {
    const s = setup();
    const { challenge, signature, result } = await signIn(s);
    expect(result.ok).toBe(true);
    const replay = await s.sessions.verify({ ...challenge, signature });
    expect(replay.ok ? "ok" : replay.code).toBe("INVALID_CHALLENGE");
  });

  test("an expired challenge, a changed message, another signer or a wrong walletDid sign nobody in", async () => {
    const s = setup();
    const challenge = await s.sessions.challenge(challengeBody);
    if (!challenge.ok) throw new Error("no challenge");
    const good = await wallet.signMessage({ message: challenge.value.siweMessage });
    const edited = challenge.value.siweMessage.replace("127.0.0.1:8080", "evil.example");
    const cases: [Record<string, unknown>, string][] = [
      [{ ...challenge.value, signature: await other.signMessage({ message: challenge.value.siweMessage }) }, "INVALID_SIGNATURE"],
      [{ ...challenge.value, siweMessage: edited, signature: await wallet.signMessage({ message: edited }) }, "INVALID_CHALLENGE"],
      [{ ...challenge.value, signature: "0x1234" }, "INVALID_SIGNATURE"],
      [{ ...challenge.value, signature: good, walletDid: `did:pkh:eip155:31337:${other.address}` }, "INVALID_CHALLENGE"],
      [{ ...challenge.value, challengeId: "unknown", signature: good }, "INVALID_CHALLENGE"],
      [{ ...challenge.value, signature: undefined }, "INVALID_INPUT"],
    ];
    for (const [body, code] of cases) {
      const result = await s.sessions.verify(body);
      expect({ code: result.ok ? "ok" : result.code }).toEqual({ code });
    }
    // None of the failures used the challenge up; it still works until it expires.
    s.clock.set(Date.parse(challenge.value.expiresAt));
    const late = await s.sessions.verify({ ...challenge.value, signature: good });
    expect(late.ok ? "ok" : late.code).toBe("CHALLENGE_EXPIRED");
    expect(s.accounts.sessions.size).toBe(0);
    expect(s.accounts.accounts.size).toBe(0);
  });
});

describe("createSessions().authenticate() and logout()", () => {
  test("a live session authenticates; logout revokes it; expiry ends it", async () => {
    const s = setup();
    const { result } = await signIn(s);
    if (!result.ok) throw new Error("sign-in failed");
    const token = result.value.token;
    expect((await s.sessions.authenticate(token)).ok).toBe(true);

    await s.sessions.logout(token);
    const revoked = await s.sessions.authenticate(token);
    expect(revoked.ok ? "ok" : revoked.message).toBe("Session revoked");

    const second = await signIn(s);
    if (!second.result.ok) throw new Error("sign-in failed");
    s.clock.set(second.result.value.expiresAtMs);
    const expired = await s.sessions.authenticate(second.result.value.token);
    expect(expired.ok ? "ok" : expired.message).toBe("Session expired");
  });

  test("no cookie, a malformed token or an unknown one is UNAUTHENTICATED", async () => {
    const s = setup();
    for (const token of [undefined, "", "short", "A".repeat(43), "x".repeat(5000)]) {
      const result = await s.sessions.authenticate(token);
      expect(result.ok ? "ok" : result.code).toBe("UNAUTHENTICATED");
    }
    await s.sessions.logout("garbage");
  });

  test("constantTimeEqual compares whole strings", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
  });
});
