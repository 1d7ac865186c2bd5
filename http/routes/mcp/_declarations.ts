/** The declarations of the MCP endpoint's routes (http/routes/mcp/mcp.ts). */
import { type RouteDoc } from "../../models.ts";
import { CACHE } from "../../http_cache.ts";
import { err, TOO_LARGE } from "../../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

/** One JSON-RPC 2.0 message of the MCP endpoint (a request, a notification or a response to the server). */
const McpMessage = t.Object({
  jsonrpc: t.Literal("2.0"),
  id: t.Optional(t.Union([t.String(), t.Integer()])),
  method: t.Optional(t.String({ description: "initialize, notifications/initialized, tools/list, tools/call, ping, …" })),
  params: t.Optional(t.Record(t.String(), t.Unknown())),
  result: t.Optional(t.Unknown()),
  error: t.Optional(t.Unknown()),
});

/** `POST /mcp`: one JSON-RPC 2.0 message or an array of them (Streamable HTTP). */
export const McpBody = t.Union([McpMessage, t.Array(McpMessage, { minItems: 1 })], {
  description: "A JSON-RPC 2.0 message, or an array of them; outside initialize the Mcp-Session-Id header names the session",
});

/** The MCP endpoint (decisions §20): route declarations, gathered by http/route_docs.ts. */
export const MCP_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/mcp"],
    auth: "public",
    cache: CACHE.private,
    summary: "The Model Context Protocol endpoint (decisions §20, Streamable HTTP, answers in JSON): initialize, tools/list and tools/call of check_artifact_trust, check_domain_controllers, resolve_identities, get_trust_anchors, list_attestations, key_status (public) and request_controller_witness, get_account_usage (an OAuth access token for the resource {base}/mcp with witness:write or account:read). A tool answers its route's JSON as structured content plus a summary; a failure is a tool error carrying the route's {error, code}",
    body: { schema: McpBody },
    responses: {
      200: { description: "The JSON-RPC response; an initialize answer carries the session in Mcp-Session-Id" },
      202: { description: "Notifications only: accepted" },
      400: { description: "JSON-RPC error: unparseable JSON, no Mcp-Session-Id outside initialize" },
      401: err("UNAUTHENTICATED: a tools/call of an account tool without a valid token, or any request carrying an invalid, expired or foreign token (error=\"invalid_token\"); WWW-Authenticate names the metadata of {base}/mcp (/.well-known/oauth-protected-resource/mcp) and the scopes to ask"),
      403: err("insufficient_scope: the token lacks the tool's scope"),
      404: { description: "JSON-RPC error -32001: the session is unknown, closed, idle past MCP_SESSION_IDLE_SECONDS or pushed out past MCP_MAX_SESSIONS; start a new one" },
      406: { description: "JSON-RPC error: the Accept header must name both application/json and text/event-stream" },
      413: { description: "PAYLOAD_TOO_LARGE ({error, code}, a declared length) or JSON-RPC error -32000: a body over 8 MiB" },
      415: { description: "JSON-RPC error: the body must be application/json" },
      429: err("RATE_LIMITED: more new sessions from this client address than MCP_SESSION_RATE_PER_MINUTE; Retry-After"),
    },
  },
  {
    method: "delete",
    paths: ["/mcp"],
    auth: "public",
    cache: CACHE.private,
    summary: "Ends the MCP session named by Mcp-Session-Id",
    responses: { 200: { description: "Ended" }, 404: { description: "JSON-RPC error -32001: no such session" }, 413: TOO_LARGE },
  },
];
