/**
 * Delivering signed bytes to the node and settling what it did with them (decisions §15), by `eth_sendRawTransaction`
 * or EIP-7966 `eth_sendRawTransactionSync` (split from viem_tx_sender.ts, issue 47; the rules are createTxSender's).
 */
import type { Hex } from "viem";
import type { SignedTx } from "../../ports/eas.ts";
import { type JsonRpc, NodeRpcError, RETRY_CODES } from "./json_rpc.ts";
import { ALREADY_KNOWN, type BlockCadence, describe, isReceiptOf, type Log, type RawReceipt, SYNC_UNSUPPORTED } from "./_tx_receipts.ts";

/** What one `eth_sendRawTransaction` did: the node took it, the node answered with a refusal, or no answer came. */
export type RawSend = "accepted" | "refused" | "lost";

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

export type Attempt =
  | {
    readonly tx: SignedTx;
    readonly settled: Settled;
    /** The receipt, when the node answered the send with it. */
    readonly receipt?: RawReceipt | undefined;
    /** The receipt the sync send may still bring, raced with the polls. */
    readonly lateReceipt?: Promise<RawReceipt | undefined> | undefined;
  }
  | { readonly tx: undefined; readonly settled: "not-broadcast" | "signer-unavailable" | "expired" | "rpc-error" | "nonce-unavailable" };
export const nothingSent: Attempt = { tx: undefined, settled: "not-broadcast" };
/** The wallet's shared nonce (several instances) could not be taken from the storage: nothing sent, no nonce used. */
export const nonceLockFailed: Attempt = { tx: undefined, settled: "nonce-unavailable" };
/** The wallet's pending nonce could not be read: nothing signed or sent, before any broadcast (500 `RPC_ERROR`). */
export const nonceUnread: Attempt = { tx: undefined, settled: "rpc-error" };
export const signerDown: Attempt = { tx: undefined, settled: "signer-unavailable" };
/** The request's `stillValid` said no under the lock: nothing signed, the nonce still the next one. */
export const noLongerValid: Attempt = { tx: undefined, settled: "expired" };

/** The sender's delivery state: its node, its log, the chain's block cadence, and whether the sync method is used. */
export type Delivery = {
  readonly rpc: JsonRpc;
  readonly log: Log;
  readonly blocks: BlockCadence;
  /** The sync method off for good (configured, or the node does not take it)... */
  syncOff: boolean;
  /** ...or resting until then. */
  syncRestsUntil: number;
  syncRested: boolean;
  readonly syncGraceMs: number;
  readonly syncPauseMs: number;
};

/**
 * Sends raw bytes once by `eth_sendRawTransaction`. Never retried by the JSON-RPC client (`retries: 0`): a lost answer
 * is settled here, by asking about the hash; retried blindly, the retry's refusal ("nonce too low", the first bytes
 * having landed) read as the node's first answer, "not broadcast", for a transaction that may be mined.
 */
export async function sendRaw(d: Delivery, raw: Hex, nonce: number): Promise<RawSend> {
  try {
    await d.rpc.request("eth_sendRawTransaction", [raw], { retries: 0 });
    return "accepted";
  } catch (error) {
    d.log("rpc_error", { op: "sendRawTransaction", nonce, error: describe(error) });
    // Only the node's own answer is a refusal; a failed exchange (an HTTP 429 too: RpcTransportError) may have
    // delivered the bytes.
    if (!(error instanceof NodeRpcError)) return "lost";
    return rawSendAnswer(error.code, error.message);
  }
}

/**
 * JSON-RPC error codes to a send that are no verdict on the bytes: the ones viem's transport retries (json_rpc.ts
 * RETRY_CODES), an internal error (-32603; the node may have taken them first, as for the sync send), an unknown error
 * (-1) and a provider's rate limit (-32005 "limit exceeded", -32007, 429: the call was not run). Settled as a lost
 * answer, by the hash. Read as a refusal, the gas and record went back for a transaction that could still land, or (a
 * rate limit, once the client no longer retried it) a send the node never ran was "not broadcast".
 */
const NO_VERDICT_CODES = RETRY_CODES;

/** What a node's JSON-RPC error to `eth_sendRawTransaction` says of the bytes (the witness's own rebroadcast's too). */
export function rawSendAnswer(code: number, message: string): RawSend {
  // A node that already holds the bytes says so as an error; it has them all the same.
  if (ALREADY_KNOWN.test(message)) return "accepted";
  return NO_VERDICT_CODES.has(code) ? "lost" : "refused";
}

/** Whether the node has mined, holds, or does not know the hash; undefined when it cannot be asked. */
async function txState(d: Delivery, txHash: Hex): Promise<TxState | undefined> {
  try {
    const found = await d.rpc.request<{ blockNumber?: string | null } | null>("eth_getTransactionByHash", [txHash]);
    if (found === null) return "absent";
    return typeof found?.blockNumber === "string" ? "mined" : "pending";
  } catch (error) {
    d.log("rpc_error", { op: "getTransactionByHash", error: describe(error) });
    return undefined;
  }
}

async function settleFailedSend(d: Delivery, tx: SignedTx, first: RawSend): Promise<Settled> {
  const state = await txState(d, tx.txHash);
  if (state === undefined) return "unknown";
  return state === "absent" ? await settleAbsent(d, tx, first) : "accepted";
}

/**
 * The node does not know the hash after `first`: a refusal stands; after a lost answer the same bytes go once more, as
 * when the sync send is still on its way ({@link settleStillInFlight}): the lost bytes may have landed (a load-balanced
 * provider's other backend had not seen them), so a refusal of the resend ("nonce too low") proves nothing.
 */
async function settleAbsent(d: Delivery, tx: SignedTx, first: RawSend): Promise<Settled> {
  if (first === "refused") return "not-broadcast";
  return await settleStillInFlight(d, tx);
}

/**
 * The node does not know the hash while the first bytes may still arrive, or have arrived unseen (the sync send on
 * its way, or a send whose answer was lost): the same bytes go plainly. A refusal proves nothing here (the first bytes
 * may land after it, or have landed just before: "nonce too low"), so the hash is asked again: held or mined →
 * accepted, else unknown, for the reconciler.
 */
async function settleStillInFlight(d: Delivery, tx: SignedTx): Promise<Settled> {
  if ((await sendRaw(d, tx.raw, tx.nonce)) === "accepted") return "accepted";
  const state = await txState(d, tx.txHash);
  return state === "mined" || state === "pending" ? "accepted" : "unknown";
}

function turnSyncOff(d: Delivery, why: string) {
  if (!d.syncOff) d.log("send_sync_off", { why });
  d.syncOff = true;
}

function restSync(d: Delivery) {
  // Said once: a chain with real blocks rests it every time it is tried again.
  if (!d.syncRested) d.log("send_sync_paused", { why: "the node did not mine a transaction on arrival", minutes: d.syncPauseMs / 60_000 });
  d.syncRested = true;
  d.syncRestsUntil = Date.now() + d.syncPauseMs;
}

/** Sends by `eth_sendRawTransactionSync` and waits at most the grace for its answer. */
async function sendSync(d: Delivery, tx: SignedTx): Promise<SyncSend> {
  let graceOver = false;
  const answer = d.rpc.request<unknown>("eth_sendRawTransactionSync", [tx.raw], { alone: true, retries: 0 }).then(
    (result): SyncSend => (isReceiptOf(result, tx.txHash) ? { kind: "mined", receipt: result } : { kind: "accepted" }),
    (error: unknown): SyncSend => {
      // -32603 is the node's confirmation timeout (Anvil, 30 s): it holds the transaction, and no longer mines on arrival.
      if (error instanceof NodeRpcError && error.code === -32603) restSync(d);
      // Past the grace the send was settled without this answer: only a receipt is still of use.
      if (graceOver) return { kind: "lost" };
      d.log("rpc_error", { op: "sendRawTransactionSync", nonce: tx.nonce, error: describe(error) });
      if (!(error instanceof NodeRpcError) || error.code === -32603) return { kind: "lost" };
      if (ALREADY_KNOWN.test(error.message)) return { kind: "accepted" };
      return { kind: "not-taken", unsupported: [-32600, -32601, -32602].includes(error.code) || SYNC_UNSUPPORTED.test(error.message) };
    },
  );
  let graceEnds = () => {};
  const grace = new Promise<undefined>((resolve) => (graceEnds = () => resolve(undefined)));
  const timer = setTimeout(graceEnds, d.syncGraceMs);
  const first = await Promise.race([answer, grace]);
  clearTimeout(timer);
  if (first !== undefined) return first;
  graceOver = true;
  return { kind: "waiting", receipt: answer.then((late) => (late.kind === "mined" ? late.receipt : undefined)) };
}

/** Sends stored, signed bytes and settles what the node did with them (decisions §15). */
export async function deliver(d: Delivery, tx: SignedTx): Promise<Attempt> {
  if (!d.syncOff && Date.now() >= d.syncRestsUntil) return await deliverSync(d, tx);
  const first = await sendRaw(d, tx.raw, tx.nonce);
  return { tx, settled: first === "accepted" ? "accepted" : await settleFailedSend(d, tx, first) };
}

async function deliverSync(d: Delivery, tx: SignedTx): Promise<Attempt> {
  const sync = await sendSync(d, tx);
  switch (sync.kind) {
    case "mined":
      return { tx, settled: "accepted", receipt: sync.receipt };
    case "accepted":
      return { tx, settled: "accepted" };
    case "lost":
      return { tx, settled: await settleFailedSend(d, tx, "lost") };
    case "waiting": {
      // The lock is not held for the node's block time: where is the transaction now?
      const state = await txState(d, tx.txHash);
      if (state !== "mined") {
        restSync(d);
        // The node holds the transaction for a later block: receipts are read by block from now on.
        d.blocks.notOnArrival();
      }
      if (state === undefined) return { tx, settled: "unknown" };
      const settled = state === "absent" ? await settleStillInFlight(d, tx) : "accepted";
      return { tx, settled, lateReceipt: sync.receipt };
    }
    case "not-taken": {
      if (sync.unsupported) turnSyncOff(d, "the node does not take eth_sendRawTransactionSync");
      const plain = await sendRaw(d, tx.raw, tx.nonce);
      if (plain === "accepted") {
        turnSyncOff(d, "the node took by eth_sendRawTransaction what eth_sendRawTransactionSync did not");
        return { tx, settled: "accepted" };
      }
      return { tx, settled: await settleFailedSend(d, tx, plain) };
    }
  }
}
