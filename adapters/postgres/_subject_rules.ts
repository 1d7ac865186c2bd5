/** The rule the index's stored subjects follow (ports/attestation_index.ts `resetSubjectsUnless`), in PostgreSQL. */
import type { SQL } from "bun";
import type { IndexStore } from "../../ports/attestation_index.ts";

/**
 * `resetSubjectsUnless` of one chain and EAS contract, in one transaction under an advisory lock, so two instances
 * starting together forget the subjects once.
 */
export function subjectRules(sql: SQL, chainId: number, eas: string): NonNullable<IndexStore["resetSubjectsUnless"]> {
  return async (rule) =>
    await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`index_subject_rules:${chainId}:${eas}`}))`;
      const [kept] = await tx`SELECT rule FROM index_subject_rules WHERE chain_id = ${chainId} AND eas = ${eas}`;
      if (kept !== undefined && String(kept.rule) === rule) return false;
      if (kept !== undefined) {
        await tx`UPDATE index_attestations SET subject = NULL WHERE chain_id = ${chainId} AND eas = ${eas} AND subject IS NOT NULL`;
      }
      await tx`INSERT INTO index_subject_rules (chain_id, eas, rule) VALUES (${chainId}, ${eas}, ${rule})
               ON CONFLICT (chain_id, eas) DO UPDATE SET rule = EXCLUDED.rule`;
      return kept !== undefined;
    });
}
