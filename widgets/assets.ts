/**
 * The review widget's script and stylesheet. The executable carries them (scripts/build.ts builds the bundle and
 * embeds it in place of `_embedded_assets.ts`); from source they are built once, on first use, with `Bun.build`, as
 * the console's are (console/assets.ts).
 */
import { join } from "node:path";
import { EMBEDDED_WIDGETS, type WidgetBundle } from "./_embedded_assets.ts";

export type { WidgetBundle };

const SOURCE_DIR = import.meta.dir;

/** Bundles widgets/review_widget.ts for browsers (minified, one ES module, viem's signer recovery inside) and reads the stylesheet. */
export async function buildWidgetBundle(): Promise<WidgetBundle> {
  const result = await Bun.build({
    entrypoints: [join(SOURCE_DIR, "review_widget.ts")],
    target: "browser",
    format: "esm",
    minify: true,
    sourcemap: "none",
  });
  if (!result.success || result.outputs.length !== 1) {
    throw new Error(`widget bundle failed: ${result.logs.map((log) => String(log)).join("; ")}`);
  }
  const js = await result.outputs[0]!.text();
  const css = await Bun.file(join(SOURCE_DIR, "style.css")).text();
  const version = new Bun.CryptoHasher("sha256").update(js).update(css).digest("hex").slice(0, 12);
  return { js, css, version };
}

let built: Promise<WidgetBundle> | undefined;

/** The embedded bundle, or (from source) the one built on the first call. */
export function loadWidgetBundle(): Promise<WidgetBundle> {
  if (EMBEDDED_WIDGETS !== undefined) return Promise.resolve(EMBEDDED_WIDGETS);
  built ??= buildWidgetBundle().catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}
