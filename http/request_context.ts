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

/** The caller's `X-Request-Id` when it is short and plain, else a fresh random id. */
export function requestIdFrom(header: string | null): string {
  if (header !== null && INCOMING_ID.test(header)) return header;
  return crypto.randomUUID();
}
