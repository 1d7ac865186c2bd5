/**
 * A witness whose request died with its instance (decisions §23: "exact across a crash"). The request noted its
 * sponsored write's id under its `Idempotency-Key` once the write was reserved; the retry that takes the key over
 * answers from that write instead of writing a second witness: mined, the witness as it was written (read back
 * from the signed transaction); on its way, OUTCOME_UNKNOWN with its transaction (the reconciler settles it); never
 * signed, nothing was written, and the retry runs the witness again. Signed and then given back on a cause that
 * proves nothing of it can land (reverted, refused by the node on its first send, its nonce taken by another
 * transaction: ports/submissions.ts `ReleaseCause`), the write failed: the retry answers so, and never writes again
 * under the key, as a released relay submission is answered (decisions §23: one write a key). Given back on a cause
 * that proves nothing (no word of its resends for 10 minutes, a resend the node refused, a hash-only row the node does
 * not know), it is not known to have failed: the retry is told
 * the outcome is unknown (503 `OUTCOME_UNKNOWN`), its payment stays `work_unknown`, and the reconciler looks its
 * transaction up for a day (domain/delegation `_given_back_watch.ts`): once mined, the retry gets the witness; once
 * reverted or replaced, the failure. A write released before causes were kept is read as unknown too (not looked up).
 * Before, a write given back ran again, and a transaction released for its silence could still land beside the
 * second one; a paid retry met its own payment, kept as `work_unknown`: 409 `PAYMENT_ALREADY_USED`. Then (found in
 * review) every write given back was answered "nothing of it was written" and its payment forgotten, the silence's too:
 * the payer used the authorization again under a new key, and a first transaction landing later made one payment two
 * writes, its record gone from `ops payments list`.
 */
import { decodeFunctionData, parseTransaction } from "viem/utils";
import type { SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { HexString } from "../../ports/eas.ts";
import { UNPROVEN_RELEASES } from "../../ports/submissions.ts";
import { EAS_ABI } from "../eas_abi.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { WITNESS, type WitnessWritten } from "./_types.ts";

/** What a retry of a dead witness request answers. */
export type WitnessResumed =
  | { readonly kind: "written"; readonly value: WitnessWritten }
  | { readonly kind: "pending"; readonly txHash: string | null }
  /** Signed (maybe sent), then given back on a proven cause: nothing of it was written, nor will be under this key. */
  | { readonly kind: "given-back"; readonly txHash: string | null }
  /** Signed and sent, then given back on a cause that proves nothing: it may still land (looked up for a day). */
  | { readonly kind: "unknown"; readonly txHash: string | null }
  | { readonly kind: "nothing" };

/**
 * The 500 `SUBMISSION_FAILED` message of a write given back, worded as the relay's released submission ("nothing of it
 * was attested"): the key keeps it, so the witness is asked for again under a new key.
 */
export const WITNESS_GIVEN_BACK_MESSAGE = "The witness transaction failed; nothing of it was written; send it again under a new key";

/**
 * The 503 `OUTCOME_UNKNOWN` message of a write given back on a cause that proves nothing (`unknown`): never "failed",
 * since it may still land; the same key asked later answers the witness if it does.
 */
export const WITNESS_UNKNOWN_MESSAGE = "The witness transaction was sent but its outcome is not known: it may still be written; ask again under the same key later";

/** The prefix of the id a witness notes under its key, beside the relays' submission ids. */
export const WITNESS_WRITE_PREFIX = "witness-write:";

/** Builds the lookup of a dead request's witness write, by the id it noted (`witness-write:<reservation id>`). */
export function createWitnessResume(deps: { readonly ledger: SponsoredWriteLedger; readonly nowMs: () => number }) {
  return async function witnessResumed(noted: string): Promise<WitnessResumed> {
    if (!noted.startsWith(WITNESS_WRITE_PREFIX)) return { kind: "nothing" };
    const id = noted.slice(WITNESS_WRITE_PREFIX.length);
    const record = await deps.ledger.find(id);
    if (record === undefined) return { kind: "nothing" };
    if (record.state === "released") {
      if (record.tx === null && record.txHash === null) return { kind: "nothing" };
      const proven = record.releaseCause !== undefined && !UNPROVEN_RELEASES.includes(record.releaseCause);
      return { kind: proven ? "given-back" : "unknown", txHash: record.txHash };
    }
    if (record.state === "reserved") {
      // Died before signing: nothing can land. The reservation goes back so the retry's own is the only one.
      await deps.ledger.release(id, deps.nowMs(), "unsent");
      return { kind: "nothing" };
    }
    if (record.state !== "committed" || record.tx === null || record.blockNumber === null) return { kind: "pending", txHash: record.txHash };
    const written = readWitness(record.tx.raw);
    if (written === undefined) return { kind: "pending", txHash: record.txHash };
    return {
      kind: "written",
      value: { success: true, uid: record.uid as HexString | null, txHash: record.txHash as HexString, blockNumber: Number(record.blockNumber), ...written },
    };
  };
}

/** The observation time and method a signed witness transaction wrote; undefined when it is not one. */
function readWitness(raw: HexString): Pick<WitnessWritten, "observedAt" | "method"> | undefined {
  try {
    const call = decodeFunctionData({ abi: EAS_ABI, data: parseTransaction(raw).data as HexString });
    if (call.functionName !== "attest") return undefined;
    const decoded = decodeSchemaData(WITNESS.schema, call.args[0].data.data);
    if (!decoded.ok) return undefined;
    const { observedAt, method } = decoded.value as { observedAt?: unknown; method?: unknown };
    if (method !== "dns-txt" && method !== "did-json") return undefined;
    return { observedAt: Number(observedAt), method };
  } catch {
    return undefined;
  }
}
