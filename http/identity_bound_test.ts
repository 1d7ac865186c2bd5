/**
 * Issue 33: identity-resolve and the MCP tool resolve_identities check one bound (domain/identity's IdentifierList)
 * and give one answer (decisions §20): each list below is sent to both surfaces of one app, and the route's body is
 * the tool's structured content, refusal or not.
 */
import { describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { silentLogger } from "../adapters/observability/mod.ts";
import { MAX_IDENTIFIER_LENGTH, MAX_IDENTIFIERS } from "../domain/identity/mod.ts";
import { createRateLimiter } from "../domain/rate_limit.ts";
import { fail } from "../domain/result.ts";
import { fakeClock, fakeMcpSessions } from "../ports/fakes/mod.ts";
import { createApp } from "./app.ts";
import { createMcpEndpoint, type McpToolDeps } from "./routes/mcp/mod.ts";
import { minimalAppDeps } from "./testing.ts";

const BASE = "http://localhost";

/** Tool dependencies; resolve_identities needs none of them. */
const tools: McpToolDeps = {
  artifactTrust: () => Promise.resolve(fail("NETWORK_ERROR", "unused")),
  confirm: () => Promise.resolve(fail("INVALID_DID", "unused")) as never,
  trustAnchors: { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] },
  attestationList: () => Promise.resolve(fail("INVALID_INPUT", "unused")),
  keyStatus: () => Promise.resolve(fail("NETWORK_ERROR", "unused")),
  keyStatusRate: createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }),
  witness: () => Promise.resolve({ result: fail("UNAUTHENTICATED", "unused"), deprecated: false, deprecation: undefined }) as never,
  subscription: () => Promise.reject(new Error("unused")),
  log: silentLogger,
};

async function bothSurfaces() {
  const app = createApp({
    ...minimalAppDeps(),
    mcp: createMcpEndpoint({ sessions: fakeMcpSessions(), tools, maxSessions: 10, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger }),
  });
  const client = new Client({ name: "unit", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { fetch: (url, init) => app.handle(new Request(url, init)) }));
  return {
    async route(identifiers: string[]) {
      const res = await app.handle(new Request(`${BASE}/v1/identity-resolve`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ identifiers }),
      }));
      return { status: res.status, body: await res.json() as Record<string, unknown> };
    },
    async tool(identifiers: string[]) {
      const answer = await client.callTool({ name: "resolve_identities", arguments: { identifiers } }) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      return { isError: answer.isError === true, body: answer.structuredContent };
    },
  };
}

describe("identity-resolve and resolve_identities: one bound, one answer (issue 33)", () => {
  test("an identifier of 20,000 characters is 400 INVALID_INPUT on the route and the same refusal from the tool", async () => {
    const { route, tool } = await bothSurfaces();
    const long = [`did:web:${"a".repeat(20_000 - 8)}`];
    const viaRoute = await route(long);
    expect(viaRoute).toEqual({ status: 400, body: { error: `each identifier must be at most ${MAX_IDENTIFIER_LENGTH} characters`, code: "INVALID_INPUT" } });
    expect(await tool(long)).toEqual({ isError: true, body: viaRoute.body });
  });

  test("at the bounds and past them, each list gets the same answer from both", async () => {
    const { route, tool } = await bothSurfaces();
    const lists: { name: string; identifiers: string[]; status: number }[] = [
      { name: "one character past the longest", identifiers: ["did:web:a.test", "x".repeat(MAX_IDENTIFIER_LENGTH + 1)], status: 400 },
      { name: "the longest", identifiers: ["x".repeat(MAX_IDENTIFIER_LENGTH)], status: 200 },
      { name: "the most identifiers", identifiers: Array.from({ length: MAX_IDENTIFIERS }, (_, i) => `did:web:s${i}.test`), status: 200 },
      { name: "one identifier too many", identifiers: Array.from({ length: MAX_IDENTIFIERS + 1 }, () => "a.test"), status: 400 },
      { name: "an empty list", identifiers: [], status: 200 },
      { name: "a few of each kind", identifiers: ["Example.com", "0x00000000000000000000000000000000000000aa", "did:handle:github:octocat", ""], status: 200 },
    ];
    for (const { name, identifiers, status } of lists) {
      const viaRoute = await route(identifiers);
      const viaTool = await tool(identifiers);
      expect({ name, status: viaRoute.status }).toEqual({ name, status });
      expect({ name, ...viaTool }).toEqual({ name, isError: status !== 200, body: viaRoute.body });
      if (status === 200) expect({ name, count: (viaRoute.body.identities as unknown[]).length }).toEqual({ name, count: identifiers.length });
      else expect({ name, code: viaRoute.body.code }).toEqual({ name, code: "INVALID_INPUT" });
    }
  });
});
