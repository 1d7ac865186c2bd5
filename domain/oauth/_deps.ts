/** What the OAuth use cases share. */
import type { AccountStore } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { AccessTokenKeys, OAuthStore } from "../../ports/oauth.ts";
import type { Random } from "../../ports/random.ts";

/** How the OAuth capability behaves; from configuration. */
export type OAuthPolicy = {
  /** Open registrations one client address may make per hour (`OAUTH_REGISTER_RATE_PER_HOUR`). */
  readonly registrationsPerClientPerHour: number;
  /**
   * Unused open clients registered in the last hour kept at once (`OAUTH_REGISTRATIONS_PER_HOUR`): past it a
   * registration evicts the oldest of them (never refuses: see registration.ts).
   */
  readonly registrationsPerHour: number;
  /** How long a refresh token lives (`OAUTH_REFRESH_TOKEN_TTL_DAYS`), in seconds. */
  readonly refreshTokenTtlSeconds: number;
  /**
   * Authorization codes neither exchanged nor expired one account may hold (`OAUTH_LIVE_CODES_PER_ACCOUNT`); past it
   * its own oldest goes.
   */
  readonly liveCodesPerAccount: number;
  /**
   * Authorization codes neither exchanged nor expired one client may hold (`OAUTH_LIVE_CODES_PER_CLIENT`), a row
   * bound; past it the oldest of the account holding the most goes.
   */
  readonly liveCodesPerClient: number;
  /**
   * Unrevoked grants one account may hold, all clients together (`OAUTH_GRANTS_PER_ACCOUNT`): an exchange past it
   * revokes the account's oldest.
   */
  readonly grantsPerAccount: number;
};

/** An access token's lifetime (decisions §19). */
export const ACCESS_TOKEN_TTL_SECONDS = 3_600;
/** An authorization code's lifetime (RFC 6749 §4.1.2 recommends at most ten minutes). */
export const CODE_TTL_SECONDS = 60;
/** Clients `GET /api/private/oauth/authorizations` lists at most (most recently authorised first). */
export const MAX_LISTED_AUTHORIZATIONS = 200;
/** API clients one account may hold. */
export const MAX_API_CLIENTS_PER_ACCOUNT = 20;
/** An openly registered client that got no grant within a day is pruned. */
export const UNUSED_CLIENT_TTL_MS = 24 * 3_600_000;

/** The use cases' dependencies. */
export type OAuthDeps = {
  readonly store: OAuthStore;
  readonly keys: AccessTokenKeys;
  readonly accounts: Pick<AccountStore, "findAccount">;
  readonly clock: Clock;
  readonly random: Random;
  /** The issuer identifier: the public base URL without a trailing slash. */
  readonly issuer: string;
  readonly policy: OAuthPolicy;
};
