// From source this is empty and widgets/assets.ts builds the bundle; `bun run build` (scripts/build.ts) replaces
// this module with the bundle built at build time, so the executable needs no source tree.
import type { WidgetBundle } from "./assets.ts";

/** The bundle embedded by the build; undefined when running from source. */
export const EMBEDDED_WIDGETS: WidgetBundle | undefined = undefined;
