import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { type Address, type Hex, isAddress } from "viem";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";

/** What `devnet.json` records about a deployment, so a restart can reuse it. */
export type DeploymentRecord = {
  version: 1;
  chainId: number;
  easAddress: Address;
  schemaRegistryAddress: Address;
  /** Decimal string: JSON has no bigint. */
  deployBlock: string;
  /** ISO time of the first deployment on this chain; the witness is trusted from then on. */
  deployedAt: string;
  schemaUids: Record<string, Hex>;
  /** The x402 test token (decisions §13); absent in records written before it was deployed. */
  x402Token?: Address | undefined;
};

/** Reads `devnet.json`; a missing or unreadable file means there is nothing to reuse. */
export function readDeploymentRecord(path: string): DeploymentRecord | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const record = JSON.parse(readFileSync(path, "utf8")) as Partial<DeploymentRecord>;
    const complete = record.version === 1 && typeof record.chainId === "number" &&
      isAddress(String(record.easAddress), { strict: false }) &&
      isAddress(String(record.schemaRegistryAddress), { strict: false }) &&
      typeof record.deployBlock === "string" && /^\d+$/.test(record.deployBlock) &&
      typeof record.deployedAt === "string" && typeof record.schemaUids === "object" && record.schemaUids !== null;
    return complete ? (record as DeploymentRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** Writes JSON through a temporary file and a rename, so readers never see half a file. */
export function writeJsonFile(path: string, value: unknown): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(temporary, path);
}

/** What the devnet's trust anchors say. */
export type DevnetAnchorsInput = {
  /** Every chain of the devnet, keyed in the anchors by CAIP-2 (decisions §30: `chains[caip2]`). */
  chains: readonly { chainId: number; chainName: string; easAddress: Address; schemas: Record<string, Hex> }[];
  witnessAddress: Address;
  witnessLabel: string;
  validFrom: string;
  updatedAt: string;
};

/** Builds the devnet's trust anchors: its chains and the witness as the approved `controller-witness` issuer. */
export function devnetTrustAnchors(input: DevnetAnchorsInput): TrustAnchors {
  return {
    version: 1,
    updatedAt: input.updatedAt,
    widgetOrigins: [],
    chains: Object.fromEntries(input.chains.map((c) => [`eip155:${c.chainId}`, { name: c.chainName, easContract: c.easAddress, schemas: c.schemas }])),
    registries: [
      {
        type: "approved-issuers",
        issuers: [
          {
            address: input.witnessAddress,
            label: input.witnessLabel,
            schemas: ["controller-witness"],
            status: "active",
            validFrom: input.validFrom,
          },
        ],
      },
    ],
  };
}

/** Writes the trust anchors unless the file already says the same (apart from `updatedAt`); tells whether it wrote. */
export function writeTrustAnchorsIfChanged(path: string, anchors: TrustAnchors): boolean {
  if (existsSync(path)) {
    try {
      const current = JSON.parse(readFileSync(path, "utf8")) as TrustAnchors;
      const withoutTime = (a: TrustAnchors) => JSON.stringify({ ...a, updatedAt: "" });
      if (withoutTime(current) === withoutTime(anchors)) return false;
    } catch {
      // unreadable: rewrite it
    }
  }
  writeJsonFile(path, anchors);
  return true;
}
