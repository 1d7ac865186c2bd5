import { AtsClientError } from "./errors.ts";

/** The service's default address. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

/** One JSON request to the service. */
export type JsonRequest = {
  readonly baseUrl?: string | undefined;
  readonly fetch?: typeof fetch | undefined;
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  /** JSON-encoded (big integers as base-10 strings) with `Content-Type: application/json`. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** `include` lets a browser send the session cookie. */
  readonly credentials?: RequestCredentials | undefined;
};

/**
 * The URL of `path` (from `/`) on the service at `baseUrl` (default {@link DEFAULT_BASE_URL}): a trailing `/` of the
 * base is dropped (`http://host:8080/` sent every request to `//v1/…`, a 404); a base with a query or a fragment is
 * `INVALID_INPUT` (its path was read as part of the query).
 */
export function serviceUrl(baseUrl: string | undefined, path: string): string {
  const base = (baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
  if (base.includes("?") || base.includes("#")) throw new AtsClientError("INVALID_INPUT", "baseUrl must be the service's origin (and path), without a query or fragment");
  return `${base}${path}`;
}

/** `Retry-After` in whole seconds (delta form), when an answer carries one. */
function retryAfterOf(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  return value !== null && /^[0-9]{1,9}$/.test(value.trim()) ? Number(value.trim()) : undefined;
}

/**
 * Sends one request and parses the JSON answer. A network failure is `NETWORK_ERROR`; a non-2xx
 * answer throws an {@link AtsClientError} with the server's `code` and message, the parsed body and `Retry-After`; a
 * 2xx answer that is not JSON (another server at `baseUrl`, a proxy's page) is `INVALID_RESPONSE`, never a record.
 */
export async function requestJson<T>(path: string, request: JsonRequest): Promise<{ body: T; response: Response }> {
  const url = serviceUrl(request.baseUrl, path);
  const headers: Record<string, string> = { ...request.headers };
  if (request.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await (request.fetch ?? fetch)(url, {
      method: request.method,
      headers,
      body: request.body === undefined ? undefined : JSON.stringify(request.body, (_k, v) => (typeof v === "bigint" ? v.toString() : v)),
      ...(request.credentials === undefined ? {} : { credentials: request.credentials }),
    });
  } catch (cause) {
    throw new AtsClientError("NETWORK_ERROR", `Could not reach ${url}`, { cause });
  }
  let text: string;
  try {
    text = await response.text();
  } catch (cause) {
    throw new AtsClientError("NETWORK_ERROR", `Could not read the answer of ${url}`, { cause });
  }
  let parsed: unknown;
  let json = true;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
    json = false;
  }
  if (!response.ok) {
    const payload = parsed as { code?: unknown; error?: unknown } | undefined;
    throw new AtsClientError(
      typeof payload?.code === "string" ? payload.code : "NETWORK_ERROR",
      typeof payload?.error === "string" ? payload.error : `Request failed with status ${response.status}`,
      { status: response.status, body: parsed, retryAfterSeconds: retryAfterOf(response) },
    );
  }
  if (!json) throw new AtsClientError("INVALID_RESPONSE", `The answer of ${url} is not JSON: is baseUrl the service?`, { status: response.status });
  return { body: parsed as T, response };
}
