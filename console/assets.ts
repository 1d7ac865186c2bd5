/**
 * The console's script and stylesheet. The executable carries them (scripts/build.ts builds the bundle and
 * embeds it in place of `_embedded_assets.ts`); from source they are built once, on first use, with `Bun.build`.
 */
import { join } from "node:path";
import { EMBEDDED_CONSOLE, type ConsoleBundle } from "./_embedded_assets.ts";

export type { ConsoleBundle };

const SOURCE_DIR = import.meta.dir;

/** Bundles console/app.ts for browsers (minified, one ES module) and reads the stylesheet; throws on a build error. */
export async function buildConsoleBundle(): Promise<ConsoleBundle> {
  const result = await Bun.build({
    entrypoints: [join(SOURCE_DIR, "app.ts")],
    target: "browser",
    format: "esm",
    minify: true,
    sourcemap: "none",
  });
  if (!result.success || result.outputs.length !== 1) {
    throw new Error(`console bundle failed: ${result.logs.map((log) => String(log)).join("; ")}`);
  }
  const js = await result.outputs[0]!.text();
  const css = await Bun.file(join(SOURCE_DIR, "style.css")).text();
  const version = new Bun.CryptoHasher("sha256").update(js).update(css).digest("hex").slice(0, 12);
  return { js, css, version };
}

let built: Promise<ConsoleBundle> | undefined;

/** The embedded bundle, or (from source) the one built on the first call. */
export function loadConsoleBundle(): Promise<ConsoleBundle> {
  if (EMBEDDED_CONSOLE !== undefined) return Promise.resolve(EMBEDDED_CONSOLE);
  built ??= buildConsoleBundle().catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}
