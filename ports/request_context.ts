/** What every log line written while serving a request carries, and who sent the request. */
export type RequestContext = {
  readonly requestId: string;
  /**
   * The peer address of the connection (not `X-Forwarded-For`, which any client can write, unless `TRUST_PROXY`
   * says how many proxies stand in front); absent when the request did not come through a socket (`app.handle` in
   * tests). Not logged.
   */
  readonly clientAddress?: string | undefined;
};

/**
 * The address of the client that sent a request, as the server's edge worked it out: the request-scoped context
 * reaches the routes through this function, never through the store that holds it (undefined: not known).
 */
export type ClientAddressOf = (request: Request) => string | undefined;
