// `bun run build`: one executable (`dist/ats`) that runs the whole service, the embedded devnet included, with no
// node_modules beside it. The Anvil binary of this platform is embedded as a file and extracted at first start;
// the EAS artifacts are bundled as JSON imports; the console's script and stylesheet are bundled first and embedded as
// strings. The executable reads its configuration only from the environment.
// ATS_BUILD_OUTFILE overrides the output path.
import { mkdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { BunPlugin } from "bun";
import { anvilBinary } from "../adapters/devnet/mod.ts";
import { buildConsoleBundle, type ConsoleBundle } from "../console/assets.ts";
import { buildWidgetBundle, type WidgetBundle } from "../widgets/assets.ts";

const root = join(import.meta.dir, "..");
const outfile = process.env.ATS_BUILD_OUTFILE?.trim() || join(root, "dist", "ats");

let embedded = false;

/** Replaces the from-source stub `_embedded_anvil.ts` with a module that embeds this platform's Anvil. */
function embedAnvil(binary: string): BunPlugin {
  const size = statSync(binary).size;
  return {
    name: "embed-anvil",
    async setup(build) {
      const digest = new Bun.CryptoHasher("sha256").update(await Bun.file(binary).arrayBuffer()).digest("hex");
      build.onLoad({ filter: /[\\/]adapters[\\/]devnet[\\/]_embedded_anvil\.ts$/ }, () => {
        embedded = true;
        return {
          loader: "ts",
          contents: [
            `import path from ${JSON.stringify(binary)} with { type: "file" };`,
            `export const EMBEDDED_ANVIL = { path, size: ${size}, sha256: ${JSON.stringify(digest)} };`,
          ].join("\n"),
        };
      });
    },
  };
}

let consoleEmbedded = false;

/** Replaces the from-source stub `console/_embedded_assets.ts` with the console's bundle, built just before. */
function embedConsole(bundle: ConsoleBundle): BunPlugin {
  return {
    name: "embed-console",
    setup(build) {
      build.onLoad({ filter: /[\\/]console[\\/]_embedded_assets\.ts$/ }, () => {
        consoleEmbedded = true;
        return { loader: "ts", contents: `export const EMBEDDED_CONSOLE = ${JSON.stringify(bundle)};` };
      });
    },
  };
}

let widgetsEmbedded = false;

/** Replaces the from-source stub `widgets/_embedded_assets.ts` with the review widget's bundle (decisions §29). */
function embedWidgets(bundle: WidgetBundle): BunPlugin {
  return {
    name: "embed-widgets",
    setup(build) {
      build.onLoad({ filter: /[\\/]widgets[\\/]_embedded_assets\.ts$/ }, () => {
        widgetsEmbedded = true;
        return { loader: "ts", contents: `export const EMBEDDED_WIDGETS = ${JSON.stringify(bundle)};` };
      });
    },
  };
}

const started = performance.now();
const binary = anvilBinary();
const consoleBundle = await buildConsoleBundle();
const widgetBundle = await buildWidgetBundle();
mkdirSync(join(outfile, ".."), { recursive: true });
const result = await Bun.build({
  entrypoints: [join(root, "main.ts")],
  target: "bun",
  // Names kept: a stack trace from the field should still be readable.
  minify: { whitespace: true, syntax: true, identifiers: false },
  sourcemap: "none",
  plugins: [embedAnvil(binary), embedConsole(consoleBundle), embedWidgets(widgetBundle)],
  compile: {
    outfile,
    // Configuration comes only from the environment, never from a .env, bunfig.toml, tsconfig.json or
    // package.json that happens to sit in the working directory.
    autoloadDotenv: false,
    autoloadBunfig: false,
    autoloadTsconfig: false,
    autoloadPackageJson: false,
  },
});
if (!result.success) {
  for (const message of result.logs) console.error(message);
  console.error("build failed");
  process.exit(1);
}
if (!embedded) {
  // Without it the executable would look for Anvil in a node_modules that is not there.
  console.error("build failed: adapters/devnet/_embedded_anvil.ts was not bundled, so Anvil is not embedded");
  process.exit(1);
}
if (!consoleEmbedded) {
  console.error("build failed: console/_embedded_assets.ts was not bundled, so the console page is not embedded");
  process.exit(1);
}
if (!widgetsEmbedded) {
  console.error("build failed: widgets/_embedded_assets.ts was not bundled, so the review widget is not embedded");
  process.exit(1);
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
const megabytes = (statSync(outfile).size / 1024 / 1024).toFixed(1);
console.log(`built ${relative(process.cwd(), outfile) || outfile} (${megabytes} MiB, ${seconds} s; embeds ${relative(root, binary)})`);
