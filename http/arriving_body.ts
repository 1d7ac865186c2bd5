/**
 * A request's body read whole before the app sees it, bounded by the body's own deadline (http/instrument.ts), and
 * the request re-addressed so that Elysia reads the path the guards read.
 */
import { MAX_BODY_BYTES } from "./routes/request.ts";

/** {@link arrivedBody}'s answer when the body's deadline passed first. */
export const UNREAD: unique symbol = Symbol("body not arrived");

/** {@link arrivedBody}'s answer when the body could not be read (the client went away). */
export const UNREADABLE: unique symbol = Symbol("body unreadable");

/** Whether a request comes with a body (as its headers say: a request from the server always has them). */
export function hasBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  if (length !== null) return length !== "0";
  return request.headers.get("transfer-encoding") !== null;
}

/**
 * The request with its body read whole, to hand to the app ({@link routable}'s URL): the body then costs the app no
 * waiting, so a body that never ends is bounded by the race this runs in, not by the route's deadline. A declared
 * length over {@link MAX_BODY_BYTES} is not read (the app refuses it by its length, and the connection is closed); a
 * body without one is read to one byte past the limit, which the app refuses as too large.
 */
export async function arrivedBody(request: Request): Promise<Request | typeof UNREADABLE> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > MAX_BODY_BYTES) return routable(request);
  let bytes: BodyInit;
  try {
    bytes = declared !== null ? await request.arrayBuffer() : await readAtMost(request, MAX_BODY_BYTES + 1);
  } catch {
    return UNREADABLE;
  }
  const method = request.method;
  const body = method === "GET" || method === "HEAD" ? undefined : bytes;
  return new Request(routableUrl(request.url) ?? request.url, { method, headers: request.headers, body, signal: request.signal });
}

/** Up to `limit` bytes of a body without a declared length (the rest, if any, is left unread). */
export async function readAtMost(request: Request, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  if (size >= limit) await reader.cancel().catch(() => {});
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return all;
}

/**
 * The request with a URL Elysia reads the same path from as the app's own guards (`pathOf`, http/cors.ts). Elysia takes
 * the path from the first `/` at or after character 11 (node_modules/elysia/dist/adapter/web-standard/index.mjs:
 * `u.indexOf('/', 11)`), which assumes `http://` and a host of at least four characters: with `Host: a` (or an
 * absolute-form target naming a short host) it would route `/v1/x` as `/x` while the guards saw `/v1/x`, so a
 * guarded path could reach an unguarded route. Whenever the two readings differ, the request is re-addressed to
 * `http://localhost` with the same path, query, method, headers and body (streamed, not read).
 */
export function routable(request: Request): Request {
  const url = routableUrl(request.url);
  return url === undefined ? request : new Request(url, request);
}

/** The URL {@link routable} re-addresses a request to; undefined when Elysia reads `url`'s path as the guards do. */
function routableUrl(url: string): string | undefined {
  // A request without a Host has the path alone as its URL (see pathOf).
  if (url.startsWith("/")) return `http://localhost${url}`;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start !== -1 && start === url.indexOf("/", 11)) return undefined;
  return `http://localhost${start === -1 ? "/" : url.slice(start)}`;
}
