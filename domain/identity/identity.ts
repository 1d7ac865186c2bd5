/**
 * Identity resolve: a display record for any identifier a client holds (reference §2.2, decisions §4).
 */
import { Type as t } from "@sinclair/typebox";
import { buildDidPkhFromCaip10, didWebLocation, extractAddressFromDid, normalizeDid } from "../did/mod.ts";
import { displayTextProblem } from "../display_text.ts";

/** Identifiers one request resolves at most (interface: "at most 100"). */
export const MAX_IDENTIFIERS = 100;

/**
 * The longest identifier resolved, in UTF-16 units (the spec is silent; docs/endpoints.md): 10 KiB, about ten times a
 * did:jwk of an RSA-4096 key (the longest identifier in real use). 100 of them written as six-byte JSON escapes still fit the
 * request-body bound (http/routes/request.ts).
 */
export const MAX_IDENTIFIER_LENGTH = 10_240;

/**
 * The `identifiers` of a resolve request: the one bound that `POST /v1/identity-resolve` and the MCP tool
 * `resolve_identities` both check (decisions §20: the same answer), so a list one takes the other takes too.
 * An empty list is allowed (reference §2.2: it answers `{"identities":[]}`).
 */
export const IdentifierList = t.Array(t.String({ maxLength: MAX_IDENTIFIER_LENGTH }), {
  maxItems: MAX_IDENTIFIERS,
  description: `DIDs, CAIP-10 accounts, EVM addresses or domains; at most ${MAX_IDENTIFIERS}, each at most ${MAX_IDENTIFIER_LENGTH} characters`,
});

/**
 * Why `body.identifiers` is refused, in the words the route and the tool both answer; undefined when the list is
 * within {@link IdentifierList} (the refusal is then about something else of the body).
 */
export function identifierListRefusal(body: unknown): string | undefined {
  const identifiers = typeof body === "object" && body !== null ? (body as { identifiers?: unknown }).identifiers : undefined;
  if (!Array.isArray(identifiers) || !identifiers.every((i) => typeof i === "string")) return "identifiers must be an array of strings";
  if (identifiers.length > MAX_IDENTIFIERS) return `identifiers must contain at most ${MAX_IDENTIFIERS} entries`;
  if (identifiers.some((i: string) => i.length > MAX_IDENTIFIER_LENGTH)) return `each identifier must be at most ${MAX_IDENTIFIER_LENGTH} characters`;
  return undefined;
}

/** The kinds of identifier identity resolve tells apart. */
export type IdentityType = "did-web" | "did-pkh" | "did-key" | "did-handle" | "did-ethr" | "did-jwk" | "address" | "unknown";

/** How the canonical form was reached. */
export type IdentitySource =
  | "did-web"
  | "did-pkh"
  | "did-handle"
  | "did-key"
  | "did-ethr"
  | "did-jwk"
  | "caip10"
  | "address"
  | "raw";

/** One resolved identifier. */
export type IdentityRecord = {
  /** The identifier trimmed; the original when it is blank. */
  readonly input: string;
  readonly canonical: string;
  /** Never holds a control or bidirectional control character (domain/display_text.ts): "Unknown" instead. */
  readonly label: string;
  readonly type: IdentityType;
  readonly source: IdentitySource;
};

const EVM_ADDRESS = /^0x[a-fA-F0-9]{40}$/;
const LOOSE_CAIP10 = /^[a-z0-9-]+:[a-zA-Z0-9-]+:.+$/i;
const DID_METHOD = /^did:([a-z0-9]+):/;
const ELLIPSIS = "...";
/** The label of a record with nothing to show: a blank identifier (reference §2.2), or a label refused by {@link shown}. */
const UNKNOWN_LABEL = "Unknown";

/** Shortens a string to `head` characters, `...` and `tail` characters when that makes it shorter. */
export function truncateMiddle(value: string, head: number, tail: number): string {
  // Count code points so an emoji is never cut in half, but read only the ends: a 10 KB identifier split whole into
  // code points cost half a millisecond, and a did:web naming no domain is labelled by this (a route test sends 10,000).
  const keep = head + tail + ELLIPSIS.length;
  // A string has at most as many code points as UTF-16 units, and at least half as many.
  if (value.length <= keep || (value.length <= 2 * keep && Array.from(value).length <= keep)) return value;
  let first = "";
  let taken = 0;
  for (const char of value) {
    if (taken++ === head) break;
    first += char;
  }
  let start = value.length;
  for (let i = 0; i < tail && start > 0; i++) start -= isLowSurrogate(value, start - 1) && isHighSurrogate(value, start - 2) ? 2 : 1;
  return `${first}${ELLIPSIS}${value.slice(start)}`;
}

const isHighSurrogate = (value: string, at: number) => at >= 0 && (value.charCodeAt(at) & 0xfc00) === 0xd800;
const isLowSurrogate = (value: string, at: number) => at >= 0 && (value.charCodeAt(at) & 0xfc00) === 0xdc00;

const raw = (input: string, canonical: string): IdentityRecord => ({
  input,
  canonical,
  label: truncateMiddle(canonical, 18, 8),
  type: "unknown",
  source: "raw",
});

const blank = (original: string): IdentityRecord => ({ input: original, canonical: "", label: UNKNOWN_LABEL, type: "unknown", source: "raw" });

/**
 * The record as it may be shown: a label that text shown to people may not be (domain/display_text.ts: a control
 * or bidirectional control character) becomes {@link UNKNOWN_LABEL}, as a blank identifier's is, for every type:
 * `did:handle:x:\u202enimda` was labelled `\u202enimda (x)`, which reads `admin (x)`. The canonical form, type and
 * source stay: they name the identifier, the label only shows it. Refused, not escaped, as display_text.ts refuses
 * such text everywhere else (a display name, a tag, a client name) and never rewrites it; a label that showed an
 * escape such as `<U+202E>` would be a second spelling of the identifier that names nothing.
 */
function shown(record: IdentityRecord): IdentityRecord {
  return displayTextProblem("label", record.label) === undefined && !INVISIBLE.test(record.label) ? record : { ...record, label: UNKNOWN_LABEL };
}

/**
 * Characters a label may not hold beyond display text's rule: format characters (Unicode Cf: zero-width spaces and
 * joiners, the soft hyphen, LRM/RLM, word joiners, tags) print as nothing, so `did:handle:x:pay\u200bpal` read
 * `paypal (x)`, a name it is not. A label is a name to compare by eye; display names elsewhere may keep them (an emoji
 * joined by ZWJ), a label may not.
 */
const INVISIBLE = /\p{Cf}/u;

/** Resolves one identifier to its canonical form and display label; never throws. */
export function resolveIdentity(identifier: string): IdentityRecord {
  let original = "";
  let input = "";
  try {
    // JavaScript callers can pass anything; the HTTP layer only ever passes strings.
    original = typeof identifier === "string" ? identifier : String(identifier);
    input = original.trim();
    if (input === "") return blank(original);
    return shown(resolveTrimmed(input));
  } catch {
    // Defensive only: every helper returns its failures as values.
    return input === "" ? blank(original) : shown(raw(input, input));
  }
}

/** Resolves identifiers in order; never throws. */
export function resolveIdentities(identifiers: readonly string[]): IdentityRecord[] {
  return identifiers.map((identifier) => resolveIdentity(identifier));
}

function resolveTrimmed(input: string): IdentityRecord {
  if (EVM_ADDRESS.test(input)) {
    // A mixed-case address with a bad checksum is not an address anyone can be sure of.
    const address = extractAddressFromDid(input);
    if (!address.ok) return raw(input, input);
    return { input, canonical: address.value, label: truncateMiddle(address.value, 6, 4), type: "address", source: "address" };
  }
  if (!input.startsWith("did:") && LOOSE_CAIP10.test(input)) {
    const pkh = buildDidPkhFromCaip10(input);
    const canonical = pkh.ok ? normalizeDid(pkh.value) : pkh;
    if (canonical.ok) {
      const address = canonical.value.split(":")[4] ?? "";
      return { input, canonical: canonical.value, label: truncateMiddle(address, 6, 4), type: "did-pkh", source: "caip10" };
    }
  }
  const normalized = normalizeDid(input);
  if (!normalized.ok) return raw(input, input);
  const canonical = normalized.value;
  const parts = canonical.split(":");
  switch (DID_METHOD.exec(canonical)?.[1]) {
    case "web": {
      // The one did:web rule of the service (domain/did didWebLocation, the subject rule's): a did:web naming no domain
      // (`did:web:\u202emoc.lapyap`, which reads `paypal.com`; a Cyrillic `p\u0430ypal.com`; an IP host) is one no
      // route looks up or takes as a subject, so it is typed as what normalizeDid refuses is, not labelled by a host.
      if (didWebLocation(canonical) === undefined) return raw(input, input);
      const rest = canonical.slice("did:web:".length);
      const slash = rest.indexOf("/");
      return { input, canonical, label: slash === -1 ? rest : rest.slice(0, slash), type: "did-web", source: "did-web" };
    }
    case "pkh":
      return { input, canonical, label: truncateMiddle(parts[4] ?? "", 6, 4), type: "did-pkh", source: "did-pkh" };
    case "handle":
      return { input, canonical, label: `${parts[3] ?? ""} (${parts[2] ?? ""})`, type: "did-handle", source: "did-handle" };
    case "key":
      return { input, canonical, label: truncateMiddle(canonical, 16, 8), type: "did-key", source: "did-key" };
    case "ethr": {
      const address = extractAddressFromDid(canonical);
      if (!address.ok) return raw(input, input);
      return { input, canonical, label: truncateMiddle(address.value, 6, 4), type: "did-ethr", source: "did-ethr" };
    }
    case "jwk":
      return { input, canonical, label: truncateMiddle(canonical, 18, 8), type: "did-jwk", source: "did-jwk" };
    default:
      return raw(input, canonical);
  }
}
