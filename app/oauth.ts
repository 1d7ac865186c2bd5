/** Wiring of OAuth 2 for registered software (decisions §19): the store, the token keys (jose), the use cases, upkeep. */
import { createJoseAccessTokenKeys, type JoseAccessTokenKeys } from "../adapters/jose/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { createOAuth, issuerOf, type OAuth, UNUSED_CLIENT_TTL_MS } from "../domain/oauth/mod.ts";
import { withPaidAccounts } from "../domain/payments/mod.ts";
import type { BearerAccess } from "../http/credentials.ts";
import type { Config } from "./config.ts";
import type { Foundation } from "./foundation.ts";

/** What the OAuth routes and the bearer-protected routes need. */
export type WiredOAuth = {
  readonly oauth: OAuth;
  readonly keys: JoseAccessTokenKeys;
  readonly issuer: string;
  /** Bearer access for the routes that take tokens. */
  readonly bearer: BearerAccess;
  /** Stops the upkeep timer. */
  readonly stop: () => void;
};

/**
 * How often keys are rotated when due and expired rows pruned, and an instance records that it signs with its
 * `OAUTH_SIGNER`: keep it well under an hour, as a signer's key unrecorded for two hours is dropped
 * (RETIRED_KEY_GRACE_MS: a token's hour plus this interval plus a margin).
 */
const UPKEEP_MS = 10 * 60_000;

/** Builds OAuth unless `OAUTH=off`; makes the first signing key (or rotates a due one) before serving. */
export async function wireOAuth(config: Pick<Config, "oauth" | "server">, f: Foundation, options: { upkeepIntervalMs?: number | undefined } = {}): Promise<WiredOAuth | undefined> {
  if (!config.oauth.enabled) return undefined;
  const { storage, log } = f;
  const issuer = issuerOf(config.server.publicBaseUrl);
  const keys = createJoseAccessTokenKeys({
    store: storage.oauth,
    clock: systemClock,
    rotateAfterMs: config.oauth.keyRotationDays * 86_400_000,
    signer: f.signers.oauth,
    log,
  });
  const oauth = createOAuth({
    store: storage.oauth,
    keys,
    // A token acts as its account with the plan it has now, an x402-bought period included (decisions §19).
    accounts: withPaidAccounts(storage.accounts, { payments: storage.payments, clock: systemClock }),
    clock: systemClock,
    random: cryptoRandom,
    issuer,
    policy: {
      registrationsPerClientPerHour: config.oauth.registerPerClientPerHour,
      registrationsPerHour: config.oauth.registrationsPerHour,
      refreshTokenTtlSeconds: config.oauth.refreshTokenTtlDays * 86_400,
      liveCodesPerAccount: config.oauth.liveCodesPerAccount,
      liveCodesPerClient: config.oauth.liveCodesPerClient,
      grantsPerAccount: config.oauth.grantsPerAccount,
    },
  });
  const upkeep = async () => {
    await keys.maintain();
    const now = systemClock.nowMs();
    await storage.oauth.prune(now, now - UNUSED_CLIENT_TTL_MS);
  };
  await upkeep();
  const timer = setInterval(() => {
    upkeep().catch((error) => log.warn("oauth_upkeep_failed", { error: error instanceof Error ? error.message : String(error) }));
  }, options.upkeepIntervalMs ?? UPKEEP_MS);
  timer.unref?.();
  return { oauth, keys, issuer, bearer: { authenticate: oauth.authenticateBearer, resource: issuer }, stop: () => clearInterval(timer) };
}
