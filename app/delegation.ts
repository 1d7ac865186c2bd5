/** Wiring of delegated attestation: the public relay with its guard, and the private relay (decisions §6, §12). */
import { TYPICAL_ATTEST_GAS } from "../adapters/chain/mod.ts";
import { systemClock, cryptoRandom } from "../adapters/system/mod.ts";
import { createDelegatedAttest, createPrivateRelay, createReadNonce, createRelayGuard } from "../domain/delegation/mod.ts";
import type { WiredAccounts } from "./accounts.ts";
import type { Config } from "./config.ts";
import type { Foundation } from "./foundation.ts";
import type { WiredLimits } from "./limits.ts";

/** What the delegation routes need. */
export type WiredDelegation = {
  readonly readNonce: ReturnType<typeof createReadNonce>;
  /** The public relay: subsidized schemas, guarded by rate limits and an hourly gas budget. */
  readonly delegatedAttest: ReturnType<typeof createDelegatedAttest>;
  /** The private relay: a signed-in account's plan decides the schemas; one sponsored write per attestation. */
  readonly privateRelay: ReturnType<typeof createPrivateRelay>;
};

/**
 * Builds both relays over the same EAS client, replay store and delegate wallet; the public relay's rates per client
 * and per attester are the deployment's (decisions §21).
 */
export function wireDelegation(config: Pick<Config, "chains" | "relays">, f: Foundation, { accounts, limits }: { accounts: WiredAccounts; limits: WiredLimits }): WiredDelegation {
  const { storage, eas, metrics } = f;
  const attestWith = (subsidized: Foundation["subsidized"], extra: { guard: ReturnType<typeof createRelayGuard>; maxGasPerTx?: bigint }) =>
    createDelegatedAttest({
      clock: systemClock,
      eas: eas.reader,
      delegate: eas.delegate,
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
  const privateRelay = createPrivateRelay({
    attest: attestWith(f.relaySchemas, {
      maxGasPerTx: BigInt(config.relays.privateRelay.maxGasPerTx),
      // Issue 23: the private relay's hourly gas budget, checked before any RPC and charged like the public one's.
      guard: createRelayGuard({
        enabled: true,
        relay: "private",
        gasBudget: storage.privateGasBudget,
        gasPerHour: config.relays.privateRelay.gasPerHour,
        typicalGas: TYPICAL_ATTEST_GAS,
        clock: systemClock,
        onRefusal: (reason) => metrics.increment("ats_private_relay_refusals_total", { reason }),
      }),
    }),
    ledger: storage.ledger,
    plans: accounts.plans,
    subjects: storage.subjects,
    clock: systemClock,
    random: cryptoRandom,
    schemaNames: new Map([...f.relaySchemas].map(([uid, s]) => [uid, s.name])),
    subjectScoped: new Set(config.relays.privateRelay.subjectScoped),
    chainId: f.chainId,
    readAttestation: eas.reader.getAttestation,
    verifyOwnership: accounts.subjectOwnership,
  });
  return { readNonce: createReadNonce(eas.reader), delegatedAttest: attestWith(f.subsidized, { guard, maxGasPerTx: BigInt(config.relays.publicRelay.maxGasPerTx) }), privateRelay };
}
