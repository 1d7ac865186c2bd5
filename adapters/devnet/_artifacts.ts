import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Abi, Hex } from "viem";

/** The ABI and creation bytecode of one contract. */
export type ContractArtifact = { abi: Abi; bytecode: Hex };

/** The two contracts the devnet deploys. */
export type EasArtifacts = { schemaRegistry: ContractArtifact; eas: ContractArtifact };

/** Where compiled contracts come from: the npm package's hardhat artifacts or forge's `out/`. */
export type ArtifactSource = "npm" | "forge";

const REPO_ROOT = join(import.meta.dir, "..", "..");

/** Loads SchemaRegistry and EAS from the npm package or from `forge build` output at the repo root. */
export function loadEasArtifacts(source: ArtifactSource): EasArtifacts {
  const dir = source === "npm" ? npmArtifactsDir() : forgeArtifactsDir();
  return {
    schemaRegistry: readArtifact(join(dir, "SchemaRegistry.sol", "SchemaRegistry.json")),
    eas: readArtifact(join(dir, "EAS.sol", "EAS.json")),
  };
}

function npmArtifactsDir(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("@ethereum-attestation-service/eas-contracts/package.json");
  return join(dirname(manifest), "artifacts", "contracts");
}

function forgeArtifactsDir(): string {
  const dir = join(REPO_ROOT, "out");
  if (!existsSync(join(dir, "EAS.sol", "EAS.json"))) {
    throw new Error(`No forge artifacts in ${dir}: run scripts/forge_build.sh`);
  }
  return dir;
}

function readArtifact(path: string): ContractArtifact {
  const json = JSON.parse(readFileSync(path, "utf8")) as { abi?: unknown; bytecode?: unknown };
  // hardhat writes `bytecode: "0x.."`, forge writes `bytecode: { object: "0x.." }`.
  const raw = typeof json.bytecode === "string" ? json.bytecode : (json.bytecode as { object?: unknown } | undefined)?.object;
  if (!Array.isArray(json.abi) || typeof raw !== "string" || raw.replace(/^0x/, "").length === 0) {
    throw new Error(`Artifact ${path} has no ABI or bytecode`);
  }
  const bytecode = (raw.startsWith("0x") ? raw : `0x${raw}`) as Hex;
  return { abi: json.abi as Abi, bytecode };
}
