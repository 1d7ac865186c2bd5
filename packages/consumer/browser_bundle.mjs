// The client from its packed tarball bundled for browsers (decisions §26): esbuild with `platform: "browser"`, every
// entry of @ats/client, viem and TypeBox bundled in; the build must resolve no Node module, and the output must
// name none (`node:` import, `require("fs")`-style builtin) nor lean on Node's `Buffer` or `process`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import * as esbuild from "esbuild";

const entries = ["@ats/client", "@ats/client/x402", "@ats/client/reviews", "@ats/client/verifier", "@ats/client/jws"];
const result = await esbuild.build({
  stdin: { contents: entries.map((e, i) => `export * as e${i} from "${e}";`).join("\n"), resolveDir: process.cwd(), loader: "js" },
  bundle: true,
  platform: "browser",
  format: "esm",
  write: false,
  metafile: true,
  logLevel: "silent",
});
assert.deepEqual(result.errors, []);
const inputs = Object.keys(result.metafile.inputs);
assert.ok(inputs.some((i) => i.includes("node_modules/@ats/client/dist/")), "the bundle holds the client");
const builtins = new Set(builtinModules);
for (const output of Object.values(result.metafile.outputs)) {
  for (const imported of output.imports) {
    assert.ok(!imported.path.startsWith("node:") && !builtins.has(imported.path), `the bundle imports ${imported.path}`);
  }
}
const text = result.outputFiles[0].text;
assert.doesNotMatch(text, /["']node:[a-z_/]+["']/, "no node: specifier in the bundle");
// Only the client's own code is held to Buffer/process: viem and TypeBox guard their own feature checks.
for (const input of inputs.filter((i) => i.includes("@ats/client/dist/"))) {
  const source = readFileSync(input, "utf8");
  assert.doesNotMatch(source, /\bBuffer\.|\bprocess\./, `${input} uses Buffer or process`);
}
console.log(`ok - @ats/client bundles for browsers with esbuild (${inputs.length} modules, ${Math.round(text.length / 1024)} KiB), no node: import`);
