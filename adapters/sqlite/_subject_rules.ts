/** The rule the index's stored subjects follow (ports/attestation_index.ts `resetSubjectsUnless`), in SQLite. */
import type { Database } from "bun:sqlite";
import type { IndexStore } from "../../ports/attestation_index.ts";

/** `resetSubjectsUnless` of one chain and EAS contract: the rule read, the subjects forgotten and the rule kept in one transaction. */
export function subjectRules(db: Database, chainId: number, eas: string): NonNullable<IndexStore["resetSubjectsUnless"]> {
  const subjectRule = db.query<{ rule: string }, [number, string]>("SELECT rule FROM index_subject_rules WHERE chain_id = ? AND eas = ?");
  const keepRule = db.query(
    "INSERT INTO index_subject_rules (chain_id, eas, rule) VALUES (?, ?, ?) ON CONFLICT (chain_id, eas) DO UPDATE SET rule = excluded.rule",
  );
  const forgetSubjects = db.query("UPDATE index_attestations SET subject = NULL WHERE chain_id = ? AND eas = ? AND subject IS NOT NULL");
  const reset = db.transaction((rule: string): boolean => {
    const kept = subjectRule.get(chainId, eas);
    if (kept?.rule === rule) return false;
    if (kept !== null) forgetSubjects.run(chainId, eas);
    keepRule.run(chainId, eas, rule);
    return kept !== null;
  });
  return (rule) => Promise.resolve(reset.immediate(rule));
}
