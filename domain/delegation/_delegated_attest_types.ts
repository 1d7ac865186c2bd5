/**
 * The types the single delegated attestation (delegated_attest.ts) and its batch (delegated_attest_batch.ts) share:
 * kept here so that neither file imports the other's (no import circle); delegated_attest.ts re-exports them.
 */
import type { Clock } from "../../ports/clock.ts";
import type { DelegatedAttestCall, DelegateSubmitter, EasReader, HexString, SignedTx, Simulation, WalletDeployment } from "../../ports/eas.ts";
import type { FactoryCallStore } from "../../ports/factory_calls.ts";
import type { WalletRefusalStore } from "../../ports/wallet_refusals.ts";
import type { ReplayStore } from "../../ports/replay_store.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import type { DelegatedRequest } from "./delegated_request.ts";
import { type Fail, fail } from "../result.ts";
import type { RelayGuard } from "./relay_guard.ts";

/** Codes a delegated attestation can fail with; the HTTP layer maps each to a status. */
export type DelegatedAttestCode =
  | "INVALID_INPUT"
  | "MAINNET_NOT_SUPPORTED"
  | "SCHEMA_NOT_SUBSIDIZED"
  | "SIGNATURE_EXPIRED"
  | "INVALID_SIGNATURE"
  | "DUPLICATE"
  | "NO_DELEGATE_KEY"
  | "RPC_ERROR"
  | "INTERNAL_ERROR"
  | "ATTESTER_MISMATCH"
  | "SUBMISSION_FAILED"
  | "OUTCOME_UNKNOWN"
  | "RATE_LIMITED"
  | "PUBLIC_RELAY_DISABLED"
  | "SCHEMA_NOT_ELIGIBLE"
  | "SUBJECT_OWNERSHIP_REQUIRED"
  | "SPONSORED_WRITE_LIMIT_EXCEEDED"
  | "SIGNER_UNAVAILABLE"
  | "UNSUPPORTED_CHAIN";

/** A subsidised schema: its name, and its revocability when the service knows it. */
export type SubsidizedSchema = { readonly name: string; readonly revocable?: boolean | undefined };

/** What a mined delegated attestation returns. */
export type DelegatedAttestSuccess = {
  readonly txHash: HexString;
  readonly uid: HexString | null;
  readonly blockNumber: bigint;
  /** The name of the chain it was written on, when several are served (decisions §30): the answer's `chain`. */
  readonly chainName?: string | undefined;
};

/** Everything the delegated-attest use case needs. */
export type DelegatedAttestDeps = {
  readonly clock: Clock;
  readonly eas: EasReader;
  readonly delegate?: DelegateSubmitter | undefined;
  readonly replay: ReplayStore;
  /** `NEXT_PUBLIC_ACTIVE_CHAIN` is a mainnet setting. */
  readonly mainnet: boolean;
  /** Subsidised schema UIDs, lowercase, to their schema. */
  readonly subsidized: ReadonlyMap<string, SubsidizedSchema>;
  /** Furthest a deadline may lie ahead, in seconds; bounds how long replay records are kept. */
  readonly maxDeadlineAheadSeconds?: number | undefined;
  /**
   * How far ahead a deadline must at least be (default 0: ahead of now). A deadline that passes before the
   * transaction is mined makes EAS revert (`DeadlineExpired`) after the delegate paid its gas, and the simulation
   * cannot see it: it runs at the latest block's time.
   */
  readonly deadlineMarginSeconds?: number | undefined;
  /**
   * The relay's guard: the public relay's rates and gas budget, the private relay's gas budget (issue 23); absent:
   * no limits.
   */
  readonly guard?: RelayGuard | undefined;
  /**
   * The ERC-6492 factory calls sent, one per wallet (issue 23): a wallet whose factory call was mined without
   * deploying it is refused before any RPC, and no second factory call is sent for a wallet. Absent: not recorded.
   */
  readonly factoryCalls?: FactoryCallStore | undefined;
  /**
   * Contract wallets the relays no longer send for: one whose signature passed the simulation and reverted on chain,
   * and simulates again as if it would not (ports/wallet_refusals.ts). Absent: none kept.
   */
  readonly walletRefusals?: WalletRefusalStore | undefined;
  /** Refuses (400 INVALID_INPUT, no gas spent) a submission whose simulation needs more gas (`MAX_GAS_PER_TX`). */
  readonly maxGasPerTx?: bigint | undefined;
  /**
   * Recovers the signer of a digest (issue 28: libsecp256k1 when the service found it, adapters/crypto). Absent:
   * viem's recovery, which gives the same answers.
   */
  readonly recoverAddress?: Secp256k1["recoverAddress"] | undefined;
  /** keccak-256 of hex bytes for the Attest digest (issue 28: in WebAssembly, adapters/crypto). Absent: viem's. */
  readonly keccak256?: Keccak256["hex"] | undefined;
};

/**
 * A failure; `unavailable` marks a SUBMISSION_FAILED the service itself cannot serve now (its wallet cannot
 * pay), which HTTP answers with 503 rather than 500.
 */
export type DelegatedAttestFailure = Fail<DelegatedAttestCode> & {
  readonly unavailable?: true;
  readonly retryAfterSeconds?: number;
  /** A status of the caller's own (the private relay's 403 for an attester that is not the account's wallet). */
  readonly status?: number;
};

/** Who sent the request: the client's address key (per-address limits of the public relay). */
export type DelegatedAttestCaller = {
  readonly clientKey?: string | undefined;
  /**
   * Runs once the signature verified, before it is recorded (the private relay checks the account's rights and
   * reserves a sponsored write here); a failure stops the request with nothing recorded. Its `release` runs when
   * nothing was broadcast; `onSigned`/`onSent` follow the transaction, `onMined` its receipt.
   */
  readonly admit?: ((request: DelegatedRequest) => Promise<DelegatedAttestFailure | CallerTicket>) | undefined;
  /**
   * The caller's refusals that need no chain (storage and the request alone), run before any RPC: after the replay
   * lookup (a signature on record answers with its outcome whatever the caller says, decisions §6) and before the
   * guard. The private relay refuses here what its plan, its wallet and its quota decide, so that such a request
   * costs the node nothing (it was refused only after the nonce and balance reads). Undefined: go on; `admit` still
   * runs once the signature verified and decides with the chain's answers.
   */
  readonly precheck?: ((request: DelegatedRequest) => Promise<DelegatedAttestFailure | undefined>) | undefined;
  /**
   * Runs once every check passed and the signature is recorded (`key`: its replay record), just before the transaction
   * is signed and sent: the caller records its submission here (decisions §23). A throw stops the request before
   * anything is sent, and the record is given back.
   */
  readonly onSubmitting?: ((chainId: number, key: string) => Promise<void>) | undefined;
};

/** What an admitted caller wants to hear of the submission. */
export type CallerTicket = {
  readonly release: () => Promise<void>;
  readonly onSigned: (tx: SignedTx) => Promise<void>;
  readonly onSent: () => Promise<void>;
  readonly onMined: (outcome: DelegatedAttestSuccess) => Promise<void>;
  /**
   * A transaction of this request burned gas without the attestation landing (a factory call that did not deploy
   * the wallet, or an attestation that reverted): the caller keeps what it reserved charged (issue 23). Absent: the
   * reservation is released as when nothing was sent.
   */
  readonly onBurned?: ((burn: { readonly txHash: HexString; readonly blockNumber: bigint }) => Promise<void>) | undefined;
};

/** In a batch: the nonce an item of `attester` is checked against, given the chain's. */
export type BatchNonces = { readonly nonceFor: (attester: HexString, chainNonce: bigint) => bigint };

/** A request that passed every check and holds its replay record (claimed under `key`): ready to be sent. */
export type Claimed = {
  readonly request: DelegatedRequest;
  readonly call: DelegatedAttestCall;
  readonly key: string;
  readonly ticket: CallerTicket | undefined;
  readonly delegate: DelegateSubmitter;
  readonly simulatedAhead: Promise<Simulation> | undefined;
  readonly deploy: WalletDeployment | undefined;
  /** The attester's EAS nonce the signature was verified against (recorded with the claim). */
  readonly nonce: bigint;
  /** The attester's wallet contract accepted the signature (ERC-1271), not its own key. */
  readonly byContract: boolean;
};

/** One send under way: whose shares the gas is charged to, and whether the caller's reservation stays charged. */
export type Sending = {
  readonly deps: DelegatedAttestDeps;
  readonly claimed: Claimed;
  /** Whose shares of the relay's gas budget the gas is charged to (issue 43). */
  readonly chargedTo: { readonly clientKey: string; readonly attester: string };
  /** Set once the transaction is signed (or gas burned): the caller's reservation is then not given back. */
  kept: boolean;
};

/**
 * Whether a signed `deadline` is still far enough ahead to be sent (decisions §6): more than `deadlineMarginSeconds`
 * beyond `nowMs` (default: the use case's clock now), in whole seconds. Asked on arrival and again under the delegate
 * wallet's lock just before signing (`stillValid` of ports/eas.ts): a request that waited there behind a slow
 * node's sends was signed and sent after its deadline, and reverted at the delegate's cost.
 */
export function deadlineHolds(deps: Pick<DelegatedAttestDeps, "clock" | "deadlineMarginSeconds">, deadline: bigint, nowMs = deps.clock.nowMs()): boolean {
  return deadline > BigInt(Math.floor(nowMs / 1000) + (deps.deadlineMarginSeconds ?? 0));
}

/** The answer to a request whose deadline came within the margin while it waited for the delegate wallet: nothing sent. */
export function expiredWhileQueued(deps: Pick<DelegatedAttestDeps, "deadlineMarginSeconds">): DelegatedAttestFailure {
  return fail(
    "SIGNATURE_EXPIRED",
    `Signature expires too soon: while the request waited for the delegate wallet, its deadline came within ${deps.deadlineMarginSeconds ?? 0} seconds, too close to be mined before it; nothing was sent or charged; sign again with a later deadline`,
  );
}

/** The factor of headroom a simulated gas carries (the adapter adds a fifth for state that changes before inclusion). */
const SIMULATION_HEADROOM = { num: 12n, den: 10n } as const;

/**
 * What a write's simulation may search up to: the estimate that, with its headroom, is `maxGasPerTx` (found by
 * attacking sign-in and the relays: a contract attester's `isValidSignature` ran in the estimate at the node's cap, a
 * block's gas, on any request). Without `maxGasPerTx`, none (the node's).
 */
export function simulationCap(deps: Pick<DelegatedAttestDeps, "maxGasPerTx">): { readonly maxGas?: bigint | undefined } {
  return deps.maxGasPerTx === undefined ? {} : { maxGas: (deps.maxGasPerTx * SIMULATION_HEADROOM.den) / SIMULATION_HEADROOM.num };
}

/**
 * What a batch of `items` requests may search up to: each request's {@link simulationCap}. Before, a batch's estimate
 * ran at the node's cap whatever `MAX_GAS_PER_TX` said, so a batch of contract attesters ran their code at a block's gas.
 */
export function batchSimulationCap(deps: Pick<DelegatedAttestDeps, "maxGasPerTx">, items: number): { readonly maxGas?: bigint | undefined } {
  const one = simulationCap(deps).maxGas;
  return one === undefined ? {} : { maxGas: one * BigInt(items) };
}
