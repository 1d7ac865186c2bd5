/** OAuth 2 for registered software (decisions §19): the `oauth` section. */
import { type Static, Type } from "@sinclair/typebox";
import { int, onOff, readSection, type ReadContext } from "./_declare.ts";

/** The `oauth` section's variables. */
export const OAuthSection = Type.Object({
  enabled: onOff("OAUTH", { default: true, description: "off serves no OAuth routes" }),
  registerPerClientPerHour: int("OAUTH_REGISTER_RATE_PER_HOUR", { default: 10, minimum: 1, maximum: 100_000, description: "open registrations per client address (IPv4 address, IPv6 /64) an hour; an IPv6 /48 gets 4 times it" }),
  registrationsPerHour: int("OAUTH_REGISTRATIONS_PER_HOUR", { default: 1_000, minimum: 1, maximum: 1_000_000, description: "unused open clients of the last hour kept at once; past it a registration evicts the oldest unused one (never refuses)" }),
  refreshTokenTtlDays: int("OAUTH_REFRESH_TOKEN_TTL_DAYS", { default: 30, minimum: 1, maximum: 365, description: "how long a refresh token lives" }),
  keyRotationDays: int("OAUTH_KEY_ROTATION_DAYS", { default: 30, minimum: 1, maximum: 365, description: "the token-signing key is replaced at this age" }),
  liveCodesPerAccount: int("OAUTH_LIVE_CODES_PER_ACCOUNT", { default: 10, minimum: 1, maximum: 1_000, description: "live authorization codes per account; past it its own oldest is evicted" }),
  liveCodesPerClient: int("OAUTH_LIVE_CODES_PER_CLIENT", { default: 1_000, minimum: 1, maximum: 1_000_000, description: "live authorization codes per client; past it the oldest of the account holding the most is evicted" }),
  grantsPerAccount: int("OAUTH_GRANTS_PER_ACCOUNT", { default: 100, minimum: 1, maximum: 10_000, description: "unrevoked grants per account" }),
}, { title: "oauth" });

/** OAuth 2 for registered software. */
export type OAuthConfig = Static<typeof OAuthSection>;

/** Reads the `oauth` section. */
export function readOAuth(ctx: Omit<ReadContext, "values">): OAuthConfig {
  return readSection(OAuthSection, ctx);
}
