/**
 * A TLS HTTP server on loopback for did.json tests, recording every request's Host header and path so a
 * test can prove a request was (or was not) made.
 */
import type { Server } from "bun";

/** Options of {@link startHttpsServer}. */
export type HttpsServerOptions = {
  readonly cert: string;
  readonly key: string;
  readonly routes: (request: Request) => Response | Promise<Response>;
  /** Loopback address to bind; default 127.0.0.1. */
  readonly hostname?: string | undefined;
  /** Port to bind; default a random free one. */
  readonly port?: number | undefined;
};

/** A request the server received. */
export type HttpsRequestRecord = { readonly host: string; readonly path: string };

/** A running test HTTPS server. */
export type HttpsServer = {
  readonly port: number;
  readonly requests: HttpsRequestRecord[];
  readonly stop: () => Promise<void>;
};

/** Starts an HTTPS server on 127.0.0.1 that answers with `routes` and records each request. */
export function startHttpsServer(options: HttpsServerOptions): Promise<HttpsServer> {
  const requests: HttpsRequestRecord[] = [];
  const server: Server<undefined> = Bun.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    tls: { cert: options.cert, key: options.key },
    // Slow-drip tests keep a response open longer than Bun's default idle timeout would allow.
    idleTimeout: 30,
    fetch(request) {
      requests.push({ host: request.headers.get("host") ?? "", path: new URL(request.url).pathname });
      return options.routes(request);
    },
  });
  return Promise.resolve({
    port: server.port!,
    requests,
    stop: () => server.stop(true),
  });
}
