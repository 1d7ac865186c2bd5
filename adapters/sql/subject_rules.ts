/**
 * The rule the index's stored subjects follow (ports/attestation_index.ts `resetSubjectsUnless`, `forgetSubjects`,
 * `subjectsKnown`): what both engines share. The rule row keeps the rule and the forgetting a change of it began
 * (`forgetting`, JSON of `SubjectsToForget`; NULL none), which each engine goes through in ranges of the primary key
 * (bounded statements: one `UPDATE` over every row blocked SQLite's event loop about 20 s a million rows).
 */
import type { IndexStore, SubjectsToForget } from "../../ports/attestation_index.ts";
import type { SqlDialect, SqlStatement } from "./index_query.ts";

/** The store's parts that keep the subject rule. */
export type SubjectRules = {
  readonly [K in "resetSubjectsUnless" | "forgetSubjects" | "subjectsKnown" | "subjectRule"]-?: NonNullable<IndexStore[K]>;
};

/** What a store forgets when no `forget` is given. */
export const FORGET_ALL = (): SubjectsToForget => ({ all: true });

/** The rule row of one chain and EAS contract. */
export type KeptRule = { readonly rule: string; readonly forgetting: string | null };

/**
 * The forgetting under way that a rule row names; undefined: none. A text no store of this version wrote (or one it
 * cannot read) forgets every subject.
 */
export function forgettingOf(kept: KeptRule | null | undefined): SubjectsToForget | undefined {
  if (kept === null || kept === undefined || kept.forgetting === null) return undefined;
  try {
    const value = JSON.parse(kept.forgetting) as Partial<{ all: boolean; unnamedOf: unknown; longerThan: unknown }>;
    if (value.all === false && Array.isArray(value.unnamedOf) && value.unnamedOf.every((s) => typeof s === "string") && Number.isSafeInteger(value.longerThan)) {
      return { all: false, unnamedOf: value.unnamedOf as string[], longerThan: value.longerThan as number };
    }
  } catch {
    // Read as every subject, below.
  }
  return { all: true };
}

/**
 * The rule row as `subjectsKnown` and `subjectRule` answer it (ports/attestation_index.ts): the rule, with the forgetting
 * under way when there is one; undefined when no rule is kept or every subject is being forgotten.
 */
export function ruleOf(kept: KeptRule | null | undefined): string | undefined {
  if (kept === null || kept === undefined || forgettingOf(kept)?.all === true) return undefined;
  return kept.forgetting === null ? kept.rule : `${kept.rule}\n${kept.forgetting}`;
}

function placeholders(dialect: SqlDialect) {
  const params: (string | number)[] = [];
  const p = (v: string | number) => {
    params.push(v);
    return dialect === "sqlite" ? `?${params.length}` : `$${params.length}`;
  };
  const int = (v: number) => (dialect === "sqlite" ? p(v) : `${p(v)}::INTEGER`);
  return { params, p, int };
}

/** The rows of a forgetting: every stored subject, or the '' of its schemas and the subjects over its length. */
function forgotten(forget: SubjectsToForget, p: (v: string | number) => string, int: (v: number) => string): string {
  if (forget.all) return "subject IS NOT NULL";
  const schemas = forget.unnamedOf.map((uid) => p(uid.toLowerCase()));
  // LENGTH counts characters, where the length rule counts UTF-16 units: a subject of characters beyond U+FFFF may pass
  // it, and names nobody a count can ask for all the same (a count asks for a subject of at most that length).
  const unnamed = schemas.length === 0 ? "1 = 0" : `subject = '' AND schema_uid IN (${schemas.join(", ")})`;
  return `((${unnamed}) OR LENGTH(subject) > ${int(forget.longerThan)})`;
}

/** The last uid of the next `limit` rows after `after` (uid order), and how many there are. */
export function forgetRangeSql(
  dialect: SqlDialect,
  scope: { readonly chainId: number; readonly eas: string },
  { after, limit }: { readonly after: string; readonly limit: number },
): SqlStatement {
  const { params, p, int } = placeholders(dialect);
  return {
    text: `SELECT MAX(uid) AS last, COUNT(*) AS n FROM (SELECT uid FROM index_attestations
             WHERE chain_id = ${p(scope.chainId)} AND eas = ${p(scope.eas)} AND uid > ${p(after)} ORDER BY uid LIMIT ${int(limit)}) AS batch`,
    params,
  };
}

/** Forgets the subjects `forget` names among the rows after `after` up to `last` (a range of the primary key). */
export function forgetSql(
  dialect: SqlDialect,
  scope: { readonly chainId: number; readonly eas: string },
  { forget, after, last }: { readonly forget: SubjectsToForget; readonly after: string; readonly last: string },
): SqlStatement {
  const { params, p, int } = placeholders(dialect);
  const where = `chain_id = ${p(scope.chainId)} AND eas = ${p(scope.eas)} AND uid > ${p(after)} AND uid <= ${p(last)}`;
  return { text: `UPDATE index_attestations SET subject = NULL WHERE ${where} AND ${forgotten(forget, p, int)}`, params };
}

/**
 * Whether a row of `recipient` holds a subject a narrow forgetting under way may still forget and fill otherwise: ''
 * under its schemas (a subject over the length is none a count asks for). One seek of the subject index.
 */
export function unnamedOfSql(
  dialect: SqlDialect,
  scope: { readonly chainId: number; readonly eas: string },
  { forget, recipient }: { readonly forget: Extract<SubjectsToForget, { all: false }>; readonly recipient: string },
): SqlStatement {
  const { params, p } = placeholders(dialect);
  const schemas = forget.unnamedOf.map((uid) => p(uid.toLowerCase()));
  return {
    text: `SELECT 1 AS found FROM index_attestations WHERE chain_id = ${p(scope.chainId)} AND eas = ${p(scope.eas)} AND subject = ''
             AND recipient = ${p(recipient.toLowerCase())} AND schema_uid IN (${schemas.length === 0 ? "NULL" : schemas.join(", ")}) LIMIT 1`,
    params,
  };
}
