/**
 * Registering clients (decisions §19): open registration of public clients (RFC 7591), rate-limited per client
 * address and for everyone together, and the API clients a signed-in account creates, lists and deletes.
 */
import type { Account } from "../../ports/accounts.ts";
import type { OAuthClient } from "../../ports/oauth.ts";
import { fail, ok, type Result } from "../result.ts";
import { hashSecret, randomToken } from "./_secrets.ts";
import { MAX_API_CLIENTS_PER_ACCOUNT, type OAuthDeps } from "./_deps.ts";
import { type ClientMetadataView, clientMetadataView, readApiClientMetadata, readPublicClientMetadata } from "./client_metadata.ts";

const HOUR_MS = 3_600_000;

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
    const outcome = await store.registerClient(client, {
      client: clientKey,
      perClient: policy.registrationsPerClientPerHour,
      total: policy.registrationsPerHour,
      windowMs: HOUR_MS,
    }, now);
    if (!outcome.ok) {
      const message = outcome.limit === "client" ? "Too many registrations from this address; try again later" : "Too many registrations; try again later";
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
