/** The account's API clients (decisions §19): create (the secret shown once), list, delete. Browser-ready. */
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
