/** Where the service listens and how it treats requests: the `server` section. */
import { type Static, Type } from "@sinclair/typebox";
import { choice, ConfigError, int, list, readSection, type ReadContext, text } from "./_declare.ts";

/** The `server` section's variables. */
export const ServerSection = Type.Object({
  port: int("PORT", { default: 8080, minimum: 0, maximum: 65_535, description: "HTTP port (0: any free port)" }),
  host: text("HOST", { default: "127.0.0.1", description: "address to listen on" }),
  publicBaseUrl: text("PUBLIC_BASE_URL", {
    // With PORT=0, the port bound: app/service.ts binds it first and reads the defaults again (`withBoundPort`).
    default: ({ values }) => defaultPublicBaseUrl(String(values.host), Number(values.port)),
    doc: "http://HOST:PORT",
    description: "the service's public address",
    check: (value) => {
      try {
        new URL(value);
      } catch {
        throw new ConfigError("PUBLIC_BASE_URL", "expected an absolute URL");
      }
    },
  }),
  logLevel: choice("LOG_LEVEL", ["debug", "info", "warn", "error", "silent"], {
    default: "info",
    description: "debug, info, warn, error or silent",
    reason: () => "expected debug, info, warn, error or silent",
  }),
  bodyTimeoutMs: int("BODY_TIMEOUT_MS", { default: 10_000, minimum: 100, maximum: 60_000, description: "how long a request's body may take to arrive (408 past it)" }),
  shutdownGraceMs: int("SHUTDOWN_GRACE_MS", { default: 20_000, minimum: 0, maximum: 120_000, description: "how long requests under way may finish on SIGTERM" }),
  shutdownDelayMs: int("SHUTDOWN_DELAY_MS", {
    default: 0,
    minimum: 0,
    maximum: 60_000,
    description: "on SIGTERM: how long /readyz answers 503 while every request is still served, before the drain (part of SHUTDOWN_GRACE_MS)",
  }),
  trustProxy: int("TRUST_PROXY", { default: 0, minimum: 0, maximum: 16, description: "proxies in front that append to X-Forwarded-For" }),
  corsOrigins: list("CORS_ORIGINS", { default: [], description: "origins allowed with credentials on session and witness routes" }),
}, { title: "server" });

/** `PUBLIC_BASE_URL`'s default: `http://HOST:PORT`, an IPv6 host in brackets. */
export function defaultPublicBaseUrl(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * The origins the private routes take with credentials (their CORS and CSRF guard, http/conventions.ts): the public
 * origin and `CORS_ORIGINS`. With `PUBLIC_BASE_URL` left at its default (a local start), also `http://localhost:PORT`,
 * the other page `SIWE_DOMAINS`' default signs in from (app/config/accounts.ts): before, the console opened there was
 * refused its sign-in (403 `ORIGIN_NOT_ALLOWED`). Nothing wider, and nothing more once `PUBLIC_BASE_URL` is set.
 */
export function privateOriginsOf(server: Pick<ServerConfig, "host" | "port" | "publicBaseUrl" | "corsOrigins">): string[] {
  const local = server.publicBaseUrl === defaultPublicBaseUrl(server.host, server.port) ? [`http://localhost:${server.port}`] : [];
  return [...new Set([new URL(server.publicBaseUrl).origin, ...local, ...server.corsOrigins])];
}

/** Where the service listens (`PORT`, `HOST`, `PUBLIC_BASE_URL`) and how it treats requests. */
export type ServerConfig = Static<typeof ServerSection>;

/** Reads the `server` section. */
export function readServer(ctx: Omit<ReadContext, "values">): ServerConfig {
  const server = readSection(ServerSection, ctx);
  // The delay is part of the grace, so that the process still exits within SHUTDOWN_GRACE_MS + 5 s (decisions §28).
  if (server.shutdownDelayMs > 0 && server.shutdownDelayMs >= server.shutdownGraceMs) {
    throw new ConfigError("SHUTDOWN_DELAY_MS", "must be less than SHUTDOWN_GRACE_MS: the delay is part of the grace");
  }
  return server;
}
