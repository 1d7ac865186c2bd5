/**
 * WebhookTransport over HTTP(S), held to the discovery IP policy (decisions §22, as https_did_document.ts for did.json):
 * the host is resolved through the service's resolver, every address must be public (unless private networks are
 * allowed), and the request goes to the checked address (TLS verified for the real host name), so a rebound DNS answer
 * is never used. No redirect is followed (a 3xx is an answer like any other non-2xx), the response body is read up to
 * 64 KiB and discarded, one deadline covers everything.
 */
import { classifyAddress, isPublicAddress } from "../../domain/discovery/mod.ts";
import type { DnsResolver } from "../../ports/discovery.ts";
import type { WebhookPost, WebhookTransport, WebhookUrlRefusal } from "../../ports/webhooks.ts";
import { trustedRoots } from "./https_did_document.ts";

/** Options of {@link createHttpsWebhookTransport}. */
export type HttpsWebhookTransportOptions = {
  readonly resolver: DnsResolver;
  /** `ALLOW_PRIVATE_NETWORK`: loopback/private addresses allowed (development and tests only). */
  readonly allowPrivateNetwork: boolean;
  /** An extra trusted root (PEM), added to the bundled roots and `NODE_EXTRA_CA_CERTS`. */
  readonly ca?: string | undefined;
  /** The whole request's deadline; default 10 000 (decisions §22). */
  readonly timeoutMs?: number | undefined;
  /** Response bytes read (then discarded); default 65 536. */
  readonly maxBytes?: number | undefined;
};

type Address = { readonly kind: "ipv4" | "ipv6"; readonly address: string };
const TLS_ERROR_CODE = /CERT|TLS|SSL|UNABLE_TO_|SELF_SIGNED|HOSTNAME|ALTNAME|HANDSHAKE/i;

/** Builds the transport. */
export function createHttpsWebhookTransport(options: HttpsWebhookTransportOptions): WebhookTransport {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBytes = options.maxBytes ?? 65_536;
  const ca = options.ca === undefined ? undefined : trustedRoots(options.ca);

  /** The URL's checked addresses, or why it may not be sent to. */
  async function addressesOf(raw: string): Promise<{ ok: true; url: URL; addresses: Address[] } | { ok: false; reason: WebhookUrlRefusal }> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, reason: "invalid-url" };
    }
    if (url.protocol !== "https:" && !(url.protocol === "http:" && options.allowPrivateNetwork)) return { ok: false, reason: "invalid-url" };
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    let found: string[];
    const literal = classifyAddress(host);
    if (literal !== undefined) found = [literal.address];
    else if (host === "localhost" || host === "localhost.") found = ["127.0.0.1"];
    else {
      const lookup = await options.resolver.resolveAddresses(host);
      if (lookup.status === "nxdomain" || lookup.status === "nodata") return { ok: false, reason: "not-found" };
      if (lookup.status !== "found") return { ok: false, reason: "dns-failure" };
      found = [...lookup.addresses];
    }
    const addresses = found.map(classifyAddress);
    // Every answer is checked, not only the one used: a mixed answer is a sign of an attack.
    if (addresses.some((a) => a === undefined || (!options.allowPrivateNetwork && !isPublicAddress(a.address)))) return { ok: false, reason: "blocked-address" };
    // http:// only ever goes to loopback, even with private networks allowed (decisions §22).
    const usable = addresses.filter((a): a is Address => a !== undefined);
    if (url.protocol === "http:" && usable.some((a) => !(a.address.startsWith("127.") || a.address === "::1"))) return { ok: false, reason: "blocked-address" };
    if (usable.length === 0) return { ok: false, reason: "dns-failure" };
    return { ok: true, url, addresses: usable };
  }

  async function postTo(url: URL, address: Address, headers: Readonly<Record<string, string>>, body: string, signal: AbortSignal): Promise<WebhookPost> {
    const literal = address.kind === "ipv6" ? `[${address.address}]` : address.address;
    const port = url.port === "" ? "" : `:${url.port}`;
    const target = `${url.protocol}//${literal}${port}${url.pathname}${url.search}`;
    let response: Response;
    try {
      response = await fetch(target, {
        method: "POST",
        headers: { ...headers, host: url.host, "user-agent": "ats-webhooks/1" },
        body,
        redirect: "manual",
        signal,
        // One request per connection: a pooled socket never outlives the check that chose its address.
        keepalive: false,
        ...(url.protocol === "https:" ? { tls: { serverName: url.hostname, rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) } } : {}),
      });
    } catch (error) {
      if (signal.aborted) return { ok: false, reason: "timeout" };
      const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
      return { ok: false, reason: TLS_ERROR_CODE.test(code) ? "tls-error" : "network-error" };
    }
    // The status is the answer (decisions §22: "a 2xx within 10 s is delivered"); the body is read briefly and thrown
    // away. Before, a 2xx whose body trickled past the deadline was taken for a timeout: the event was sent again at
    // every retry and finally marked failed, and the endpoint counted as failing though it always answered 2xx.
    await drain(response, maxBytes, AbortSignal.any([signal, AbortSignal.timeout(BODY_DRAIN_MS)]));
    return { ok: true, status: response.status };
  }

  return {
    async check(url) {
      const checked = await addressesOf(url);
      return checked.ok ? { ok: true } : checked;
    },
    async post(raw, headers, body) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      try {
        // Resolved and checked at every delivery: what was public at registration may not be now.
        const checked = await addressesOf(raw);
        if (!checked.ok) return checked;
        const first = checked.addresses[0]!;
        const candidates = [first, ...checked.addresses.filter((a) => a.kind !== first.kind).slice(0, 1)];
        let outcome: WebhookPost = { ok: false, reason: "network-error" };
        for (const address of candidates) {
          outcome = await postTo(checked.url, address, headers, body, controller.signal);
          if (outcome.ok || outcome.reason !== "network-error") return outcome;
        }
        return outcome;
      } finally {
        clearTimeout(timer);
        controller.abort();
      }
    },
  };
}

/** Reads up to `maxBytes` of the body and discards it; then stops reading. */
async function drain(response: Response, maxBytes: number, signal: AbortSignal): Promise<void> {
  if (response.body === null) return;
  const reader = response.body.getReader();
  // A read that never ends (a receiver holding its body open) is left when the signal fires.
  const stopped = new Promise<undefined>((resolve) => {
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
  let total = 0;
  try {
    while (total <= maxBytes && !signal.aborted) {
      const next = await Promise.race([reader.read(), stopped]);
      if (next === undefined || next.done) break;
      total += next.value.byteLength;
    }
  } catch {
    // The answer's status is what counts; a body cut short is not an error of the delivery.
  }
  reader.cancel().catch(() => {});
}

/** How long a receiver's response body is read (up to its 64 KiB) once its status is in. */
const BODY_DRAIN_MS = 1_000;
