import {
  BaseError,
  createPublicClient,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  encodeDeployData,
  erc6492SignatureValidatorAbi,
  erc6492SignatureValidatorByteCode,
  serializeErc6492Signature,
} from "viem";
import { getCode } from "viem/actions";
import { privateKeyToAccount } from "viem/accounts";
import type {
  AttestationRead,
  ContractSignatureCheck,
  DelegatedAttestCall,
  DelegateSubmitter,
  EasReader,
  HexString,
  NonceRead,
  Simulation,
  Submission,
  SubmitOptions,
  WalletDeployment,
  WalletDeploymentOutcome,
} from "../../ports/eas.ts";
import type { WrittenAttestation } from "../../ports/attestation_index.ts";
import type { Metrics } from "../../ports/metrics.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import type { TransactionSigner } from "../../ports/signer.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import { classifyNodeSimulationError, classifySimulationError } from "./_simulation_errors.ts";
import { encodeAttestByDelegation, encodeMultiAttestByDelegation } from "./attest_calldata.ts";
import { createTxSender, describe, type SendSyncMode, submitAttestation, submitAttestationBatch, type TxSender } from "./viem_tx_sender.ts";
import { createJsonRpc, type JsonRpc, quantity } from "./json_rpc.ts";
import type { Http1Post } from "./http1_post.ts";

/** Options of {@link createViemEas}. */
export type ViemEasOptions = {
  readonly rpcUrl: string;
  readonly chainId: number;
  readonly easAddress: HexString;
  readonly delegatePrivateKey?: HexString | undefined;
  /** The delegate wallet's signer (decisions §27); takes precedence over `delegatePrivateKey`. */
  readonly delegateSigner?: TransactionSigner | undefined;
  /** Replaces `fetch` for JSON-RPC, e.g. to count round trips in tests. */
  readonly fetchFn?: typeof fetch | undefined;
  /** The hot path's client counts its own calls here (issue 28) and sends with `unmeteredFetchFn`, not the metered `fetchFn`. */
  readonly rpcMetrics?: Metrics | undefined;
  readonly unmeteredFetchFn?: typeof fetch | undefined;
  /** With `rpcMetrics`: the hot path posts over kept-alive sockets instead of `unmeteredFetchFn` (http1_post.ts). */
  readonly post?: Http1Post | undefined;
  readonly rpcTimeoutMs?: number | undefined;
  /** How long to wait for a receipt before answering "unknown outcome". */
  readonly receiptTimeoutMs?: number | undefined;
  readonly log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
  /** Shared nonce bookkeeping for the service's wallets when several instances share them. */
  readonly walletNonces?: WalletNonces | undefined;
  /** Runs after each of the service's transactions is mined, before its caller is answered. */
  readonly onMined?: ((blockNumber: bigint) => Promise<void>) | undefined;
  /**
   * Told each delegated attestation the delegate wrote and saw mined, with the fields it sent (the chain's index takes
   * its record from them, issue 43 item 5), before its caller is answered.
   */
  readonly onAttested?: ((written: WrittenAttestation) => void) | undefined;
  /** The least the delegate wallet keeps (MIN_DELEGATE_BALANCE_WEI): under it a write is refused; default 0. */
  readonly delegateReserveWei?: bigint | undefined;
  /** Whether the wallets send by `eth_sendRawTransactionSync` while the node mines on arrival (default `auto`). */
  readonly sendSync?: SendSyncMode | undefined;
  /**
   * Tests: how long a sync send may hold a wallet's lock before its answer is given up on (default
   * `SEND_SYNC_GRACE_MS`, viem_tx_sender.ts). A fault test whose node always answers sets it long, so that the node's
   * answer, not the machine's speed, decides the outcome.
   */
  readonly sendSyncGraceMs?: number | undefined;
  /** Tests: the clock the wallets' kept fees age by (default `Date.now`). */
  readonly feeClock?: (() => number) | undefined;
  /** Signs the service's transactions (adapters/crypto); @noble/curves when absent. */
  readonly secp256k1?: Secp256k1 | undefined;
  /** Hashes the service's transactions (adapters/crypto: WebAssembly); viem's keccak when absent. */
  readonly keccak256?: Keccak256 | undefined;
};

/** The EAS adapters built on one viem client. */
export type ViemEas = {
  readonly reader: EasReader & { readonly getAttestation: NonNullable<EasReader["getAttestation"]> };
  readonly delegate: DelegateSubmitter | undefined;
  readonly client: PublicClient;
  /** True when the RPC answers with the configured chain id. */
  readonly ping: () => Promise<boolean>;
  /** The transaction sender of a wallet (its raw key, or its signer), shared by everything that sends from it. */
  readonly senderFor: (key: HexString | TransactionSigner) => TxSender;
  /** The sender already built for a wallet address (any case), if any. */
  readonly senderOf: (wallet: string) => TxSender | undefined;
};

/**
 * Builds the EAS reader and the delegate wallet on a viem HTTP client with JSON-RPC batching, so
 * that the reads a request makes in one tick share one round trip. The delegate's transaction
 * nonces are assigned in one place (a lock around sign-and-send), receipts are awaited outside it.
 * The calls of every delegated attestation (the nonce and code read, the simulation, the wallet's fee, balance,
 * nonce, send and receipt reads) go through the lean client of json_rpc.ts instead (issue 28); the rare ones (a
 * contract wallet's signature check, a counterfactual deployment, attestation reads) stay on viem.
 */
export function createViemEas(options: ViemEasOptions): ViemEas {
  const log = options.log ?? (() => {});
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { wait: 0 },
      fetchFn: options.fetchFn,
      retryCount: 1,
      timeout: options.rpcTimeoutMs ?? 10_000,
    }),
    pollingInterval: 50,
  }) as PublicClient;
  const easAddress = options.easAddress;
  const rpc = createJsonRpc({
    url: options.rpcUrl,
    fetchFn: options.rpcMetrics === undefined ? options.fetchFn : options.unmeteredFetchFn,
    metrics: options.rpcMetrics,
    post: options.rpcMetrics === undefined ? undefined : options.post,
    timeoutMs: options.rpcTimeoutMs ?? 10_000,
    retryCount: 1,
  });

  const senders = new Map<string, TxSender>();
  /** One sender per wallet, so the delegate and the witness share nonces when they are one key. */
  const senderFor = (key: HexString | TransactionSigner): TxSender => {
    const signer = typeof key === "string" ? undefined : key;
    const account = signer === undefined ? privateKeyToAccount(key as HexString) : undefined;
    const address = signer?.address ?? account!.address;
    let sender = senders.get(address.toLowerCase());
    if (sender === undefined) {
      sender = createTxSender({
        rpc,
        signer,
        account,
        privateKey: signer === undefined ? key as HexString : undefined,
        chainId: options.chainId,
        receiptTimeoutMs: options.receiptTimeoutMs,
        log,
        nonces: options.walletNonces,
        onMined: options.onMined,
        sendSync: options.sendSync,
        sendSyncGraceMs: options.sendSyncGraceMs,
        feeClock: options.feeClock,
        sign: options.secp256k1?.sign,
        keccak: options.keccak256?.bytes,
      });
      senders.set(address.toLowerCase(), sender);
    }
    return sender;
  };
  const senderOf = (wallet: string) => senders.get(wallet.toLowerCase());
  const delegateKey = options.delegateSigner ?? options.delegatePrivateKey;
  const delegateSender = delegateKey ? senderFor(delegateKey) : undefined;

  const reader: ViemEas["reader"] = {
    chainId: options.chainId,
    easAddress,
    async getAttesterNonce(attester, nonceOptions = {}): Promise<NonceRead> {
      // Issued in the same tick as the nonce read, so the fee refresh rides in the same batch.
      const feeWarmup = delegateSender?.warmFees();
      try {
        // The attester's code, when asked for, rides in the same batch: a contract wallet is checked by ERC-1271 like
        // EAS does. The nonce route and the reconciler only need the nonce.
        const [nonce, code] = await Promise.all([
          readNonce(rpc, easAddress, attester),
          nonceOptions.withCode ? rpc.request<string>("eth_getCode", [attester, "latest"]) : undefined,
        ]);
        await feeWarmup;
        return { ok: true, nonce, isContract: typeof code === "string" && code !== "0x" };
      } catch (error) {
        log("rpc_error", { op: "getNonce", error: describe(error) });
        return { ok: false, reason: "rpc-error" };
      }
    },
    checkContractSignature: (input) => checkContractSignature(client, input, log),
    async getAttestation(uid): Promise<AttestationRead> {
      try {
        const a = await client.readContract({ address: easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
        // EAS answers an unknown uid with an empty struct (uid zero), not a revert.
        if (/^0x0{64}$/.test(a.uid)) return { ok: true, attestation: null };
        return {
          ok: true,
          attestation: { uid: a.uid, schema: a.schema, attester: a.attester, recipient: a.recipient, revocationTime: a.revocationTime, data: a.data },
        };
      } catch (error) {
        log("rpc_error", { op: "getAttestation", error: describe(error) });
        return { ok: false, reason: "rpc-error" };
      }
    },
  };

  const ping = async () => {
    try {
      return (await client.getChainId()) === options.chainId;
    } catch {
      return false;
    }
  };

  if (delegateSender === undefined) return { reader, delegate: undefined, client, ping, senderFor, senderOf };

  // The simulation and the submission of one request encode the same call: once.
  const encoded = new WeakMap<DelegatedAttestCall, Hex>();
  const encode = (call: DelegatedAttestCall) => {
    let data = encoded.get(call);
    if (data === undefined) encoded.set(call, data = encodeAttestByDelegation(call));
    return data;
  };

  const estimate = async (data: Hex, maxGas?: bigint): Promise<Simulation> => {
    try {
      const params = maxGas === undefined ? { from: delegateSender.address, to: easAddress, data } : { from: delegateSender.address, to: easAddress, data, gas: `0x${maxGas.toString(16)}` };
      const gas = quantity(await rpc.request("eth_estimateGas", [params]));
      return { ok: true, gas: withHeadroom(gas) };
    } catch (error) {
      return classifyNodeSimulationError(error, log);
    }
  };
  // A batch's simulation and its submission encode the same calls: once (the array is the batch's own).
  const encodedBatches = new WeakMap<readonly DelegatedAttestCall[], Hex>();
  const encodeBatch = (calls: readonly DelegatedAttestCall[]) => {
    let data = encodedBatches.get(calls);
    if (data === undefined) encodedBatches.set(calls, data = encodeMultiAttestByDelegation(calls));
    return data;
  };

  const blockGasLimit = blockGasLimitReader(rpc);

  const delegate: DelegateSubmitter = {
    address: delegateSender.address,
    checkFunds: () => delegateSender.checkFunds(TYPICAL_ATTEST_GAS, options.delegateReserveWei),
    simulate: (call, simulateOptions) => estimate(encode(call), simulateOptions?.maxGas),
    async submit(call, submitOptions: SubmitOptions): Promise<Submission> {
      const submission = await submitAttestation(delegateSender, easAddress, encode(call), submitOptions);
      if (submission.ok && submission.uid !== null) options.onAttested?.(writtenOf(call, submission.uid, submission.blockNumber));
      return submission;
    },
    simulateBatch: (calls, simulateOptions) => simulateWithinBlock(estimate, encodeBatch(calls), simulateOptions?.maxGas, blockGasLimit),
    async submitBatch(calls, submitOptions) {
      const submission = await submitAttestationBatch(delegateSender, easAddress, encodeBatch(calls), submitOptions);
      // EAS logs the batch's attestations in the order of its requests.
      if (submission.ok && submission.uids.length === calls.length) calls.forEach((call, i) => options.onAttested?.(writtenOf(call, submission.uids[i]!, submission.blockNumber)));
      return submission;
    },
    deployWallet: (attester, deployment, charge, options) => deployWallet(client, delegateSender, log, attester, deployment, charge, options?.stillValid),
  };
  return { reader, delegate, client, ping, senderFor, senderOf };
}

/** An estimate with a fifth more, for state that changes between the estimate and inclusion. */
const withHeadroom = (gas: bigint) => (gas * 12n) / 10n;

/**
 * A batch's simulation, its search stopped at the requests' cap or the block's gas, whichever is lower: a cap above the
 * block let the node search past it, and a batch needing more than a block was sent at the block's gas and reverted.
 */
async function simulateWithinBlock(
  estimate: (data: Hex, maxGas?: bigint) => Promise<Simulation>,
  data: Hex,
  asked: bigint | undefined,
  blockGasLimit: () => Promise<bigint | undefined>,
): Promise<Simulation> {
  const limit = await blockGasLimit();
  const cap = asked === undefined ? limit : limit === undefined || asked < limit ? asked : limit;
  return fitToBlock(await estimate(data, cap), limit);
}

/**
 * A batch's simulation whose headroom stops at the block's gas limit: a batch that fits a block must not be lifted past
 * it, as the node refuses such a transaction after it is signed.
 */
function fitToBlock(simulation: Simulation, limit: bigint | undefined): Simulation {
  if (!simulation.ok || limit === undefined || simulation.gas <= limit) return simulation;
  // The estimate carries a fifth of headroom: past the block by more than that, the batch itself does not fit.
  if (simulation.gas > withHeadroom(limit)) return { ok: false, reason: "too-much-gas" };
  return { ok: true, gas: limit };
}

/** The latest block's gas limit, read at most once a minute (the last one read when a read fails); batches only. */
function blockGasLimitReader(rpc: { request: <T>(method: string, params: unknown[]) => Promise<T> }): () => Promise<bigint | undefined> {
  let kept: { readonly value: bigint; readonly atMs: number } | undefined;
  return async () => {
    if (kept !== undefined && Date.now() - kept.atMs < 60_000) return kept.value;
    try {
      const block = await rpc.request<{ gasLimit?: string } | null>("eth_getBlockByNumber", ["latest", false]);
      if (block?.gasLimit === undefined) return undefined;
      kept = { value: quantity(block.gasLimit), atMs: Date.now() };
      return kept.value;
    } catch {
      return kept?.value;
    }
  };
}

/** What a delegated attestation sent, with the uid and block the chain gave it. */
function writtenOf(call: DelegatedAttestCall, uid: HexString, blockNumber: bigint): WrittenAttestation {
  const { recipient, expirationTime, revocable, refUID, data } = call.data;
  return { uid, blockNumber, schema: call.schema, recipient, attester: call.attester, expirationTime, revocable, refUID, data };
}

async function hasCode(client: PublicClient, address: HexString): Promise<boolean> {
  const code = await getCode(client, { address });
  return code !== undefined && code !== "0x";
}

/**
 * Asks the chain whether a wallet contract accepts a signature, through the ERC-6492 validator run as a
 * deployless read-only call (viem ships its bytecode): it calls `isValidSignature` and compares the ERC-1271
 * magic value, as EAS's SignatureChecker does, and for a counterfactual wallet runs the factory first, inside the
 * call. A revert or a false answer is "invalid"; a transport failure is "rpc-error", never "invalid" (viem's own
 * verifyHash turns both into false).
 */
/**
 * The gas one contract signature check may burn: a counterfactual wallet's factory call and `isValidSignature` fit in
 * well under it (a Safe's or a Kernel's deployment is 0.3 M). Before, the call ran at the node's cap (a block's gas):
 * a request naming a factory that loops cost the node about 185 times a plain check's CPU, unauthenticated.
 */
export const CONTRACT_SIGNATURE_CHECK_GAS = 3_000_000n;

async function checkContractSignature(
  client: PublicClient,
  input: Parameters<NonNullable<EasReader["checkContractSignature"]>>[0],
  log: (event: string, fields: Record<string, unknown>) => void,
): Promise<ContractSignatureCheck> {
  const signature = input.deployment === undefined
    ? input.signature
    : serializeErc6492Signature({ address: input.deployment.factory, data: input.deployment.factoryCalldata, signature: input.signature });
  try {
    const { data } = await client.call({
      data: encodeDeployData({ abi: erc6492SignatureValidatorAbi, args: [input.signer, input.digest, signature], bytecode: erc6492SignatureValidatorByteCode }),
      gas: CONTRACT_SIGNATURE_CHECK_GAS,
    });
    return data !== undefined && data !== "0x" && BigInt(data) === 1n ? "valid" : "invalid";
  } catch (error) {
    // A check that ran out of its gas is the wallet's refusal, not the node's failure.
    if (error instanceof BaseError && /out ?of ?gas/i.test(`${error.shortMessage} ${error.details ?? ""}`)) return "invalid";
    const outcome = classifySimulationError(error, log);
    return !outcome.ok && outcome.reason === "reverted" ? "invalid" : "rpc-error";
  }
}

/** `getNonce(address)`'s selector. */
const GET_NONCE_SELECTOR = encodeFunctionData({ abi: EAS_ABI, functionName: "getNonce", args: [`0x${"0".repeat(40)}`] }).slice(0, 10);

/** EAS's nonce of `attester`: one `eth_call` of `getNonce(address)`, encoded and decoded by hand (one uint256). */
async function readNonce(rpc: JsonRpc, easAddress: HexString, attester: HexString): Promise<bigint> {
  if (!/^0x[0-9a-fA-F]{40}$/.test(attester)) throw new Error("not an address");
  const data = `${GET_NONCE_SELECTOR}${attester.slice(2).toLowerCase().padStart(64, "0")}`;
  const result = await rpc.request("eth_call", [{ to: easAddress, data }, "latest"]);
  // Anything but one 32-byte word (no contract there answers 0x) is not EAS's answer.
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(result)) throw new Error("getNonce did not answer one uint256");
  return BigInt(result);
}

/** Deploys a counterfactual wallet (ERC-6492, issue 23): `charge` decides before any send; code at the attester counts. */
async function deployWallet(
  client: PublicClient,
  delegateSender: TxSender,
  log: (event: string, fields: Record<string, unknown>) => void,
  attester: HexString,
  deployment: WalletDeployment,
  charge: (gas: bigint) => Promise<boolean>,
  stillValid: (() => boolean) | undefined,
): Promise<WalletDeploymentOutcome> {
  try {
    if (await hasCode(client, attester)) return "deployed";
    const estimate = await client.estimateGas({ account: delegateSender.address, to: deployment.factory, data: deployment.factoryCalldata });
    const gas = withHeadroom(estimate);
    if (!(await charge(gas))) return "refused";
    const outcome = await delegateSender.send({ to: deployment.factory, data: deployment.factoryCalldata, gas, stillValid });
    // Nothing sent (no signature, the deadline too close once the wallet's lock was held, its nonce, fees or shared nonce
    // not taken, the node's refusal): said before the attester's code is read, whose failure made it "rpc-error".
    if (!outcome.ok && (outcome.reason === "signer-unavailable" || outcome.reason === "expired" || outcome.reason === "nonce-unavailable")) return outcome.reason;
    if (!outcome.ok && outcome.reason === "rpc-error") return "chain-silent";
    if (!outcome.ok && outcome.reason === "not-broadcast") return "failed";
    if (!outcome.ok && outcome.reason === "unknown-outcome") return "rpc-error";
    // Whatever the factory's own outcome, what counts is code at the attester's address now.
    if (await hasCode(client, attester)) return "deployed";
    // Mined (or reverted) and no code: the gas is spent (issue 23), the caller records it.
    return { burned: true, txHash: outcome.txHash, blockNumber: outcome.blockNumber, gasUsed: outcome.gasUsed ?? null };
  } catch (error) {
    const simulation = classifySimulationError(error, log);
    return !simulation.ok && simulation.reason === "reverted" ? "failed" : "rpc-error";
  }
}

/**
 * Gas of a typical attestation (a delegated user review with a few hundred bytes of data costs about
 * 200,000): a wallet that cannot pay this at the current maximum fee is refused before anything is recorded.
 */
export const TYPICAL_ATTEST_GAS = 300_000n;
