/** The authorisation gate of `/mcp` (decisions §19, §20): who calls, and the 401/403 that starts the MCP authorization flow. */
import { bearerChallenge, type Scope } from "../../../domain/oauth/mod.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import { type BearerAccess, bearerTokenOf, carriesBearer } from "../../credentials.ts";
import { errorBody, json } from "../../errors.ts";
import { clientKeyFor } from "../request.ts";
import type { ToolDefinition, ToolCaller } from "./_tools.ts";

/** The scopes the MCP tools may need, asked together so that one consent covers both account tools. */
export const MCP_SCOPES: readonly Scope[] = ["witness:write", "account:read"];

/** What the gate reads: the bearer tokens, the client's address, the resource `{base}/mcp`, the tools by name. */
export type AuthorizeDeps = {
  readonly bearer?: BearerAccess | undefined;
  readonly clientAddress?: ClientAddressOf | undefined;
  readonly resource: string | undefined;
  readonly byName: ReadonlyMap<string, Pick<ToolDefinition, "scope">>;
};

/** The caller of a request, or the 401/403 that starts the MCP authorization flow for a tool that needs a token. */
export async function authorizeMcp(
  request: Request,
  messages: readonly unknown[],
  deps: AuthorizeDeps,
): Promise<{ ok: true; caller: ToolCaller; scopes: Scope[] } | { ok: false; response: Response }> {
  const { byName, resource } = deps;
  const caller: ToolCaller = { clientKey: clientKeyFor(deps.clientAddress, request) };
  const needed = new Set<Scope>();
  for (const m of messages) {
    const call = m as { method?: unknown; params?: { name?: unknown } } | null;
    if (call?.method !== "tools/call" || typeof call.params?.name !== "string") continue;
    const scope = byName.get(call.params.name)?.scope;
    if (scope !== undefined) needed.add(scope);
  }
  if (deps.bearer === undefined || resource === undefined) return { ok: true, caller, scopes: [] };
  const wanted = MCP_SCOPES.join(" ");
  const refuse = (status: 401 | 403, code: string, message: string, error?: "invalid_token" | "insufficient_scope") => {
    const challenge = error === undefined ? `${bearerChallenge(resource)}, scope="${wanted}"` : bearerChallenge(resource, { code: error, scope: wanted });
    return { ok: false as const, response: json(errorBody(code, message), status, { "www-authenticate": challenge }) };
  };
  const token = bearerTokenOf(request);
  if (needed.size === 0) {
    // No tool here needs a token, but one that is sent is checked (MCP authorization: an invalid or expired token
    // is 401, initialize included), so a client learns at once that it must refresh or authorise again. Its scopes
    // do not matter here: a token refused only for its scope is valid.
    if (!carriesBearer(request)) return { ok: true, caller, scopes: [] };
    if (token === undefined) return refuse(401, "UNAUTHENTICATED", "The access token is malformed", "invalid_token");
    const checked = await deps.bearer.authenticate(token, { scope: "account:read", audience: resource });
    if (!checked.ok && checked.code === "invalid_token") return refuse(401, "UNAUTHENTICATED", checked.message, "invalid_token");
    return { ok: true, caller, scopes: [] };
  }
  if (token === undefined) {
    return carriesBearer(request)
      ? refuse(401, "UNAUTHENTICATED", "The access token is malformed", "invalid_token")
      : refuse(401, "UNAUTHENTICATED", "This tool needs an OAuth access token for this endpoint");
  }
  let account: ToolCaller["account"];
  for (const scope of needed) {
    const checked = await deps.bearer.authenticate(token, { scope, audience: resource });
    if (!checked.ok) {
      return checked.code === "insufficient_scope"
        ? refuse(403, "insufficient_scope", checked.message, "insufficient_scope")
        : refuse(401, "UNAUTHENTICATED", checked.message, "invalid_token");
    }
    account = checked.value.account;
  }
  return { ok: true, caller: { ...caller, account }, scopes: [...needed] };
}
