// From source this is empty and console/assets.ts builds the bundle; `bun run build` (scripts/build.ts) replaces
// this module with the bundle built at build time, so the executable needs no source tree.

/**
 * The built assets, and a short hash of them for cache-busting URLs. Declared here, not in assets.ts, so that this
 * file imports nothing (assets.ts imports it; no import circle).
 */
export type ConsoleBundle = { readonly js: string; readonly css: string; readonly version: string };

/** The bundle embedded by the build; undefined when running from source. */
export const EMBEDDED_CONSOLE: ConsoleBundle | undefined = undefined;
