/** Devnet fixtures for tests and benches: trust anchors with more approved issuers, a liveness probe. */
import { readFileSync, writeFileSync } from "node:fs";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";

/** One issuer to approve: its key, label and schema names. */
export type ExtraIssuer = { readonly key: Hex; readonly label: string; readonly schemas: readonly string[] };

/** Writes to `outPath` the anchors of `devnetAnchorsPath` with `issuers` approved as of the devnet's date; returns `outPath`. */
export function writeAnchorsWithIssuers(devnetAnchorsPath: string, outPath: string, issuers: readonly ExtraIssuer[]): string {
  const anchors = JSON.parse(readFileSync(devnetAnchorsPath, "utf8")) as TrustAnchors;
  const registry = anchors.registries[0]!;
  const validFrom = registry.issuers[0]!.validFrom;
  writeFileSync(outPath, JSON.stringify({
    ...anchors,
    registries: [{
      ...registry,
      issuers: [
        ...registry.issuers,
        ...issuers.map((i) => ({ address: privateKeyToAccount(i.key).address, label: i.label, schemas: [...i.schemas], status: "active", validFrom })),
      ],
    }],
  }));
  return outPath;
}

/** Whether a JSON-RPC endpoint answers `eth_chainId` within two seconds. */
export async function rpcAnswers(rpcUrl: string): Promise<boolean> {
  try {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(2_000),
    });
    return response.ok;
  } catch {
    return false;
  }
}
