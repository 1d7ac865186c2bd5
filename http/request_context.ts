/**
 * The request context of the request being served, kept across its awaits: set by the server's edge
 * (instrument.ts), read by the logger's context and by the client-address function the routes are given.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { RequestContext } from "../ports/request_context.ts";

export type { RequestContext };

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * Runs `task` (given `args`) with a request's context, so logs written anywhere under it carry the request id. The
 * arguments spare the server's edge a closure per request.
 */
export function withRequestContext<T, A extends unknown[] = []>(context: RequestContext, task: (...args: A) => T, ...args: A): T {
  return storage.run(context, task, ...args);
}

/** The context of the request being served, if any. */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

const INCOMING_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The fresh ids' first 64 bits, random per process: `xxxxxxxx-xxxx-8xxx-` (an RFC 9562 version 8 UUID, whose layout is
 * the maker's). The rest is `8` (the variant) and a counter, so an id costs a string and not a draw from the system's
 * randomness (issue 28); ids stay unique across processes and restarts through the random part.
 */
const ID_PREFIX = (() => {
  const hex = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-8`;
})();
let idCounter = 0;

/** The caller's `X-Request-Id` when it is short and plain, else a fresh id in the form of a UUID. */
export function requestIdFrom(header: string | null): string {
  if (header !== null && INCOMING_ID.test(header)) return header;
  const count = (idCounter++).toString(16).padStart(15, "0");
  return `${ID_PREFIX}${count.slice(0, 3)}-${count.slice(3)}`;
}
