/** The account's API clients (decisions §19): create (the secret shown once), list, delete; and the applications it authorised: list, revoke. Browser-ready. */
import type { ServiceOptions } from "./api.ts";
import { DEFAULT_BASE_URL, requestJson } from "./http.ts";

/** An API client as the service lists it (RFC 7591 metadata, no secret). */
export type ApiClient = {
  client_id: string;
  client_id_issued_at: number;
  client_name?: string;
  grant_types: string[];
  token_endpoint_auth_method: "client_secret_basic" | "client_secret_post";
  scope: string;
};

/** A new API client: its secret is in this answer only. */
export type CreatedApiClient = ApiClient & { client_secret: string; client_secret_expires_at: 0 };

async function call<T>(method: "GET" | "POST" | "DELETE", path: string, body: unknown, options: ServiceOptions): Promise<T> {
  const headers: Record<string, string> = {};
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  if (options.origin !== undefined) headers.origin = options.origin;
  return (await requestJson<T>(path, { baseUrl: options.baseUrl ?? DEFAULT_BASE_URL, fetch: options.fetch, method, body, headers, credentials: "include" })).body;
}

/** Creates a client-credentials client for the signed-in account; `scope` space-separated (default every scope). */
export function createApiClient(input: { client_name?: string | undefined; scope?: string | undefined }, options: ServiceOptions = {}): Promise<CreatedApiClient> {
  return call<CreatedApiClient>("POST", "/api/private/oauth/clients", { grant_types: ["client_credentials"], ...input }, options);
}

/** The account's API clients, oldest first. */
export async function listApiClients(options: ServiceOptions = {}): Promise<ApiClient[]> {
  return (await call<{ clients: ApiClient[] }>("GET", "/api/private/oauth/clients", undefined, options)).clients;
}

/** Deletes an API client: its tokens stop working at once. */
export async function deleteApiClient(clientId: string, options: ServiceOptions = {}): Promise<void> {
  await call("DELETE", `/api/private/oauth/clients/${encodeURIComponent(clientId)}`, undefined, options);
}

/** An application the signed-in person authorised on the consent page (decisions §19), as the service lists it. */
export type AuthorizedApplication = {
  client_id: string;
  client_name?: string;
  /** Every scope of its live grants, space-separated. */
  scope: string;
  first_authorized_at: string;
  last_authorized_at: string;
  grants: number;
};

/** The applications the signed-in person authorised whose tokens can still be used, most recent first. */
export async function listAuthorizations(options: ServiceOptions = {}): Promise<AuthorizedApplication[]> {
  return (await call<{ authorizations: AuthorizedApplication[] }>("GET", "/api/private/oauth/authorizations", undefined, options)).authorizations;
}

/** Revokes what the person authorised an application to do: its tokens stop working at once. */
export async function revokeAuthorization(clientId: string, options: ServiceOptions = {}): Promise<void> {
  await call("DELETE", `/api/private/oauth/authorizations/${encodeURIComponent(clientId)}`, undefined, options);
}
