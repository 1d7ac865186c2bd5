/**
 * The subject an attestation names (issue 43): its decoded `subject` field, normalized, for the schemas the trust
 * anchors name — what the list's `subject` filter checks on each record. The follower stores it with the record so a
 * subject's count is one `COUNT` over an index instead of reading and decoding every attestation sent to its address.
 */
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import { normalizeSubjectDid } from "../did/mod.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

/** The normalized DID a record's decoded `subject` names; null when its schema is not named or it names none. */
export type SubjectOf = (record: Pick<IndexedAttestation, "schema" | "data">) => string | null;

/**
 * The subject of records under the trust anchors' schemas (`schemaUids`: name → UID of the active chain), with its
 * `rule`: the schemas it decodes, as one text. Subjects stored under one rule are wrong under another (a schema the
 * anchors added was stored as naming none), so the follower has the store forget them when the rule changes.
 */
export function createSubjectOf(schemaUids: Readonly<Record<string, string>>): SubjectOf & { readonly rule: string } {
  const definitions = new Map<string, string>();
  for (const [name, uid] of Object.entries(schemaUids)) {
    const definition = findSchemaByName(name);
    if (definition !== undefined) definitions.set(uid.toLowerCase(), definition.schema);
  }
  const rule = JSON.stringify([...definitions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return Object.assign((record: Pick<IndexedAttestation, "schema" | "data">) => {
    const schema = definitions.get(record.schema.toLowerCase());
    if (schema === undefined) return null;
    const decoded = decodeSchemaData(schema, record.data);
    if (!decoded.ok || typeof decoded.value.subject !== "string") return null;
    // The subject rule every route takes (issue 43): a subject no route can name (whitespace, control characters, U+0000
    // among them) names none here. Such a subject, written by anyone straight to EAS, stopped the index on PostgreSQL
    // for good (its text holds no U+0000), where SQLite stored it.
    const named = normalizeSubjectDid(decoded.value.subject);
    return named.ok ? named.value : null;
  }, { rule });
}
