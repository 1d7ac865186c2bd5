/**
 * Proof of interaction (decisions §29): has a wallet used an app's contract? Candidates come from an
 * Etherscan-compatible explorer (the operator's for the chain, or the one the embed names), and each is confirmed
 * on a chain the deployment reads (its receipt: sender, recipient, success), so an explorer's word alone never makes
 * a user verified. No explorer, a chain the deployment does not read, an explorer that fails: `not-checked`, never an
 * error. One transaction's receipt is also answered on its own (`GET /v1/tx-proofs`), read once and kept.
 */
import type { Clock } from "../../ports/clock.ts";
import type { ExplorerTxList, TxReceiptFacts, TxReceiptReader } from "../../ports/interactions.ts";
import { parseChainParam } from "../chains/mod.ts";
import { type LookupBudget, takeLookup } from "../discovery/mod.ts";
import { type RateDecision, registrableDomain } from "../rate_limit.ts";
import { type Fail, fail, ok, type Result } from "../result.ts";

/** The answer of `GET /v1/interactions`. */
export type InteractionStatus =
  | { readonly status: "verified"; readonly txHash: string; readonly blockNumber: number }
  | { readonly status: "none" }
  | { readonly status: "not-checked"; readonly reason: "no-explorer" | "chain-not-read" | "explorer-failed" | "chain-failed" };

/** What {@link createFindInteraction} needs. */
export type FindInteractionDeps = {
  /** The receipt reader of a chain the deployment reads; undefined for any other. */
  readonly readerFor: (chainId: number) => TxReceiptReader | undefined;
  /** The operator's explorer API for a chain (`EXPLORER_API_URLS`). */
  readonly operatorExplorer: (chainId: number) => string | undefined;
  readonly explorers: ExplorerTxList;
  /** Receipts of one request confirmed at most (the newest candidates first); default 5. */
  readonly maxConfirmations?: number | undefined;
  /**
   * Answers kept per (chain, wallet, contract, explorer): `verified` and `none` for `freshMs`, `not-checked` for a
   * sixth of it, so repeated asks neither spend the operator's explorer quota nor the chain (decisions §29: cached
   * like the index's reads). Absent: nothing kept.
   */
  readonly keep?: { readonly clock: Clock; readonly freshMs: number; readonly maxEntries?: number | undefined } | undefined;
  /** The caller's turn for a lookup that asks an explorer or a chain (see {@link ProofReadAdmit}); absent: no limit. */
  readonly admit?: ProofReadAdmit | undefined;
};

/**
 * A turn of one client address's budget of proof reads (`PROOF_READ_RATE_PER_MINUTE`), taken only by a lookup that
 * asks an explorer or a chain: a kept answer takes none. Both routes share it, so a flood of made-up transaction hashes
 * or wallets cannot turn into a flood of JSON-RPC calls and explorer requests the operator pays for.
 */
export type ProofReadAdmit = (client: string) => RateDecision;

/** A lookup refused by the caller's budget: 429 `RATE_LIMITED` with `Retry-After`. */
export type ProofReadLimited = { readonly status: "rate-limited"; readonly retryAfterSeconds: number };

/** One question: did `wallet` send a successful transaction to `contract` on `chainId`? */
export type InteractionQuery = {
  readonly chainId: number;
  readonly wallet: string;
  readonly contract: string;
  /** An explorer API the embed names (https; fetched under the SSRF policy). */
  readonly explorer?: string | undefined;
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;

/** Reads the query of `GET /v1/interactions`: `chain` (a decimal id or `eip155:<id>`), `wallet`, `contract`, `explorer`. */
export function readInteractionQuery(query: Readonly<Record<string, string | undefined>>): Result<InteractionQuery, "INVALID_INPUT"> {
  const chainId = readChainId(query.chain);
  if (chainId === undefined) return fail("INVALID_INPUT", "chain must be a chain id (8453 or eip155:8453)");
  if (query.wallet === undefined || !ADDRESS.test(query.wallet)) return fail("INVALID_INPUT", "wallet must be an address");
  if (query.contract === undefined || !ADDRESS.test(query.contract)) return fail("INVALID_INPUT", "contract must be an address");
  const explorer = query.explorer === undefined || query.explorer === "" ? undefined : query.explorer;
  if (explorer !== undefined && !isHttps(explorer)) return fail("INVALID_INPUT", "explorer must be an https URL");
  return ok({ chainId, wallet: query.wallet.toLowerCase(), contract: query.contract.toLowerCase(), explorer });
}

/** A chain id written `8453` or `eip155:8453`; undefined otherwise. */
export function readChainId(value: string | undefined): number | undefined {
  return value === undefined ? undefined : parseChainParam(value);
}

function isHttps(value: string): boolean {
  try {
    return value.length <= 2_048 && new URL(value).protocol === "https:";
  } catch {
    return false;
  }
}

/** Whether a receipt confirms `wallet` → `contract`, successful. */
function confirms(receipt: TxReceiptFacts | null, query: InteractionQuery): receipt is TxReceiptFacts {
  return receipt !== null && receipt.status === "success" && receipt.from.toLowerCase() === query.wallet &&
    receipt.to !== null && receipt.to.toLowerCase() === query.contract;
}

/**
 * Builds the proof-of-interaction lookup; `client` is the caller's address, whose budget a lookup (not a kept answer)
 * spends, and whose share of an embed explorer's domain budget it asks within (absent: "unknown" for the budget of
 * proof reads, the domain's budget alone for the explorer).
 */
export function createFindInteraction(deps: FindInteractionDeps): (query: InteractionQuery, client?: string) => Promise<InteractionStatus | ProofReadLimited> {
  const max = deps.maxConfirmations ?? 5;
  const kept = new Map<string, { answer: InteractionStatus; until: number }>();
  const uncached = uncachedLookup(deps, max);
  /** The explorer a lookup of `query` would ask: the operator's for the chain, else the embed's; none on a chain not read. */
  const explorerOf = (query: InteractionQuery): string | undefined =>
    deps.readerFor(query.chainId) === undefined ? undefined : deps.operatorExplorer(query.chainId) !== undefined ? "operator" : query.explorer;
  return async function findInteraction(query, client) {
    const explorer = explorerOf(query);
    // A chain not read and no explorer answer at once, with nothing asked: no turn taken, and nothing kept (kept, a
    // flood of made-up chains took no turn and pushed every answer that cost something out of the store).
    if (explorer === undefined) return (await uncached(query)).answer;
    // Keyed by the explorer asked: an embed's `explorer` is not asked when the operator names one.
    const key = JSON.stringify([query.chainId, query.wallet, query.contract, explorer]);
    const now = deps.keep?.clock.nowMs() ?? 0;
    const hit = kept.get(key);
    if (hit !== undefined && hit.until > now) return hit.answer;
    if (deps.admit !== undefined) {
      const turn = deps.admit(client ?? "unknown");
      if (!turn.allowed) return { status: "rate-limited", retryAfterSeconds: turn.retryAfterSeconds };
    }
    const { answer, unkept } = await uncached(query, client);
    if (deps.keep === undefined) return answer;
    // A verified answer whose receipt is not yet deep enough is not kept: a reorganisation may still take it back. Nor
    // is a refusal by the explorer's budget: it is the caller's (its share spent), and kept it was everyone's answer.
    const ttl = unkept ? 0 : answer.status === "not-checked" ? Math.ceil(deps.keep.freshMs / 6) : deps.keep.freshMs;
    kept.delete(key);
    if (ttl > 0) {
      if (kept.size >= (deps.keep.maxEntries ?? 10_000)) kept.delete(kept.keys().next().value!);
      kept.set(key, { answer, until: now + ttl });
    }
    return answer;
  };
}

/** An answer, and whether it is not to be kept: it rests on a receipt not yet settled, or the explorer's budget refused it. */
type Looked = { readonly answer: InteractionStatus; readonly unkept?: boolean };

function uncachedLookup(deps: FindInteractionDeps, max: number): (query: InteractionQuery, client?: string) => Promise<Looked> {
  return async function findInteraction(query, client) {
    const reader = deps.readerFor(query.chainId);
    if (reader === undefined) return { answer: { status: "not-checked", reason: "chain-not-read" } };
    // The operator's explorer for the chain first; the embed's only when the operator named none.
    const operator = deps.operatorExplorer(query.chainId);
    const apiUrl = operator ?? query.explorer;
    if (apiUrl === undefined) return { answer: { status: "not-checked", reason: "no-explorer" } };
    const listed = await deps.explorers.txlist(apiUrl, query.wallet, operator !== undefined ? "operator" : "embed", client);
    if (!listed.ok) return { answer: { status: "not-checked", reason: "explorer-failed" }, unkept: listed.reason === "limited" };
    const candidates = listed.value
      .filter((tx) => !tx.failed && HASH.test(tx.hash) && tx.from.toLowerCase() === query.wallet && tx.to.toLowerCase() === query.contract)
      .sort((a, b) => b.blockNumber - a.blockNumber)
      .slice(0, max);
    for (const candidate of candidates) {
      const read = await reader.receipt(candidate.hash.toLowerCase());
      if (!read.ok) return { answer: { status: "not-checked", reason: "chain-failed" } };
      if (confirms(read.value, query)) {
        return { answer: { status: "verified", txHash: candidate.hash.toLowerCase(), blockNumber: read.value.blockNumber }, unkept: read.value.settled !== true };
      }
    }
    return { answer: { status: "none" } };
  };
}

/**
 * A receipt reader whose settled receipts and settled blocks' times are read once and kept (up to `keep` of each, oldest
 * dropped first); concurrent asks for one receipt share one read. A receipt is settled when its block is at least
 * `confirmations` under the head (the index's rule, decisions §21: 0 on a devnet keeps every mined one). One less
 * deep, a transaction not mined yet, or a failed read is asked again next time: a receipt kept at the chain's tip
 * would keep proving a transaction that a reorganisation took back.
 */
export function keptReceipts(reader: TxReceiptReader, options: { readonly keep?: number | undefined; readonly confirmations?: number | undefined } = {}): TxReceiptReader {
  const keep = options.keep ?? 10_000;
  const confirmations = options.confirmations ?? 0;
  const receipts = new Map<string, TxReceiptFacts>();
  const times = new Map<number, number>();
  const reading = new Map<string, ReturnType<TxReceiptReader["receipt"]>>();
  const remember = <K, V>(map: Map<K, V>, key: K, value: V) => {
    if (map.size >= keep) map.delete(map.keys().next().value!);
    map.set(key, value);
  };
  const settled = async (blockNumber: number): Promise<boolean> => {
    if (confirmations === 0) return true;
    const head = await reader.head?.();
    return head !== undefined && head.ok && head.value - blockNumber >= confirmations;
  };
  const read = async (key: string): ReturnType<TxReceiptReader["receipt"]> => {
    const answer = await reader.receipt(key);
    if (!answer.ok || answer.value === null) return answer;
    const facts = { ...answer.value, settled: await settled(answer.value.blockNumber) };
    if (facts.settled) remember(receipts, key, facts);
    return { ok: true, value: facts };
  };
  return {
    chainId: reader.chainId,
    async receipt(txHash) {
      const key = txHash.toLowerCase();
      const known = receipts.get(key);
      if (known !== undefined) return { ok: true, value: known };
      const under = reading.get(key);
      if (under !== undefined) return await under;
      const started = read(key).finally(() => reading.delete(key));
      reading.set(key, started);
      return await started;
    },
    async blockTime(blockNumber, settledAlready) {
      const known = times.get(blockNumber);
      if (known !== undefined) return { ok: true, value: known };
      const read = await reader.blockTime(blockNumber);
      // A block's time is kept by the receipts' rule: once settled. A time kept at the tip outlived the block that a
      // reorganisation replaced at the same height, and a settled proof then carried it for good.
      if (read.ok && read.value !== null && (settledAlready ?? await settled(blockNumber))) remember(times, blockNumber, read.value);
      return read;
    },
    ...(reader.head === undefined ? {} : { head: reader.head }),
  };
}

/**
 * The embed's explorers under the discovery budget (decisions §29): `budget.domainRate` turns per registrable domain, as
 * discovery counts them, so `a.victim.example`, `b.victim.example.` and `victim.example` share one budget (it was per
 * host name, so every subdomain, and the same host with a trailing dot, had one of its own); and, for a lookup made for
 * a client, that client's share of it (`budget.clientShare`, a third: discovery's {@link takeLookup}). Before the share,
 * one client's 30 lookups a minute of made-up wallets at made-up subdomains spent a real explorer's whole budget, and
 * every other user's check was not-checked. Past either, the explorer is `limited` (not-checked, not kept) for that
 * caller, with nothing fetched. The operator's explorers are trusted as configured: not counted.
 */
export function budgetedExplorers(explorers: ExplorerTxList, budget: LookupBudget): ExplorerTxList {
  return {
    txlist(apiUrl, address, source, client) {
      if (source === "embed") {
        let host: string;
        try {
          host = new URL(apiUrl).hostname;
        } catch {
          return Promise.resolve({ ok: false, reason: "invalid" });
        }
        if (!takeLookup(budget, `explorer:${registrableDomain(host)}`, { client }).allowed) return Promise.resolve({ ok: false, reason: "limited" });
      }
      return explorers.txlist(apiUrl, address, source, client);
    },
  };
}

/** What `GET /v1/tx-proofs` answers: the proof, or why not (RATE_LIMITED with the seconds to wait). */
export type TxProofResult =
  | Result<TxProof, "UNSUPPORTED_CHAIN" | "NOT_FOUND" | "RPC_ERROR" | "INVALID_INPUT">
  | (Fail<"RATE_LIMITED"> & { readonly retryAfterSeconds: number });

/** The answer of `GET /v1/tx-proofs`. */
export type TxProof = {
  readonly chain: string;
  readonly txHash: string;
  readonly from: string;
  readonly to: string | null;
  readonly status: "success" | "reverted";
  readonly blockNumber: number;
  /** The Unix time (seconds) of its block: a review's proof must not postdate the review. */
  readonly blockTime: number;
};

/**
 * Builds the one-transaction check: a chain the deployment reads (else UNSUPPORTED_CHAIN), a settled receipt (see
 * {@link keptReceipts}) read once and kept (up to `keep`, oldest dropped first); one nearer the head is answered as
 * the node has it now and asked again next time; a transaction not mined is NOT_FOUND (not kept: it may be mined
 * later), a chain that cannot be read RPC_ERROR.
 */
export function createTxProofs(deps: {
  readonly readerFor: (chainId: number) => TxReceiptReader | undefined;
  readonly keep?: number | undefined;
  /** The caller's turn for a lookup that reads the chain (a kept proof takes none); absent: no limit. */
  readonly admit?: ProofReadAdmit | undefined;
}) {
  const keep = deps.keep ?? 10_000;
  const kept = new Map<string, TxProof>();
  return async function txProof(chainId: number, txHash: string, client = "unknown"): Promise<TxProofResult> {
    if (!HASH.test(txHash)) return fail("INVALID_INPUT", "txHash must be 32 bytes of hex");
    const reader = deps.readerFor(chainId);
    if (reader === undefined) return fail("UNSUPPORTED_CHAIN", `Chain eip155:${chainId} is not read by this deployment`);
    const key = `${chainId}:${txHash.toLowerCase()}`;
    const known = kept.get(key);
    if (known !== undefined) return ok(known);
    const turn = deps.admit?.(client);
    if (turn !== undefined && !turn.allowed) {
      return { ...fail("RATE_LIMITED", "Too many transaction lookups from this address; try again later"), retryAfterSeconds: turn.retryAfterSeconds };
    }
    const read = await reader.receipt(txHash.toLowerCase());
    if (!read.ok) return fail("RPC_ERROR", "The chain could not be read");
    if (read.value === null) return fail("NOT_FOUND", "No such transaction is mined on this chain");
    const time = await reader.blockTime(read.value.blockNumber, read.value.settled);
    if (!time.ok || time.value === null) return fail("RPC_ERROR", "The chain could not be read");
    const proof: TxProof = {
      chain: `eip155:${chainId}`,
      txHash: txHash.toLowerCase(),
      from: read.value.from.toLowerCase(),
      to: read.value.to === null ? null : read.value.to.toLowerCase(),
      status: read.value.status,
      blockNumber: read.value.blockNumber,
      blockTime: time.value,
    };
    if (read.value.settled !== true) return ok(proof);
    if (kept.size >= keep) kept.delete(kept.keys().next().value!);
    kept.set(key, proof);
    return ok(proof);
  };
}
