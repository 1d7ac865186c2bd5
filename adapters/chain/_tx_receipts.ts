/**
 * Receipts of the wallet's transactions (split from viem_tx_sender.ts, issue 47): what a send came to, the receipt read
 * by the chain's block cadence, and the short error descriptions the chain adapters log.
 */
import { BaseError, type Hex } from "viem";
import type { HexString } from "../../ports/eas.ts";
import { type JsonRpc, NodeRpcError } from "./json_rpc.ts";

/** How the sender logs (an event and its fields). */
export type Log = (event: string, fields: Record<string, unknown>) => void;

/** The outcome of sending one transaction and waiting for its receipt. */
export type SendOutcome =
  | { readonly ok: true; readonly txHash: HexString; readonly blockNumber: bigint; readonly logs: readonly ReceiptLog[]; readonly gasUsed?: bigint; readonly effectiveGasPrice?: bigint }
  | { readonly ok: false; readonly reason: "not-broadcast" }
  /** A read before signing failed (the wallet's pending nonce, or its fees): nothing was signed or sent, the nonce stays free. */
  | { readonly ok: false; readonly reason: "rpc-error" }
  /** The wallet's shared nonce could not be taken (its storage failed): nothing was sent, no nonce used. */
  | { readonly ok: false; readonly reason: "nonce-unavailable" }
  /** The wallet's signer gave no signature (decisions §27): nothing was sent, and the nonce stays free. */
  | { readonly ok: false; readonly reason: "signer-unavailable" }
  /** The request's `stillValid` said no once the wallet's lock was held: nothing was signed or sent, the nonce stays free. */
  | { readonly ok: false; readonly reason: "expired" }
  | { readonly ok: false; readonly reason: "reverted"; readonly txHash: HexString; readonly blockNumber: bigint; readonly gasUsed?: bigint; readonly effectiveGasPrice?: bigint }
  | { readonly ok: false; readonly reason: "unknown-outcome"; readonly txHash: HexString };

/** A log of a receipt, as the node returned it. */
export type ReceiptLog = { readonly address: string; readonly topics: readonly string[]; readonly data: string };

/** A receipt as the node returns it (the fields read here). */
export type RawReceipt = {
  readonly blockNumber: string;
  readonly gasUsed: string;
  readonly status: string;
  readonly logs: readonly ReceiptLog[];
  /** What the chain charged per gas (the block's base fee plus the priority fee paid); every EIP-1559 node gives it. */
  readonly effectiveGasPrice?: string;
};

/** A node's words for "I hold these bytes already". */
export const ALREADY_KNOWN = /already known|known transaction|already imported/i;
/** A refusal of the sync call itself rather than of the transaction (providers word it in many ways). */
export const SYNC_UNSUPPORTED = /method|unsupported|not supported|not available|not allowed|whitelist/i;

/** Whether a sync send's answer is the receipt of `txHash` (a node answering anything else took the bytes all the same). */
export function isReceiptOf(value: unknown, txHash: Hex): value is RawReceipt {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return typeof r.transactionHash === "string" && r.transactionHash.toLowerCase() === txHash.toLowerCase() &&
    typeof r.blockNumber === "string" && typeof r.gasUsed === "string" && typeof r.status === "string" && Array.isArray(r.logs);
}

/** A receipt as the outcome of its send: reverted unless its status is 1. */
export function receiptOutcome(txHash: HexString, receipt: RawReceipt): SendOutcome {
  const blockNumber = BigInt(receipt.blockNumber);
  const gasUsed = BigInt(receipt.gasUsed);
  const price = typeof receipt.effectiveGasPrice === "string" && /^0x[0-9a-fA-F]{1,64}$/.test(receipt.effectiveGasPrice) ? { effectiveGasPrice: BigInt(receipt.effectiveGasPrice) } : {};
  if (receipt.status !== "0x1") return { ok: false, reason: "reverted", txHash, blockNumber, gasUsed, ...price };
  return { ok: true, txHash, blockNumber, logs: receipt.logs, gasUsed, ...price };
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
export type BlockCadence = {
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
export type Arrival = "at-once" | "late";

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
export function createBlockCadence(): BlockCadence {
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
export async function awaitReceipt(
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

/** A short, URL-free description of an error for logs. */
export function describe(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  if (error instanceof NodeRpcError) return `${error.message} (code ${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
