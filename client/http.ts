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
 * Sends one request and parses the JSON answer. A network failure is `NETWORK_ERROR`; a non-2xx
 * answer throws an {@link AtsClientError} with the server's `code` and message and the parsed body.
 */
export async function requestJson<T>(path: string, request: JsonRequest): Promise<{ body: T; response: Response }> {
  const url = `${request.baseUrl ?? DEFAULT_BASE_URL}${path}`;
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
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const payload = parsed as { code?: unknown; error?: unknown } | undefined;
    throw new AtsClientError(
      typeof payload?.code === "string" ? payload.code : "NETWORK_ERROR",
      typeof payload?.error === "string" ? payload.error : `Request failed with status ${response.status}`,
      { status: response.status, body: parsed },
    );
  }
  return { body: parsed as T, response };
}
