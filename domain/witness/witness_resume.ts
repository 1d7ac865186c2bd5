/**
 * A witness whose request died with its instance (decisions §23: "exact across a crash"). The request noted its
 * sponsored write's id under its `Idempotency-Key` once the write was reserved; the retry that takes the key over
 * answers from that write instead of writing a second witness: mined, the witness as it was written (read back
 * from the signed transaction); on its way, OUTCOME_UNKNOWN with its transaction (the reconciler settles it); never
 * signed, or given back, nothing was written, and the retry runs the witness again.
 */
import { decodeFunctionData, parseTransaction } from "viem/utils";
import type { SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { HexString } from "../../ports/eas.ts";
import { EAS_ABI } from "../eas_abi.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { WITNESS, type WitnessWritten } from "./_types.ts";

/** What a retry of a dead witness request answers. */
export type WitnessResumed =
  | { readonly kind: "written"; readonly value: WitnessWritten }
  | { readonly kind: "pending"; readonly txHash: string | null }
  | { readonly kind: "nothing" };

/** The prefix of the id a witness notes under its key, beside the relays' submission ids. */
export const WITNESS_WRITE_PREFIX = "witness-write:";

/** Builds the lookup of a dead request's witness write, by the id it noted (`witness-write:<reservation id>`). */
export function createWitnessResume(deps: { readonly ledger: SponsoredWriteLedger; readonly nowMs: () => number }) {
  return async function witnessResumed(noted: string): Promise<WitnessResumed> {
    if (!noted.startsWith(WITNESS_WRITE_PREFIX)) return { kind: "nothing" };
    const id = noted.slice(WITNESS_WRITE_PREFIX.length);
    const record = await deps.ledger.find(id);
    if (record === undefined || record.state === "released") return { kind: "nothing" };
    if (record.state === "reserved") {
      // Died before signing: nothing can land. The reservation goes back so the retry's own is the only one.
      await deps.ledger.release(id, deps.nowMs());
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
