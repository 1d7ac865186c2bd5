/** The MCP endpoint (decisions §20): the `mcp` section. */
import { type Static, Type } from "@sinclair/typebox";
import { int, onOff, readSection, type ReadContext } from "./_declare.ts";

/** The `mcp` section's variables. */
export const McpSection = Type.Object({
  enabled: onOff("MCP", { default: true, description: "off serves no /mcp" }),
  maxSessions: int("MCP_MAX_SESSIONS", { default: 1_000, minimum: 1, maximum: 1_000_000, description: "sessions kept at once, all instances together" }),
  sessionIdleSeconds: int("MCP_SESSION_IDLE_SECONDS", { default: 900, minimum: 1, maximum: 86_400, description: "a session unused this long is gone" }),
  maxInFlight: int("MCP_MAX_IN_FLIGHT", { default: 32, minimum: 1, maximum: 10_000, description: "tool calls at once in one instance" }),
  sessionsPerMinute: int("MCP_SESSION_RATE_PER_MINUTE", { default: 30, minimum: 1, maximum: 1_000_000, description: "new sessions per client address a minute" }),
  // At least one whole batch (http/routes/mcp: MCP_MAX_BATCH, 10), so that a batch can ever be answered.
  sessionMessagesPerMinute: int("MCP_SESSION_MESSAGES_PER_MINUTE", { default: 120, minimum: 10, maximum: 1_000_000, description: "JSON-RPC messages per session a minute" }),
}, { title: "mcp" });

/** The MCP endpoint. */
export type McpConfig = Static<typeof McpSection>;

/** Reads the `mcp` section. */
export function readMcp(ctx: Omit<ReadContext, "values">): McpConfig {
  return readSection(McpSection, ctx);
}
