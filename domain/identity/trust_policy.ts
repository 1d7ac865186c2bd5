/**
 * The trust policy (decisions §29): the document the reference SDK's widget signing bridge reads
 * (`fetchTrustPolicy` + `extractAllowlists`), derived from the trust anchors. Chains are keyed by decimal chain id
 * and each lists its schema UIDs as an array; `widgetOrigins` names where the service's widgets are served.
 */
import type { TrustAnchors } from "../../ports/trust_anchors.ts";

/** One chain of the trust policy. */
export type ChainPolicy = { readonly name: string; readonly easContract: string; readonly schemas: readonly string[] };

/** The trust policy document (`GET /v1/trust-policy`). */
export type TrustPolicy = {
  readonly version: number;
  readonly updatedAt: string;
  readonly widgetOrigins: readonly string[];
  readonly chains: Readonly<Record<string, ChainPolicy>>;
};

/**
 * The trust policy of the anchors: every anchored chain under its decimal id with its schema UIDs (in the anchors'
 * order, each once), and `widgetOrigins` the given origins followed by the anchors' own, each once. A chain key that
 * is not `eip155:<n>` is left out (the anchors' model admits no other).
 */
export function trustPolicyOf(anchors: TrustAnchors, widgetOrigins: readonly string[]): TrustPolicy {
  const chains: Record<string, ChainPolicy> = {};
  for (const [key, chain] of Object.entries(anchors.chains)) {
    const match = /^eip155:([0-9]+)$/.exec(key);
    if (match === null) continue;
    chains[String(Number(match[1]))] = {
      name: chain.name,
      easContract: chain.easContract,
      schemas: [...new Set(Object.values(chain.schemas))],
    };
  }
  return {
    version: anchors.version,
    updatedAt: anchors.updatedAt,
    widgetOrigins: [...new Set([...widgetOrigins, ...anchors.widgetOrigins])],
    chains,
  };
}

/** The contracts and schema UIDs a policy allows on any chain, lowercase, each once (the SDK's `extractAllowlists`). */
export function policyAllowlists(policy: TrustPolicy): { allowedContracts: string[]; allowedSchemas: string[] } {
  const contracts = new Set<string>();
  const schemas = new Set<string>();
  for (const chain of Object.values(policy.chains)) {
    contracts.add(chain.easContract.toLowerCase());
    for (const uid of chain.schemas) schemas.add(uid.toLowerCase());
  }
  return { allowedContracts: [...contracts], allowedSchemas: [...schemas] };
}
