/** did:web: its normal form, its host rule and its location (host, port, path). */
import { ok, type Result } from "../result.ts";
import { invalid } from "./_private.ts";

/**
 * The did:web normal form of a did:web or a bare domain (the path after `/` kept); folder-private: callers use
 * `normalizeDid`. As the reference, everything before the first `/` is normalized by {@link normalizeDomain}
 * (lowercased, a port's `%3A` and a colon path too; one trailing `.` of the whole and one leading `www.` dropped); then
 * the host itself, which ends at the port's `%3A` or the first `:`, loses one trailing `.` (decisions §3: the host's).
 * The reference drops that dot only at the end of the whole text, so `did:web:example.com.%3A8443` and
 * `did:web:example.com.:user` kept it: a second DID, with a DID address of its own, for a host that discovery, the
 * did.json fetch and the witness's DNS read as `example.com` (its evidence was the host's, and a witness was written
 * for the alias). Now they are `did:web:example.com%3a8443` and `did:web:example.com:user`, as a resource URL
 * `https://example.com.:8443/` gave already (domain/payments); every DID the reference gives a host without that dot
 * is unchanged. A second dot (`did:web:example.com..%3A8443`) is left, and {@link didWebLocation} refuses it.
 */
export function normalizeDidWeb(value: string): Result<string, "INVALID_DID"> {
  let rest: string;
  if (value.startsWith("did:web:")) rest = value.slice("did:web:".length);
  else if (/^did:/i.test(value)) return invalid("Expected did:web DID");
  else rest = value;
  const slash = rest.indexOf("/");
  const authority = normalizeDomain(slash === -1 ? rest : rest.slice(0, slash));
  const hostEnd = authority.search(/%3a|:/);
  const hostDot = hostEnd > 0 && authority[hostEnd - 1] === ".";
  const host = hostDot ? `${authority.slice(0, hostEnd - 1)}${authority.slice(hostEnd)}` : authority;
  if (host === "") return invalid("Invalid did:web identifier");
  return ok(`did:web:${host}${slash === -1 ? "" : rest.slice(slash)}`);
}

/** Lowercases a host and drops one trailing dot and one leading `www.`. */
export function normalizeDomain(host: string): string {
  let domain = host.trim().toLowerCase();
  if (domain.endsWith(".")) domain = domain.slice(0, -1);
  if (domain.startsWith("www.")) domain = domain.slice(4);
  return domain;
}

/** The longest DNS label and the longest name in its written form (RFC 1035 §2.3.4: 63 and 255 octets on the wire). */
const MAX_LABEL_LENGTH = 63;
const MAX_DOMAIN_NAME_LENGTH = 253;

/**
 * The one host rule of every route that looks a did:web up (controller discovery and confirm, subject ownership,
 * subjects, the witness, key status, x402 did:web keys): the host must be a domain name, never an IP address. As
 * the WHATWG URL parser decides ("ends in a number"), a host whose last label (after one trailing dot) is decimal
 * digits or `0x` hex is an IPv4 address in some spelling: `127.0.0.1`, `0`, `1.2.3`, `2130706433`, `0x7f.1`; no
 * top-level domain is numeric, so no name is lost. IPv6 (`[::1]`, `%5B%3A%3A1%5D`) never passes the host
 * characters of {@link didWebLocation}. Nor is a name no host can have: a label longer than 63 characters or a name
 * longer than 253 (DNS cannot hold them, RFC 1035), or a label that starts or ends with `-` (no host name does,
 * RFC 1123, and no certificate for did.json's HTTPS can name one). Such a did:web is bad input (400 `INVALID_DID`),
 * not a lookup that failed.
 */
export function isDomainNameHost(host: string): boolean {
  const labels = host.toLowerCase().split(".");
  if (labels.length > 1 && labels[labels.length - 1] === "") labels.pop();
  if (labels.join(".").length > MAX_DOMAIN_NAME_LENGTH) return false;
  if (labels.some((label) => label.length > MAX_LABEL_LENGTH || label.startsWith("-") || label.endsWith("-"))) return false;
  const last = labels[labels.length - 1] ?? "";
  return last !== "" && !/^[0-9]+$/.test(last) && !/^0x[0-9a-f]*$/.test(last);
}

/** Why {@link didWebLocation} finds no location in a did:web: the one wording of every route that refuses one. */
export const DID_WEB_NO_LOCATION =
  "did:web must name a domain (not an IP address), written as itself, with each path segment a plain URL segment (not empty, . or ..)";

/** A path segment the did.json lookup can fetch: RFC 3986's unreserved characters and escapes. */
const PATH_SEGMENT = /^(?:[a-zA-Z0-9._~-]|%[0-9a-fA-F]{2})+$/;
/**
 * Escapes a path segment must not hold: of an unreserved character (RFC 3986 §2.3: the same as the character, so
 * `us%65r` would be a second name for `user`), of `/` or `\` (one segment read as two), and of a control character.
 */
const REFUSED_ESCAPE = /%(?:3[0-9]|[46][1-9a-f]|[57][0-9a]|2[de]|5f|7e|2f|5c|[01][0-9a-f]|7f)/i;

/**
 * Whether `segment` is one plain did:web path segment: fetchable, not `.` or `..`, and written as itself. The did.json
 * lookup (adapters/https) checks the segments it is given with it too.
 */
export function isDidWebPathSegment(segment: string): boolean {
  return PATH_SEGMENT.test(segment) && !REFUSED_ESCAPE.test(segment) && segment !== "." && segment !== "..";
}

/**
 * The host, optional port and path of a normalized did:web (`did:web:example.com%3A8443:user:alice`); undefined
 * when it names no domain ({@link isDomainNameHost}). The host is written as itself: the one escape it takes is the
 * port's `%3A` (the did:web method), so `did:web:ex%61mple.com` or `did:web:example%2Ecom` is no second name for
 * example.com, with a DID address of its own, that discovery would look up as example.com. For the same reason the
 * port is written plainly (1 to 65535, no leading zero, never the default 443), and no path segment is empty:
 * `did:web:example.com/`, `did:web:example.com:` and `did:web:example.com::a` would be looked up as
 * `did:web:example.com` and `did:web:example.com:a`. Each path segment is one plain URL segment
 * ({@link isDidWebPathSegment}), as the did.json lookup (adapters/https) fetches only those: it refused
 * `did:web:example.com:a:..:b` as a lookup that failed (did.json `unavailable`, an ownership proof 502) where the
 * subject was bad input, and fetched `did:web:example.com:us%65r` at `/us%65r/did.json`, which a server reads as
 * `/user/did.json`.
 */
export function didWebLocation(did: string): { host: string; port: string | undefined; path: string[] } | undefined {
  if (!did.startsWith("did:web:")) return undefined;
  const rest = did.slice("did:web:".length);
  const [authority = "", ...slashPath] = rest.split("/");
  const [hostPart = "", ...colonPath] = authority.split(":");
  // A port from 1 to 65535 without leading zeros, and not HTTPS's own 443: `%3a443` or `%3a08443` would be one more
  // name for the same location.
  const portMatch = /^(.*)%3a([1-9][0-9]{0,4})$/i.exec(hostPart);
  if (portMatch && (Number(portMatch[2]) > 65_535 || portMatch[2] === "443")) return undefined;
  const host = portMatch ? portMatch[1]! : hostPart;
  // A host ending in `.` is a second name for the host without it (the DNS and did.json lookups read both alike), and
  // no normalized did:web holds one ({@link normalizeDidWeb} drops one dot; `did:web:example.com..` keeps the other).
  if (host === "" || !/^[a-z0-9.-]+$/.test(host) || host.startsWith(".") || host.endsWith(".") || host.includes("..") || !isDomainNameHost(host)) return undefined;
  const path = [...colonPath, ...slashPath];
  if (!path.every(isDidWebPathSegment)) return undefined;
  return { host, port: portMatch?.[2], path };
}
