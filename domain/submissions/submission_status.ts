import type { ReplayStore } from "../../ports/replay_store.ts";
import type { SubmissionCursor, SubmissionOutcome, SubmissionRecord, SubmissionRecordStore } from "../../ports/submission_records.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { fail, ok, type Result } from "../result.ts";
import { isSubmissionId } from "./submission_id.ts";
import { REPLAY_BOOK } from "../delegation/mod.ts";
import type { ChainAnswer } from "../chains/mod.ts";

/** The book name under which the reconciler keeps the relays' fee bumps. */
export const RELAY_BOOK = REPLAY_BOOK;

/**
 * Where a submission stands (decisions §23): `pending` (recorded, nothing signed), `sent` (its transaction may be at
 * the node), `replaced` (a fee bump superseded the transaction first sent; none mined yet), `mined`, `confirmed`
 * (at least `INDEX_CONFIRMATIONS` blocks deep), `failed` (reverted, or given back with nothing on chain).
 */
export type SubmissionState = "pending" | "sent" | "replaced" | "mined" | "confirmed" | "failed";

/**
 * One request of a batch as its submission shows it (decisions §23), in the batch's order: a request sent in the
 * batch's transaction shares its state and, once mined, has its own uid; one refused by its checks is `refused`, with
 * the single route's answer to it (`status`, `error`: the code, `message`, `details`).
 */
export type SubmissionItemView =
  | { readonly index: number; readonly state: SubmissionState; readonly uid: string | null }
  | {
    readonly index: number;
    readonly state: "refused";
    readonly uid: null;
    readonly status: number;
    readonly error: string;
    readonly message: string;
    readonly details?: string | undefined;
  };

/** A submission as its caller reads it. */
export type SubmissionView = {
  readonly submissionId: string;
  readonly state: SubmissionState;
  readonly txHash: string | null;
  readonly uid: string | null;
  readonly blockNumber: number | null;
  readonly confirmations: number;
  readonly feeBumps: number;
  readonly error?: string | undefined;
  /** A batch's requests, in order (absent for a single send); `uid` above is then its first sent request's. */
  readonly items?: readonly SubmissionItemView[] | undefined;
  /**
   * The chain it was sent on (decisions §30), when the deployment serves several: null once its replay record, which
   * names the chain, was pruned (its deadline long past). Absent with one chain.
   */
  readonly chain?: ChainAnswer | null | undefined;
  readonly createdAt: string;
  readonly updatedAt: string;
};

/** A page of an account's submissions. */
export type SubmissionPage = { readonly submissions: SubmissionView[]; readonly nextCursor: string | null };

/** What the status reads need. */
export type SubmissionStatusDeps = {
  readonly records: SubmissionRecordStore;
  readonly replay: ReplayStore;
  readonly replacements?: TxReplacementStore | undefined;
  /** The chain's head block; undefined when it cannot be read (confirmations then count 0). */
  readonly head: () => Promise<bigint | undefined>;
  /** Blocks a mined submission needs beneath the head to be `confirmed` (`INDEX_CONFIRMATIONS`). */
  readonly confirmations: number;
  /**
   * Decisions §30: every served attestation chain but the default (whose are `head` and `confirmations`), with its
   * head and confirmations; `defaultChain` the default's answer. Absent or empty: one chain, and views name none.
   */
  readonly otherChains?: ReadonlyMap<number, ChainHead> | undefined;
  readonly defaultChain?: ChainHead | undefined;
};

/** One chain's answer, head and confirmations, as a submission's view reads them. */
export type ChainHead = {
  readonly answer: ChainAnswer;
  readonly head: () => Promise<bigint | undefined>;
  readonly confirmations: number;
};

/** The largest page of the list. */
export const MAX_SUBMISSION_PAGE = 100;

/** Reads one submission by id, and an owner's submissions newest first (decisions §23). */
export function createSubmissionStatus(deps: SubmissionStatusDeps) {
  /**
   * The replay record `ref` on the submission's chain; for a record naming no chain (a previous version's, see
   * `SubmissionRecord.chainId`), the record of that key on any chain, as that version found it.
   */
  const replayOf = (record: SubmissionRecord, ref: string) =>
    record.chainId === null ? deps.replay.findAnyChain(ref) : deps.replay.find(record.chainId, ref);
  /** The fee bumps of the submission's chain (decisions §30); of any chain for a record naming none, as above. */
  const bumpsOf = async (record: SubmissionRecord) => (await deps.replacements?.list(RELAY_BOOK, record.chainId, record.ref))?.map((r) => r.tx.txHash) ?? [];

  /** The submission's state, then each request of a batch's. */
  async function view(record: SubmissionRecord, heads: Heads): Promise<SubmissionView> {
    const on = await chainOf(record);
    const named = on === undefined ? {} : { chain: on === null ? null : on.answer };
    const state = { ...(await stateOf(record, heads(on), on?.confirmations ?? deps.confirmations)), ...named };
    if (record.items === null) return state;
    return { ...state, items: await itemsOf(record, state, record.outcome) };
  }

  /**
   * The chain of a submission when several are served: the one its record names (its replay record's, decisions §30);
   * for a record naming none, its replay record's found by key (one storage read), null once that is gone too; null
   * for a chain no longer served; undefined with one chain (the default's head).
   */
  async function chainOf(record: SubmissionRecord): Promise<ChainHead | null | undefined> {
    const others = deps.otherChains;
    if (others === undefined || others.size === 0 || deps.defaultChain === undefined) return undefined;
    const chainId = record.chainId ?? (await deps.replay.findAnyChain(record.ref))?.chainId;
    if (chainId === undefined) return null;
    return others.get(chainId) ?? (chainId === deps.defaultChain.answer.chainId ? deps.defaultChain : null);
  }

  /**
   * A batch's requests: a sent one in the state of the one transaction, with its uid once mined (kept with the outcome,
   * or, while the record is open, read from the request's own replay record); a refused one as it was refused.
   */
  async function itemsOf(record: SubmissionRecord, state: SubmissionView, outcome: SubmissionOutcome | null): Promise<SubmissionItemView[]> {
    const landed = state.state === "mined" || state.state === "confirmed";
    const kept = outcome?.state === "mined" ? outcome.uids : undefined;
    return await Promise.all((record.items ?? []).map(async (item, index): Promise<SubmissionItemView> => {
      if ("refused" in item) {
        const { code, message, details, status } = item.refused;
        return { index, state: "refused", uid: null, status: status ?? 400, error: code, message, ...(details === undefined ? {} : { details }) };
      }
      if (!landed) return { index, state: state.state, uid: null };
      const uid = kept !== undefined ? kept[item.ref] ?? null : (await replayOf(record, item.ref))?.uid ?? null;
      return { index, state: state.state, uid };
    }));
  }

  async function stateOf(record: SubmissionRecord, head: () => Promise<bigint | undefined>, needed: number): Promise<SubmissionView> {
    const times = { createdAt: new Date(record.createdAtMs).toISOString(), updatedAt: new Date(record.updatedAtMs).toISOString() };
    const base = { submissionId: record.id, uid: null, blockNumber: null, confirmations: 0, ...times };
    const mined = async (txHash: string, uid: string | null, blockNumber: bigint, feeBumps: number): Promise<SubmissionView> => {
      const top = blockNumber > 0n ? await head() : undefined;
      const confirmations = top === undefined || top < blockNumber ? 0 : Number(top - blockNumber) + 1;
      const state = confirmations >= needed && confirmations > 0 ? "confirmed" : "mined";
      return { ...base, state, txHash, uid, blockNumber: Number(blockNumber), confirmations, feeBumps };
    };
    const outcome = record.outcome;
    if (outcome?.state === "mined") return await mined(outcome.txHash, outcome.uid, outcome.blockNumber, outcome.feeBumps);
    if (outcome?.state === "failed") return { ...base, state: "failed", txHash: outcome.txHash, feeBumps: outcome.feeBumps, error: outcome.error };
    // Still open: its replay record says where it stands.
    const live = await replayOf(record, record.ref);
    const bumps = await bumpsOf(record);
    if (live === undefined) return { ...base, state: "failed", txHash: null, feeBumps: bumps.length, error: "SUBMISSION_FAILED" };
    switch (live.state) {
      case "checked":
        return { ...base, state: "pending", txHash: null, feeBumps: 0 };
      case "signed":
      case "sent":
        return bumps.length === 0
          ? { ...base, state: "sent", txHash: live.txHash, feeBumps: 0 }
          : { ...base, state: "replaced", txHash: bumps.at(-1)!, feeBumps: bumps.length };
      case "mined":
        return await mined(live.txHash ?? "", live.uid, live.blockNumber ?? 0n, bumps.length);
      case "reverted":
        return { ...base, state: "failed", txHash: live.txHash, feeBumps: bumps.length, error: "SUBMISSION_FAILED" };
    }
  }

  /** Each chain's head read once per answer, and only when a mined submission on it needs it. */
  const onceHead = (): Heads => {
    const reads = new Map<ChainHead | null | undefined, Promise<bigint | undefined>>();
    return (on) => () => {
      let read = reads.get(on);
      if (read === undefined) {
        // The default chain's head, or the one of the submission's chain; a chain no longer known has none.
        read = on === null ? Promise.resolve(undefined) : (on === undefined || on === deps.defaultChain ? deps.head() : on.head()).catch(() => undefined);
        reads.set(on, read);
      }
      return read;
    };
  };

  return {
    /** One submission; an id of another shape or unknown is NOT_FOUND (decisions §23: anyone holding it may read it). */
    async read(id: string): Promise<Result<SubmissionView, "NOT_FOUND">> {
      const record = isSubmissionId(id) ? await deps.records.find(id) : undefined;
      if (record === undefined) return fail("NOT_FOUND", "Submission not found");
      return ok(await view(record, onceHead()));
    },
    /** An owner's submissions, newest first; `cursor` is the last page's `nextCursor`. */
    async list(scope: string, page: { limit?: number | undefined; cursor?: string | undefined }): Promise<Result<SubmissionPage, "INVALID_INPUT">> {
      const limit = page.limit ?? 20;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SUBMISSION_PAGE) return fail("INVALID_INPUT", `limit must be an integer from 1 to ${MAX_SUBMISSION_PAGE}`);
      const after = page.cursor === undefined ? undefined : parseCursor(page.cursor);
      if (after === null) return fail("INVALID_INPUT", "Invalid cursor");
      const records = await deps.records.list(scope, { limit: limit + 1, after });
      const head = onceHead();
      const shown = records.slice(0, limit);
      const submissions = await Promise.all(shown.map((record) => view(record, head)));
      const last = shown.at(-1);
      return ok({ submissions, nextCursor: records.length > limit && last !== undefined ? `${last.createdAtMs}.${last.id}` : null });
    },
  };
}

/** Per answer: the head of a submission's chain (undefined: the one chain; null: a chain no longer known). */
type Heads = (on: ChainHead | null | undefined) => () => Promise<bigint | undefined>;

/** The status reads. */
export type SubmissionStatus = ReturnType<typeof createSubmissionStatus>;

function parseCursor(cursor: string): SubmissionCursor | null {
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
  return match === null ? null : { createdAtMs: Number(match[1]), id: match[2]! };
}
