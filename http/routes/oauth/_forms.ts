/** Reading OAuth requests: form bodies (each parameter once, RFC 6749 §3.1), HTTP Basic client credentials, RFC error JSON. */
import { BODY_TOO_LARGE } from "../request.ts";

/** An OAuth request body's longest length: every valid request is a few hundred bytes. */
export const MAX_OAUTH_BODY = 64 * 1024;

/** The parameters of a form body; undefined when a parameter repeats or the body is too large. */
export function readForm(body: unknown): Record<string, string> | undefined {
  if (body === BODY_TOO_LARGE || typeof body !== "string" || body.length > MAX_OAUTH_BODY) return undefined;
  const params: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(body)) {
    if (Object.hasOwn(params, name)) return undefined;
    // Empty parameters are treated as omitted (RFC 6749 §3.1).
    if (value !== "") params[name] = value;
  }
  return params;
}

/** The client credentials of `Authorization: Basic` (RFC 6749 §2.3.1: each part form-urlencoded); null when malformed. */
export function readBasic(request: Request): { clientId: string; secret: string } | null | undefined {
  const header = request.headers.get("authorization");
  if (header === null || !/^basic /i.test(header)) return undefined;
  try {
    const decoded = atob(header.slice(6).trim());
    const colon = decoded.indexOf(":");
    if (colon === -1) return null;
    const part = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    return { clientId: part(decoded.slice(0, colon)), secret: part(decoded.slice(colon + 1)) };
  } catch {
    return null;
  }
}

/** An RFC 6749 §5.2 / RFC 7591 §3.2.2 error answer: `{error, error_description}`, never internal text. */
export function oauthError(error: string, description: string, status = 400, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error, error_description: description }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", pragma: "no-cache", ...headers },
  });
}

/** A JSON answer that must not be cached (token responses, RFC 6749 §5.1). */
export function noStore(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", pragma: "no-cache", ...headers },
  });
}
