/** Where the service listens and how it treats requests: the `server` section. */
import { type Static, Type } from "@sinclair/typebox";
import { choice, ConfigError, int, list, readSection, type ReadContext, text } from "./_declare.ts";

/** The `server` section's variables. */
export const ServerSection = Type.Object({
  port: int("PORT", { default: 8080, minimum: 0, maximum: 65_535, description: "HTTP port (0: any free port)" }),
  host: text("HOST", { default: "127.0.0.1", description: "address to listen on" }),
  publicBaseUrl: text("PUBLIC_BASE_URL", {
    default: ({ values }) => `http://${String(values.host).includes(":") ? `[${values.host}]` : values.host}:${values.port}`,
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
  trustProxy: int("TRUST_PROXY", { default: 0, minimum: 0, maximum: 16, description: "proxies in front that append to X-Forwarded-For" }),
  corsOrigins: list("CORS_ORIGINS", { default: [], description: "origins allowed with credentials on session and witness routes" }),
}, { title: "server" });

/** Where the service listens (`PORT`, `HOST`, `PUBLIC_BASE_URL`) and how it treats requests. */
export type ServerConfig = Static<typeof ServerSection>;

/** Reads the `server` section. */
export function readServer(ctx: Omit<ReadContext, "values">): ServerConfig {
  return readSection(ServerSection, ctx);
}
