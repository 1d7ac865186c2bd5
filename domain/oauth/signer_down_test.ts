import { describe, expect, test } from "bun:test";
import { fakeAccessTokenKeys, fakeAccountStore, fakeClock, fakeOAuthStore, fakeRandom } from "../../ports/fakes/mod.ts";
import { createOAuth, s256Challenge } from "./mod.ts";

const ISSUER = "https://ats.example";
const REDIRECT = "https://app.example/cb";
const VERIFIER = "v".repeat(43);

// Decisions §27: an access token is signed before the code or refresh token it is issued for is spent, so an
// OAUTH_SIGNER that is down (the keys throw) leaves both usable for the retry.
describe("token issuance with a signer that is down", () => {
  test("the authorization code and the refresh token stay usable", async () => {
    const clock = fakeClock();
    const accounts = fakeAccountStore();
    const { account } = await accounts.findOrCreateAccount("0x00000000000000000000000000000000000000aa", "acct-1", clock.nowMs());
    const working = fakeAccessTokenKeys(clock);
    let down = false;
    const keys = { ...working, sign: (claims: Parameters<typeof working.sign>[0]) => (down ? Promise.reject(new Error("signer down")) : working.sign(claims)) };
    const oauth = createOAuth({
      store: fakeOAuthStore(),
      keys,
      accounts,
      clock,
      random: fakeRandom(),
      issuer: ISSUER,
      policy: { registrationsPerClientPerHour: 3, registrationsPerHour: 100, refreshTokenTtlSeconds: 86_400, liveCodesPerAccount: 100, liveCodesPerClient: 100, grantsPerAccount: 100 },
    });
    const registered = await oauth.registration.register({ client_name: "Bot", redirect_uris: [REDIRECT] }, "10.0.0.1");
    if (!registered.ok) throw new Error("registration failed");
    const clientId = registered.value.client_id;
    const checked = await oauth.authorization.check({
      response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256", state: "st",
    });
    if (!checked.ok) throw new Error("check failed");
    const approved = await oauth.authorization.approve(checked.value, account);
    if (!approved.ok) throw new Error("approve refused");
    const code = new URL(approved.value).searchParams.get("code")!;
    const exchange = () => oauth.tokens.token({ grant_type: "authorization_code", client_id: clientId, code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, {});

    down = true;
    await expect(exchange()).rejects.toThrow("signer down");
    down = false;
    const tokens = await exchange();
    if (!tokens.ok) throw new Error(`exchange failed: ${JSON.stringify(tokens)}`);
    const refresh = () => oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens.value.refresh_token! }, {});
    down = true;
    await expect(refresh()).rejects.toThrow("signer down");
    down = false;
    expect(await refresh()).toMatchObject({ ok: true });
  });
});
