import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type HttpsServer, startHttpsServer } from "../../e2e/support/https_server.ts";
import { getTestCa, issueLeaf } from "../../e2e/support/test_ca.ts";
import { fakeDnsResolver } from "../../ports/fakes/mod.ts";
import type { AddressLookup } from "../../ports/discovery.ts";
import { createHttpsWebhookTransport } from "./https_webhook_transport.ts";

/** The headers of a request as a plain object (lowercase names). */
function headersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => (out[name] = value));
  return out;
}

const found = (...addresses: string[]): AddressLookup => ({ status: "found", addresses });
const HEADERS = { "content-type": "application/json", "webhook-id": "msg_1", "webhook-timestamp": "1", "webhook-signature": "v1,x" };

let tls: HttpsServer;
let ca: string;
const plainRequests: { path: string; headers: Record<string, string>; body: string }[] = [];
let plain: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  ca = (await getTestCa()).cert;
  tls = await startHttpsServer({ ...(await issueLeaf(["hooks.test"])), routes: () => new Response(null, { status: 204 }) });
  plain = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      plainRequests.push({ path, headers: headersOf(request.headers), body: await request.text() });
      if (path === "/redirect") return new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${plain.port}/target` } });
      // 4 MiB a receiver sends back: read up to 64 KiB, then the connection is let go.
      if (path === "/huge") return new Response(new Uint8Array(4 * 1024 * 1024).fill(0x20), { status: 200 });
      // A 200 at once whose body never ends: a receiver holding its connection open.
      if (path === "/held") return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("o")) }), { status: 200 });
      return new Response("ok", { status: path === "/fail" ? 500 : 200 });
    },
  });
});
afterAll(async () => {
  await tls?.stop();
  plain?.stop(true);
});

describe("createHttpsWebhookTransport()", () => {
  test("check(): a host that does not resolve, or resolves to a private address, is refused; a public one passes", async () => {
    const resolver = fakeDnsResolver({}, { "public.test": found("93.184.216.34"), "inside.test": found("10.0.0.7"), "mixed.test": found("93.184.216.34", "127.0.0.1") });
    const transport = createHttpsWebhookTransport({ resolver, allowPrivateNetwork: false });
    expect(await transport.check("https://public.test/hook")).toEqual({ ok: true });
    expect(await transport.check("https://gone.test/hook")).toEqual({ ok: false, reason: "not-found" });
    expect(await transport.check("https://inside.test/hook")).toEqual({ ok: false, reason: "blocked-address" });
    expect(await transport.check("https://mixed.test/hook")).toEqual({ ok: false, reason: "blocked-address" });
    expect(await transport.check("https://169.254.169.254/latest")).toEqual({ ok: false, reason: "blocked-address" });
    expect(await transport.check(`http://127.0.0.1:${plain.port}/`)).toEqual({ ok: false, reason: "invalid-url" });
  });

  test("post() resolves again at every delivery: a host rebound to loopback after registration is never connected to", async () => {
    const resolver = fakeDnsResolver({}, { "rebind.test": found("93.184.216.34") });
    const transport = createHttpsWebhookTransport({ resolver, allowPrivateNetwork: false });
    expect(await transport.check(`https://rebind.test:${tls.port}/hook`)).toEqual({ ok: true });
    resolver.addresses["rebind.test"] = found("127.0.0.1");
    const before = tls.requests.length;
    expect(await transport.post(`https://rebind.test:${tls.port}/hook`, HEADERS, "{}")).toEqual({ ok: false, reason: "blocked-address" });
    expect(tls.requests.length).toBe(before);
  });

  test("https: the checked address is connected to and TLS verified for the host name", async () => {
    const resolver = fakeDnsResolver({}, { "hooks.test": found("127.0.0.1"), "wrong.test": found("127.0.0.1") });
    const transport = createHttpsWebhookTransport({ resolver, allowPrivateNetwork: true, ca });
    expect(await transport.post(`https://hooks.test:${tls.port}/in`, HEADERS, "{}")).toEqual({ ok: true, status: 204 });
    expect(tls.requests.at(-1)).toMatchObject({ host: `hooks.test:${tls.port}`, path: "/in" });
    expect(await transport.post(`https://wrong.test:${tls.port}/in`, HEADERS, "{}")).toEqual({ ok: false, reason: "tls-error" });
  });

  test("http on loopback (ALLOW_PRIVATE_NETWORK): the headers and body arrive; a redirect is an answer, never followed; a large answer is cut", async () => {
    const transport = createHttpsWebhookTransport({ resolver: fakeDnsResolver(), allowPrivateNetwork: true });
    const url = (path: string) => `http://127.0.0.1:${plain.port}${path}`;
    expect(await transport.post(url("/in"), HEADERS, '{"type":"webhook.test"}')).toEqual({ ok: true, status: 200 });
    expect(plainRequests.at(-1)).toMatchObject({ path: "/in", body: '{"type":"webhook.test"}', headers: { "webhook-id": "msg_1", "webhook-signature": "v1,x" } });
    expect(await transport.post(url("/fail"), HEADERS, "{}")).toEqual({ ok: true, status: 500 });
    expect(await transport.post(url("/redirect"), HEADERS, "{}")).toEqual({ ok: true, status: 302 });
    expect(plainRequests.some((r) => r.path === "/target")).toBe(false);
    expect(await transport.post(url("/huge"), HEADERS, "{}")).toEqual({ ok: true, status: 200 });
    // http:// goes to loopback only, even with private networks allowed.
    const resolver = fakeDnsResolver({}, { "lan.test": found("192.168.1.10") });
    expect(await createHttpsWebhookTransport({ resolver, allowPrivateNetwork: true }).post("http://lan.test/x", HEADERS, "{}")).toEqual({ ok: false, reason: "blocked-address" });
  });

  test("a 2xx whose body never ends is delivered: the status is the answer, the body read briefly and let go", async () => {
    // Before, the body was read under the delivery's deadline, and a 2xx past it counted as a timeout: sent again at
    // every retry, then failed.
    const transport = createHttpsWebhookTransport({ resolver: fakeDnsResolver(), allowPrivateNetwork: true, timeoutMs: 60_000 });
    expect(await transport.post(`http://127.0.0.1:${plain.port}/held`, HEADERS, "{}")).toEqual({ ok: true, status: 200 });
  });

  test("a refused connection is a network error", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const port = closed.port;
    closed.stop(true);
    const transport = createHttpsWebhookTransport({ resolver: fakeDnsResolver(), allowPrivateNetwork: true });
    expect(await transport.post(`http://127.0.0.1:${port}/`, HEADERS, "{}")).toEqual({ ok: false, reason: "network-error" });
  });
});
