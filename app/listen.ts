/** The HTTP server's port and its settings: bound by `listenHttp`, the app served on it later (app/http.ts). */
import type { InstrumentedHandler } from "../http/instrument.ts";
import type { Config } from "./config.ts";

/**
 * How long the server keeps a connection whose answer has not come yet: Bun's maximum. The bounded lookups of the
 * default settings stay well below it: artifact trust makes at most seven dependent lookups of
 * 3 × ARTIFACT_TRUST_RPC_TIMEOUT_MS (8 s) plus backoff, about 170 s; a nonce read one RPC exchange of 10 s with one
 * retry; a discovery about 6 s. What can take longer (a submission: up to eight such exchanges and a receipt awaited
 * for 120 s; a scan over a slow node) is answered at ROUTE_DEADLINE_MS (http/instrument.ts, 245 s).
 */
export const SERVER_IDLE_TIMEOUT_SECONDS = 255;

/** The server bound to `HOST`:`PORT` before the app is built (`listenHttp`), for `serveHttp` to serve it on. */
export type ListeningHttp = {
  /** The port bound (the one the kernel picked for `PORT=0`). */
  readonly port: number;
  /** Serves `handler` from now on; a request that came before waited for it. */
  readonly serve: (handler: InstrumentedHandler) => Bun.Server<undefined>;
  /** Closes the port: the start failed before the app was served. */
  readonly stop: () => void;
};

/**
 * Binds `HOST`:`PORT` now, the app to be served later (`serveHttp`): with `PORT=0` the port is the kernel's choice,
 * and what names the service's own address (`PUBLIC_BASE_URL`'s default, app/config `withBoundPort`) is built with it.
 * A request before the app is served (the port was not yet told to anyone) waits for it.
 */
export function listenHttp(config: Pick<Config, "server">): ListeningHttp {
  let ready!: (handler: InstrumentedHandler) => void;
  const app = new Promise<InstrumentedHandler>((resolve) => (ready = resolve));
  const server = Bun.serve({
    hostname: config.server.host,
    port: config.server.port,
    // Above the app's own limit (http/routes/request.ts MAX_BODY_BYTES, 8 MiB), so that an oversized body
    // gets the app's 413 PAYLOAD_TOO_LARGE with CORS and the error body rather than Bun's bare 413.
    maxRequestBodySize: 16 * 1024 * 1024,
    // Bun's default (10 s) cut connections whose answer was still coming (a hanging RPC behind artifact trust,
    // a receipt awaited for up to two minutes): every route answers before this, at the latest at the handler's
    // ROUTE_DEADLINE_MS (http/instrument.ts), 10 s earlier. A body's arrival is bounded apart, by BODY_TIMEOUT_MS:
    // the idle timeout restarts with every byte a client drips.
    idleTimeout: SERVER_IDLE_TIMEOUT_SECONDS,
    fetch: async (request, server) => (await app)(request, server),
  });
  return {
    port: server.port ?? config.server.port,
    serve: (handler) => {
      server.reload({ fetch: handler });
      ready(handler);
      return server;
    },
    stop: () => void server.stop(true),
  };
}
