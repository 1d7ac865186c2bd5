import { BaseError, type Hex, parseTransaction } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { BatchSubmission, FundsCheck, HexString, SignedTx, SubmitOptions, Submission } from "../../ports/eas.ts";
import type { Rebroadcast } from "../../ports/submissions.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import type { SignaturePurpose, SignedTransaction, SignerFailure, TransactionFields, TransactionSigner } from "../../ports/signer.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import { ATTESTED_TOPIC } from "../../domain/eas_abi.ts";
import { type JsonRpc, NodeRpcError, quantity } from "./json_rpc.ts";
import { privateKeyBytes, signEip1559 } from "./eip1559.ts";

/** The outcome of sending one transaction and waiting for its receipt. */
export type SendOutcome =
  | { readonly ok: true; readonly txHash: HexString; readonly blockNumber: bigint; readonly logs: readonly ReceiptLog[]; readonly gasUsed?: bigint }
  | { readonly ok: false; readonly reason: "not-broadcast" }
  /** The wallet's signer gave no signature (decisions §27): nothing was sent, and the nonce stays free. */
  | { readonly ok: false; readonly reason: "signer-unavailable" }
  | { readonly ok: false; readonly reason: "reverted"; readonly txHash: HexString; readonly blockNumber: bigint; readonly gasUsed?: bigint }
  | { readonly ok: false; readonly reason: "unknown-outcome"; readonly txHash: HexString };

/** A log of a receipt, as the node returned it. */
export type ReceiptLog = { readonly address: string; readonly topics: readonly string[]; readonly data: string };

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
};

/** Sends transactions from one wallet; nonces are assigned in one place per wallet. */
export type TxSender = {
  readonly address: HexString;
  readonly send: (request: SendRequest) => Promise<SendOutcome>;
  /** Sends stored bytes again (same nonce, same hash); the next send re-reads the wallet's pending nonce. */
  readonly rebroadcast: (tx: SignedTx) => Promise<Rebroadcast>;
  /** Whether the balance covers `gas` at the current maximum fee. */
  readonly checkFunds: (gas: bigint) => Promise<FundsCheck>;
  /** Refreshes the fee cache if stale; call in the same tick as another read to share its batch. */
  readonly warmFees: () => Promise<unknown>;
  /**
   * Signs (does not send) a replacement of a stuck transaction of this wallet: the same nonce, recipient, data and gas,
   * with both fees raised by 12.5% at least (nodes want 10%) and never below the current market's. Undefined when the
   * bytes are not this wallet's EIP-1559 transaction or the fees cannot be read.
   */
  readonly replacement: (tx: SignedTx) => Promise<SignedTx | undefined>;
};

const FEE_TTL_MS = 2_000;

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

type Log = (event: string, fields: Record<string, unknown>) => void;

/** What one `eth_sendRawTransaction` did: the node took it, the node answered with a refusal, or no answer came. */
type RawSend = "accepted" | "refused" | "lost";

/** What a failed send turned out to be, once the node was asked about the hash. */
type Settled = "accepted" | "not-broadcast" | "unknown";

/** What one `eth_sendRawTransactionSync` did within the grace, or that no answer came in it. */
type SyncSend =
  | { readonly kind: "mined"; readonly receipt: RawReceipt }
  /** The node did not take the call (no such method, its parameters, or another refusal): the same bytes go plainly. */
  | { readonly kind: "not-taken"; readonly unsupported: boolean }
  | { readonly kind: "accepted" | "lost" }
  /** No answer within the grace: the receipt, if the node sends it later. */
  | { readonly kind: "waiting"; readonly receipt: Promise<RawReceipt | undefined> };

/** Where a transaction is, by its hash. */
type TxState = "mined" | "pending" | "absent";

type Attempt =
  | {
    readonly tx: SignedTx;
    readonly settled: Settled;
    /** The receipt, when the node answered the send with it. */
    readonly receipt?: RawReceipt | undefined;
    /** The receipt the sync send may still bring, raced with the polls. */
    readonly lateReceipt?: Promise<RawReceipt | undefined> | undefined;
  }
  | { readonly tx: undefined; readonly settled: "not-broadcast" | "signer-unavailable" };
const nothingSent: Attempt = { tx: undefined, settled: "not-broadcast" };
const signerDown: Attempt = { tx: undefined, settled: "signer-unavailable" };

/** Signs in this process with a raw key (no signer configured: tests and today's callers). */
function localSigner(privateKey: HexString, sign: Secp256k1["sign"] | undefined, keccak: Keccak256["bytes"] | undefined): TransactionSigner["signTransaction"] {
  const key = privateKeyBytes(privateKey);
  return (tx: TransactionFields): Promise<SignedTransaction | SignerFailure> => {
    const { raw, txHash } = signEip1559(tx, key, sign, keccak);
    return Promise.resolve({ ok: true, raw, txHash });
  };
}

/**
 * Builds a sender for one wallet: a lock around nonce assignment, signing and broadcast (so
 * concurrent sends never share or skip a nonce), receipts awaited outside the lock, and fee data
 * cached for two seconds.
 *
 * A failed send is never taken at its word (decisions §15): the node is asked about the hash. Held or
 * mined → accepted, and the receipt is awaited as usual. Absent after the node refused it → provably not
 * broadcast. Absent after the answer was lost (timeout, reset, 5xx) → the same bytes are sent once more,
 * and that answer decides. The node unreachable → unknown; the caller keeps the submission open for the
 * reconciler. After anything but a plain success the next send re-reads the wallet's pending nonce.
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
export function createTxSender(options: {
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
}): TxSender {
  const { rpc } = options;
  const account = { address: options.signer?.address ?? options.account!.address };
  const signTransaction = options.signer?.signTransaction ?? localSigner(options.privateKey!, options.sign, options.keccak);
  const wallet = account.address.toLowerCase() as HexString;
  const log = options.log ?? (() => {});
  let fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  let feeRequest: Promise<NonNullable<typeof fees>> | undefined;
  const refreshFees = (): Promise<NonNullable<typeof fees>> => {
    if (fees !== undefined && Date.now() - fees.at < FEE_TTL_MS) return Promise.resolve(fees);
    feeRequest ??= Promise.all([rpc.request("eth_gasPrice", []).then(quantity), maxPriorityFee(rpc)])
      .then(([gasPrice, priority]) => {
        fees = { at: Date.now(), maxFeePerGas: gasPrice * 2n + priority, maxPriorityFeePerGas: priority };
        return fees;
      })
      .finally(() => (feeRequest = undefined));
    return feeRequest;
  };


  const blocks = createBlockCadence();

  let nextNonce: number | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  const sendRaw = async (raw: Hex, nonce: number): Promise<RawSend> => {
    try {
      await rpc.request("eth_sendRawTransaction", [raw]);
      return "accepted";
    } catch (error) {
      log("rpc_error", { op: "sendRawTransaction", nonce, error: describe(error) });
      // Only the node's own answer is a refusal; a failed exchange may have delivered the bytes.
      if (!(error instanceof NodeRpcError)) return "lost";
      // A node that already holds the bytes says so as an error; it has them all the same.
      return ALREADY_KNOWN.test(error.message) ? "accepted" : "refused";
    }
  };
  /** Whether the node has mined, holds, or does not know the hash; undefined when it cannot be asked. */
  const txState = async (txHash: Hex): Promise<TxState | undefined> => {
    try {
      const found = await rpc.request<{ blockNumber?: string | null } | null>("eth_getTransactionByHash", [txHash]);
      if (found === null) return "absent";
      return typeof found?.blockNumber === "string" ? "mined" : "pending";
    } catch (error) {
      log("rpc_error", { op: "getTransactionByHash", error: describe(error) });
      return undefined;
    }
  };
  const settleFailedSend = async (tx: SignedTx, first: RawSend): Promise<Settled> => {
    const state = await txState(tx.txHash);
    if (state === undefined) return "unknown";
    return state === "absent" ? await settleAbsent(tx, first) : "accepted";
  };
  /** The node does not know the hash after `first`: a refusal stands; after a lost answer the same bytes go once more. */
  const settleAbsent = async (tx: SignedTx, first: RawSend): Promise<Settled> => {
    if (first === "refused") return "not-broadcast";
    const again = await sendRaw(tx.raw, tx.nonce);
    if (again === "accepted") return "accepted";
    return again === "refused" ? "not-broadcast" : "unknown";
  };

  /**
   * The node does not know the hash while the sync send is still on its way: the same bytes go plainly. A refusal
   * proves nothing here (the sync bytes may land after it, or have landed just before: "nonce too low"), so the hash
   * is asked again: held → accepted, else unknown, for the reconciler.
   */
  const settleStillInFlight = async (tx: SignedTx): Promise<Settled> => {
    if ((await sendRaw(tx.raw, tx.nonce)) === "accepted") return "accepted";
    const state = await txState(tx.txHash);
    return state === "mined" || state === "pending" ? "accepted" : "unknown";
  };

  // The sync method: off for good (configured, or the node does not take it), or resting until `syncRestsUntil`.
  let syncOff = options.sendSync === "off";
  let syncRestsUntil = 0;
  let syncRested = false;
  const syncGraceMs = options.sendSyncGraceMs ?? SEND_SYNC_GRACE_MS;
  const syncPauseMs = options.sendSyncPauseMs ?? SEND_SYNC_PAUSE_MS;
  const turnSyncOff = (why: string) => {
    if (!syncOff) log("send_sync_off", { why });
    syncOff = true;
  };
  const restSync = () => {
    // Said once: a chain with real blocks rests it every time it is tried again.
    if (!syncRested) log("send_sync_paused", { why: "the node did not mine a transaction on arrival", minutes: syncPauseMs / 60_000 });
    syncRested = true;
    syncRestsUntil = Date.now() + syncPauseMs;
  };
  /** Sends by `eth_sendRawTransactionSync` and waits at most the grace for its answer. */
  const sendSync = async (tx: SignedTx): Promise<SyncSend> => {
    let graceOver = false;
    const answer = rpc.request<unknown>("eth_sendRawTransactionSync", [tx.raw], { alone: true, retries: 0 }).then(
      (result): SyncSend => (isReceiptOf(result, tx.txHash) ? { kind: "mined", receipt: result } : { kind: "accepted" }),
      (error: unknown): SyncSend => {
        // -32603 is the node's confirmation timeout (Anvil, 30 s): it holds the transaction, and no longer mines on arrival.
        if (error instanceof NodeRpcError && error.code === -32603) restSync();
        // Past the grace the send was settled without this answer: only a receipt is still of use.
        if (graceOver) return { kind: "lost" };
        log("rpc_error", { op: "sendRawTransactionSync", nonce: tx.nonce, error: describe(error) });
        if (!(error instanceof NodeRpcError) || error.code === -32603) return { kind: "lost" };
        if (ALREADY_KNOWN.test(error.message)) return { kind: "accepted" };
        return { kind: "not-taken", unsupported: [-32600, -32601, -32602].includes(error.code) || SYNC_UNSUPPORTED.test(error.message) };
      },
    );
    let graceEnds = () => {};
    const grace = new Promise<undefined>((resolve) => (graceEnds = () => resolve(undefined)));
    const timer = setTimeout(graceEnds, syncGraceMs);
    const first = await Promise.race([answer, grace]);
    clearTimeout(timer);
    if (first !== undefined) return first;
    graceOver = true;
    return { kind: "waiting", receipt: answer.then((late) => (late.kind === "mined" ? late.receipt : undefined)) };
  };
  /** Sends stored, signed bytes and settles what the node did with them (decisions §15). */
  const deliver = async (tx: SignedTx): Promise<Attempt> => {
    if (!syncOff && Date.now() >= syncRestsUntil) {
      const sync = await sendSync(tx);
      switch (sync.kind) {
        case "mined":
          return { tx, settled: "accepted", receipt: sync.receipt };
        case "accepted":
          return { tx, settled: "accepted" };
        case "lost":
          return { tx, settled: await settleFailedSend(tx, "lost") };
        case "waiting": {
          // The lock is not held for the node's block time: where is the transaction now?
          const state = await txState(tx.txHash);
          if (state !== "mined") {
            restSync();
            // The node holds the transaction for a later block: receipts are read by block from now on.
            blocks.notOnArrival();
          }
          if (state === undefined) return { tx, settled: "unknown" };
          const settled = state === "absent" ? await settleStillInFlight(tx) : "accepted";
          return { tx, settled, lateReceipt: sync.receipt };
        }
        case "not-taken": {
          if (sync.unsupported) turnSyncOff("the node does not take eth_sendRawTransactionSync");
          const plain = await sendRaw(tx.raw, tx.nonce);
          if (plain === "accepted") {
            turnSyncOff("the node took by eth_sendRawTransaction what eth_sendRawTransactionSync did not");
            return { tx, settled: "accepted" };
          }
          return { tx, settled: await settleFailedSend(tx, plain) };
        }
      }
    }
    const first = await sendRaw(tx.raw, tx.nonce);
    return { tx, settled: first === "accepted" ? "accepted" : await settleFailedSend(tx, first) };
  };
  const pendingCount = async (): Promise<number | undefined> => {
    try {
      return Number(quantity(await rpc.request("eth_getTransactionCount", [account.address, "pending"])));
    } catch (error) {
      log("rpc_error", { op: "getTransactionCount", error: describe(error) });
      return undefined;
    }
  };

  return {
    address: account.address,
    warmFees: () => refreshFees().catch(() => undefined),
    async checkFunds(gas) {
      try {
        // Read on every request, in the batch of the nonce read (issue 43 weighed keeping it for a while: a wallet emptied
        // elsewhere would then be found out by the node's refusal after the replay record, not before it, decisions §15).
        const [balance, fee] = await Promise.all([rpc.request("eth_getBalance", [account.address, "latest"]).then(quantity), refreshFees()]);
        return balance >= gas * fee.maxFeePerGas ? "ok" : "low";
      } catch (error) {
        log("rpc_error", { op: "getBalance", error: describe(error) });
        return "rpc-error";
      }
    },
    async replacement(tx) {
      if (tx.wallet.toLowerCase() !== wallet) return undefined;
      let parsed: ReturnType<typeof parseTransaction>;
      try {
        parsed = parseTransaction(tx.raw);
      } catch {
        return undefined;
      }
      if (parsed.type !== "eip1559" || parsed.nonce !== tx.nonce || parsed.to == null) return undefined;
      let fee: NonNullable<typeof fees>;
      try {
        fee = await refreshFees();
      } catch (error) {
        log("rpc_error", { op: "fees", error: describe(error) });
        return undefined;
      }
      const raised = (old: bigint | undefined) => ((old ?? 0n) * 9n + 7n) / 8n;
      const larger = (a: bigint, b: bigint) => (a > b ? a : b);
      const maxPriorityFeePerGas = larger(raised(parsed.maxPriorityFeePerGas), fee.maxPriorityFeePerGas);
      const maxFeePerGas = larger(larger(raised(parsed.maxFeePerGas), fee.maxFeePerGas), maxPriorityFeePerGas);
      const signed = await signTransaction({
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
    },
    rebroadcast: (tx) =>
      exclusive(async () => {
        const sent = await sendRaw(tx.raw, tx.nonce);
        nextNonce = undefined;
        return sent === "lost" ? "rpc-error" : sent;
      }),
    async send(request) {
      let fee: NonNullable<typeof fees>;
      try {
        fee = await refreshFees();
      } catch (error) {
        log("rpc_error", { op: "fees", error: describe(error) });
        return { ok: false, reason: "not-broadcast" };
      }
      const signAndSend = async (nonce: number): Promise<Attempt> => {
        const signed = await signTransaction({
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
        const { raw, txHash } = signed;
        const tx: SignedTx = { txHash, raw, wallet, nonce };
        try {
          await request.onSigned?.(tx);
        } catch (error) {
          // Not stored, so not sent: a transaction nobody could settle must never leave.
          log("store_error", { op: "onSigned", error: error instanceof Error ? error.message : String(error) });
          return nothingSent;
        }
        return await deliver(tx);
      };

      const attempt = await exclusive(async (): Promise<Attempt> => {
        const shared = options.nonces;
        if (shared !== undefined) {
          // Several instances: the next nonce is the larger of what they recorded and what the node has.
          let outcome: Attempt = nothingSent;
          try {
            return await shared.withLock(options.chainId, account.address, async (storedNext) => {
              const pending = await pendingCount();
              if (pending === undefined) return { used: undefined, value: outcome };
              const nonce = Math.max(storedNext, pending);
              outcome = await signAndSend(nonce);
              return { used: outcome.settled === "accepted" ? nonce : undefined, value: outcome };
            });
          } catch (error) {
            // The database failed; if the transaction left, its outcome still stands (the node counts it).
            log("nonce_lock_error", { error: error instanceof Error ? error.message : String(error) });
            return outcome;
          }
        }
        if (nextNonce === undefined) {
          const pending = await pendingCount();
          if (pending === undefined) return nothingSent;
          nextNonce = pending;
        }
        const nonce = nextNonce;
        const outcome = await signAndSend(nonce);
        // Unless the node plainly took it, it may or may not hold this nonce: re-read the pending count next time. Not
        // signed: nothing left, the nonce is still the next one.
        nextNonce = outcome.settled === "accepted" ? nonce + 1 : outcome.settled === "signer-unavailable" ? nonce : undefined;
        return outcome;
      });
      if (attempt.settled === "signer-unavailable") return { ok: false, reason: "signer-unavailable" };
      if (attempt.tx === undefined || attempt.settled === "not-broadcast") return { ok: false, reason: "not-broadcast" };
      // A send answered with its receipt goes straight to its outcome, which the caller records: a "sent" record
      // in between would be one more commit that no crash could need (a signed record is settled the same way).
      if (attempt.receipt === undefined) await request.onSent?.(attempt.tx.txHash);
      if (attempt.settled === "unknown") return { ok: false, reason: "unknown-outcome", txHash: attempt.tx.txHash };
      const outcome: SendOutcome & { readonly arrival?: Arrival } = attempt.receipt !== undefined
        ? receiptOutcome(attempt.tx.txHash, attempt.receipt)
        : await awaitReceipt(rpc, attempt.tx.txHash, options.receiptTimeoutMs ?? 120_000, log, attempt.lateReceipt, blocks);
      if (outcome.ok || outcome.reason === "reverted") {
        if (attempt.receipt === undefined) blocks.seen(outcome.blockNumber, outcome.arrival);
        await options.onMined?.(outcome.blockNumber);
      }
      return outcome;
    },
  };
}

/** A receipt as the node returns it (the fields read here). */
type RawReceipt = { readonly blockNumber: string; readonly gasUsed: string; readonly status: string; readonly logs: readonly ReceiptLog[] };

/** A node's words for "I hold these bytes already". */
const ALREADY_KNOWN = /already known|known transaction|already imported/i;
/** A refusal of the sync call itself rather than of the transaction (providers word it in many ways). */
const SYNC_UNSUPPORTED = /method|unsupported|not supported|not available|not allowed|whitelist/i;

/** Whether a sync send's answer is the receipt of `txHash` (a node answering anything else took the bytes all the same). */
function isReceiptOf(value: unknown, txHash: Hex): value is RawReceipt {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return typeof r.transactionHash === "string" && r.transactionHash.toLowerCase() === txHash.toLowerCase() &&
    typeof r.blockNumber === "string" && typeof r.gasUsed === "string" && typeof r.status === "string" && Array.isArray(r.logs);
}

/** A receipt as the outcome of its send: reverted unless its status is 1. */
function receiptOutcome(txHash: HexString, receipt: RawReceipt): SendOutcome {
  const blockNumber = BigInt(receipt.blockNumber);
  const gasUsed = BigInt(receipt.gasUsed);
  if (receipt.status !== "0x1") return { ok: false, reason: "reverted", txHash, blockNumber, gasUsed };
  return { ok: true, txHash, blockNumber, logs: receipt.logs, gasUsed };
}

/** One receipt read; null when the node has none yet or could not be asked (logged). */
async function readReceipt(rpc: JsonRpc, txHash: Hex, log: Log): Promise<RawReceipt | null> {
  try {
    return await rpc.request<RawReceipt | null>("eth_getTransactionReceipt", [txHash]);
  } catch (error) {
    log("rpc_error", { op: "getTransactionReceipt", error: describe(error) });
    return null;
  }
}

/**
 * When blocks come, as the receipts this sender polled for showed them (issue 43): the first time each block was seen
 * and the mean time between blocks. A node that mines on arrival has no cadence: its receipts are there at once.
 */
type BlockCadence = {
  /** A receipt found by a poll: its block, and how soon the polls that start at once found it, if they did. */
  readonly seen: (blockNumber: bigint, arrival: Arrival | undefined) => void;
  /** The node was seen to hold a sent transaction for a later block (a sync send not mined within its grace). */
  readonly notOnArrival: () => void;
  /** Whether this wait goes by block (once the node is known not to mine on arrival; now and then not, see below). */
  readonly byBlock: () => boolean;
  /** How long until the next block is due (plus a margin), or undefined while the cadence is not known. */
  readonly untilNext: () => number | undefined;
};

/**
 * How soon a receipt was found by the polls that start at once: within 50 ms (`at-once`: a node that mines on
 * arrival), or only after 250 ms (`late`: one that does not).
 */
type Arrival = "at-once" | "late";

/**
 * A node known not to mine on arrival only from slow receipts (no sync send said so) has every sixteenth receipt polled
 * from the start again, so a devnet that was slow for a while (a loaded machine) is found to mine on arrival again.
 */
const RECHECK_EVERY = 16;

/** Bounds of a believable time between blocks, in ms. */
const CADENCE_MIN_MS = 50;
const CADENCE_MAX_MS = 60_000;
/** The longest wait for a block before the receipt is read anyway (a cadence learnt from a chain mined by hand). */
const CADENCE_WAIT_CAP_MS = 5_000;
/** Receipts kept to learn the cadence from. */
const CADENCE_WINDOW = 16;

/**
 * Learns the cadence from the receipts polled for: the time between blocks is the slope over the kept receipts (each
 * was seen some time after its block was made, so the slope's error shrinks as the window spans more blocks), and the
 * time each block is due is the earliest sighting carried forward by that slope.
 */
function createBlockCadence(): BlockCadence {
  let seen: { block: bigint; atMs: number }[] = [];
  /** Why receipts go by block: the sync send's word, slow receipts, or not (yet). */
  let evidence: "sync" | "slow" | undefined;
  let waits = 0;
  const intervalOf = (): number | undefined => {
    if (seen.length < 3) return undefined;
    const first = seen[0]!;
    const last = seen.at(-1)!;
    const each = (last.atMs - first.atMs) / Number(last.block - first.block);
    return each >= CADENCE_MIN_MS && each <= CADENCE_MAX_MS ? each : undefined;
  };
  return {
    seen(blockNumber, arrival) {
      // A node that mines on arrival has no cadence: polls start at once again.
      if (arrival === "at-once") {
        seen = [];
        evidence = undefined;
        return;
      }
      if (arrival === "late") evidence ??= "slow";
      const last = seen.at(-1);
      if (last !== undefined && blockNumber <= last.block) return;
      seen.push({ block: blockNumber, atMs: Date.now() });
      if (seen.length > CADENCE_WINDOW) seen.shift();
    },
    notOnArrival() {
      evidence = "sync";
    },
    byBlock() {
      if (evidence === undefined) return false;
      return evidence === "sync" || ++waits % RECHECK_EVERY !== 0;
    },
    untilNext() {
      const interval = intervalOf();
      if (interval === undefined) return undefined;
      const last = seen.at(-1)!;
      // When the newest block was made, at the latest: the earliest sighting of any kept block, carried forward.
      let made = last.atMs;
      for (const s of seen) made = Math.min(made, s.atMs + Number(last.block - s.block) * interval);
      const now = Date.now();
      const due = made + Math.max(1, Math.ceil((now - made) / interval)) * interval;
      // A block is seen some time after it is made: a margin of a tenth of the interval, at least 20 ms.
      return Math.min(CADENCE_WAIT_CAP_MS, Math.max(0, due - now) + Math.max(20, interval / 10));
    },
  };
}

/**
 * Waits for the receipt; `late`, a sync send's answer still to come, ends the wait when it brings the receipt. Once the
 * node is known not to mine on arrival (a sync send it held, or receipts that took 250 ms) and the chain's cadence is
 * known, the receipt is read once each block is due (by block, issue 43: a receipt polled every few ms up to a second
 * cost 8.6 calls a write on a chain of 1 s blocks); until then, and on a node that mines on arrival, at 5 ms and then
 * twice as long each time, up to a second.
 */
async function awaitReceipt(
  rpc: JsonRpc,
  txHash: HexString,
  timeoutMs: number,
  log: Log,
  late: Promise<RawReceipt | undefined> | undefined,
  blocks: BlockCadence,
): Promise<SendOutcome & { readonly arrival?: Arrival }> {
  const started = Date.now();
  let delay = 5;
  let sync = late?.then((receipt) => {
    sync = undefined;
    return receipt;
  });
  const wait = async (ms: number) => (sync === undefined ? await Bun.sleep(ms) : await Promise.race([sync, Bun.sleep(ms)]));
  // By block: nothing is read before the next block is due (a sync answer may bring the receipt first).
  const byBlock = blocks.byBlock();
  const first = byBlock ? blocks.untilNext() : undefined;
  if (first !== undefined) {
    const answered = await wait(first);
    if (answered !== undefined) return receiptOutcome(txHash, answered);
  }
  for (;;) {
    const receipt = await readReceipt(rpc, txHash, log);
    if (receipt) {
      const after = Date.now() - started;
      const arrival = first !== undefined ? undefined : after < 50 ? "at-once" : after >= 250 ? "late" : undefined;
      return { ...receiptOutcome(txHash, receipt), ...(arrival === undefined ? {} : { arrival }) };
    }
    if (Date.now() - started > timeoutMs) return { ok: false, reason: "unknown-outcome", txHash };
    const answered = await wait((byBlock ? blocks.untilNext() : undefined) ?? delay);
    if (answered !== undefined) return receiptOutcome(txHash, answered);
    delay = Math.min(delay * 2, 1_000);
  }
}

/**
 * The priority fee as viem estimates it: `eth_maxPriorityFeePerGas`, or for a node without it the gas price less
 * the latest block's base fee (never below 0).
 */
async function maxPriorityFee(rpc: JsonRpc): Promise<bigint> {
  try {
    return quantity(await rpc.request("eth_maxPriorityFeePerGas", []));
  } catch {
    const [block, gasPrice] = await Promise.all([
      rpc.request<{ baseFeePerGas?: string } | null>("eth_getBlockByNumber", ["latest", false]),
      rpc.request("eth_gasPrice", []).then(quantity),
    ]);
    if (block?.baseFeePerGas === undefined) throw new Error("The chain has no EIP-1559 base fee");
    const fee = gasPrice - quantity(block.baseFeePerGas);
    return fee < 0n ? 0n : fee;
  }
}

/** Sends an EAS attestation (its calldata `data`) from `sender`, and reads the new uid off the receipt. */
export async function submitAttestation(
  sender: TxSender,
  easAddress: HexString,
  data: HexString,
  options: SubmitOptions,
  purpose?: SignaturePurpose,
): Promise<Submission> {
  const outcome = await sender.send({ to: easAddress, data, gas: options.gas, onSigned: options.onSigned, onSent: options.onSent, purpose });
  if (!outcome.ok) return outcome;
  return { ok: true, txHash: outcome.txHash, blockNumber: outcome.blockNumber, uid: attestedUid(outcome.logs, easAddress) };
}

/** Sends EAS `multiAttestByDelegation` (its calldata `data`) from `sender`, and reads every new uid off the receipt, in order. */
export async function submitAttestationBatch(sender: TxSender, easAddress: HexString, data: HexString, options: SubmitOptions): Promise<BatchSubmission> {
  const outcome = await sender.send({ to: easAddress, data, gas: options.gas, onSigned: options.onSigned, onSent: options.onSent });
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

/** A short, URL-free description of an error for logs. */
export function describe(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  if (error instanceof NodeRpcError) return `${error.message} (code ${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
