/**
 * Wiring of delegated attestation: the public relay with its guard, and the private relay (decisions §6, §12), on every
 * served attestation chain (decisions §30): each chain its own EAS reader, delegate wallet and nonces, one guard (one
 * budget) for all.
 */
import { TYPICAL_ATTEST_GAS } from "../adapters/chain/mod.ts";
import { systemClock, cryptoRandom } from "../adapters/system/mod.ts";
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
import type { WiredAccounts } from "./accounts.ts";
import type { Config } from "./config.ts";
import type { Foundation, SchemaMap } from "./foundation.ts";
import type { WiredLimits } from "./limits.ts";
import { type WriteChain, type WriteChains, writeChains } from "./write_chains.ts";

/** What the delegation routes need. */
export type WiredDelegation = {
  /** The attester's nonce on the chain `chainId` names (decisions §30), the default chain when absent. */
  readonly readNonce: ReturnType<typeof createReadChainNonce>;
  /** The public relay: subsidized schemas, guarded by rate limits and an hourly gas budget. */
  readonly delegatedAttest: ReturnType<typeof routeDelegatedAttest>;
  /** The private relay: a signed-in account's plan decides the schemas; one sponsored write per attestation. */
  readonly privateRelay: ReturnType<typeof routePrivateRelay>;
  /** `PUBLIC_RELAY=off`: the public relay's refusal (403 PUBLIC_RELAY_DISABLED), asked by its routes first. */
  readonly publicRelayClosed: () => { readonly code: string; readonly message: string } | undefined;
};

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
      walletRefusals: storage.walletRefusals,
      recoverAddress: f.secp256k1.recoverAddress,
      keccak256: f.keccak256.hex,
      deadlineMarginSeconds: config.relays.deadlineMarginSeconds,
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
    // A free account's share of the hour (free accounts cost nothing to make); paying ones have none (gasShareKey).
    clientGasPerHour: (key) => (key.startsWith("free:") ? config.relays.privateRelay.freeAccountGasPerHour : undefined),
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
    publicRelayClosed: () => guard.open(),
  };
}

/** Each attestation chain's use case, keyed by chain id. */
function chainSet<T>(chains: WriteChains, make: (on: WriteChain) => T): ChainSet<T> {
  const byChain = new Map<number, OnChain<T>>();
  for (const on of chains.list) byChain.set(on.chain.chainId, { chain: on.chain, name: on.name, value: make(on) });
  return { served: chains.served, byChain };
}
