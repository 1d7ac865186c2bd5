/**
 * Issue 33: JSON bodies no route takes (nested or long past any) are refused before `JSON.parse` builds them, on every
 * route that reads a body: through the app, at the server's edge, and on `/mcp`.
 */
import { describe, expect, spyOn, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createPrometheusMetrics, silentLogger } from "../adapters/observability/mod.ts";
import { fakeClock, fakeMcpSessions } from "../ports/fakes/mod.ts";
import { createApp } from "./app.ts";
import { instrumentedHandler } from "./instrument.ts";
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from "./routes/request.ts";
import { createMcpEndpoint } from "./routes/mcp/mod.ts";
import { minimalAppDeps } from "./testing.ts";

const NESTED = `${"[".repeat(4_000_000)}${"]".repeat(4_000_000)}`;
const WIDE = `{"identifiers":[${'"did:web:a.test",'.repeat(200_000)}"x"]}`;

describe("hostile JSON bodies (issue 33)", () => {
  test("every public JSON route refuses them 400 INVALID_INPUT, in the app and at the edge, without parsing them", async () => {
    const app = createApp({
      ...minimalAppDeps(),
      mcp: createMcpEndpoint({ sessions: fakeMcpSessions(), tools: {} as never, maxSessions: 10, sessionIdleSeconds: 60, maxInFlight: 10, clock: fakeClock(), log: silentLogger }),
    });
    const edge = instrumentedHandler(app, { metrics: createPrometheusMetrics(), log: silentLogger });
    const post = (path: string, body: string) =>
      new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const parse = spyOn(JSON, "parse");
    try {
      for (const [body, message] of [[NESTED, `Body nested deeper than ${MAX_JSON_DEPTH} levels`], [WIDE, `Body holds more than ${MAX_JSON_VALUES} values`]] as const) {
        for (const path of ["/v1/identity-resolve", "/api/public/identity-resolve", "/v1/delegated-attest", "/api/eas/delegated-attest"]) {
          for (const serve of [(r: Request) => app.handle(r), edge]) {
            const response = await serve(post(path, body));
            const answer = await response.json() as Record<string, unknown>;
            expect([path, response.status, answer.code, answer.error]).toEqual([path, 400, "INVALID_INPUT", message]);
            expect(response.headers.get("access-control-allow-origin")).toBe("*");
          }
        }
        const mcp = await app.handle(new Request("http://localhost/mcp", {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body,
        }));
        expect([mcp.status, await mcp.json()]).toEqual([400, { jsonrpc: "2.0", error: { code: -32600, message: `Invalid Request: ${message}` }, id: null }]);
      }
      expect(parse.mock.calls.filter(([text]) => text === NESTED || text === WIDE)).toHaveLength(0);
    } finally {
      parse.mockRestore();
    }
  });

  test("every route that reads a body reads it with the shared parser and parses JSON only behind the scan", () => {
    // A route module reads its body with readBodyText (or /mcp's readBody, which is readBodyText for a live session)
    // and parses it with parseJsonBody or a compiled check's readJson, which scan first; a JSON.parse of its own must
    // sit behind jsonShapeRefusal. Elysia's own body parsers are never used: every POST, PATCH and PUT names its parser.
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith(".ts") && !path.endsWith("_test.ts")) files.push(path);
      }
    };
    walk(join(import.meta.dir, "routes"));
    walk(join(import.meta.dir, "..", "x402"));
    let routes = 0;
    for (const file of files) {
      if (file.endsWith(join("routes", "request.ts"))) continue;
      const text = readFileSync(file, "utf8");
      const registrations = text.match(/\.(post|patch|put)\(/g)?.length ?? 0;
      const parsers = text.match(/parse: (readBodyText|endpoint\.readBody)\b/g)?.length ?? 0;
      expect([file, parsers]).toEqual([file, registrations]);
      routes += registrations;
      if (registrations > 0 && text.includes("JSON.parse(")) expect([file, text.includes("jsonShapeRefusal(")]).toEqual([file, true]);
    }
    expect(routes).toBeGreaterThan(20);
  });
});
