/**
 * Compiles the devnet's x402 token (`adapters/devnet/contracts/TestUsd.sol`) with the project's forge set-up
 * (offline, the npm solc through scripts/solc_wrapper.sh, foundry.toml's settings) and writes its ABI and creation
 * bytecode to `adapters/devnet/test_usd.json`, which the service imports (so a compiled executable carries it).
 * `bun scripts/build_test_token.ts --check` compares instead of writing (adapters/devnet/test_usd_test.ts runs it).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const ARTIFACT = join(ROOT, "adapters/devnet/test_usd.json");

/** Compiles TestUsd.sol and returns `{abi, bytecode}` as the service stores them. */
export function compileTestUsd(): { abi: unknown[]; bytecode: string } {
  const native = join(ROOT, "node_modules/@foundry-rs/forge-linux-amd64/bin/forge");
  const forge = existsSync(native) ? native : join(ROOT, "node_modules/.bin/forge");
  const dir = mkdtempSync(join(tmpdir(), "ats-test-usd-"));
  try {
    const built = spawnSync(forge, [
      "build", "--offline", "--contracts", "adapters/devnet/contracts", "--out", join(dir, "out"), "--cache-path", join(dir, "cache"),
    ], { cwd: ROOT, encoding: "utf8" });
    if (built.status !== 0) throw new Error(`forge build of TestUsd.sol failed: ${built.stderr || built.stdout}`);
    const out = JSON.parse(readFileSync(join(dir, "out/TestUsd.sol/TestUsd.json"), "utf8")) as { abi: unknown[]; bytecode: { object: string } };
    return { abi: out.abi, bytecode: out.bytecode.object };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const compiled = `${JSON.stringify(compileTestUsd(), null, 1)}\n`;
  if (process.argv.includes("--check")) {
    const same = existsSync(ARTIFACT) && readFileSync(ARTIFACT, "utf8") === compiled;
    console.log(same ? "test_usd.json matches TestUsd.sol" : "test_usd.json is out of date: run bun scripts/build_test_token.ts");
    process.exit(same ? 0 : 1);
  }
  writeFileSync(ARTIFACT, compiled);
  console.log(`wrote ${ARTIFACT}`);
}
