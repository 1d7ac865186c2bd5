import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_SECTIONS, declarations } from "./mod.ts";

const page = readFileSync(join(import.meta.dir, "..", "..", "docs", "configuration.md"), "utf8");

/** The page's `## ` parts: the sections each names (`config.<key>`) and the first two cells of each table row. */
function documented(): { sections: string[]; rows: { names: string[]; fallback: string }[] }[] {
  return page.split(/\n(?=## )/).slice(1).map((part) => ({
    sections: [...(part.split("\n")[2] ?? "").matchAll(/`config\.([a-z0-9A-Z]+)`/g)].map((m) => m[1]!),
    rows: part.split("\n").filter((line) => line.startsWith("| `")).map((line) => {
      const cells = line.split(" | ");
      return { names: [...cells[0]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!), fallback: cells[1] ?? "" };
    }),
  }));
}

test("docs/configuration.md lists every declared variable under its section, with its declared default", () => {
  const parts = documented();
  const problems: string[] = [];
  for (const [key, section] of Object.entries(CONFIG_SECTIONS)) {
    const part = parts.find((p) => p.sections.includes(key));
    if (part === undefined) {
      problems.push(`no part of the page names config.${key}`);
      continue;
    }
    for (const declared of declarations(section)) {
      const row = part.rows.find((r) => r.names.includes(declared.env));
      if (row === undefined) problems.push(`${declared.env} is not listed under config.${key}`);
      else if (!row.fallback.includes(declared.envDefault)) problems.push(`${declared.env}: the page's default "${row.fallback}" is not "${declared.envDefault}"`);
    }
  }
  expect(problems).toEqual([]);
  // The sections' parts name only the sections there are.
  expect(parts.flatMap((p) => p.sections).filter((key) => !(key in CONFIG_SECTIONS))).toEqual([]);
});

test("every variable a section's table lists is declared (none documented that the service does not read)", () => {
  const declared = new Set(Object.values(CONFIG_SECTIONS).flatMap((section) => declarations(section).map((d) => d.env)));
  expect(declared.size).toBeGreaterThan(90);
  const listed = documented().filter((p) => p.sections.length > 0).flatMap((p) => p.rows.flatMap((r) => r.names));
  expect(listed.filter((name) => !declared.has(name))).toEqual([]);
});

test("each variable is declared once, in one section", () => {
  const names = Object.values(CONFIG_SECTIONS).flatMap((section) => declarations(section).map((d) => d.env));
  expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
});
