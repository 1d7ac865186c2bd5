import { parseTransaction } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { BatchSubmission, FundsCheck, HexString, SignedTx, SubmitOptions, Submission } from "../../ports/eas.ts";
import type { Rebroadcast } from "../../ports/submissions.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import type { SignaturePurpose, SignedTransaction, SignerFailure, TransactionFields, TransactionSigner } from "../../ports/signer.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import { ATTESTED_TOPIC } from "../../domain/eas_abi.ts";
import { type JsonRpc, quantity } from "./json_rpc.ts";
import { privateKeyBytes, signEip1559 } from "./eip1559.ts";
import { type Arrival, awaitReceipt, createBlockCadence, describe, type Log, receiptOutcome, type ReceiptLog, type SendOutcome } from "./_tx_receipts.ts";
import { type Attempt, deliver, type Delivery, noLongerValid, nonceLockFailed, nonceUnread, nothingSent, sendRaw, signerDown } from "./_tx_delivery.ts";
import { sendUnderSharedLock } from "./_tx_nonce_lock.ts";
import { createFees, type Fees } from "./_tx_fees.ts";

export { describe, type ReceiptLog, type SendOutcome } from "./_tx_receipts.ts";

/** What to send. */
export type SendRequest = {
  readonly to: HexString;
  readonly data: HexString;
  readonly gas: bigint;
  /** Called with the signed transaction before it is sent, so the caller can store it first. */
  readonly onSigned?: ((tx: SignedTx) => Promise<void>) | undefined;
  /**
   * Called once the transaction may have reached the node while its outcome is still open: accepted without its
   * receipt, or its fate could not be learnt. Not called when the node answered the send with the receipt (issue 28).
   */
  readonly onSent?: ((txHash: HexString) => Promise<void>) | undefined;
  /** What the signature is for, in the audit trail (default `transaction`; the witness's are `witness`). */
  readonly purpose?: SignaturePurpose | undefined;
  /**
   * Asked under the wallet's lock, once the nonce is known and before signing: false signs and sends nothing (`expired`)
   * and the nonce stays the next one. Absent: always sent.
   */
  readonly stillValid?: (() => boolean) | undefined;
};

/** Sends transactions from one wallet; nonces are assigned in one place per wallet. */
export type TxSender = {
  readonly address: HexString;
  readonly send: (request: SendRequest) => Promise<SendOutcome>;
  /** Sends stored bytes again (same nonce, same hash); the next send re-reads the wallet's pending nonce. */
  readonly rebroadcast: (tx: SignedTx) => Promise<Rebroadcast>;
  /**
   * "ok" while the wallet holds `gas` at the current max fee, and at least `reserveWei` (the delegate's
   * MIN_DELEGATE_BALANCE_WEI): "low" otherwise.
   */
  readonly checkFunds: (gas: bigint, reserveWei?: bigint) => Promise<FundsCheck>;
  /** Refreshes the fee cache if stale; call in the same tick as another read to share its batch. */
  readonly warmFees: () => Promise<unknown>;
  /**
   * Signs (does not send) a replacement of a stuck transaction of this wallet: the same nonce, recipient, data and gas,
   * with both fees raised by 12.5% at least (nodes want 10%) and never below the current market's. Undefined when the
   * bytes are not this wallet's EIP-1559 transaction or the fees cannot be read.
   */
  readonly replacement: (tx: SignedTx) => Promise<SignedTx | undefined>;
};

/**
 * Whether sends use EIP-7966 `eth_sendRawTransactionSync` (one exchange for the send and its receipt) while the node
 * mines on arrival (`auto`), or always `eth_sendRawTransaction` then receipt polls (`off`).
 */
export type SendSyncMode = "auto" | "off";

/**
 * How long a sync send may hold the wallet's lock before the sender stops waiting for its answer: an automining devnet
 * answers in about 2 ms; 100 ms leaves room for a loaded machine's pauses, and is paid at most once per pause below.
 */
export const SEND_SYNC_GRACE_MS = 100;
/** How long the sync method rests after a node did not mine a send on arrival, before it is tried again. */
export const SEND_SYNC_PAUSE_MS = 10 * 60_000;


/** Signs in this process with a raw key (no signer configured: tests and today's callers). */
function localSigner(privateKey: HexString, sign: Secp256k1["sign"] | undefined, keccak: Keccak256["bytes"] | undefined): TransactionSigner["signTransaction"] {
  const key = privateKeyBytes(privateKey);
  return (tx: TransactionFields): Promise<SignedTransaction | SignerFailure> => {
    const { raw, txHash } = signEip1559(tx, key, sign, keccak);
    return Promise.resolve({ ok: true, raw, txHash });
  };
}

/** What {@link createTxSender} takes. */
export type TxSenderOptions = {
  rpc: JsonRpc;
  /**
   * The wallet's signer (decisions §27: adapters/signers, any backend). Absent: `account` and `privateKey` sign in this
   * process. A signer that gives no signature sends nothing and keeps the nonce free for the next send.
   */
  signer?: TransactionSigner | undefined;
  account?: PrivateKeyAccount | undefined;
  /** The account's key: transactions are signed by eip1559.ts (viem's bytes, without its hex round trips). */
  privateKey?: HexString | undefined;
  /** The secp256k1 signature (adapters/crypto: libsecp256k1 when present); @noble/curves when absent. */
  sign?: Secp256k1["sign"] | undefined;
  /** keccak-256 of the transaction's bytes (adapters/crypto: WebAssembly); viem's when absent. */
  keccak?: Keccak256["bytes"] | undefined;
  chainId: number;
  receiptTimeoutMs?: number | undefined;
  log?: Log | undefined;
  /** Shared nonce bookkeeping when several instances send from this wallet (PostgreSQL storage). */
  nonces?: WalletNonces | undefined;
  /** Runs after a receipt arrived and before the caller hears of it (the devnet saves its state here). */
  onMined?: ((blockNumber: bigint) => Promise<void>) | undefined;
  /** Whether sends use `eth_sendRawTransactionSync` while the node mines on arrival (default `auto`). */
  sendSync?: SendSyncMode | undefined;
  /** Tests: the grace and the pause of the sync method (defaults {@link SEND_SYNC_GRACE_MS}, {@link SEND_SYNC_PAUSE_MS}). */
  sendSyncGraceMs?: number | undefined;
  sendSyncPauseMs?: number | undefined;
  /** Tests: the clock the kept fees age by (default `Date.now`). */
  feeClock?: (() => number) | undefined;
};

/**
 * Builds a sender for one wallet: a lock around nonce assignment, signing and broadcast (so
 * concurrent sends never share or skip a nonce), receipts awaited outside the lock, and fee data
 * cached for two seconds.
 *
 * A failed send is never taken at its word (decisions §15): the node is asked about the hash. Held or
 * mined → accepted, and the receipt is awaited as usual. Absent after the node refused it → provably not
 * broadcast. Absent after the answer was lost (timeout, reset, 5xx; never retried by the JSON-RPC client) → the same
 * bytes are sent once more: taken → accepted; else the hash is asked again, held or mined → accepted, else unknown (a
 * refusal of the resend proves nothing: the lost bytes may have landed). The node unreachable → unknown; the caller
 * keeps the submission open for the reconciler. After anything but a plain success the next send re-reads the
 * wallet's pending nonce. A failed read before signing (the wallet's pending nonce, its fees) is `rpc-error`: nothing
 * was signed or sent, and the caller answers it as any other chain read that failed before a write (500 `RPC_ERROR`),
 * never as the node's refusal.
 *
 * Its JSON-RPC goes through the lean client of json_rpc.ts (issue 28): the fee, balance and nonce reads ride in the
 * batch of whatever else the request reads in the same turn.
 *
 * With `sendSync` `auto` (the default) the bytes go by EIP-7966 `eth_sendRawTransactionSync`, which a node that mines
 * on arrival (a devnet) answers with the receipt: one exchange instead of a send and receipt polls. It goes in an HTTP
 * request of its own and is never retried by the client. Each answer keeps the meaning above: the receipt → accepted,
 * and no polls (a reverted one → reverted); "already known" → accepted; a lost exchange, or the node's -32603 (its
 * confirmation timeout, or an internal error) → the hash is asked about, as for a lost plain send. Any other error
 * object means the node did not take the call: the same bytes go at once by `eth_sendRawTransaction`, under the same
 * lock with the same nonce, and that answer decides as above (a refusal → the hash is asked about). After -32601,
 * -32600, -32602 or a message naming the method, or when the plain method took what the sync one did not, the sync
 * method is not used again by this process. No answer within {@link SEND_SYNC_GRACE_MS}: the node is asked about the
 * hash (absent → the same bytes are sent plainly; as the sync bytes are still on their way, only the hash held after
 * that is accepted, anything else unknown, never "not broadcast"), the lock is released once that is known,
 * and the receipt is whichever comes first of the sync answer and the polls; unless the node had already mined it,
 * the sync method rests for {@link SEND_SYNC_PAUSE_MS} (the node does not mine on arrival) and is then tried again.
 */
export function createTxSender(options: TxSenderOptions): TxSender {
  const { rpc } = options;
  const account = { address: options.signer?.address ?? options.account!.address };
  const signTransaction = options.signer?.signTransaction ?? localSigner(options.privateKey!, options.sign, options.keccak);
  const wallet = account.address.toLowerCase() as HexString;
  const log = options.log ?? (() => {});
  const fees = createFees(rpc, options.feeClock);
  const refreshFees = fees.refresh;

  const blocks = createBlockCadence();

  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  const delivery: Delivery = {
    rpc,
    log,
    blocks,
    syncOff: options.sendSync === "off",
    syncRestsUntil: 0,
    syncRested: false,
    syncGraceMs: options.sendSyncGraceMs ?? SEND_SYNC_GRACE_MS,
    syncPauseMs: options.sendSyncPauseMs ?? SEND_SYNC_PAUSE_MS,
  };
  const pendingCount = async (): Promise<number | undefined> => {
    try {
      return Number(quantity(await rpc.request("eth_getTransactionCount", [account.address, "pending"])));
    } catch (error) {
      log("rpc_error", { op: "getTransactionCount", error: describe(error) });
      return undefined;
    }
  };

  const state: SenderState = { options, rpc, wallet, address: account.address, signTransaction, log, refreshFees, charged: fees.charged, blocks, exclusive, delivery, pendingCount, nextNonce: undefined };
  return {
    address: account.address,
    warmFees: () => refreshFees().catch(() => undefined),
    async checkFunds(gas, reserveWei = 0n) {
      try {
        // Read on every request, in the batch of the nonce read (issue 43 weighed keeping it for a while: a wallet emptied
        // elsewhere would then be found out by the node's refusal after the replay record, not before it, decisions §15).
        const [balance, fee] = await Promise.all([rpc.request("eth_getBalance", [account.address, "latest"]).then(quantity), refreshFees()]);
        return balance >= gas * fee.maxFeePerGas && balance >= reserveWei ? "ok" : "low";
      } catch (error) {
        log("rpc_error", { op: "getBalance", error: describe(error) });
        return "rpc-error";
      }
    },
    replacement: (tx) => replacementOf(state, tx),
    rebroadcast: (tx) =>
      exclusive(async () => {
        const sent = await sendRaw(delivery, tx.raw, tx.nonce);
        state.nextNonce = undefined;
        return sent === "lost" ? "rpc-error" : sent;
      }),
    send: (request) => sendRequest(state, request),
  };
}

/** What the sender's module-level steps share (one wallet). */
type SenderState = {
  readonly options: TxSenderOptions;
  readonly rpc: JsonRpc;
  readonly wallet: HexString;
  readonly address: HexString;
  readonly signTransaction: TransactionSigner["signTransaction"];
  readonly log: Log;
  readonly refreshFees: () => Promise<Fees>;
  /** Renews the fees' gas price with one the chain just charged this wallet (a receipt's `effectiveGasPrice`). */
  readonly charged: (gasPrice: bigint) => void;
  readonly blocks: ReturnType<typeof createBlockCadence>;
  /** Runs `task` under the wallet's lock (nonce assignment, signing and broadcast). */
  readonly exclusive: <T>(task: () => Promise<T>) => Promise<T>;
  readonly delivery: Delivery;
  readonly pendingCount: () => Promise<number | undefined>;
  /** The next nonce to use; undefined: read the pending count first. */
  nextNonce: number | undefined;
};

/** A fee bump of `tx` (the same nonce, fees raised by at least 1/8 and to the current ones), signed; undefined: none. */
async function replacementOf(state: SenderState, tx: SignedTx): Promise<SignedTx | undefined> {
  const { wallet, log, options } = state;
  if (tx.wallet.toLowerCase() !== wallet) return undefined;
  let parsed: ReturnType<typeof parseTransaction>;
  try {
    parsed = parseTransaction(tx.raw);
  } catch {
    return undefined;
  }
  if (parsed.type !== "eip1559" || parsed.nonce !== tx.nonce || parsed.to == null) return undefined;
  let fee: Fees;
  try {
    fee = await state.refreshFees();
  } catch (error) {
    log("rpc_error", { op: "fees", error: describe(error) });
    return undefined;
  }
  const raised = (old: bigint | undefined) => ((old ?? 0n) * 9n + 7n) / 8n;
  const larger = (a: bigint, b: bigint) => (a > b ? a : b);
  const maxPriorityFeePerGas = larger(raised(parsed.maxPriorityFeePerGas), fee.maxPriorityFeePerGas);
  const maxFeePerGas = larger(larger(raised(parsed.maxFeePerGas), fee.maxFeePerGas), maxPriorityFeePerGas);
  const signed = await state.signTransaction({
    chainId: options.chainId,
    to: parsed.to,
    data: parsed.data ?? "0x",
    gas: parsed.gas ?? 0n,
    nonce: tx.nonce,
    maxFeePerGas,
    maxPriorityFeePerGas,
    value: parsed.value ?? 0n,
  }, { purpose: "transaction", ref: tx.txHash });
  // A signer that gives no signature now: no replacement this round; the reconciler asks again.
  if (!signed.ok) return undefined;
  return { txHash: signed.txHash, raw: signed.raw, wallet, nonce: tx.nonce };
}

/** Signs and sends one transaction under the wallet's lock, then waits for its receipt outside it. */
async function sendRequest(state: SenderState, request: SendRequest): Promise<SendOutcome> {
  const { options, wallet, log, delivery } = state;
  let fee: Fees;
  try {
    fee = await state.refreshFees();
  } catch (error) {
    // Before anything is signed: the chain did not answer, nothing left (`rpc-error`, never `not-broadcast`, which is
    // the node's refusal of a signed transaction).
    log("rpc_error", { op: "fees", error: describe(error) });
    return { ok: false, reason: "rpc-error" };
  }
  const signAndSend = async (nonce: number, lockLost: () => boolean = () => false): Promise<Attempt> => {
    // Under the lock, after whatever the request waited behind (a slow node's sends): a request that is no longer worth
    // sending (its signed deadline too close) leaves nothing signed, stored or sent, and its nonce to the next one.
    if (request.stillValid?.() === false) return noLongerValid;
    const signed = await state.signTransaction({
      chainId: options.chainId,
      to: request.to,
      data: request.data,
      gas: request.gas,
      nonce,
      maxFeePerGas: fee.maxFeePerGas,
      maxPriorityFeePerGas: fee.maxPriorityFeePerGas,
      value: 0n,
    }, { purpose: request.purpose ?? "transaction" });
    // Not signed, so nothing stored or sent: the nonce stays the next one (decisions §27).
    if (!signed.ok) return signerDown;
    // The instances' shared lock ended while the signer worked (a remote signer's seconds): another instance may take
    // this nonce now, so nothing is stored or sent.
    if (lockLost()) return nonceLockFailed;
    const { raw, txHash } = signed;
    const tx: SignedTx = { txHash, raw, wallet, nonce };
    try {
      await request.onSigned?.(tx);
    } catch (error) {
      // Not stored, so not sent: a transaction nobody could settle must never leave.
      log("store_error", { op: "onSigned", error: error instanceof Error ? error.message : String(error) });
      return nothingSent;
    }
    // Asked again once the record is stored (a database write, slow in the same failover that ends the lock): lost
    // meanwhile, another instance may hold this nonce, so the bytes never leave; the caller gives the signed record back
    // (nonce-unavailable). It was asked only before the write, and the bytes could leave without the lock.
    if (lockLost()) return nonceLockFailed;
    return await deliver(delivery, tx);
  };

  const attempt = await state.exclusive(async (): Promise<Attempt> => {
    const shared = options.nonces;
    if (shared !== undefined) {
      const { chainId } = options;
      return await sendUnderSharedLock({ nonces: shared, chainId, address: state.address, log, pendingCount: state.pendingCount, signAndSend });
    }
    if (state.nextNonce === undefined) {
      const pending = await state.pendingCount();
      if (pending === undefined) return nonceUnread;
      state.nextNonce = pending;
    }
    const nonce = state.nextNonce;
    const outcome = await signAndSend(nonce);
    // Unless the node plainly took it, it may or may not hold this nonce: re-read the pending count next time. Not
    // signed: nothing left, the nonce is still the next one.
    state.nextNonce = outcome.settled === "accepted" ? nonce + 1 : outcome.settled === "signer-unavailable" || outcome.settled === "expired" ? nonce : undefined;
    return outcome;
  });
  if (attempt.settled === "signer-unavailable") return { ok: false, reason: "signer-unavailable" };
  if (attempt.settled === "expired") return { ok: false, reason: "expired" };
  if (attempt.settled === "rpc-error") return { ok: false, reason: "rpc-error" };
  if (attempt.settled === "nonce-unavailable") return { ok: false, reason: "nonce-unavailable" };
  if (attempt.tx === undefined || attempt.settled === "not-broadcast") return { ok: false, reason: "not-broadcast" };
  // A send answered with its receipt goes straight to its outcome, which the caller records: a "sent" record
  // in between would be one more commit that no crash could need (a signed record is settled the same way).
  if (attempt.receipt === undefined) await request.onSent?.(attempt.tx.txHash);
  if (attempt.settled === "unknown") return { ok: false, reason: "unknown-outcome", txHash: attempt.tx.txHash };
  const outcome: SendOutcome & { readonly arrival?: Arrival } = attempt.receipt !== undefined
    ? receiptOutcome(attempt.tx.txHash, attempt.receipt)
    : await awaitReceipt(state.rpc, attempt.tx.txHash, options.receiptTimeoutMs ?? 120_000, log, attempt.lateReceipt, state.blocks);
  if (outcome.ok || outcome.reason === "reverted") {
    if (attempt.receipt === undefined) state.blocks.seen(outcome.blockNumber, outcome.arrival);
    if (outcome.effectiveGasPrice !== undefined) state.charged(outcome.effectiveGasPrice);
    await options.onMined?.(outcome.blockNumber);
  }
  return outcome;
}

/** Sends an EAS attestation (its calldata `data`) from `sender`, and reads the new uid off the receipt. */
export async function submitAttestation(
  sender: TxSender,
  easAddress: HexString,
  data: HexString,
  options: SubmitOptions,
  purpose?: SignaturePurpose,
): Promise<Submission> {
  const outcome = await sender.send({ to: easAddress, data, gas: options.gas, onSigned: options.onSigned, onSent: options.onSent, purpose, stillValid: options.stillValid });
  if (!outcome.ok) return outcome;
  return { ok: true, txHash: outcome.txHash, blockNumber: outcome.blockNumber, uid: attestedUid(outcome.logs, easAddress) };
}

/** Sends EAS `multiAttestByDelegation` (its calldata `data`) from `sender`, and reads every new uid off the receipt, in order. */
export async function submitAttestationBatch(sender: TxSender, easAddress: HexString, data: HexString, options: SubmitOptions): Promise<BatchSubmission> {
  const outcome = await sender.send({ to: easAddress, data, gas: options.gas, onSigned: options.onSigned, onSent: options.onSent, stillValid: options.stillValid });
  if (!outcome.ok) return outcome;
  return { ok: true, txHash: outcome.txHash, blockNumber: outcome.blockNumber, uids: attestedUids(outcome.logs, easAddress) };
}

/** The uids of a receipt's EAS `Attested` logs, in log order. */
export function attestedUids(logs: readonly ReceiptLog[], easAddress: string): HexString[] {
  return logs
    .filter((l) => l.address.toLowerCase() === easAddress.toLowerCase() && l.topics[0] === ATTESTED_TOPIC && l.data.length >= 66)
    .map((l) => l.data.slice(0, 66) as HexString);
}

/** The uid of the first EAS `Attested` log of a receipt, or null. */
export function attestedUid(logs: readonly ReceiptLog[], easAddress: string): HexString | null {
  const log = logs.find((l) => l.address.toLowerCase() === easAddress.toLowerCase() && l.topics[0] === ATTESTED_TOPIC);
  return log && log.data.length >= 66 ? (log.data.slice(0, 66) as HexString) : null;
}

