/**
 * Registering clients (decisions §19): open registration of public clients (RFC 7591), rate-limited per client
 * address and per IPv6 /48, and the API clients a signed-in account creates, lists and deletes.
 *
 * Every new MCP client starts with registration (§20), so no caller may close it for the others. Before, a bound for
 * everyone together (`OAUTH_REGISTRATIONS_PER_HOUR`) refused every registration once spent, and one subscriber's /56
 * (100 /64s × 10) spent it for an hour (attack review, finding 4). Now:
 * - the caller's own rates refuse (429): its address key (an IPv4 address or an IPv6 /64,
 *   `OAUTH_REGISTER_RATE_PER_HOUR`) and, for IPv6, its /48 as well (`NETWORK_FACTOR` times that: 40 by default;
 *   a /48 is what one site or subscriber is usually given, a /56 or /64 sits inside it);
 * - `OAUTH_REGISTRATIONS_PER_HOUR` no longer refuses: it bounds the unused open clients (never exchanged a code)
 *   registered in the last hour, and a registration past it evicts the oldest evictable one. Never evicted: a client
 *   registered less than `UNUSED_CLIENT_GRACE_MS` (10 minutes) ago, one holding a live code (approved, not yet
 *   exchanged nor expired), one that ever exchanged a code; with none evictable the bound is passed, nobody refused
 *   (review finding 3: before, a client whose user was signing in, or holding an unexchanged code, was evicted by a
 *   burst of 100 IPv4 addresses or 25 /48s). A client whose user takes longer than the grace to sign in and approve
 *   can still be evicted. An evicted client's row stays (blanked) as its address's rate record until the unused
 *   clients are pruned after a day, so eviction never gives an address its allowance back.
 * What unauthenticated callers store in full stays bounded (the unused clients of each hour, kept a day; past the pool
 * only by the clients of the last 10 minutes, each caller's bounded by its rates, and those holding live codes);
 * the blanked records of evicted clients grow with the number of addresses only, each bounded by its own rates.
 */
import type { Account } from "../../ports/accounts.ts";
import type { OAuthClient } from "../../ports/oauth.ts";
import { networkKeyOf } from "../sessions/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { hashSecret, randomToken } from "./_secrets.ts";
import { MAX_API_CLIENTS_PER_ACCOUNT, type OAuthDeps } from "./_deps.ts";
import { type ClientMetadataView, clientMetadataView, readApiClientMetadata, readPublicClientMetadata } from "./client_metadata.ts";

const HOUR_MS = 3_600_000;
/** An IPv6 /48 may register this many times what one /64 may. */
export const NETWORK_FACTOR = 4;


/** A refused registration; `retryAfterSeconds` is set on `rate_limited`. */
export type RegistrationFailure = Result<never, "invalid_client_metadata" | "invalid_redirect_uri" | "rate_limited"> & {
  readonly retryAfterSeconds?: number | undefined;
};

/** A new API client: its metadata and its secret, shown this once. */
export type CreatedApiClient = ClientMetadataView & { client_secret: string; client_secret_expires_at: 0 };

/** Builds the registration use cases. */
export function createRegistration(deps: OAuthDeps) {
  const { store, clock, random, policy } = deps;

  /** `POST /oauth/register`: a public client; `clientKey` is the caller's address key (see clientKeyOf). */
  async function register(body: unknown, clientKey: string): Promise<Result<ClientMetadataView> | RegistrationFailure> {
    const accepted = readPublicClientMetadata(body);
    if (!accepted.ok) return accepted;
    const now = clock.nowMs();
    const client: OAuthClient = { ...accepted.value, clientId: `atsc_${randomToken(random, 18)}`, accountId: null, secretHash: null, createdAtMs: now };
    const network = networkKeyOf(clientKey);
    const outcome = await store.registerClient(client, {
      client: clientKey,
      perClient: policy.registrationsPerClientPerHour,
      network: network === undefined ? null : { key: network, max: policy.registrationsPerClientPerHour * NETWORK_FACTOR },
      total: policy.registrationsPerHour,
      windowMs: HOUR_MS,
    }, now);
    if (!outcome.ok) {
      const message = outcome.limit === "client" ? "Too many registrations from this address; try again later" : "Too many registrations from this network; try again later";
      return { ...fail("rate_limited" as const, message), retryAfterSeconds: Math.max(1, Math.ceil(outcome.retryAfterMs / 1000)) };
    }
    return ok(clientMetadataView(client));
  }

  /** `POST /api/private/oauth/clients`: a confidential client-credentials client of the account. */
  async function createApiClient(account: Account, body: unknown): Promise<Result<CreatedApiClient, "invalid_client_metadata" | "too_many_clients">> {
    const accepted = readApiClientMetadata(body);
    if (!accepted.ok) return accepted;
    const secret = `atss_${randomToken(random, 32)}`;
    const client: OAuthClient = {
      ...accepted.value,
      clientId: `atsk_${randomToken(random, 18)}`,
      accountId: account.id,
      secretHash: hashSecret(secret),
      createdAtMs: clock.nowMs(),
    };
    if (!(await store.createClient(client, MAX_API_CLIENTS_PER_ACCOUNT))) {
      return fail("too_many_clients", `An account holds at most ${MAX_API_CLIENTS_PER_ACCOUNT} API clients; delete one first`);
    }
    return ok({ ...clientMetadataView(client), client_secret: secret, client_secret_expires_at: 0 });
  }

  /** `GET /api/private/oauth/clients`: the account's API clients, without secrets. */
  async function listApiClients(account: Account): Promise<ClientMetadataView[]> {
    return (await store.listClients(account.id)).map(clientMetadataView);
  }

  /** `DELETE /api/private/oauth/clients/{client_id}`: the client and every token it holds end now. */
  async function deleteApiClient(account: Account, clientId: string): Promise<Result<{ client_id: string }, "client_not_found">> {
    if (clientId.length > 200 || !(await store.deleteClient(account.id, clientId))) return fail("client_not_found", "No such client in this account");
    return ok({ client_id: clientId });
  }

  return { register, createApiClient, listApiClients, deleteApiClient };
}

/** The registration use cases. */
export type Registration = ReturnType<typeof createRegistration>;
