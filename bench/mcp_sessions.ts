/**
 * What an MCP session costs and what the bound keeps (issue 27, decisions §20, §21): opens sessions through the
 * endpoint (the SDK's Server and stateless transport per request, in process, no network), abandons them all, and
 * prints the process's heap growth and the records kept in the storage (a SQLite file in memory), with and without
 * the bound. Since issue 34 a session is a record in the storage, not a server held in the process. Use cases are
 * stubs: a session holds no answer of theirs.
 *
 *   bun run bench/mcp_sessions.ts [maxSessions=100] [opened=2000]
 */
import { Elysia } from "elysia";
import { silentLogger } from "../adapters/observability/mod.ts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { createRateLimiter } from "../domain/rate_limit.ts";
import { fakeClock } from "../ports/fakes/mod.ts";
import { createMcpEndpoint, type McpToolDeps, mcpRoutes } from "../http/routes/mcp/mod.ts";

const unused = () => Promise.reject(new Error("unused"));
const tools = {
  artifactTrust: unused,
  confirm: unused,
  trustAnchors: { version: 1, updatedAt: "", widgetOrigins: [], chains: {}, registries: [] },
  attestationList: unused,
  keyStatus: unused,
  keyStatusRate: createRateLimiter(fakeClock(), { capacity: 1, perMinute: 1 }),
  witness: unused,
  subscription: unused,
  log: silentLogger,
} as unknown as McpToolDeps;

async function run(maxSessions: number, opened: number) {
  const storage = openSqliteStorage(":memory:");
  const endpoint = createMcpEndpoint({
    tools,
    sessions: storage.mcpSessions,
    maxSessions,
    sessionIdleSeconds: 900,
    maxInFlight: 32,
    clock: fakeClock(),
    log: silentLogger,
  });
  const app = new Elysia().use(mcpRoutes(endpoint));
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } });
  const initialize = async () =>
    await (await app.handle(new Request("http://localhost/mcp", { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body }))).text();
  for (let i = 0; i < 50; i++) await initialize();
  Bun.gc(true);
  const before = process.memoryUsage().heapUsed;
  const started = performance.now();
  for (let i = 0; i < opened; i++) await initialize();
  const elapsedMs = performance.now() - started;
  Bun.gc(true);
  const grown = process.memoryUsage().heapUsed - before;
  console.log(JSON.stringify({
    maxSessions,
    opened,
    kept: await endpoint.sessions(),
    heapGrowthKiB: Math.round(grown / 1024),
    bytesPerOpenedSession: Math.round(grown / opened),
    msPerInitialize: Number((elapsedMs / opened).toFixed(3)),
  }));
  await storage.close();
}

const max = Number(process.argv[2] ?? 100);
const opened = Number(process.argv[3] ?? 2000);
await run(Number.MAX_SAFE_INTEGER, opened);
await run(max, opened);
