/** A read tool's `chain` (decisions §30): the chain it reads, picked as the routes pick it. */
import { Type as t } from "@sinclair/typebox";
import type { ArtifactTrust } from "../../../domain/artifact_trust/mod.ts";
import { type ChainAnswer, chainAnswer, resolveChain } from "../../../domain/chains/mod.ts";
import type { ControllerAuthorization } from "../../../domain/controller_authorization/mod.ts";
import type { ListAttestations } from "../../../domain/index/mod.ts";
import type { KeyStatus } from "../../../domain/keys/mod.ts";
import type { ServedChains } from "../../../domain/chains/mod.ts";
import type { ChainIndexReads } from "../../app_chains.ts";

/** The chains a deployment serves and another attestation chain's reads (the default chain's are the tools' own). */
export type ToolChains = { readonly served: ServedChains; readonly reads: ReadonlyMap<number, ChainIndexReads> };

/** The reads a tool call makes on the chain it names. */
export type ToolReads = {
  readonly artifactTrust?: ArtifactTrust | undefined;
  readonly attestationList?: ListAttestations | undefined;
  readonly keyStatus?: KeyStatus | undefined;
  readonly controllerAuthorization?: ControllerAuthorization | undefined;
};

/** A tool's `chain` argument: CAIP-2 or a decimal chain id, as the routes' `?chain=`. */
export const ChainArg = t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Integer({ minimum: 1 })], {
  description: "The chain to read: CAIP-2 (eip155:8453) or a chain id (8453); default the deployment's default chain (get_trust_anchors lists servedChains)",
}));

/**
 * The reads of the chain a tool call names (decisions §30), as the routes pick them: absent, the default chain; a
 * malformed chain INVALID_INPUT; one not served, or served without an index, UNSUPPORTED_CHAIN.
 */
export function chainReads(deps: ToolReads & { readonly chains?: ToolChains | undefined }, chain: string | number | undefined, pick: keyof ToolReads):
  | { ok: true; reads: ToolReads; answer: ChainAnswer | undefined }
  | { ok: false; code: string; message: string } {
  const own: ToolReads = deps;
  if (deps.chains === undefined) return { ok: true, reads: own, answer: undefined };
  const resolved = resolveChain(chain === undefined ? undefined : String(chain), deps.chains.served, { role: "attestations" });
  if (!resolved.ok) return resolved;
  const isDefault = resolved.value.chainId === deps.chains.served.default.chainId;
  const reads: ToolReads | undefined = isDefault ? own : deps.chains.reads.get(resolved.value.chainId);
  if (reads?.[pick] === undefined) return { ok: false, code: "UNSUPPORTED_CHAIN", message: `Chain ${resolved.value.caip2} is not read here` };
  return { ok: true, reads, answer: chainAnswer(resolved.value) };
}
