import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";

// The dependency rule of the house style: domain/ is pure, ports/ is a leaf.
const ROOT = import.meta.dir;

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.endsWith("_test.ts") && f !== "fakes.ts")
    .map((f) => join(dir, f));
}

function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1]!);
}

describe("architecture", () => {
  test("domain/ imports only domain/, ports/, viem/utils, viem types and TypeBox", () => {
    for (const file of sources("domain")) {
      for (const spec of imports(file)) {
        const to = spec.startsWith(".") ? join(dirname(file), spec) : undefined;
        const allowed = (to !== undefined && (to.startsWith(`domain${sep}`) || to.startsWith(`ports${sep}`))) || spec === "viem/utils" ||
          spec.startsWith("@sinclair/typebox") ||
          (spec === "viem" && /import type [^;]* from "viem"/.test(readFileSync(join(ROOT, file), "utf8")));
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

  test("client/mod.ts and the console's script reach no adapter, Node module or Bun API (they run in browsers)", () => {
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
    walk("client/mod.ts");
    walk("console/app.ts");
    expect(seen.has(join("client", "session.ts"))).toBe(true);
    for (const file of seen) {
      const ok = !file.startsWith(`adapters${sep}`) && !file.startsWith(`x402${sep}`) && !file.startsWith(`console${sep}assets`) &&
        !file.endsWith("main.ts") && !file.startsWith(`app${sep}`);
      expect({ file, ok }).toEqual({ file, ok: true });
    }
    // Libraries that run in browsers only: viem (pure parts) and TypeBox.
    for (const spec of external) {
      const ok = spec === "viem" || spec.startsWith("viem/") || spec.startsWith("@sinclair/typebox");
      expect({ spec, ok }).toEqual({ spec, ok: true });
    }
  });

  test("ports/ imports nothing of ours", () => {
    for (const file of sources("ports")) {
      for (const spec of imports(file)) {
        expect({ file, spec, ok: spec.startsWith("./") }).toEqual({ file, spec, ok: true });
      }
    }
  });
});
