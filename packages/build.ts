/**
 * Builds the publishable packages (decisions §26) from the service's own source, so there is one copy of the
 * code: `bun packages/build.ts [name…]` (default: every package). For each package: the JavaScript entries
 * with Bun.build (our domain/ and ports/ bundled in, every npm package left to the consumer's install, shared
 * code split into chunks so the entries share one copy of each class), the declarations with tsc, and the
 * repository's LICENSE beside the package.json. The entries are listed in each package.json's `exports`; the
 * source each one is built from is the table below.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..");

type PackageBuild = {
  /** Subpath export → source file (repository-relative). */
  readonly entries: Record<string, string>;
  /** Where the bundle runs: the client's entries must load in browsers, and so may the extension's. */
  readonly target: "browser" | "node";
};

/** The packages and the source each export is built from. */
export const PACKAGES: Record<string, PackageBuild> = {
  "x402-offer-receipt": {
    entries: { ".": "x402/mod.ts", "./elysia": "x402/elysia.ts", "./testing": "x402/testing.ts" },
    target: "browser",
  },
  client: {
    entries: {
      ".": "client/mod.ts",
      "./x402": "client/x402.ts",
      "./reviews": "client/reviews.ts",
      "./verifier": "client/verifier.ts",
      "./jws": "client/jws_verifier.ts",
    },
    target: "browser",
  },
};

/** `x402/mod.ts` → `mod`: the file name of an entry's bundle. */
const bundleName = (source: string) => source.split("/").pop()!.replace(/\.ts$/, "");

/** The `exports` a package.json must declare for its entries (checked by packages/packages_test.ts). */
export function expectedExports(name: string): Record<string, { types: string; import: string; default: string }> {
  const build = PACKAGES[name]!;
  // `default` as `import`: require() of the ES entry (Node 20.19 and later), which "import" alone left without one.
  return Object.fromEntries(Object.entries(build.entries).map(([subpath, source]) => [
    subpath,
    { types: `./dist/types/${source.replace(/\.ts$/, ".d.ts")}`, import: `./dist/${bundleName(source)}.js`, default: `./dist/${bundleName(source)}.js` },
  ]));
}

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

async function buildPackage(name: string): Promise<void> {
  const build = PACKAGES[name];
  if (build === undefined) throw new Error(`Unknown package ${name}`);
  const dir = join(ROOT, "packages", name);
  const dist = join(dir, "dist");
  rmSync(dist, { recursive: true, force: true });

  const sources = Object.values(build.entries);
  const result = await Bun.build({
    entrypoints: sources.map((s) => join(ROOT, s)),
    root: join(ROOT, sources[0]!.split("/")[0]!),
    outdir: dist,
    target: build.target,
    format: "esm",
    splitting: true,
    packages: "external",
    naming: { entry: "[name].[ext]", chunk: "chunk-[hash].[ext]" },
  });
  if (!result.success) throw new AggregateError(result.logs, `Bundling ${name} failed`);

  // Declarations of the same source: no bun-types, so a Bun API in a published entry fails the build.
  const tsconfig = join(dir, "tsconfig.build.json");
  writeFileSync(tsconfig, JSON.stringify({
    extends: relative(dir, join(ROOT, "tsconfig.json")),
    compilerOptions: {
      noEmit: false,
      declaration: true,
      emitDeclarationOnly: true,
      outDir: "dist/types",
      rootDir: relative(dir, ROOT),
      types: [],
      lib: ["ES2022", "DOM", "DOM.Iterable"],
    },
    include: [],
    files: sources.map((s) => relative(dir, join(ROOT, s))),
  }, null, 2));
  const tsc = Bun.spawnSync([join(ROOT, "node_modules/.bin/tsc"), "-p", tsconfig], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  rmSync(tsconfig);
  if (tsc.exitCode !== 0) throw new Error(`Declarations of ${name} failed:\n${tsc.stdout.toString()}${tsc.stderr.toString()}`);
  // The source imports `./x.ts`; consumers resolve `./x.js` to the `x.d.ts` beside it.
  for (const file of files(join(dist, "types"))) {
    if (!file.endsWith(".d.ts")) continue;
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.replace(/((?:from|import)\s*\(?\s*"\.{1,2}\/[^"]*?)\.ts"/g, '$1.js"'));
  }
  for (const [subpath, paths] of Object.entries(expectedExports(name))) {
    for (const path of [paths.types, paths.import]) {
      if (!existsSync(join(dir, path))) throw new Error(`${name}: export ${subpath} names ${path}, which the build did not write`);
    }
  }
  copyFileSync(join(ROOT, "LICENSE"), join(dir, "LICENSE"));
  console.log(`built packages/${name}`);
}

if (import.meta.main) {
  const names = process.argv.slice(2);
  for (const name of names.length > 0 ? names : Object.keys(PACKAGES)) await buildPackage(name);
}
