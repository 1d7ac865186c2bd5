import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Abi, Hex } from "viem";
// Imported rather than read from node_modules at run time, so a compiled executable carries them.
import npmEas from "@ethereum-attestation-service/eas-contracts/artifacts/contracts/EAS.sol/EAS.json" with { type: "json" };
import npmSchemaRegistry from "@ethereum-attestation-service/eas-contracts/artifacts/contracts/SchemaRegistry.sol/SchemaRegistry.json" with { type: "json" };

/** The ABI and creation bytecode of one contract. */
export type ContractArtifact = { abi: Abi; bytecode: Hex };

/** The two contracts the devnet deploys. */
export type EasArtifacts = { schemaRegistry: ContractArtifact; eas: ContractArtifact };

/** Where compiled contracts come from: the npm package's hardhat artifacts or forge's `out/`. */
export type ArtifactSource = "npm" | "forge";

const REPO_ROOT = join(import.meta.dir, "..", "..");

/** Loads SchemaRegistry and EAS from the npm package or from `forge build` output at the repo root. */
export function loadEasArtifacts(source: ArtifactSource): EasArtifacts {
  if (source === "npm") {
    return {
      schemaRegistry: toArtifact(npmSchemaRegistry, "SchemaRegistry.json (eas-contracts)"),
      eas: toArtifact(npmEas, "EAS.json (eas-contracts)"),
    };
  }
  const dir = forgeArtifactsDir();
  return {
    schemaRegistry: readArtifact(join(dir, "SchemaRegistry.sol", "SchemaRegistry.json")),
    eas: readArtifact(join(dir, "EAS.sol", "EAS.json")),
  };
}

function forgeArtifactsDir(): string {
  const dir = join(REPO_ROOT, "out");
  if (!existsSync(join(dir, "EAS.sol", "EAS.json"))) {
    throw new Error(`No forge artifacts in ${dir}: run scripts/forge_build.sh`);
  }
  return dir;
}

function readArtifact(path: string): ContractArtifact {
  return toArtifact(JSON.parse(readFileSync(path, "utf8")), path);
}

function toArtifact(parsed: unknown, path: string): ContractArtifact {
  const json = parsed as { abi?: unknown; bytecode?: unknown };
  // hardhat writes `bytecode: "0x.."`, forge writes `bytecode: { object: "0x.." }`.
  const raw = typeof json.bytecode === "string" ? json.bytecode : (json.bytecode as { object?: unknown } | undefined)?.object;
  if (!Array.isArray(json.abi) || typeof raw !== "string" || raw.replace(/^0x/, "").length === 0) {
    throw new Error(`Artifact ${path} has no ABI or bytecode`);
  }
  const bytecode = (raw.startsWith("0x") ? raw : `0x${raw}`) as Hex;
  return { abi: json.abi as Abi, bytecode };
}
