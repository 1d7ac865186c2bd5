import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readConfig } from "./app/config.ts";
import { minimalAppDeps } from "./http/testing.ts";
import { createApp } from "./http/app.ts";

// The reference pages in docs/ must keep up with the code (decisions §16): every route the service publishes in
// /openapi.json is in docs/endpoints.md, and every environment variable config.ts reads is in docs/configuration.md.

const ROOT = import.meta.dir;
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The routes of `/openapi.json` as `METHOD /path` (`{id}` as published), from an app built with fakes. */
async function publishedRoutes(): Promise<string[]> {
  const app = createApp(minimalAppDeps());
  const response = await app.handle(new Request("http://localhost/openapi.json"));
  const doc = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
  // A path item may hold `parameters` or `summary` beside its operations; only HTTP methods are routes.
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).filter((key) => HTTP_METHODS.has(key)).map((method) => `${method.toUpperCase()} ${path}`));
}

/**
 * Whether `text` names the route as `METHOD /path`: the method as a word, one space, the exact path, and after it
 * nothing that would make it a longer path (`GET /api/private/subjects` is not `GET /api/private/subjects/{id}`,
 * `GET /` is not `GET /v1/nonce`); a query (`?…`), a backtick, punctuation or the end of the line may follow.
 */
function namesRoute(text: string, route: string): boolean {
  const [method, path] = route.split(" ") as [string, string];
  const pattern = new RegExp(
    `(?<![A-Za-z])${method} ${escapeRegExp(path)}(?![A-Za-z0-9_\\-/{}]|\\.[A-Za-z0-9])`,
    "m",
  );
  return pattern.test(text);
}

/**
 * Every environment variable `config.ts` reads, found two ways so that neither a new helper nor a computed name
 * slips through: (1) its source, any call whose first argument is a literal NAME (`get("X")`, `int("X", …)`,
 * `list("X", …)`, `new ConfigError("X", …)`) or an `env["X"]` / `env.X` access; (2) what `readConfig` actually asks
 * of an environment that records every name it is asked for, for the embedded devnet and for an existing chain.
 */
function configVariables(): { fromSource: Set<string>; fromReads: Set<string> } {
  // Each section's declarations are in its own file under app/config/.
  const source = readdirSync(join(import.meta.dir, "app/config")).filter((name) => name.endsWith(".ts") && !name.endsWith("_test.ts")).map((name) => read(`app/config/${name}`)).join("\n");
  const fromSource = new Set<string>();
  const name = "([A-Z][A-Z0-9_]*)";
  for (const pattern of [
    new RegExp(`\\b[A-Za-z_$][\\w$]*\\(\\s*["'\`]${name}["'\`]`, "g"),
    new RegExp(`\\benv\\[\\s*["'\`]${name}["'\`]\\s*\\]`, "g"),
    new RegExp(`\\benv\\??\\.${name}\\b`, "g"),
  ]) {
    for (const match of source.matchAll(pattern)) fromSource.add(match[1]!);
  }
  const fromReads = new Set<string>();
  for (const given of [{}, { RPC_URL: "http://127.0.0.1:8545", TRUST_ANCHORS_PATH: "anchors.json" }] as Record<string, string>[]) {
    const recording = new Proxy(given, {
      get(target, key) {
        if (typeof key === "string") fromReads.add(key);
        return target[key as string];
      },
    });
    try {
      readConfig(recording);
    } catch {
      // A variable that refuses these settings still counts as read; the names asked so far are kept.
    }
  }
  return { fromSource, fromReads };
}

describe("docs/", () => {
  test("every route of /openapi.json appears in docs/endpoints.md as METHOD /path", async () => {
    const routes = await publishedRoutes();
    expect(routes.length).toBeGreaterThan(40);
    const page = read("docs/endpoints.md");
    const missing = routes.filter((route) => !namesRoute(page, route));
    expect(missing).toEqual([]);
  });

  test("the route table of docs/endpoints.md names only routes the service publishes", async () => {
    const routes = new Set([...await publishedRoutes(), "GET /openapi.json", "GET /docs"]);
    const page = read("docs/endpoints.md");
    const table = page.slice(page.indexOf("## All routes"), page.indexOf("\n## ", page.indexOf("## All routes") + 1));
    const named = [...table.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s?]*)`/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(named.length).toBeGreaterThan(40);
    expect(named.filter((route) => !routes.has(route))).toEqual([]);
  });

  test("every environment variable config.ts reads appears in docs/configuration.md as `NAME`", () => {
    const { fromSource, fromReads } = configVariables();
    // The extraction itself: both ways find variables config.ts has always read.
    for (const known of ["PORT", "DATABASE_URL", "X402_PAY_TO", "INDEX_FOLLOW"]) {
      expect(fromSource.has(known)).toBe(true);
      expect(fromReads.has(known)).toBe(true);
    }
    const page = read("docs/configuration.md");
    const missing = [...new Set([...fromSource, ...fromReads])].sort().filter((name) => !page.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  test("docs/x402.md answers an unpaid request as decisions §13 (amended) does: 401 on the contract's paths, 402 on the paid aliases", () => {
    const page = read("docs/x402.md");
    // The contract's own paths that take x402; `/v1/paid/…` (the aliases) and the plan purchase answer 402.
    const contractPath = /\/(?:v1\/controller-witness|api\/private\/controller-witness|api\/private\/relay\/eas\/delegated-attest)(?![A-Za-z0-9_\-/])/;
    // Prose: a paragraph that names a contract path and a 402 names the 401 too (the 402 is then the aliases').
    const paragraphs = page.replace(/```[\s\S]*?```/g, "").split(/\n\s*\n/);
    expect(paragraphs.filter((p) => contractPath.test(p)).length).toBeGreaterThan(0);
    expect(paragraphs.filter((p) => contractPath.test(p) && /\b402\b/.test(p) && !/\b401\b/.test(p))).toEqual([]);
    // Examples: code that expects a 402 sends its requests (`${base}/path`, `http://host/path`) to a paid alias.
    const expecting402 = (page.match(/```[a-z]*\n[\s\S]*?```/g) ?? []).filter((block) => /\b402\b/.test(block));
    const requested = expecting402.flatMap((block) => [...block.matchAll(/(?:\$\{\w+\}|https?:\/\/[^\s/'"`]+)(\/[^\s'"`?]*)/g)].map((m) => m[1]!));
    expect(requested.length).toBeGreaterThan(0);
    expect(requested.filter((path) => contractPath.test(path))).toEqual([]);
  });
});
