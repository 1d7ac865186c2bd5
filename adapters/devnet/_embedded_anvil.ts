/** A file carried inside a compiled executable: its path there (`/$bunfs/...`), size and SHA-256. */
export type EmbeddedFile = { path: string; size: number; sha256: string };

/**
 * The Anvil binary of a compiled executable. From source there is none: Anvil comes from node_modules.
 * `scripts/build.ts` replaces this module at build time with one that embeds this platform's binary.
 */
export const EMBEDDED_ANVIL: EmbeddedFile | undefined = undefined;
