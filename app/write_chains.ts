/**
 * The write clients of every served attestation chain (decisions §30): each chain its own EAS client (reader, delegate
 * wallet, senders and nonces), built once per foundation and shared by the relays (app/delegation.ts), the reconciler
 * (app/submissions.ts) and the witness (app/discovery.ts).
 */
import type { Address } from "viem";
import { createViemEas, createViemWitnessWriter, type ViemEas } from "../adapters/chain/mod.ts";
import { buildServedChains, caip2Of, type ServedChain, type ServedChains, singleChain } from "../domain/chains/mod.ts";
import { subsidizedSchemaMap } from "../domain/identity/mod.ts";
import type { Config } from "./config.ts";
import type { Foundation, SchemaMap } from "./foundation.ts";
import { delegateOn } from "./signers.ts";

/** One served attestation chain as the writes use it: its EAS client (reader, delegate wallet, senders) and schemas. */
export type WriteChain = {
  readonly chain: ServedChain;
  /** The anchors' name of the chain (answers' `chain`). */
  readonly name: string;
  readonly eas: ViemEas;
  readonly easAddress: Address;
  /** The schemas the public relay subsidizes there (`SUBSIDIZED_SCHEMAS` among the chain's anchored ones). */
  readonly subsidized: SchemaMap;
  /** Every schema anchored there (the private relay's). */
  readonly relaySchemas: SchemaMap;
};

/** The served chains and each attestation chain's write clients, the default chain's first. */
export type WriteChains = { readonly served: ServedChains; readonly list: readonly WriteChain[] };

const built = new WeakMap<Foundation, WriteChains>();

/**
 * The write clients of every served attestation chain, built once per foundation (the relays, the reconciler and the
 * witness share each chain's senders and so its wallet nonces). The default chain's is the foundation's EAS client
 * (with `DELEGATE_SIGNER_<chainId>`'s delegate when it names one); each other chain gets one client, through its
 * `rpcUrl` (or the devnet's own), so a chain's writes make no call on another's node.
 */
export function writeChains(config: Pick<Config, "chains" | "relays">, f: Foundation): WriteChains {
  const known = built.get(f);
  if (known !== undefined) return known;
  const served = servedChainsOf(config, f);
  const list: WriteChain[] = [];
  for (const chain of [served.default, ...served.list.filter((c) => c !== served.default)]) {
    if (chain.role !== "attestations") continue;
    const anchors = f.trustAnchors.chains[chain.caip2] ?? (chain.chainId === f.chainId ? f.chain : undefined);
    if (anchors === undefined) continue;
    const own = chain.chainId === f.chainId;
    // The default chain's client is the foundation's, built with the chain's own delegate (app/foundation.ts).
    const eas = own ? f.eas : chainEas(config, f, chain, anchors.easContract as Address, delegateOn(f.signers, chain.chainId));
    const subsidized = subsidizedSchemaMap(anchors, config.relays.subsidizedSchemas);
    const relaySchemas = subsidizedSchemaMap(anchors, Object.keys(anchors.schemas));
    list.push({
      chain,
      name: anchors.name,
      eas,
      easAddress: anchors.easContract as Address,
      subsidized: own ? f.subsidized : subsidized.ok ? subsidized.value : new Map(),
      relaySchemas: own ? f.relaySchemas : relaySchemas.ok ? relaySchemas.value : new Map(),
    });
  }
  const chains = { served, list };
  built.set(f, chains);
  return chains;
}

/**
 * The witness on every served attestation chain but the default (decisions §30): the witness wallet's writer through
 * that chain's client, and the chain's `controller-witness` schema. The chains are those `writeChains` built for this
 * foundation (the submissions' wiring builds them first); none yet: the default chain only.
 */
export function witnessChains(f: Foundation): ReadonlyMap<number, { writer: ReturnType<typeof createViemWitnessWriter> | undefined; witnessSchemaUid: `0x${string}` | undefined }> {
  const chains = built.get(f)?.list.slice(1) ?? [];
  const witnessKey = f.witnessKey;
  return new Map(chains.map((on) => [on.chain.chainId, {
    writer: witnessKey === undefined ? undefined : createViemWitnessWriter({
      client: on.eas.client,
      sender: on.eas.senderFor(witnessKey),
      easAddress: on.easAddress,
      log: (event, fields) => f.log.warn(event, { ...fields, chainId: on.chain.chainId }),
    }),
    witnessSchemaUid: f.trustAnchors.chains[on.chain.caip2]?.schemas["controller-witness"] as `0x${string}` | undefined,
  }]));
}

/**
 * The served set (decisions §30): the configured chains against the trust anchors, or, for the one chain `RPC_URL`
 * names (its id read from the node), that chain alone. The one place the index, the relays and the witness read it.
 */
export function servedChainsOf(config: Pick<Config, "chains">, f: Pick<Foundation, "chainId" | "easAddress" | "trustAnchors">): ServedChains {
  const entries = config.chains.list.map((chain) => ({ caip2: chain.caip2 ?? caip2Of(f.chainId), role: chain.role }));
  const served = buildServedChains(entries, f.trustAnchors, { defaultChain: f.chainId });
  // The start already refused what buildServedChains refuses (app/foundation.ts): this is the one-chain fallback.
  return served.ok ? served.value : singleChain(f.chainId, f.easAddress);
}


/** A chain's own EAS client: its node from the config (or the embedded devnet), the chain's delegate signer. */
function chainEas(config: Pick<Config, "chains">, f: Foundation, chain: ServedChain, easAddress: Address, delegate: ReturnType<typeof delegateOn>): ViemEas {
  const configured = config.chains.list.find((c) => c.chainId === chain.chainId || c.caip2 === chain.caip2);
  const rpcUrl = chain.chainId === f.chainId ? f.rpcUrl : configured?.rpcUrl ?? f.devnet?.chains.find((c) => c.chainId === chain.chainId)?.rpcUrl;
  if (rpcUrl === undefined) throw new Error(`${chain.caip2}: no rpcUrl to write on it`);
  const post = f.rpcPost(rpcUrl);
  return createViemEas({
    rpcUrl,
    chainId: chain.chainId,
    easAddress,
    delegateSigner: delegate,
    fetchFn: f.rpcFetch,
    // Over kept-alive sockets where they serve (issue 43 item 4), the path then metering its own calls.
    ...(post === undefined ? {} : { post, rpcMetrics: f.metrics }),
    log: (event, fields) => f.log.warn(event, { ...fields, chainId: chain.chainId }),
    walletNonces: f.storage.walletNonces,
    secp256k1: f.secp256k1,
    keccak256: f.keccak256,
    sendSync: config.chains.rpcSendSync,
    // The embedded devnet's state is saved after each mined transaction, before its caller hears of it (decisions §15).
    // Then that chain's index is told, so the writer's next read on it lists the write (issue 48 item 3).
    onMined: async (blockNumber) => {
      await f.devnet?.checkpoint?.();
      await f.afterMined.get(chain.chainId)?.(blockNumber);
    },
    onAttested: (written) => f.afterAttested.get(chain.chainId)?.(written),
  });
}
