/**
 * Identity resolve: a display record for any identifier a client holds (reference §2.2, decisions §4).
 */
import { Type as t } from "@sinclair/typebox";
import { buildDidPkhFromCaip10, extractAddressFromDid, normalizeDid } from "../did/mod.ts";

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
  readonly label: string;
  readonly type: IdentityType;
  readonly source: IdentitySource;
};

const EVM_ADDRESS = /^0x[a-fA-F0-9]{40}$/;
const LOOSE_CAIP10 = /^[a-z0-9-]+:[a-zA-Z0-9-]+:.+$/i;
const DID_METHOD = /^did:([a-z0-9]+):/;
const ELLIPSIS = "...";

/** Shortens a string to `head` characters, `...` and `tail` characters when that makes it shorter. */
export function truncateMiddle(value: string, head: number, tail: number): string {
  // Count code points so an emoji is never cut in half.
  const chars = Array.from(value);
  if (chars.length <= head + tail + ELLIPSIS.length) return value;
  return `${chars.slice(0, head).join("")}${ELLIPSIS}${tail > 0 ? chars.slice(-tail).join("") : ""}`;
}

const raw = (input: string, canonical: string): IdentityRecord => ({
  input,
  canonical,
  label: truncateMiddle(canonical, 18, 8),
  type: "unknown",
  source: "raw",
});

/** Resolves one identifier to its canonical form and display label; never throws. */
export function resolveIdentity(identifier: string): IdentityRecord {
  let original = "";
  let input = "";
  try {
    // JavaScript callers can pass anything; the HTTP layer only ever passes strings.
    original = typeof identifier === "string" ? identifier : String(identifier);
    input = original.trim();
    if (input === "") return { input: original, canonical: "", label: "Unknown", type: "unknown", source: "raw" };
    return resolveTrimmed(input);
  } catch {
    // Defensive only: every helper returns its failures as values.
    return input === "" ? { input: original, canonical: "", label: "Unknown", type: "unknown", source: "raw" } : raw(input, input);
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
