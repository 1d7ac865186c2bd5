/**
 * The subject an attestation names (issue 43): its decoded `subject` field, normalized, for the schemas the trust
 * anchors name — what the list's `subject` filter checks on each record. The follower stores it with the record so a
 * subject's count is one `COUNT` over an index instead of reading and decoding every attestation sent to its address.
 */
import type { IndexedAttestation, SubjectsToForget } from "../../ports/attestation_index.ts";
import { MAX_SUBJECT_DID_LENGTH, recordSubjectDid } from "../did/mod.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

/**
 * The version of how a subject is read from a record, part of the rule: subjects stored by an earlier reading are
 * forgotten and stored again (v2: `recordSubjectDid`, the fragment cut before the subject is checked; v1 refused a
 * record whose fragment held whitespace, so the count left out what the list listed). A rule text of the schemas
 * alone, kept before the reading was named, is v1: `normalizeSubjectDid` of the whole subject, and for its first day
 * `normalizeDid` alone.
 */
const RECORD_SUBJECT_RULE = "record-subject-v2";

/**
 * The earlier readings that stored, under the same schemas, what this one stores except where a narrow forgetting finds
 * it, so a change from one of them forgets those rows (few) instead of every subject (a full refill, and every count
 * decoding meanwhile). v1 → v2:
 * - where v1 named a subject, v2 names the same one unless it is over {@link MAX_SUBJECT_DID_LENGTH} characters (v1
 *   measured the subject before normalizing it; v2 names none there);
 * - where v1 named none (''), v2 may name one (a fragment holding whitespace, `did:web:x#<TAB>k`);
 * - `normalizeDid` alone (v1's first day) stored what v2 names, '' where v2 names none either, or a text v2 names none
 *   for and no caller can name (`did:web:x.` of `did:web:x..`: a count only asks for a subject `normalizeSubjectDid`
 *   gives, which v2 names as it is), which no count finds and so may stay.
 */
const NARROW_SINCE: ReadonlySet<string> = new Set(["record-subject-v1"]);

/**
 * What the store forgets when its subjects followed the rule `kept` (undefined: none kept, so not known) and the rule
 * is now `rule`: the few rows an earlier reading of {@link NARROW_SINCE} stored otherwise (its '' under the schemas, and
 * subjects over the length), else every subject (other schemas, a reading not named there, or no rule kept).
 */
export function subjectsToForget(kept: string | undefined, rule: string): SubjectsToForget {
  const was = readRule(kept);
  const now = readRule(rule);
  if (was === undefined || now === undefined || now.reading !== RECORD_SUBJECT_RULE || !NARROW_SINCE.has(was.reading)) return { all: true };
  if (JSON.stringify(was.schemas) !== JSON.stringify(now.schemas)) return { all: true };
  return { all: false, unnamedOf: now.schemas.map(([uid]) => uid), longerThan: MAX_SUBJECT_DID_LENGTH };
}

/** A rule's text read: how it reads a subject and its schemas (`[uid, definition]`, sorted); undefined for another text. */
function readRule(text: string | undefined): { readonly reading: string; readonly schemas: readonly (readonly [string, string])[] } | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const schemasOf = (v: unknown) => Array.isArray(v) && v.every((s) => Array.isArray(s) && s.length === 2 && s.every((x) => typeof x === "string")) ? v as [string, string][] : undefined;
  if (Array.isArray(value)) {
    const schemas = schemasOf(value);
    return schemas === undefined ? undefined : { reading: "record-subject-v1", schemas };
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { reading, schemas } = value as { reading?: unknown; schemas?: unknown };
  const read = schemasOf(schemas);
  return typeof reading === "string" && read !== undefined ? { reading, schemas: read } : undefined;
}

/** The normalized DID a record's decoded `subject` names; null when its schema is not named or it names none. */
export type SubjectOf = (record: Pick<IndexedAttestation, "schema" | "data">) => string | null;

/**
 * The subject of records under the trust anchors' schemas (`schemaUids`: name → UID of the active chain), with its
 * `rule`: the schemas it decodes and how it reads a subject, as one text. Subjects stored under one rule are wrong under
 * another (a schema the anchors added was stored as naming none), so the follower has the store forget them when the
 * rule changes ({@link subjectsToForget}); so does a new {@link RECORD_SUBJECT_RULE}.
 */
export function createSubjectOf(schemaUids: Readonly<Record<string, string>>): SubjectOf & { readonly rule: string } {
  const definitions = new Map<string, string>();
  for (const [name, uid] of Object.entries(schemaUids)) {
    const definition = findSchemaByName(name);
    if (definition !== undefined) definitions.set(uid.toLowerCase(), definition.schema);
  }
  const sorted = [...definitions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const rule = JSON.stringify({ reading: RECORD_SUBJECT_RULE, schemas: sorted });
  return Object.assign((record: Pick<IndexedAttestation, "schema" | "data">) => {
    const schema = definitions.get(record.schema.toLowerCase());
    if (schema === undefined) return null;
    const decoded = decodeSchemaData(schema, record.data);
    if (!decoded.ok) return null;
    // The rule the list checks each record by (recordSubjectDid), so the count is what the list lists: a subject no
    // route can name (whitespace, control characters, U+0000 among them, outside a fragment) names none here. Such a
    // subject, written by anyone straight to EAS, stopped the index on PostgreSQL for good (its text holds no U+0000).
    return recordSubjectDid(decoded.value.subject) ?? null;
  }, { rule });
}
