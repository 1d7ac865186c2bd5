import { AsyncLocalStorage } from "node:async_hooks";

/** What every log line written while serving a request carries, and who sent the request. */
export type RequestContext = {
  readonly requestId: string;
  /**
   * The peer address of the connection (not `X-Forwarded-For`, which any client can write); absent when
   * the request did not come through a socket (`app.handle` in tests). Not logged.
   */
  readonly clientAddress?: string | undefined;
};

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `task` with a request's context, so logs written anywhere under it carry the request id. */
export function withRequestContext<T>(context: RequestContext, task: () => T): T {
  return storage.run(context, task);
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
