import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expectedExports, PACKAGES } from "./build.ts";

// What npm needs to publish each package (decisions §26). That they work from their tarballs under plain Node is
// scripts/packages_test.sh's job (it needs the registry, so CI runs it apart from `npm test`).
const ROOT = join(import.meta.dir, "..");
type Manifest = {
  name: string;
  version: string;
  license: string;
  type: string;
  private?: boolean;
  exports: Record<string, unknown>;
  files: string[];
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
const manifest = (name: string): Manifest => JSON.parse(readFileSync(join(import.meta.dir, name, "package.json"), "utf8")) as Manifest;
const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };

describe("the publishable packages", () => {
  test("the repository carries the Apache-2.0 licence the packages name", () => {
    const license = readFileSync(join(ROOT, "LICENSE"), "utf8");
    expect(license).toContain("Apache License\n                           Version 2.0, January 2004");
    expect(license).toContain("END OF TERMS AND CONDITIONS");
  });

  for (const name of Object.keys(PACKAGES)) {
    test(`${name}: scoped, public, an ES module with built entries and declarations, Apache-2.0`, () => {
      const m = manifest(name);
      expect(m.name).toBe(`@ats/${name}`);
      expect(m.private).toBeUndefined();
      expect(m.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(m.type).toBe("module");
      expect(m.license).toBe("Apache-2.0");
      expect(m.exports).toEqual({ ...expectedExports(name), "./package.json": "./package.json" });
      expect(m.files).toEqual(["dist", "README.md", "LICENSE"]);
      // Packing builds (issue 43: a pack from a clean checkout shipped no dist/), so `npm pack` and `npm publish` from a
      // clean clone publish what works; installing the tarball runs nothing (prepack runs only where it is packed).
      expect(m.scripts?.prepack).toBe(`bun ../build.ts ${name}`);
      expect(Object.keys(m.scripts ?? {}).filter((s) => s !== "prepack" && /^(pre|post)?(pack|install|prepare|publish)/.test(s))).toEqual([]);
    });

    test(`${name}: no Bun, Elysia (but an optional peer) or adapter among its dependencies; each range admits the service's pin`, () => {
      const m = manifest(name);
      const all = { ...m.dependencies, ...m.peerDependencies };
      expect(Object.keys(all).filter((d) => d === "bun" || d === "bun-types" || d.startsWith("@elysiajs/"))).toEqual([]);
      expect(Object.keys(m.dependencies ?? {})).not.toContain("elysia");
      if ("elysia" in all) expect(m.peerDependenciesMeta?.elysia?.optional).toBe(true);
      for (const [dependency, range] of Object.entries(all)) {
        const pinned = root.dependencies[dependency];
        expect({ dependency, pinned: pinned !== undefined }).toEqual({ dependency, pinned: true });
        expect({ dependency, range, admitsPin: Bun.semver.satisfies(pinned!, range) }).toEqual({ dependency, range, admitsPin: true });
      }
    });
  }

  test("peer dependencies: @x402/core and viem for the extension, viem for the client", () => {
    expect(Object.keys(manifest("x402-offer-receipt").peerDependencies ?? {}).sort()).toEqual(["@x402/core", "elysia", "viem"]);
    expect(Object.keys(manifest("client").peerDependencies ?? {})).toEqual(["viem"]);
  });
});
