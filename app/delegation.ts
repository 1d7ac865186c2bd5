/**
 * Wiring of delegated attestation: the public relay with its guard, and the private relay (decisions §6, §12), on every
 * served attestation chain (decisions §30): each chain its own EAS reader, delegate wallet and nonces, one guard (one
 * budget) for all.
 */
import type { Address } from "viem";
import { createViemEas, createViemWitnessWriter, TYPICAL_ATTEST_GAS, type ViemEas } from "../adapters/chain/mod.ts";
import { systemClock, cryptoRandom } from "../adapters/system/mod.ts";
import { buildServedChains, caip2Of, type ServedChain, type ServedChains, singleChain } from "../domain/chains/mod.ts";
import {
  type ChainSet,
  createDelegatedAttest,
  createPrivateRelay,
  createReadChainNonce,
  createRelayGuard,
  type OnChain,
  routeDelegatedAttest,
  routePrivateRelay,
} from "../domain/delegation/mod.ts";
import { subsidizedSchemaMap } from "../domain/identity/mod.ts";
import type { WiredAccounts } from "./accounts.ts";
import type { Config } from "./config.ts";
import type { Foundation, SchemaMap } from "./foundation.ts";
import type { WiredLimits } from "./limits.ts";
import { delegateOn } from "./signers.ts";

/** What the delegation routes need. */
export type WiredDelegation = {
  /** The attester's nonce on the chain `chainId` names (decisions §30), the default chain when absent. */
  readonly readNonce: ReturnType<typeof createReadChainNonce>;
  /** The public relay: subsidized schemas, guarded by rate limits and an hourly gas budget. */
  readonly delegatedAttest: ReturnType<typeof routeDelegatedAttest>;
  /** The private relay: a signed-in account's plan decides the schemas; one sponsored write per attestation. */
  readonly privateRelay: ReturnType<typeof routePrivateRelay>;
};

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
 * (unless `DELEGATE_SIGNER_<chainId>` names another delegate for it); each other chain gets one client, through its
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
    const delegate = delegateOn(f.signers, chain.chainId);
    const eas = own && delegate === f.signers.delegate ? f.eas : chainEas(config, f, chain, anchors.easContract as Address, delegate);
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

/** The served set: the configured chains against the anchors, or the foundation's one chain. */
function servedChainsOf(config: Pick<Config, "chains">, f: Foundation): ServedChains {
  const entries = config.chains.list.map((chain) => ({ caip2: chain.caip2 ?? caip2Of(f.chainId), role: chain.role }));
  const served = buildServedChains(entries, f.trustAnchors, { defaultChain: f.chainId });
  return served.ok ? served.value : singleChain(f.chainId, f.easAddress);
}

/** A chain's own EAS client: its node from the config (or the embedded devnet), the chain's delegate signer. */
function chainEas(config: Pick<Config, "chains">, f: Foundation, chain: ServedChain, easAddress: Address, delegate: ReturnType<typeof delegateOn>): ViemEas {
  const configured = config.chains.list.find((c) => c.chainId === chain.chainId || c.caip2 === chain.caip2);
  const rpcUrl = chain.chainId === f.chainId ? f.rpcUrl : configured?.rpcUrl ?? f.devnet?.chains.find((c) => c.chainId === chain.chainId)?.rpcUrl;
  if (rpcUrl === undefined) throw new Error(`${chain.caip2}: no rpcUrl to write on it`);
  return createViemEas({
    rpcUrl,
    chainId: chain.chainId,
    easAddress,
    delegateSigner: delegate,
    fetchFn: f.rpcFetch,
    log: (event, fields) => f.log.warn(event, { ...fields, chainId: chain.chainId }),
    walletNonces: f.storage.walletNonces,
    secp256k1: f.secp256k1,
    keccak256: f.keccak256,
    sendSync: config.chains.rpcSendSync,
    // The embedded devnet's state is saved after each mined transaction, before its caller hears of it (decisions §15).
    onMined: async () => {
      await f.devnet?.checkpoint?.();
    },
  });
}

/**
 * Builds both relays on every attestation chain over the one replay store, each chain with its own EAS client and
 * delegate wallet; the public relay's rates per client and per attester, and both relays' hourly gas budgets, are the
 * deployment's, counted across chains (decisions §21, §30).
 */
export function wireDelegation(config: Pick<Config, "chains" | "relays">, f: Foundation, { accounts, limits }: { accounts: WiredAccounts; limits: WiredLimits }): WiredDelegation {
  const { storage, metrics } = f;
  const chains = writeChains(config, f);
  const attestWith = (on: WriteChain, subsidized: SchemaMap, extra: { guard: ReturnType<typeof createRelayGuard>; maxGasPerTx?: bigint }) =>
    createDelegatedAttest({
      clock: systemClock,
      eas: on.eas.reader,
      delegate: on.eas.delegate,
      replay: storage.replay,
      mainnet: config.chains.activeChain === "mainnet",
      subsidized,
      factoryCalls: storage.factoryCalls,
      recoverAddress: f.secp256k1.recoverAddress,
      keccak256: f.keccak256.hex,
      ...extra,
    });
  const guard = createRelayGuard({
    enabled: config.relays.publicRelay.enabled,
    clientRate: limits.publicRelayClient,
    attesterRate: limits.publicRelayAttester,
    gasBudget: storage.gasBudget,
    gasPerHour: config.relays.publicRelay.gasPerHour,
    // Issue 43: no client address and no attester spends more than its share of the hour.
    clientGasPerHour: config.relays.publicRelay.clientGasPerHour,
    attesterGasPerHour: config.relays.publicRelay.attesterGasPerHour,
    typicalGas: TYPICAL_ATTEST_GAS,
    clock: systemClock,
    onRefusal: (reason) => metrics.increment("ats_public_relay_refusals_total", { reason }),
  });
  // Issue 23: the private relay's hourly gas budget, checked before any RPC and charged like the public one's.
  const privateGuard = createRelayGuard({
    enabled: true,
    relay: "private",
    gasBudget: storage.privateGasBudget,
    gasPerHour: config.relays.privateRelay.gasPerHour,
    typicalGas: TYPICAL_ATTEST_GAS,
    clock: systemClock,
    onRefusal: (reason) => metrics.increment("ats_private_relay_refusals_total", { reason }),
  });
  const privateRelayOn = (on: WriteChain) =>
    createPrivateRelay({
      attest: attestWith(on, on.relaySchemas, { maxGasPerTx: BigInt(config.relays.privateRelay.maxGasPerTx), guard: privateGuard }),
      ledger: storage.ledger,
      plans: accounts.plans,
      subjects: storage.subjects,
      clock: systemClock,
      random: cryptoRandom,
      schemaNames: new Map([...on.relaySchemas].map(([uid, s]) => [uid, s.name])),
      subjectScoped: new Set(config.relays.privateRelay.subjectScoped),
      chainId: on.chain.chainId,
      readAttestation: on.eas.reader.getAttestation,
      verifyOwnership: accounts.subjectOwnership,
    });
  const publicOn = (on: WriteChain) => attestWith(on, on.subsidized, { guard, maxGasPerTx: BigInt(config.relays.publicRelay.maxGasPerTx) });
  return {
    readNonce: createReadChainNonce(chainSet(chains, (on) => on.eas.reader)),
    delegatedAttest: routeDelegatedAttest(chainSet(chains, publicOn)),
    privateRelay: routePrivateRelay(chainSet(chains, privateRelayOn)),
  };
}

/** Each attestation chain's use case, keyed by chain id. */
function chainSet<T>(chains: WriteChains, make: (on: WriteChain) => T): ChainSet<T> {
  const byChain = new Map<number, OnChain<T>>();
  for (const on of chains.list) byChain.set(on.chain.chainId, { chain: on.chain, name: on.name, value: make(on) });
  return { served: chains.served, byChain };
}
