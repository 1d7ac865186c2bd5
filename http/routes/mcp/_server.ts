/** The MCP server of one request: the SDK's `Server` publishing the tools, and the bound on tool calls in progress. */
import type { TSchema } from "@sinclair/typebox";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../../ports/logger.ts";
import type { Metrics } from "../../../ports/metrics.ts";
import type { BearerAccess } from "../../credentials.ts";
import { errorBody } from "../../errors.ts";
import { ErrorModel } from "../../models.ts";
import { summarize, summarizeError } from "./_summaries.ts";
import { createTools, type McpToolDeps, type ToolDefinition, type ToolCaller, type ToolOutcome } from "./_tools.ts";
import { networkKeyOf } from "../../../domain/sessions/mod.ts";

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Why a tools/call or tools/list request's params are malformed, in the service's words; undefined when they are not
 * (or the message is another). The SDK refuses them with its validator's issue list, several lines of JSON, as the
 * message: a library's text for input a client got wrong.
 */
export function malformedParams(message: unknown): string | undefined {
  if (!isPlainObject(message)) return undefined;
  const params = message.params;
  if (message.method === "tools/call") {
    if (!isPlainObject(params) || typeof params.name !== "string") return "tools/call takes params {name: string, arguments?: object}";
    if (params.arguments !== undefined && !isPlainObject(params.arguments)) return "arguments must be an object";
  }
  if (message.method === "tools/list" && params !== undefined && (!isPlainObject(params) || (params.cursor !== undefined && typeof params.cursor !== "string"))) {
    return "tools/list takes params {cursor?: string}";
  }
  return undefined;
}

/** The JSON-RPC error answering a request whose params {@link malformedParams} refused. */
const invalidParams = (message: Record<string, unknown>, why: string) =>
  ({ jsonrpc: "2.0", id: message.id ?? null, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${why}` } });

/** What the tool server needs. */
export type ToolServerDeps = {
  readonly tools: McpToolDeps;
  readonly maxInFlight: number;
  readonly bearer?: BearerAccess | undefined;
  readonly metrics?: Metrics | undefined;
  readonly log: Logger;
};

/** The tools by name, and the answer of one request by a server and transport of its own. */
export type ToolServer = {
  readonly byName: ReadonlyMap<string, ToolDefinition>;
  readonly serve: (request: Request, message: unknown, authInfo: AuthInfo) => Promise<Response>;
};

/**
 * A tool's output schema: its route's answer or the route's error body (a tool error carries it too, and the SDK's
 * client checks any structured content it gets), as MCP wants it at the root (`type: "object"`), without TypeBox's
 * symbols.
 */
function outputSchemaOf(answer: TSchema): { type: "object" } {
  return JSON.parse(JSON.stringify({ type: "object", anyOf: [answer, ErrorModel] })) as { type: "object" };
}

/** A tool's error: the route's `{error, code}` as structured content, and a sentence. */
function toolError(outcome: Extract<ToolOutcome, { ok: false }>): CallToolResult {
  const body = errorBody(outcome.code, outcome.message, outcome.details);
  return { isError: true, content: [{ type: "text", text: summarizeError(outcome.code, outcome.message, outcome.details) }], structuredContent: body };
}

/**
 * One client's share of `MCP_MAX_IN_FLIGHT`: a quarter of it, at least one. Tool calls are counted per client key (the
 * caller's address as every route keys it: IPv4 address, IPv6 /64), so that one client, from however many sessions,
 * holds at most this many of the instance's calls and the rest stay for everyone else; past it its next call is the
 * tool error `RATE_LIMITED` naming its share. Before, one address with four sessions and batches of slow
 * `check_domain_controllers` calls held all 32, and every other agent's calls were refused.
 */
export function clientInFlightShare(maxInFlight: number): number {
  return Math.max(1, Math.floor(maxInFlight / 4));
}

/**
 * One IPv6 /48's share of `MCP_MAX_IN_FLIGHT`, all its /64 client keys together: half of it, at least one (found by
 * review: a /56 holds 256 /64s, so four of them held every slot again). An IPv4 address has no wider network here.
 */
export function networkInFlightShare(maxInFlight: number): number {
  return Math.max(1, Math.floor(maxInFlight / 2));
}

/**
 * Builds the tool server. A tool call takes one of `MCP_MAX_IN_FLIGHT`, one of its client's share
 * ({@link clientInFlightShare}) and, from IPv6, one of its /48's ({@link networkInFlightShare}) while it runs, except a tool answered from memory alone (`memoryOnly`:
 * `get_trust_anchors`, `resolve_identities`), which holds nothing and is answered whatever is in progress.
 */
export function createToolServer(deps: ToolServerDeps): ToolServer {
  const tools = createTools(deps.tools, { withAccountTools: deps.bearer !== undefined });
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const published = tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    // TypeBox schemas are JSON Schema; the round trip drops TypeBox's symbol keys.
    inputSchema: JSON.parse(JSON.stringify(tool.inputSchema)) as { type: "object" },
    outputSchema: outputSchemaOf(tool.outputSchema),
    annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: false, idempotentHint: tool.readOnly, openWorldHint: true },
  }));
  let inFlight = 0;
  /** Calls in progress by client key (the caller's address, as the routes key it) and by IPv6 /48; a key at zero is dropped. */
  const byClient = new Map<string, number>();
  const share = clientInFlightShare(deps.maxInFlight);
  const networkShare = networkInFlightShare(deps.maxInFlight);
  const hold = (key: string) => byClient.set(key, (byClient.get(key) ?? 0) + 1);
  const release = (key: string) => {
    const left = (byClient.get(key) ?? 1) - 1;
    if (left > 0) byClient.set(key, left);
    else byClient.delete(key);
  };

  const run = async (tool: ToolDefinition, args: unknown, caller: ToolCaller): Promise<ToolOutcome> => {
    try {
      return await tool.run(args, caller);
    } catch (error) {
      deps.log.error("mcp_tool_error", { tool: tool.name, error: error instanceof Error ? error.message : String(error) });
      return { ok: false, code: "INTERNAL_ERROR", message: "Internal error" };
    }
  };

  const callTool = async (name: string, args: unknown, caller: ToolCaller): Promise<CallToolResult> => {
    const tool = byName.get(name);
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    let outcome: ToolOutcome;
    const network = networkKeyOf(caller.clientKey);
    // The network's count is kept under its own key (`2001:db8:1::/48`), never a client key's form (`…::/64`).
    const networkKey = network === undefined ? undefined : `network:${network}`;
    if (tool.memoryOnly === true) {
      outcome = await run(tool, args, caller);
    } else if ((byClient.get(caller.clientKey) ?? 0) >= share) {
      outcome = { ok: false, code: "RATE_LIMITED", message: `Too many tool calls in progress from this client (at most ${share} at once); try again later` };
    } else if (networkKey !== undefined && (byClient.get(networkKey) ?? 0) >= networkShare) {
      outcome = { ok: false, code: "RATE_LIMITED", message: `Too many tool calls in progress from this network (at most ${networkShare} at once); try again later` };
    } else if (inFlight >= deps.maxInFlight) {
      outcome = { ok: false, code: "RATE_LIMITED", message: "Too many tool calls in progress; try again later" };
    } else {
      inFlight++;
      hold(caller.clientKey);
      if (networkKey !== undefined) hold(networkKey);
      try {
        outcome = await run(tool, args, caller);
      } finally {
        inFlight--;
        release(caller.clientKey);
        if (networkKey !== undefined) release(networkKey);
      }
    }
    deps.metrics?.increment("ats_mcp_tool_calls_total", { tool: name, outcome: outcome.ok ? "ok" : outcome.code.toLowerCase() });
    if (!outcome.ok) return toolError(outcome);
    // The summary for a model to read, then the JSON as text for clients that do not read structured content.
    return {
      content: [{ type: "text", text: summarize(name, outcome.value) }, { type: "text", text: JSON.stringify(outcome.value) }],
      structuredContent: outcome.value,
    };
  };

  const instructions = "Trust checks on the Ethereum Attestation Service: artifacts (check_artifact_trust), who controls a service's domain (check_domain_controllers), signing keys (key_status), attestations by subject, attester, recipient or schema (list_attestations), display labels (resolve_identities) and the trust anchors (get_trust_anchors). Every answer is the JSON of the service's HTTP route plus a summary." +
    (deps.bearer === undefined ? "" : " request_controller_witness and get_account_usage act for an account and need an OAuth access token for this endpoint.");
  const newServer = () => {
    const server = new Server(
      { name: "ats", title: "Attestation Trust Services", version: "1.0.0" },
      {
        capabilities: { tools: { listChanged: false } },
        instructions,
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: published }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      callTool(request.params.name, request.params.arguments ?? {}, (extra.authInfo?.extra?.caller ?? { clientKey: "unknown" }) as ToolCaller));
    return server;
  };

  /**
   * Answers one request with a server and a stateless transport of its own (the SDK's way to serve a session from any
   * process): nothing outlives the answer.
   */
  const serve = async (request: Request, message: unknown, authInfo: AuthInfo): Promise<Response> => {
    // Requests with malformed params are answered here; the rest of a batch goes on to the SDK.
    const messages = Array.isArray(message) ? message : [message];
    const refused = messages.flatMap((m) => {
      const why = malformedParams(m);
      return why === undefined ? [] : [invalidParams(m as Record<string, unknown>, why)];
    });
    if (refused.length === 0) return await transported(request, message, authInfo);
    const rest = messages.filter((m) => malformedParams(m) === undefined);
    if (!Array.isArray(message)) return Response.json(refused[0]);
    if (rest.length === 0) return Response.json(refused);
    const answered = await transported(request, rest, authInfo);
    const others = answered.status === 200 ? await answered.json() as unknown : [];
    const headers = new Headers(answered.headers);
    headers.delete("content-length");
    return Response.json([...(Array.isArray(others) ? others : [others]), ...refused], { headers });
  };

  const transported = async (request: Request, message: unknown, authInfo: AuthInfo): Promise<Response> => {
    const server = newServer();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody: message, authInfo });
    } finally {
      await server.close().catch(() => {});
    }
  };

  return { byName, serve };
}
