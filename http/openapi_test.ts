import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { minimalAppDeps } from "./testing.ts";
import { createApp } from "./app.ts";
import { buildOpenApi, operationIdOf } from "./openapi.ts";
import { ROUTE_DOCS } from "./route_docs.ts";

// Issue 29 item 6: `/openapi.json` is a document other people's tools accept, checked with those tools themselves.

type Operation = { operationId: string; security?: Record<string, string[]>[] };
type Document = {
  paths: Record<string, Record<string, Operation | unknown[]>>;
  components: { securitySchemes: Record<string, { type: string; in: string; name: string }> };
};

/** The document the app serves, built with fakes (no chain). */
async function served(): Promise<Document> {
  const app = createApp(minimalAppDeps());
  const response = await app.handle(new Request("http://localhost/openapi.json"));
  expect(response.status).toBe(200);
  return (await response.json()) as Document;
}

const dir = mkdtempSync(join(tmpdir(), "ats-openapi-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const METHODS = new Set(["get", "post", "patch", "delete"]);
const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => METHODS.has(method)).map(([method, op]) => ({ path, method, op: op as Operation })));

describe("/openapi.json for other people's tools", () => {
  test("a strict parser (@readme/openapi-parser, every rule an error) validates it", async () => {
    const result = await validate(await served() as never, {
      validate: {
        rules: {
          openapi: {
            "array-without-items": "error",
            "duplicate-non-request-body-parameters": "error",
            "duplicate-operation-id": "error",
            "invalid-security-scheme-properties": "error",
            "non-optional-path-parameters": "error",
            "path-parameters-not-in-parameters": "error",
            "path-parameters-not-in-path": "error",
          },
        },
      },
    });
    expect(result.valid ? "valid" : compileErrors(result)).toBe("valid");
    expect(result.warnings).toEqual([]);
  });

  test("Redocly's recommended ruleset (the pinned @redocly/cli) reports no error", async () => {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(await served()));
    // The CLI itself, run by this Bun: the same rules and version a user of `redocly lint` gets, no telemetry.
    const cli = Bun.resolveSync("@redocly/cli/bin/cli.js", import.meta.dir);
    const proc = Bun.spawn([process.execPath, cli, "lint", "--extends", "recommended", "--format", "json", file], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text()];
    await proc.exited;
    const report = JSON.parse(out || "null") as { totals: { errors: number }; problems: { ruleId: string; severity: string; location: { pointer: string }[] }[] } | null;
    expect({ report: report !== null, stderr: report === null ? err : "" }).toEqual({ report: true, stderr: "" });
    const errors = report!.problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId} ${p.location[0]?.pointer}`);
    expect(errors).toEqual([]);
    expect([report!.totals.errors, proc.exitCode]).toEqual([0, 0]);
  });

  test("openapi-typescript generates types from it that typecheck against its paths and models", async () => {
    const types = astToString(await openapiTS(await served() as never));
    for (const path of ["/v1/identity-resolve", "/v1/identity/resolve", "/api/private/subjects/{id}", "/v1/controller-witness"]) {
      expect(types).toContain(`"${path}": {`);
    }
    // The generated types and a client's use of them, compiled strictly: wrong uses must be errors, not `any`.
    const file = join(dir, "client.ts");
    writeFileSync(file, `${types}
type ResolveBody = paths["/v1/identity-resolve"]["post"]["requestBody"]["content"]["application/json"];
export const body: ResolveBody = { identifiers: ["did:web:example.com"] };
// @ts-expect-error identifiers is required
export const empty: ResolveBody = {};
type Resolved = paths["/v1/identity/resolve"]["post"]["responses"][200]["content"]["application/json"];
export const labels = (r: Resolved): string[] => r.identities.map((i) => i.label);
export const subject: paths["/api/private/subjects/{id}"]["parameters"]["path"] = { id: "s1" };
// @ts-expect-error the path parameter is required
export const noSubject: paths["/api/private/subjects/{id}"]["parameters"]["path"] = {};
export const byId: operations["get_api_private_subjects_byId"] = {} as paths["/api/private/subjects/{id}"]["get"];
// @ts-expect-error no such path
export type Missing = paths["/v1/no-such-path"];
`);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      noUncheckedIndexedAccess: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.es2022.d.ts"],
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(diagnostics).toEqual([]);
  });

  test("declares the session cookie, the x402 header and OAuth bearer tokens, and every operation's security names only those", async () => {
    const doc = await served();
    expect(doc.components.securitySchemes).toEqual({
      session: expect.objectContaining({ type: "apiKey", in: "cookie", name: "ats_session" }),
      x402: expect.objectContaining({ type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE" }),
      bearer: expect.objectContaining({ type: "http", scheme: "bearer", bearerFormat: "JWT" }),
    });
    const security = Object.fromEntries(operations(doc).map(({ path, method, op }) => [`${method} ${path}`, op.security]));
    for (const [operation, requirements] of Object.entries(security)) {
      expect({ operation, declared: Array.isArray(requirements) }).toEqual({ operation, declared: true });
      for (const scheme of requirements!.flatMap(Object.keys)) expect(["session", "x402", "bearer"]).toContain(scheme);
    }
    expect(security["post /v1/delegated-attest"]).toEqual([]);
    expect(security["post /v1/session/wallet/verify"]).toEqual([]);
    // Decisions §19: the routes that take bearer tokens name the scope they need beside the session.
    expect(security["get /api/private/accounts/me"]).toEqual([{ session: [] }, { bearer: ["account:read"] }]);
    expect(security["delete /api/private/subjects/{id}"]).toEqual([{ session: [] }, { bearer: ["subjects:write"] }]);
    expect(security["post /v1/controller-witness"]).toEqual([{ session: [] }, { x402: [] }, { bearer: ["witness:write"] }]);
    expect(security["post /api/private/relay/eas/delegated-attest"]).toEqual([{ session: [] }, { x402: [] }, { bearer: ["relay:write"] }]);
    expect(security["post /v1/paid/controller-witness"]).toEqual([{ x402: [] }]);
    expect(security["post /oauth/token"]).toEqual([]);
    expect(security["post /api/private/subscriptions/x402"]).toEqual([{ session: [], x402: [] }]);
    expect(security["post /v1/session/logout"]).toEqual([{}, { session: [] }]);
  });

  test("operationIds are one per method and path; a table that repeats one is refused when built", () => {
    expect([operationIdOf("post", "/v1/identity-resolve"), operationIdOf("post", "/v1/identity/resolve")])
      .toEqual(["post_v1_identityResolve", "post_v1_identity_resolve"]);
    expect([operationIdOf("get", "/"), operationIdOf("get", "/console/app.js"), operationIdOf("get", "/api/private/subjects/{id}")])
      .toEqual(["get_root", "get_console_appJs", "get_api_private_subjects_byId"]);
    const info = { title: "t", version: "1", serverUrl: "http://127.0.0.1:8080" };
    const ids = operations(buildOpenApi(ROUTE_DOCS, info) as unknown as Document).map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const twice = [ROUTE_DOCS[0]!, { ...ROUTE_DOCS[0]!, paths: [ROUTE_DOCS[0]!.paths[0]!] }];
    expect(() => buildOpenApi(twice, info)).toThrow(/operationId get_api_eas_nonce/);
  });
});
