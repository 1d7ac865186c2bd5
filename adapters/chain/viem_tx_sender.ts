import { BaseError, type Hex, parseTransaction } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { FundsCheck, HexString, SignedTx } from "../../ports/eas.ts";
import type { Rebroadcast } from "../../ports/submissions.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import { ATTESTED_TOPIC } from "../../domain/eas_abi.ts";
import { type JsonRpc, NodeRpcError, quantity } from "./json_rpc.ts";
import { privateKeyBytes, signEip1559 } from "./eip1559.ts";

/** The outcome of sending one transaction and waiting for its receipt. */
export type SendOutcome =
  | { readonly ok: true; readonly txHash: HexString; readonly blockNumber: bigint; readonly logs: readonly ReceiptLog[]; readonly gasUsed?: bigint }
  | { readonly ok: false; readonly reason: "not-broadcast" }
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
  /** Called once the transaction may have reached the node: accepted, or its fate could not be learnt. */
  readonly onSent?: ((txHash: HexString) => Promise<void>) | undefined;
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

type Log = (event: string, fields: Record<string, unknown>) => void;

/** What one `eth_sendRawTransaction` did: the node took it, the node answered with a refusal, or no answer came. */
type RawSend = "accepted" | "refused" | "lost";

/** What a failed send turned out to be, once the node was asked about the hash. */
type Settled = "accepted" | "not-broadcast" | "unknown";

type Attempt = { readonly tx: SignedTx; readonly settled: Settled } | { readonly tx: undefined; readonly settled: "not-broadcast" };
const nothingSent: Attempt = { tx: undefined, settled: "not-broadcast" };

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
 */
export function createTxSender(options: {
  rpc: JsonRpc;
  account: PrivateKeyAccount;
  /** The account's key: transactions are signed by eip1559.ts (viem's bytes, without its hex round trips). */
  privateKey: HexString;
  /** The secp256k1 signature (adapters/secp256k1: libsecp256k1 when present); @noble/curves when absent. */
  sign?: Secp256k1["sign"] | undefined;
  chainId: number;
  receiptTimeoutMs?: number | undefined;
  log?: Log | undefined;
  /** Shared nonce bookkeeping when several instances send from this wallet (PostgreSQL storage). */
  nonces?: WalletNonces | undefined;
  /** Runs after a receipt arrived and before the caller hears of it (the devnet saves its state here). */
  onMined?: (() => Promise<void>) | undefined;
}): TxSender {
  const { rpc, account } = options;
  const key = privateKeyBytes(options.privateKey);
  const sign = options.sign;
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
      return /already known|known transaction|already imported/i.test(error.message) ? "accepted" : "refused";
    }
  };
  /** Whether the node holds or has mined the hash; undefined when it cannot be asked. */
  const nodeHolds = async (txHash: Hex): Promise<boolean | undefined> => {
    try {
      return (await rpc.request("eth_getTransactionByHash", [txHash])) !== null;
    } catch (error) {
      log("rpc_error", { op: "getTransactionByHash", error: describe(error) });
      return undefined;
    }
  };
  const settleFailedSend = async (tx: SignedTx, first: RawSend): Promise<Settled> => {
    const held = await nodeHolds(tx.txHash);
    if (held === true) return "accepted";
    if (held === undefined) return "unknown";
    if (first === "refused") return "not-broadcast";
    const again = await sendRaw(tx.raw, tx.nonce);
    if (again === "accepted") return "accepted";
    return again === "refused" ? "not-broadcast" : "unknown";
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
      const signed = signEip1559({
        chainId: options.chainId,
        to: parsed.to,
        data: parsed.data ?? "0x",
        gas: parsed.gas ?? 0n,
        nonce: tx.nonce,
        maxFeePerGas,
        maxPriorityFeePerGas,
        value: parsed.value ?? 0n,
      }, key, sign);
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
        const { raw, txHash } = signEip1559({
          chainId: options.chainId,
          to: request.to,
          data: request.data,
          gas: request.gas,
          nonce,
          maxFeePerGas: fee.maxFeePerGas,
          maxPriorityFeePerGas: fee.maxPriorityFeePerGas,
          value: 0n,
        }, key, sign);
        const tx: SignedTx = { txHash, raw, wallet, nonce };
        try {
          await request.onSigned?.(tx);
        } catch (error) {
          // Not stored, so not sent: a transaction nobody could settle must never leave.
          log("store_error", { op: "onSigned", error: error instanceof Error ? error.message : String(error) });
          return nothingSent;
        }
        const first = await sendRaw(raw, nonce);
        return { tx, settled: first === "accepted" ? "accepted" : await settleFailedSend(tx, first) };
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
        // Unless the node plainly took it, it may or may not hold this nonce: re-read the pending count next time.
        nextNonce = outcome.settled === "accepted" ? nonce + 1 : undefined;
        return outcome;
      });
      if (attempt.tx === undefined || attempt.settled === "not-broadcast") return { ok: false, reason: "not-broadcast" };
      await request.onSent?.(attempt.tx.txHash);
      if (attempt.settled === "unknown") return { ok: false, reason: "unknown-outcome", txHash: attempt.tx.txHash };
      const outcome = await awaitReceipt(rpc, attempt.tx.txHash, options.receiptTimeoutMs ?? 120_000, log);
      if (outcome.ok || outcome.reason === "reverted") await options.onMined?.();
      return outcome;
    },
  };
}

/** A receipt as the node returns it (the fields read here). */
type RawReceipt = { readonly blockNumber: string; readonly gasUsed: string; readonly status: string; readonly logs: readonly ReceiptLog[] };

/** One receipt read; null when the node has none yet or could not be asked (logged). */
async function readReceipt(rpc: JsonRpc, txHash: Hex, log: Log): Promise<RawReceipt | null> {
  try {
    return await rpc.request<RawReceipt | null>("eth_getTransactionReceipt", [txHash]);
  } catch (error) {
    log("rpc_error", { op: "getTransactionReceipt", error: describe(error) });
    return null;
  }
}

async function awaitReceipt(rpc: JsonRpc, txHash: Hex, timeoutMs: number, log: Log): Promise<SendOutcome> {
  const started = Date.now();
  // A devnet mines right after it takes the transaction, so the receipt is usually there at once or a few ms later
  // (Anvil mines in the background: a receipt read in the send's own batch found nothing); a chain with real blocks
  // costs a handful of extra polls before the delay reaches its 1 s cap.
  let delay = 5;
  for (;;) {
    const receipt = await readReceipt(rpc, txHash, log);
    if (receipt) {
      const blockNumber = BigInt(receipt.blockNumber);
      const gasUsed = BigInt(receipt.gasUsed);
      if (receipt.status !== "0x1") return { ok: false, reason: "reverted", txHash, blockNumber, gasUsed };
      return { ok: true, txHash, blockNumber, logs: receipt.logs, gasUsed };
    }
    if (Date.now() - started > timeoutMs) return { ok: false, reason: "unknown-outcome", txHash };
    await Bun.sleep(delay);
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
