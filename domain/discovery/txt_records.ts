/**
 * DNS TXT controller records (`v=1;controller=<did>;jkt=S256:<thumbprint>`): reading them, explaining them to people,
 * writing one, and the evidence of one TXT name.
 */
import type { TxtLookup } from "../../ports/discovery.ts";
import { didWebLocation, normalizeSubjectDid } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { canonicalControllerKey } from "./controller_values.ts";
import type { EvidenceItem } from "./discovery_record.ts";
import { readJktValue } from "./jwk_keys.ts";

/**
 * Reads the controller keys of one TXT record (its character-strings already joined):
 * `v=1;controller=<did>;controller=<did>`. Every `controller=` counts; a record whose `v` is present
 * and not `1` yields nothing.
 */
export function parseControllerTxtRecord(record: string, canonicalOf: (value: string) => string | undefined = canonicalControllerKey): string[] {
  return txtRecordValues(record, "controller", canonicalOf);
}

/**
 * The distinct values of one key (`controller`, `jkt`) in a `v=1;…` TXT record, each read by `read` (undefined:
 * skipped), every one of them (decisions §8; the record's size bounds them, controller_values.ts); a record whose `v`
 * is present and not `1` yields nothing.
 */
function txtRecordValues(record: string, name: string, read: (value: string) => string | undefined): string[] {
  const out = new Set<string>();
  let version: string | undefined;
  for (const entry of record.split(/[;\s]+/)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const key = entry.slice(0, eq).trim().toLowerCase();
    const value = entry.slice(eq + 1).trim();
    if (value === "") continue;
    if (key === "v") version = value;
    else if (key === name) {
      const kept = read(value);
      if (kept !== undefined) out.add(kept);
    }
  }
  return version === undefined || version === "1" ? [...out] : [];
}

/**
 * The `jkt=S256:<thumbprint>` values of one TXT record (strings joined), as {@link parseControllerTxtRecord} reads
 * `controller=`: a record whose `v` is present and not `1` yields nothing; malformed values are skipped.
 */
export function parseJktTxtRecord(record: string): string[] {
  return txtRecordValues(record, "jkt", readJktValue);
}

/** The distinct thumbprints of one TXT name's records: all of them, as {@link txtControllerKeys}. */
export function txtThumbprints(records: readonly string[]): string[] {
  const out = new Set<string>();
  for (const record of records) for (const t of parseJktTxtRecord(record)) out.add(t);
  return [...out];
}

/**
 * The distinct controller keys of one TXT name's records: every `controller=` value counts (decisions §8), however
 * many records or values the name has; one DNS message bounds them (controller_values.ts). Before, the 65th was
 * dropped, and a controller a domain published was "not confirmed".
 */
export function txtControllerKeys(records: readonly string[], canonicalOf: (value: string) => string | undefined): string[] {
  const keys = new Set<string>();
  for (const record of records) for (const key of parseControllerTxtRecord(record, canonicalOf)) keys.add(key);
  return [...keys];
}

/** The `error` of a TXT lookup that failed; undefined for one that answered. */
export const txtError = (lookup: TxtLookup): string | undefined =>
  lookup.status === "servfail" ? "DNS server failure" :
  lookup.status === "refused" ? "DNS query refused" :
  lookup.status === "timeout" ? "DNS lookup timed out" :
  lookup.status === "network-error" ? "DNS resolver unreachable" : undefined;

/** The most TXT records, and characters of each, an answer repeats back in `records`. */
export const MAX_SHOWN_TXT_RECORDS = 16;
const MAX_SHOWN_TXT_LENGTH = 1_024;
const shorten = (text: string) => text.length > MAX_SHOWN_TXT_LENGTH ? `${text.slice(0, MAX_SHOWN_TXT_LENGTH)}…` : text;

/** `records` and `notes` of a TXT lookup that answered (nothing for a failed one: its `error` says why). */
export function txtDetail(lookup: TxtLookup, canonicalOf: (value: string) => string | undefined): Pick<EvidenceItem, "records" | "notes"> {
  if (lookup.status === "nxdomain") return { notes: ["No such name (NXDOMAIN): nothing is published here"] };
  if (lookup.status === "nodata") return { notes: ["The name exists but has no TXT record"] };
  if (lookup.status !== "found") return {};
  const shown = lookup.records.slice(0, MAX_SHOWN_TXT_RECORDS);
  const notes: string[] = [];
  for (const record of shown) {
    const explained = explainControllerTxtRecord(record, { canonicalOf });
    for (const note of explained.notes) if (!notes.includes(note)) notes.push(note);
  }
  if (lookup.records.length > shown.length) notes.push(`${lookup.records.length - shown.length} more records not shown`);
  return { records: shown.map(shorten), ...(notes.length === 0 ? {} : { notes }) };
}

/**
 * What one TXT record (strings joined) says as a controller record, for people: the keys it names (as
 * {@link parseControllerTxtRecord} reads them) and a sentence for each thing that is ignored (another version, a
 * value that is no signing-key DID, no `controller=` at all). One pass over every value, like the parser itself; at
 * most 8 notes.
 */
export function explainControllerTxtRecord(
  record: string,
  options: { canonicalOf?: ((value: string) => string | undefined) | undefined } = {},
): { keys: string[]; notes: string[] } {
  const canonicalOf = options.canonicalOf ?? canonicalControllerKey;
  const keys = new Set<string>();
  const notes: string[] = [];
  let version: string | undefined;
  let controllers = 0;
  let jkts = 0;
  for (const entry of record.split(/[;\s]+/)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const key = entry.slice(0, eq).trim().toLowerCase();
    const value = entry.slice(eq + 1).trim();
    if (key === "v" && value !== "") version = value;
    if (key === "jkt") {
      jkts++;
      if (readJktValue(value) === undefined && notes.length < 8) notes.push(`"jkt=${value.slice(0, 80)}" is not S256:<base64url RFC 7638 thumbprint>`);
      continue;
    }
    if (key !== "controller") continue;
    controllers++;
    const canonical = value === "" ? undefined : canonicalOf(value);
    if (canonical !== undefined) {
      keys.add(canonical);
    } else if (notes.length < 8) {
      notes.push(value === "" ? "A controller= entry is empty" : `"${value.slice(0, 80)}" is not a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id`);
    }
  }
  if (version !== undefined && version !== "1") {
    return { keys: [], notes: [`The record says v=${version.slice(0, 16)}; only v=1 is read, so it is ignored`, ...notes] };
  }
  if (controllers === 0 && jkts === 0) notes.push(`A record without controller= is not a controller record: "${record.slice(0, 80)}"`);
  return { keys: [...keys], notes };
}

/** The TXT record that names `controllerDid` as a controller of a did:web subject or bare domain, or why there is none. */
export function controllerTxtRecordFor(subject: string, controllerDid: string): Result<{ name: string; value: string }, "INVALID_DID"> {
  const normalized = normalizeSubjectDid(subject);
  if (!normalized.ok) return fail("INVALID_DID", "Invalid subject", normalized.message);
  const location = didWebLocation(normalized.value);
  if (location === undefined) return fail("INVALID_DID", "The subject must be a domain or a did:web");
  const key = canonicalControllerKey(controllerDid);
  if (key === undefined) return fail("INVALID_DID", "The controller must be a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id");
  return ok({ name: `_controllers.${location.host}`, value: `v=1;controller=${key}` });
}
