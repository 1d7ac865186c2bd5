/**
 * `/mcp`: the service as a Model Context Protocol server over Streamable HTTP (decisions §20), in the same process
 * and port as every other route. The protocol is the official SDK's: a `Server` and a
 * `WebStandardStreamableHTTPServerTransport` in its stateless mode, built for each request, answering JSON (no SSE
 * streams: the server sends nothing unasked, so `GET /mcp` is 405 as the transport's specification allows). Sessions
 * are ours, and live in the storage (decisions §21): `initialize` records one and names it in `Mcp-Session-Id`, and
 * every later request of it, at whichever instance it lands, is checked against that record (404 when unknown, idle or
 * pushed out) before its body is read. Nothing of a session is held in a process, so any instance answers any
 * session and no sticky routing is needed. The tools need nothing from the handshake that this loses: they are
 * answered per request, and the server asks the client nothing.
 *
 * What is ours besides: the tools (`_tools.ts`), the bound on tool calls in progress, and the authorisation gate in
 * front of the two tools that act for an account: a `tools/call` of one of them without a valid bearer token for the
 * resource `{base}/mcp` is answered 401 with `WWW-Authenticate: Bearer resource_metadata=…` (403
 * `insufficient_scope` for a token without the scope) before the server sees it, which is where the MCP authorization
 * flow starts; the session stays as it was and the client sends the same call again with its token.
 */
import { Elysia } from "elysia";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { RateLimit } from "../../../domain/rate_limit.ts";
import type { Clock } from "../../../ports/clock.ts";
import type { McpSessionStore } from "../../../ports/mcp_sessions.ts";
import type { Logger } from "../../../ports/logger.ts";
import type { Metrics } from "../../../ports/metrics.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import type { BearerAccess } from "../../credentials.ts";
import { errorBody, json } from "../../errors.ts";
import { BODY_TOO_LARGE, jsonShapeRefusal, readBodyText, TOO_LARGE_MESSAGE } from "../request.ts";
import type { McpToolDeps } from "./_tools.ts";
import { authorizeMcp } from "./_authorize.ts";
import { createToolServer } from "./_server.ts";

export { MCP_SCOPES } from "./_authorize.ts";

/** The endpoint's path. */
export const MCP_PATH = "/mcp";

/**
 * The most JSON-RPC messages one POST may carry (issue 33). The SDK's transport takes batches of up to 100, and one
 * batch of 100 `tools/list` (4.8 KB) was answered with 2.46 MB after up to 221 ms of work; the protocol's current
 * version has no batches at all, and the SDK's clients send one message per POST.
 */
export const MCP_MAX_BATCH = 10;

/**
 * CORS of `/mcp`: any origin, never with credentials (no cookie is read here), and the headers a browser MCP client
 * sends and must read (the session id, the protocol version, the bearer token and its challenge).
 */
export const MCP_CORS_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, DELETE, OPTIONS",
  "access-control-allow-headers": "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID",
  "access-control-expose-headers": "Mcp-Session-Id, WWW-Authenticate",
  "access-control-max-age": "600",
};

/** What the endpoint needs. */
export type McpEndpointDeps = {
  readonly tools: McpToolDeps;
  /** The session records: in the storage, so that any instance answers any session (decisions §21). */
  readonly sessions: McpSessionStore;
  /** Sessions kept at once, all instances together (`MCP_MAX_SESSIONS`); past it the least recently used goes. */
  readonly maxSessions: number;
  /** A session unused this long is closed (`MCP_SESSION_IDLE_SECONDS`). */
  readonly sessionIdleSeconds: number;
  /**
   * Tool calls running at once, all sessions together (`MCP_MAX_IN_FLIGHT`), a quarter of it (at least one) per client
   * address and half of it per IPv6 /48 (`_server.ts` clientInFlightShare, networkInFlightShare); past any a call is a
   * `RATE_LIMITED` tool error. Tools answered from memory alone (`get_trust_anchors`, `resolve_identities`) count
   * against none.
   */
  readonly maxInFlight: number;
  /**
   * New sessions per client address (`MCP_SESSION_RATE_PER_MINUTE`, counted for the deployment); past it `initialize`
   * is 429. So that pushing everyone else's sessions out of a full table takes many addresses, not one loop. Absent:
   * unlimited.
   */
  readonly sessionRate?: RateLimit | undefined;
  /**
   * JSON-RPC messages one session may send, keyed by the session's id, every method counted, each message of a batch
   * one (`MCP_SESSION_MESSAGES_PER_MINUTE`, also the largest burst; counted for the deployment, so a session spread over
   * instances has one budget); past it the POST is 429. Absent: unlimited.
   */
  readonly sessionMessages?: RateLimit | undefined;
  /** OAuth access tokens (decisions §19); absent (`OAUTH=off`): the account tools are not offered. */
  readonly bearer?: BearerAccess | undefined;
  readonly clock: Clock;
  readonly clientAddress?: ClientAddressOf | undefined;
  readonly metrics?: Metrics | undefined;
  readonly log: Logger;
};

/** The MCP endpoint: its request handler and the upkeep of its sessions. */
export type McpEndpoint = {
  /** Answers a POST or DELETE of `/mcp`; `body` is what {@link McpEndpoint.readBody} read. */
  readonly handle: (request: Request, body: unknown) => Promise<Response>;
  /** The body parser of `POST /mcp`: the body's text, unread for a session that is not live. */
  readonly readBody: (context: { request: Request }) => Promise<unknown>;
  /** Sessions live now, all instances together. */
  readonly sessions: () => Promise<number>;
  /** Drops the sessions idle past their deadline; returns how many. */
  readonly sweep: () => Promise<number>;
};

/** Why a session ended: unused too long, pushed out by a new one at the bound, or closed by its client. */
type SessionEnd = "idle" | "full" | "closed";

/** The body a POST of a session that is not live gets instead of its own, which is never read (issue 33). */
const UNKNOWN_SESSION: unique symbol = Symbol("unknown MCP session");

/** What {@link McpEndpoint.readBody} gives a POST: its body, and the session it found live (and marked used) first. */
class SessionBody {
  constructor(readonly body: unknown, readonly liveSession: string | null) {}
}

/** A JSON-RPC error answer of the transport layer, worded and shaped as the SDK's transport words its own. */
function rpcError(status: number, code: number, message: string): Response {
  return json({ jsonrpc: "2.0", error: { code, message }, id: null }, status);
}

/** Builds the endpoint. */
export function createMcpEndpoint(deps: McpEndpointDeps): McpEndpoint {
  const resource = deps.bearer === undefined ? undefined : `${deps.bearer.resource}${MCP_PATH}`;
  const { byName, serve } = createToolServer(deps);
  const authorize = (request: Request, messages: readonly unknown[]) => authorizeMcp(request, messages, { bearer: deps.bearer, clientAddress: deps.clientAddress, resource, byName });
  const idleMs = deps.sessionIdleSeconds * 1000;
  const ended = (reason: SessionEnd, count = 1) => {
    if (count > 0) deps.metrics?.increment("ats_mcp_sessions_closed_total", { reason }, count);
  };
  /** Marks a session used now; false when it is not live (unknown, closed, idle or pushed out). */
  const touch = (id: string) => deps.sessions.touch(id, { nowMs: deps.clock.nowMs(), idleMs });

  /** The answer, naming its session as the transport names it in session mode. */
  const inSession = (response: Response, id: string): Response => {
    const headers = new Headers(response.headers);
    headers.set("mcp-session-id", id);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };

  /** A new session for an initialize request: recorded once the server accepted it, idle and surplus ones dropped. */
  const open = async (request: Request, message: unknown, authInfo: AuthInfo): Promise<Response> => {
    const response = await serve(request, message, authInfo);
    if (response.status !== 200) return response;
    const id = crypto.randomUUID();
    const dropped = await deps.sessions.open(id, { maxSessions: deps.maxSessions, idleMs, nowMs: deps.clock.nowMs() });
    ended("idle", dropped.idle);
    ended("full", dropped.full);
    return inSession(response, id);
  };

  const handle = async (request: Request, received: unknown): Promise<Response> => {
    const sessionId = request.headers.get("mcp-session-id");
    if (request.method === "DELETE") {
      if (sessionId === null || !(await deps.sessions.close(sessionId))) return rpcError(404, -32001, "Session not found");
      ended("closed");
      return new Response(null, { status: 200 });
    }
    // Issue 33: a session that is not live is answered before its body is parsed (or read: see readBody), the body's
    // shape checked before it is parsed, and a batch and a session's messages bounded before any is answered.
    const checked = received instanceof SessionBody ? received : undefined;
    const body = checked === undefined ? received : checked.body;
    if (body === UNKNOWN_SESSION) return rpcError(404, -32001, "Session not found");
    if (sessionId !== null && checked?.liveSession !== sessionId && !(await touch(sessionId))) return rpcError(404, -32001, "Session not found");
    if (body === BODY_TOO_LARGE) return rpcError(413, -32000, TOO_LARGE_MESSAGE);
    const text = typeof body === "string" ? body : "";
    const refusal = jsonShapeRefusal(text);
    if (refusal !== undefined) return rpcError(400, -32600, `Invalid Request: ${refusal}`);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return rpcError(400, -32700, "Parse error: Invalid JSON");
    }
    const messages = Array.isArray(message) ? message : [message];
    if (messages.length > MCP_MAX_BATCH) return rpcError(400, -32600, `Invalid Request: a batch holds at most ${MCP_MAX_BATCH} messages`);
    if (sessionId !== null) {
      const turn = await deps.sessionMessages?.take(sessionId, Math.max(1, messages.length)) ?? { allowed: true };
      if (!turn.allowed) {
        return json(errorBody("RATE_LIMITED", "Too many MCP messages in this session; try again later"), 429, { "retry-after": String(turn.retryAfterSeconds) });
      }
    }
    const gate = await authorize(request, messages);
    if (!gate.ok) return gate.response;
    const authInfo: AuthInfo = { token: "", clientId: "", scopes: gate.scopes, extra: { caller: gate.caller } };
    const initializing = messages.some((m) => isInitializeRequest(m));
    if (sessionId === null) {
      if (!initializing) return rpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required");
      const turn = await deps.sessionRate?.take(gate.caller.clientKey) ?? { allowed: true };
      if (!turn.allowed) {
        return json(errorBody("RATE_LIMITED", "Too many new MCP sessions from this address; try again later"), 429, { "retry-after": String(turn.retryAfterSeconds) });
      }
      return await open(request, message, authInfo);
    }
    // The transport's own answer to a second initialize of one session.
    if (initializing) return rpcError(400, -32600, "Invalid Request: Server already initialized");
    return inSession(await serve(request, message, authInfo), sessionId);
  };

  /**
   * The body of a POST as {@link readBodyText} reads it, except for a session that is not live (unknown, ended, idle or
   * pushed out), whose body is not read at all: its answer is 404 whatever it says (issue 33).
   */
  const readBody = async (context: { request: Request }): Promise<unknown> => {
    const sessionId = context.request.headers.get("mcp-session-id");
    if (sessionId !== null && !(await touch(sessionId))) return UNKNOWN_SESSION;
    return new SessionBody(await readBodyText(context), sessionId);
  };

  return {
    handle,
    readBody,
    sessions: () => deps.sessions.count({ nowMs: deps.clock.nowMs(), idleMs }),
    async sweep() {
      const gone = await deps.sessions.sweep({ nowMs: deps.clock.nowMs(), idleMs });
      ended("idle", gone);
      return gone;
    },
  };
}

/** The `/mcp` routes: POST (JSON-RPC messages) and DELETE (end a session); GET is 405 (no server-sent stream). */
export function mcpRoutes(endpoint: McpEndpoint) {
  return new Elysia({ name: "mcp-routes" })
    .post(MCP_PATH, ({ request, body }) => endpoint.handle(request, body), { parse: endpoint.readBody })
    .delete(MCP_PATH, ({ request }) => endpoint.handle(request, undefined));
}
