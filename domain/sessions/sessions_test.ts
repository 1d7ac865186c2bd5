import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { recoverAddress } from "viem/utils";
import { fakeAccountStore, fakeClock, fakeRandom } from "../../ports/fakes/mod.ts";
import { clientKeyOf, constantTimeEqual, createSessions, hashSessionToken, LIVE_CHALLENGES_PER_WALLET } from "./sessions.ts";
import { parseSiweMessage } from "./siwe.ts";

const wallet = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const walletDid = `did:pkh:eip155:31337:${wallet.address}`;

function setup(siweDomains: string[] = ["app.example:443", "127.0.0.1:8080"], challengeRatePerMinute?: number) {
  const clock = fakeClock(1_800_000_000_000);
  const accounts = fakeAccountStore();
  const sessions = createSessions({
    accounts,
    clock,
    random: fakeRandom(),
    policy: { sessionTtlHours: 2, challengeTtlMinutes: 10, siweDomains, challengeRatePerMinute },
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

describe("createSessions().challenge() limits (decisions §15)", () => {
  const didOf = (i: number) => `did:pkh:eip155:31337:0x${(i + 1).toString(16).padStart(40, "0")}`;
  const codeOf = (result: { ok: boolean; code?: string }) => (result.ok ? "ok" : result.code);

  test("the eleventh challenge from one address in a minute is RATE_LIMITED with a retry time, whatever the wallets, and stores nothing", async () => {
    const s = setup(undefined, 10);
    const from = { clientAddress: "203.0.113.7" };
    for (let i = 0; i < 10; i++) {
      s.clock.set(1_800_000_000_000 + i * 1_000);
      expect(codeOf(await s.sessions.challenge({ ...challengeBody, walletDid: didOf(i) }, from))).toBe("ok");
    }
    const refused = await s.sessions.challenge({ ...challengeBody, walletDid: didOf(10) }, from);
    expect(refused).toEqual({
      ok: false,
      code: "RATE_LIMITED",
      message: "Too many sign-in challenges from this address; try again later",
      // The first of the ten leaves the minute 51 s from now.
      retryAfterSeconds: 51,
    });
    expect(s.accounts.challenges.size).toBe(10);
    // Another address is not affected; the same one is welcome again once the minute has moved on.
    expect(codeOf(await s.sessions.challenge({ ...challengeBody, walletDid: didOf(11) }, { clientAddress: "203.0.113.8" }))).toBe("ok");
    s.clock.set(1_800_000_060_000);
    expect(codeOf(await s.sessions.challenge({ ...challengeBody, walletDid: didOf(12) }, from))).toBe("ok");
  });

  test("a stranger's full minute of challenges for a wallet does not keep its owner, at another address, from signing in", async () => {
    const s = setup(undefined, 10);
    // The stranger spends its whole rate on the owner's wallet; its own next one is refused.
    for (let i = 0; i < 10; i++) expect(codeOf(await s.sessions.challenge(challengeBody, { clientAddress: "203.0.113.7" }))).toBe("ok");
    expect(codeOf(await s.sessions.challenge(challengeBody, { clientAddress: "203.0.113.7" }))).toBe("RATE_LIMITED");
    // The owner, in the same minute, gets a challenge (its address's first for the wallet) and signs in with it.
    const mine = await s.sessions.challenge(challengeBody, { clientAddress: "198.51.100.20" });
    if (!mine.ok) throw new Error(mine.message);
    const signed = await s.sessions.verify({ ...mine.value, signature: await wallet.signMessage({ message: mine.value.siweMessage }) });
    expect(codeOf(signed)).toBe("ok");
    // Eleven more addresses asking for the same wallet in the same minute are each given their first.
    for (let i = 0; i < 11; i++) expect(codeOf(await s.sessions.challenge(challengeBody, { clientAddress: `198.51.100.${100 + i}` }))).toBe("ok");
  });

  test("one wallet gets at most the rate per minute, all addresses together: past it an address that already has one of them is refused", async () => {
    const s = setup(undefined, 3);
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push(codeOf(await s.sessions.challenge(challengeBody, { clientAddress: `198.51.100.${i}` })));
    expect(codes).toEqual(["ok", "ok", "ok"]);
    // 198.51.100.0 has used one of its own three, but the wallet's three are spent.
    const refused = await s.sessions.challenge(challengeBody, { clientAddress: "198.51.100.0" });
    expect(refused).toEqual({ ok: false, code: "RATE_LIMITED", message: "Too many sign-in challenges for this wallet; try again later", retryAfterSeconds: 60 });
    expect(s.accounts.challenges.size).toBe(3);
    // Its own rate is not what refused it: another wallet is given.
    expect(codeOf(await s.sessions.challenge({ ...challengeBody, walletDid: didOf(5) }, { clientAddress: "198.51.100.0" }))).toBe("ok");
    // An address's first challenge for the wallet in the minute is given all the same (the owner is never locked out).
    expect(codeOf(await s.sessions.challenge(challengeBody, { clientAddress: "198.51.100.9" }))).toBe("ok");
    // One address alone meets the same bound.
    const alone = setup(undefined, 3);
    const own = [];
    for (let i = 0; i < 4; i++) own.push(codeOf(await alone.sessions.challenge(challengeBody, { clientAddress: "198.51.100.1" })));
    expect(own).toEqual(["ok", "ok", "ok", "RATE_LIMITED"]);
  });

  test("strangers asking for a wallet's challenges never void the one its owner is signing", async () => {
    const s = setup(undefined, 10);
    const signing = await s.sessions.challenge(challengeBody, { clientAddress: "192.0.2.1" });
    if (!signing.ok) throw new Error(signing.message);
    // Nine strangers, one challenge each for the owner's wallet: past the five live ones a wallet used to hold.
    for (let i = 0; i < 9; i++) expect(codeOf(await s.sessions.challenge(challengeBody, { clientAddress: `198.51.100.${i}` }))).toBe("ok");
    const signed = await s.sessions.verify({ ...signing.value, signature: await wallet.signMessage({ message: signing.value.siweMessage }) });
    expect(codeOf(signed)).toBe("ok");
  });

  test("requests without a known address share one budget", async () => {
    const s = setup(undefined, 2);
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push(codeOf(await s.sessions.challenge({ ...challengeBody, walletDid: didOf(i) })));
    expect(codes).toEqual(["ok", "ok", "RATE_LIMITED"]);
    expect(s.accounts.challengeClients.get([...s.accounts.challenges.keys()][0]!)).toBe("unknown");
  });

  test("a client holds at most five live challenges for a wallet: a sixth uses up its oldest, the newest still sign in", async () => {
    const s = setup(undefined, 10);
    const issued = [];
    for (let i = 0; i <= LIVE_CHALLENGES_PER_WALLET; i++) {
      s.clock.set(1_800_000_000_000 + i);
      const challenge = await s.sessions.challenge(challengeBody, { clientAddress: "192.0.2.1" });
      if (!challenge.ok) throw new Error(challenge.message);
      issued.push(challenge.value);
    }
    const live = [...s.accounts.challenges.values()].filter((c) => c.usedAtMs === null);
    expect(live).toHaveLength(LIVE_CHALLENGES_PER_WALLET);
    const oldest = issued[0]!;
    const stale = await s.sessions.verify({ ...oldest, signature: await wallet.signMessage({ message: oldest.siweMessage }) });
    expect(codeOf(stale)).toBe("INVALID_CHALLENGE");
    const newest = issued.at(-1)!;
    const fresh = await s.sessions.verify({ ...newest, signature: await wallet.signMessage({ message: newest.siweMessage }) });
    expect(codeOf(fresh)).toBe("ok");
  });

  test("clientKeyOf() counts IPv4 by address, IPv6 by its /64, and anything unknown under one key", () => {
    expect(clientKeyOf("203.0.113.7")).toBe("203.0.113.7");
    expect(clientKeyOf("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(clientKeyOf("::ffff:cb00:7107")).toBe("203.0.113.7");
    expect(clientKeyOf("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(clientKeyOf("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(clientKeyOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientKeyOf("::1")).toBe("0:0:0:0::/64");
    expect(clientKeyOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(clientKeyOf(undefined)).toBe("unknown");
    expect(clientKeyOf("not an address")).toBe("unknown");
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

describe("createSessions().verify() for register", () => {
  /** Signed challenges of `wallet`, one a request, all taken before any is answered (as parallel clients hold them). */
  async function signedChallenges(s: ReturnType<typeof setup>, count: number) {
    return await Promise.all(Array.from({ length: count }, async () => {
      const challenge = await s.sessions.challenge(challengeBody);
      if (!challenge.ok) throw new Error(challenge.message);
      return { ...challenge.value, signature: await wallet.signMessage({ message: challenge.value.siweMessage }) };
    }));
  }

  test("parallel registers of one new wallet: one creates the account with a session, the others are ACCOUNT_ALREADY_EXISTS", async () => {
    const s = setup();
    const bodies = await signedChallenges(s, 4);
    const results = await Promise.all(bodies.map((body) => s.sessions.verify(body, { register: true })));
    expect(results.map((r) => (r.ok ? `created=${r.value.created}` : r.code)).sort())
      .toEqual(["ACCOUNT_ALREADY_EXISTS", "ACCOUNT_ALREADY_EXISTS", "ACCOUNT_ALREADY_EXISTS", "created=true"]);
    expect(s.accounts.accounts.size).toBe(1);
    expect(s.accounts.sessions.size).toBe(1);
  });

  /** A store where another instance inserts the wallet's account just before this one's insert, after every check passed. */
  function beatenToTheInsert() {
    const s = setup();
    const findOrCreate = s.accounts.findOrCreateAccount;
    s.accounts.findOrCreateAccount = async (address, newId, nowMs) => {
      await findOrCreate(address, "other-instance", nowMs);
      return await findOrCreate(address, newId, nowMs);
    };
    return s;
  }

  test("a register beaten between its check and its insert is refused with no session, its challenge used", async () => {
    const s = beatenToTheInsert();
    const [body] = await signedChallenges(s, 1);
    const lost = await s.sessions.verify(body, { register: true });
    expect(lost.ok ? `created=${lost.value.created}` : lost.code).toBe("ACCOUNT_ALREADY_EXISTS");
    expect(s.accounts.sessions.size).toBe(0);
    expect(s.accounts.challenges.get(body!.challengeId)?.usedAtMs).not.toBeNull();
  });

  test("a verify beaten the same way signs the wallet in to the other's account, not as its creator", async () => {
    const s = beatenToTheInsert();
    const [body] = await signedChallenges(s, 1);
    const signedIn = await s.sessions.verify(body);
    expect(signedIn.ok && { id: signedIn.value.account.id, created: signedIn.value.created }).toEqual({ id: "other-instance", created: false });
    expect(s.accounts.sessions.size).toBe(1);
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

describe("createSessions() with smart-contract wallets", () => {
  /** A wallet contract at `wallet.address`'s place is simulated by a checker that accepts `other`'s signatures of the digest. */
  function contractSetup(answer?: "rpc-error") {
    const clock = fakeClock(1_800_000_000_000);
    const accounts = fakeAccountStore();
    const asked: string[] = [];
    const sessions = createSessions({
      accounts,
      clock,
      random: fakeRandom(),
      policy: { sessionTtlHours: 2, challengeTtlMinutes: 10, siweDomains: [] },
      contractWallets: {
        chainId: 31337,
        async check({ signer, digest, signature }) {
          asked.push(signer);
          if (answer !== undefined) return answer;
          return (await recoverAddress({ hash: digest, signature })) === other.address ? "valid" : "invalid";
        },
      },
    });
    return { clock, accounts, sessions, asked };
  }

  test("a signature the wallet contract accepts (ERC-1271) signs the wallet in; an EOA signature is not asked of the chain", async () => {
    const s = contractSetup();
    const viaContract = await signIn(s, other);
    expect(viaContract.result.ok).toBe(true);
    expect(s.asked).toEqual([wallet.address.toLowerCase()]);
    const viaKey = await signIn(s, wallet);
    expect(viaKey.result.ok).toBe(true);
    expect(s.asked).toHaveLength(1);
  });

  test("a signature the contract refuses is INVALID_SIGNATURE; a chain that cannot be asked is NETWORK_ERROR with the challenge still usable", async () => {
    const refused = contractSetup();
    const stranger = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6");
    expect((await signIn(refused, stranger)).result).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });

    const down = contractSetup("rpc-error");
    const attempt = await signIn(down, other);
    expect(attempt.result).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    const retry = await down.sessions.verify({ ...attempt.challenge, signature: await wallet.signMessage({ message: attempt.challenge.siweMessage }) });
    expect(retry.ok).toBe(true);
  });
});
