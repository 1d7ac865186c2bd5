/**
 * The subject an attestation names (issue 43): its decoded `subject` field, normalized, for the schemas the trust
 * anchors name — what the list's `subject` filter checks on each record. The follower stores it with the record so a
 * subject's count is one `COUNT` over an index instead of reading and decoding every attestation sent to its address.
 */
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import { recordSubjectDid } from "../did/mod.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

/**
 * The version of how a subject is read from a record, part of the rule: subjects stored by an earlier reading are
 * forgotten and stored again (v2: `recordSubjectDid`, the fragment cut before the subject is checked; v1 refused a
 * record whose fragment held whitespace, so the count left out what the list listed).
 */
const RECORD_SUBJECT_RULE = "record-subject-v2";

/** The normalized DID a record's decoded `subject` names; null when its schema is not named or it names none. */
export type SubjectOf = (record: Pick<IndexedAttestation, "schema" | "data">) => string | null;

/**
 * The subject of records under the trust anchors' schemas (`schemaUids`: name → UID of the active chain), with its
 * `rule`: the schemas it decodes and how it reads a subject, as one text. Subjects stored under one rule are wrong under another (a schema the
 * anchors added was stored as naming none), so the follower has the store forget them when the rule changes; so does a
 * new {@link RECORD_SUBJECT_RULE}.
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
