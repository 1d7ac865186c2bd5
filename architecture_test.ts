import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, sep } from "node:path";
import ts from "typescript";
import { PACKAGES } from "./packages/build.ts";

// The dependency rules of the house style (decisions §16): domain/ is pure, ports/ is a leaf, a capability folder is
// reached only through its mod.ts, client/ and http/ reach no adapter, and the composition root reads top to bottom.
const ROOT = import.meta.dir;

/** Every .ts file below `dir`, tests and the fakes included when asked. */
function sources(dir: string, options: { tests?: boolean } = {}): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && (options.tests || (!f.endsWith("_test.ts") && !isFake(join(dir, f)))))
    .map((f) => join(dir, f));
}

/** The hand-written fakes of the ports (ports/fakes/), test support exempt from the source rules. */
function isFake(file: string): boolean {
  return file.startsWith(join("ports", "fakes") + sep);
}

function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"/gms), ...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)]
    .map((m) => m[1]!);
}

/** The project file a relative import names (undefined for a package). */
function target(file: string, spec: string): string | undefined {
  return spec.startsWith(".") ? normalize(join(dirname(file), spec)) : undefined;
}

/** Each package's subpath exports and the source file each is built from. */
const PACKAGE_ENTRIES = Object.fromEntries(Object.entries(PACKAGES).map(([name, p]) => [name, p.entries]));

const under = (file: string, folder: string) => file.startsWith(`${folder}${sep}`);
const subfolders = (dir: string) =>
  readdirSync(join(ROOT, dir)).filter((d) => statSync(join(ROOT, dir, d)).isDirectory() && existsSync(join(ROOT, dir, d, "mod.ts")))
    .map((d) => join(dir, d));

/** The capability folders: each is reached from outside only through its mod.ts. */
const CAPABILITY_FOLDERS = [...subfolders("domain"), ...subfolders("adapters"), ...subfolders(join("http", "routes")), join("ports", "fakes")];

/** Every source file of ours, tests included, that may import a capability. */
const ALL = ["domain", "ports", "adapters", "http", "client", "console", "widgets", "app", "x402", "e2e", "bench", "scripts"]
  .flatMap((d) => sources(d, { tests: true }))
  .concat(["main.ts", "architecture_test.ts"]);

describe("architecture", () => {
  test("domain/ imports only domain/, ports/, viem/utils, viem types and TypeBox", () => {
    for (const file of sources("domain")) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const spec of imports(file)) {
        const to = target(file, spec);
        const allowed = to !== undefined
          ? under(to, "domain") || under(to, "ports")
          : spec === "viem/utils" || spec.startsWith("@sinclair/typebox") || (spec === "viem" && /import type [^;]* from "viem"/.test(text));
        expect({ file, spec, allowed }).toEqual({ file, spec, allowed: true });
      }
    }
  });

  test("domain/ never reads the clock, the network or randomness itself", () => {
    for (const file of sources("domain")) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const banned of ["Date.now(", "fetch(", "crypto.getRandomValues", "Math.random(", "Bun."]) {
        expect({ file, banned, found: text.includes(banned) }).toEqual({ file, banned, found: false });
      }
    }
  });

  test("the storage engines stand apart: adapters/sqlite/ and adapters/postgres/ import neither the other, adapters/sql/ neither of them", () => {
    // Issue 47 item 4: what both engines share (row mappers, table definitions, query text) lives in adapters/sql/.
    const engines = [join("adapters", "sqlite"), join("adapters", "postgres")];
    for (const dir of [...engines, join("adapters", "sql")]) {
      for (const file of sources(dir, { tests: true })) {
        for (const spec of imports(file)) {
          const to = target(file, spec);
          const other = engines.find((engine) => engine !== dir && to !== undefined && under(to, engine));
          expect({ file, spec, other }).toEqual({ file, spec, other: undefined });
        }
      }
    }
  });

  test("ports/ imports nothing of ours", () => {
    for (const file of sources("ports")) {
      for (const spec of imports(file)) {
        expect({ file, spec, ok: spec.startsWith("./") }).toEqual({ file, spec, ok: true });
      }
    }
  });

  test("code outside a capability folder reaches it only through its mod.ts", () => {
    expect(CAPABILITY_FOLDERS.length).toBeGreaterThanOrEqual(10);
    for (const file of ALL) {
      for (const spec of imports(file)) {
        const to = target(file, spec);
        if (to === undefined) continue;
        const folder = CAPABILITY_FOLDERS.find((f) => dirname(to) === f);
        if (folder === undefined || dirname(file) === folder) continue;
        expect({ file, spec, ok: to === join(folder, "mod.ts") }).toEqual({ file, spec, ok: true });
      }
    }
  });

  test("client/, http/, console/ and the domain reach no adapter", () => {
    for (const dir of ["client", "http", "console", "widgets", "domain", "ports"]) {
      for (const file of sources(dir)) {
        for (const spec of imports(file)) {
          const to = target(file, spec);
          expect({ file, spec, ok: to === undefined || !under(to, "adapters") }).toEqual({ file, spec, ok: true });
        }
      }
    }
  });

  test("client/mod.ts, the console's script and the widget's reach no adapter, Node module or Bun API (they run in browsers)", () => {
    // Every file the browser entries reach, followed through relative imports (re-exports included).
    const seen = new Set<string>();
    const external = new Set<string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const spec of imports(file)) {
        if (spec.startsWith(".")) walk(join(dirname(file), spec));
        else external.add(spec);
      }
      for (const banned of ["Bun.", "process.", "require("]) {
        expect({ file, banned, found: text.includes(banned) }).toEqual({ file, banned, found: false });
      }
    };
    walk(join("client", "mod.ts"));
    walk(join("console", "app.ts"));
    walk(join("widgets", "review_widget.ts"));
    expect(seen.has(join("client", "session.ts"))).toBe(true);
    for (const file of seen) {
      const ok = !under(file, "adapters") && !under(file, "x402") && !under(file, "app") && !file.startsWith(join("console", "assets")) && !file.startsWith(join("widgets", "assets")) &&
        file !== "main.ts";
      expect({ file, ok }).toEqual({ file, ok: true });
    }
    // Libraries that run in browsers only: viem (pure parts) and TypeBox.
    for (const spec of external) {
      const ok = spec === "viem" || spec.startsWith("viem/") || spec.startsWith("@sinclair/typebox");
      expect({ spec, ok }).toEqual({ spec, ok: true });
    }
  });

  test("the packages' entries (packages/*) reach no Bun API, Node module or adapter, and name every library they import", () => {
    // decisions §26: what `packages/build.ts` bundles must load in any Node server, and the client's entries in
    // browsers; the Elysia adapter is the extension's one subpath allowed to need Elysia.
    for (const name of ["x402-offer-receipt", "client"]) {
      const manifest = JSON.parse(readFileSync(join(ROOT, "packages", name, "package.json"), "utf8")) as {
        exports: Record<string, unknown>;
        dependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
      };
      const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
      for (const [subpath, source] of Object.entries(PACKAGE_ENTRIES[name]!)) {
        const seen = new Set<string>();
        const external = new Set<string>();
        const walk = (file: string) => {
          if (seen.has(file)) return;
          seen.add(file);
          const text = readFileSync(join(ROOT, file), "utf8");
          for (const spec of imports(file)) {
            if (spec.startsWith(".")) walk(join(dirname(file), spec));
            else external.add(spec);
          }
          for (const banned of ["Bun.", "process.", "require(", "Buffer."]) {
            expect({ name, subpath, file, banned, found: text.includes(banned) }).toEqual({ name, subpath, file, banned, found: false });
          }
        };
        walk(source);
        expect({ name, subpath, exported: subpath in manifest.exports }).toEqual({ name, subpath, exported: true });
        for (const file of seen) {
          const ok = !under(file, "adapters") && !under(file, "app") && !under(file, "http") && file !== "main.ts";
          expect({ name, subpath, file, ok }).toEqual({ name, subpath, file, ok: true });
        }
        for (const spec of external) {
          const library = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
          const ok = !spec.startsWith("node:") && !spec.startsWith("bun") && (library !== "elysia" || subpath === "./elysia") &&
            declared.has(library);
          expect({ name, subpath, spec, ok }).toEqual({ name, subpath, spec, ok: true });
        }
      }
    }
  });

  test("no import circles among source files (tests, fakes and the packages' build output aside)", () => {
    // Issue 47: a capability depends on another's mod.ts in one direction only. Every import counts, `import type`
    // and re-exports included: a circle of types ties two files together as much as one of values.
    const files = ["domain", "ports", "adapters", "http", "client", "console", "widgets", "app", "x402", "bench", "scripts"]
      .flatMap((d) => sources(d))
      .concat(["main.ts"]);
    const known = new Set(files);
    const edges = new Map(files.map((file) => [file, imports(file).map((spec) => target(file, spec)).filter((to): to is string => to !== undefined && known.has(to))]));
    // Depth first: an import of a file still on the walk's path closes a circle, reported as that part of the path.
    const circles: string[][] = [];
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      path.push(file);
      for (const to of edges.get(file)!) {
        if (state.get(to) === "open") circles.push([...path.slice(path.indexOf(to)), to]);
        else if (!state.has(to)) visit(to);
      }
      path.pop();
      state.set(file, "done");
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(files.length).toBeGreaterThan(300);
    expect(circles).toEqual([]);
  });

  test("no source file over 400 lines and no function over 150 (tests and test support aside)", () => {
    // Issue 47 item 3: one concept per file. A factory returning many closures counts as one function, so it is split
    // into module-level functions over a small state, or into files by concept.
    const files = ["domain", "ports", "adapters", "http", "client", "console", "widgets", "app", "x402", "bench", "scripts", "packages"]
      .flatMap((d) => sources(d))
      .filter((file) => !file.includes(`${sep}test_support${sep}`) && !file.includes(`${sep}testdata${sep}`) && !file.includes(`${sep}node_modules${sep}`) && !file.includes(`${sep}dist${sep}`))
      .concat(["main.ts"]);
    expect(files.length).toBeGreaterThan(400);
    const long: { file: string; lines: number }[] = [];
    const longest: { file: string; name: string; lines: number }[] = [];
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      const lines = text.split("\n").length;
      if (lines > 400) long.push({ file, lines });
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
          const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
          const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
          const name = (node as ts.FunctionDeclaration).name?.getText() ?? `(line ${start + 1})`;
          if (end - start + 1 > 150) longest.push({ file, name, lines: end - start + 1 });
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(long).toEqual([]);
    expect(longest).toEqual([]);
  });

  test("the composition root reads top to bottom: main.ts only starts the process, no function of app/ over 120 lines", () => {
    const longest: { file: string; name: string; lines: number }[] = [];
    for (const file of [...sources("app"), "main.ts"]) {
      const text = readFileSync(join(ROOT, file), "utf8");
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
          const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
          const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
          const name = (node as ts.FunctionDeclaration).name?.getText() ?? `(line ${start + 1})`;
          if (end - start + 1 > 120) longest.push({ file, name, lines: end - start + 1 });
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(longest).toEqual([]);
    // main.ts starts the process and nothing else: no wiring of its own.
    const main = readFileSync(join(ROOT, "main.ts"), "utf8");
    expect(imports("main.ts").every((spec) => spec.startsWith("./app/"))).toBe(true);
    expect(main.split("\n").length).toBeLessThan(80);
  });
});
