/**
 * DidDocumentFetcher for did:web over HTTPS, hardened against server-side request forgery (decisions §8,
 * performance_reliability §B4): the host must be a DNS name, it is resolved through the service's own
 * resolver, every resolved address must be public (unless private networks are allowed), and the
 * connection goes to the address that was checked while TLS is verified for the real host name, so a
 * second, rebound DNS answer can never be used. No redirects, a byte cap, one deadline for everything,
 * and never any upstream body text in a result.
 *
 * Pinning in Bun: `fetch("https://<ip>:<port>/…", { headers: { host }, tls: { serverName: host } })`
 * connects to `<ip>` (no name lookup), sends SNI `host` and verifies the certificate against
 * `serverName`, not against the IP in the URL.
 */
import { readCapped } from "./_read_capped.ts";
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { isDidWebPathSegment } from "../../domain/did/mod.ts";
import { classifyAddress, isIpLiteral, isPublicAddress } from "../../domain/discovery/mod.ts";
import type { DidDocumentFetch, DidDocumentFetcher, DnsResolver } from "../../ports/discovery.ts";

/** Options of {@link createHttpsDidDocumentFetcher}. */
export type HttpsDidDocumentFetcherOptions = {
  /** The same resolver the rest of discovery uses (`DNS_SERVERS`). */
  readonly resolver: DnsResolver;
  /** `ALLOW_PRIVATE_NETWORK`: allow loopback/private/reserved addresses (development and tests only). */
  readonly allowPrivateNetwork: boolean;
  /** An extra trusted root (PEM), added to the bundled roots and `NODE_EXTRA_CA_CERTS`. */
  readonly ca?: string | undefined;
  /** Total deadline: DNS, connect, TLS, headers and body; default 5000. */
  readonly timeoutMs?: number | undefined;
  /** Body cap in bytes; default 65536. */
  readonly maxBytes?: number | undefined;
  /** Tests only: the port to connect to when the did:web names none (instead of 443). */
  readonly portOverride?: number | undefined;
};

type Unavailable = Extract<DidDocumentFetch, { status: "unavailable" }>;
type Reason = Unavailable["reason"];

type Target = {
  readonly hostname: string;
  readonly port: number | undefined;
  readonly pathname: string;
  readonly url: string;
};

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;
const TLS_ERROR_CODE = /CERT|TLS|SSL|UNABLE_TO_|SELF_SIGNED|HOSTNAME|ALTNAME|HANDSHAKE/i;

/**
 * A DidDocumentFetcher that also fetches any https URL's JSON under the same policy (an explorer API an embed names,
 * decisions §29): the host a DNS name, every address public, the connection pinned, no redirects, the cap, one deadline.
 */
export type PinnedJsonFetcher = DidDocumentFetcher & { readonly fetchJsonUrl: (url: string) => Promise<DidDocumentFetch> };

/** Builds a DidDocumentFetcher that fetches did.json over HTTPS from a checked, pinned address. */
export function createHttpsDidDocumentFetcher(options: HttpsDidDocumentFetcherOptions): PinnedJsonFetcher {
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxBytes = options.maxBytes ?? 65536;
  const ca = options.ca === undefined ? undefined : trustedRoots(options.ca);

  async function run(target: Target, signal: AbortSignal): Promise<DidDocumentFetch> {
    const unavailable = (reason: Reason, httpStatus?: number): Unavailable =>
      httpStatus === undefined
        ? { status: "unavailable", url: target.url, reason }
        : { status: "unavailable", url: target.url, reason, httpStatus };

    const lookup = await options.resolver.resolveAddresses(target.hostname);
    // A host that does not exist, or has no address, publishes no document: not-found, as NXDOMAIN is for the
    // TXT names. Only a failed lookup (SERVFAIL, timeout, network) leaves the answer unknown.
    if (lookup.status === "nxdomain" || lookup.status === "nodata") return { status: "not-found", url: target.url };
    if (lookup.status !== "found") return unavailable("dns-failure");
    const addresses = lookup.addresses.map(classifyAddress);
    // Every answer is checked, not only the one used: a mixed answer is a sign of an attack.
    if (addresses.some((a) => a === undefined || (!options.allowPrivateNetwork && !isPublicAddress(a.address)))) {
      return unavailable("blocked-address");
    }
    const checked = addresses.filter((a) => a !== undefined);
    if (checked.length === 0) return unavailable("dns-failure");
    // One try on the first address, and on a connection failure one on the other family (as Boulder does).
    const first = checked[0]!;
    const candidates = [first, ...checked.filter((a) => a.kind !== first.kind).slice(0, 1)];

    let outcome: DidDocumentFetch = unavailable("network-error");
    for (const address of candidates) {
      outcome = await fetchFrom(target, address, signal, unavailable);
      if (outcome.status !== "unavailable" || outcome.reason !== "network-error") return outcome;
    }
    return outcome;
  }

  async function fetchFrom(
    target: Target,
    address: { kind: "ipv4" | "ipv6"; address: string },
    signal: AbortSignal,
    unavailable: (reason: Reason, httpStatus?: number) => Unavailable,
  ): Promise<DidDocumentFetch> {
    const port = target.port ?? options.portOverride ?? 443;
    const literal = address.kind === "ipv6" ? `[${address.address}]` : address.address;
    let response: Response;
    try {
      response = await fetch(`https://${literal}:${port}${target.pathname}`, {
        method: "GET",
        headers: {
          host: target.port === undefined ? target.hostname : `${target.hostname}:${target.port}`,
          accept: "application/did+json, application/json",
        },
        redirect: "manual",
        signal,
        // One request per connection: a pooled socket never outlives the check that chose its address.
        keepalive: false,
        tls: { serverName: target.hostname, rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) },
      });
    } catch (error) {
      return unavailable(classifyError(error, signal));
    }

    if (response.status >= 300 && response.status < 400) return discard(response, unavailable("redirect"));
    if (response.status === 404) return discard(response, { status: "not-found", url: target.url });
    if (response.status < 200 || response.status >= 300) {
      return discard(response, unavailable("http-status", response.status));
    }

    const declared = Number(response.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > maxBytes) return discard(response, unavailable("too-large"));

    const body = await readCapped(response, maxBytes, signal);
    if (body === "too-large") return unavailable("too-large");
    if (body === "error") return unavailable(signal.aborted ? "timeout" : "network-error");

    let document: unknown;
    try {
      const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body);
      document = JSON.parse(text);
    } catch {
      // Only a body whose end the framing vouches for is the host's answer (lasting, domain/discovery/did_document.ts).
      // A body that ends where the connection ends may have been cut (a FIN or a reset, by the host's network or by
      // anyone on the path), and Bun then ends it as if whole: unless no cut could make it JSON, it was not read.
      if (!lengthDelimited(response.headers, response.status) && mayBeCutJson(body)) return unavailable("network-error");
      return unavailable("invalid-json");
    }
    return { status: "ok", document, url: target.url };
  }

  /** One fetch of a checked target under the deadline (did.json and jwks.json alike). */
  async function fetchTarget(target: Target): Promise<DidDocumentFetch> {
    const controller = new AbortController();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<DidDocumentFetch>((resolve) => {
        timer = setTimeout(() => {
          controller.abort();
          resolve({ status: "unavailable", url: target.url, reason: "timeout" });
        }, timeoutMs);
      });
      try {
        return await Promise.race([run(target, controller.signal), deadline]);
      } finally {
        clearTimeout(timer);
        // Tears down whatever is still open (an unread body, a lingering connection).
        controller.abort();
      }
  }

  return {
    async fetchDidDocument(host, path) {
      const target = parseTarget(host, path);
      if (target === undefined) {
        return { status: "unavailable", url: describeUrl(host, path), reason: "invalid-host" };
      }
      return await fetchTarget(target);
    },
    async fetchJsonUrl(url) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return { status: "unavailable", url: String(url).slice(0, 200), reason: "invalid-host" };
      }
      const target = parsed.protocol === "https:" && parsed.username === "" && parsed.password === ""
        ? parseTarget(parsed.port === "" ? parsed.hostname : `${parsed.hostname}:${parsed.port}`, [])
        : undefined;
      if (target === undefined) return { status: "unavailable", url: parsed.origin, reason: "invalid-host" };
      return await fetchTarget({ ...target, pathname: `${parsed.pathname}${parsed.search}`, url: `${parsed.origin}${parsed.pathname}` });
    },
    // The JWK Set of a did:web host (decisions §25): the same checks, pinning, cap and deadline as did.json.
    async fetchJwks(host) {
      const target = parseTarget(host, []);
      if (target === undefined) return { status: "unavailable", url: `https://${String(host)}/.well-known/jwks.json`, reason: "invalid-host" };
      const authority = target.port === undefined ? target.hostname : `${target.hostname}:${target.port}`;
      return await fetchTarget({ ...target, pathname: "/.well-known/jwks.json", url: `https://${authority}/.well-known/jwks.json` });
    },
  };
}

/**
 * Whether the body's end is set by its framing (RFC 9112 §6.3): none at all after a 204 or 205, chunked as the last
 * transfer coding, or, with no Transfer-Encoding, a Content-Length (one value, or the same value repeated: Headers joins
 * repeated fields with commas, RFC 9110 §8.6). Bun reports a body that ends short of either as an error; a body with
 * neither ends with the connection, so a cut one reads as whole. (Bun's fetch speaks HTTP/1.1, and shows
 * Transfer-Encoding.)
 */
export function lengthDelimited(headers: Headers, status?: number): boolean {
  if (status === 204 || status === 205) return true;
  const transferEncoding = headers.get("transfer-encoding");
  if (transferEncoding !== null) return /(?:^|,)[ \t]*chunked[ \t]*$/i.test(transferEncoding);
  const lengths = (headers.get("content-length") ?? "").split(",").map((value) => value.trim());
  return /^[0-9]+$/.test(lengths[0]!) && lengths.every((value) => value === lengths[0]);
}

const JSON_WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
/** `{ [ " - 0-9 t f n`: the bytes a JSON value can start with. */
const JSON_VALUE_START = new Set([0x7b, 0x5b, 0x22, 0x2d, ..."0123456789".split("").map((c) => c.charCodeAt(0)), 0x74, 0x66, 0x6e]);
const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * Whether `body` could be a JSON text cut short: nothing but (a start of) a byte order mark and white space, or the
 * first byte after them can start a JSON value, and a text that starts as a literal or a number is still (a start of)
 * one. One that cannot (an HTML page, plain text such as `not found` or `0 results`) is not JSON however much of it
 * came, so it stays `invalid-json` unframed too.
 */
export function mayBeCutJson(body: Uint8Array): boolean {
  let at = 0;
  while (at < UTF8_BOM.length && at < body.length && body[at] === UTF8_BOM[at]) at++;
  if (at === body.length) return true;
  if (at !== 0 && at !== UTF8_BOM.length) return false;
  while (at < body.length && JSON_WHITESPACE.has(body[at]!)) at++;
  if (at === body.length) return true;
  if (!JSON_VALUE_START.has(body[at]!)) return false;
  const rest = new TextDecoder().decode(body.subarray(at, at + 8));
  if (/^[tfn]/.test(rest)) return ["true", "false", "null"].some((literal) => literal.startsWith(rest));
  // A cut number is number characters to its end (white space after it would have ended it whole).
  if (/^[-0-9]/.test(rest)) return /^[-+.eE0-9]*$/.test(new TextDecoder().decode(body.subarray(at)));
  return true;
}

function discard<T>(response: Response, result: T): T {
  response.body?.cancel().catch(() => {});
  return result;
}

function classifyError(error: unknown, signal: AbortSignal): Reason {
  if (signal.aborted) return "timeout";
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
  if (TLS_ERROR_CODE.test(code)) return "tls-error";
  return "network-error";
}

/** Validates the did:web host (optionally `host:port`, `%3A` allowed) and path; `undefined` when unusable. */
function parseTarget(host: string, path: readonly string[] | undefined): Target | undefined {
  if (typeof host !== "string") return undefined;
  const text = host.replace(/%3a/gi, ":").toLowerCase();
  // Userinfo, IPv6 literals, paths, queries, leftover escapes and whitespace have no place in a did:web host.
  if (/[^a-z0-9.:-]/.test(text)) return undefined;
  const parts = text.split(":");
  if (parts.length > 2) return undefined;
  let port: number | undefined;
  if (parts.length === 2) {
    if (!/^[0-9]{1,5}$/.test(parts[1]!)) return undefined;
    port = Number(parts[1]);
    if (port < 1 || port > 65535) return undefined;
  }
  const hostname = parts[0]!.replace(/\.$/, "");
  if (hostname === "" || hostname.length > 253 || isIpLiteral(hostname)) return undefined;
  const labels = hostname.split(".");
  if (!labels.every((l) => LABEL.test(l))) return undefined;
  // URL parsers read a name ending in a numeric label as an IPv4 address.
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!)) return undefined;

  const segments = path ?? [];
  // The domain's one path rule: no `.` or `..`, no escaped `/`, `\` or unreserved character (a second name), fetchable.
  if (!segments.every((segment) => typeof segment === "string" && isDidWebPathSegment(segment))) return undefined;
  const pathname = segments.length === 0 ? "/.well-known/did.json" : `/${segments.join("/")}/did.json`;
  const authority = port === undefined ? hostname : `${hostname}:${port}`;
  return { hostname, port, pathname, url: `https://${authority}${pathname}` };
}

/** A best-effort URL for the result of an input that failed validation. */
function describeUrl(host: string, path: readonly string[] | undefined): string {
  const suffix = path === undefined || path.length === 0 ? "/.well-known/did.json" : `/${path.join("/")}/did.json`;
  return `https://${String(host)}${suffix}`;
}

/** The bundled roots, `NODE_EXTRA_CA_CERTS` and the extra root: Bun's `tls.ca` replaces the defaults. */
export function trustedRoots(extra: string): string[] {
  const roots = [...rootCertificates];
  const extraFile = process.env.NODE_EXTRA_CA_CERTS;
  if (extraFile) {
    try {
      roots.push(readFileSync(extraFile, "utf8"));
    } catch {
      // An unreadable file is the operator's concern; Bun itself only warns about it.
    }
  }
  roots.push(extra);
  return roots;
}
