/** Values the storage contract's tests share: keys unique across the suite, claims, challenges, clients. */
import type { ChallengeLimits } from "../../ports/accounts.ts";
import type { OAuthClient } from "../../ports/oauth.ts";

export const claim = (key: string, nonce = 0n, attester = "0xAbC") => ({
  key,
  chainId: 1,
  attester,
  nonce,
  deadline: 2_000_000_000n,
  createdAtMs: 1,
});

/** A stored transaction for the tests: only its shape matters here. */
export const signedTx = (txHash: string, nonce: number) => ({
  txHash: txHash as `0x${string}`,
  raw: `0x02f8${nonce}` as `0x${string}`,
  wallet: "0x00000000000000000000000000000000000000aa" as `0x${string}`,
  nonce,
});

/** A time for the challenge tests, far from other tests' rows. */
export const T0 = 1_900_000_000_000;

/** A challenge of `address` created at `createdAtMs`, valid for ten minutes. */
export const challenge = (address: string, createdAtMs: number) => ({
  id: fresh("ch"),
  address,
  chainId: 31337,
  nonce: "abcdef123456",
  message: "msg",
  createdAtMs,
  expiresAtMs: createdAtMs + 600_000,
  usedAtMs: null,
});

/** Challenge limits for `client`: generous unless a test says otherwise. */
export const limits = (client: string, tighter: Partial<Omit<ChallengeLimits, "client">> = {}): ChallengeLimits => ({
  client,
  perClient: 1_000,
  perWallet: 1_000,
  windowMs: 60_000,
  livePerWallet: 1_000,
  ...tighter,
});

let counter = 0;
/** Keys unique across the suite, so one database can serve every test. */
export const fresh = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++counter}`;

/** A public OAuth client registered at `createdAtMs`. */
export const publicClient = (createdAtMs: number): OAuthClient => ({
  clientId: fresh("client"), accountId: null, secretHash: null, name: "Bot", redirectUris: ["https://app.test/cb"],
  grantTypes: ["authorization_code", "refresh_token"], scope: "account:read", authMethod: "none", createdAtMs,
});
