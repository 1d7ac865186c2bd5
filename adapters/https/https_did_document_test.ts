import { afterAll, beforeAll, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { type DnsServer, startDnsServer } from "../../e2e/support/dns_server.ts";
import { type HttpsServer, startHttpsServer } from "../../e2e/support/https_server.ts";
import { getTestCa, issueLeaf } from "../../e2e/support/test_ca.ts";
import type { DnsResolver } from "../../ports/discovery.ts";
import { createDnsPacketResolver } from "../dns/mod.ts";
import { createHttpsDidDocumentFetcher, type HttpsDidDocumentFetcherOptions, lengthDelimited, mayBeCutJson } from "./https_did_document.ts";

const NAMES = [
  "ok.test", "missing.test", "error.test", "redirect.test", "huge.test", "huge-declared.test", "slow.test",
  "badjson.test", "private.test", "mapped.test", "rebind.test", "fallback.test", "bom.test",
];
const DOCUMENT = { id: "did:web:ok.test", verificationMethod: [] };
const JWKS = { keys: [{ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", kid: "a" }] };
const MIB = 1024 * 1024;

let dns: DnsServer;
let ca: string;
let server: HttpsServer;
let evil: HttpsServer;
let v6: HttpsServer;
let wrongCert: HttpsServer;
let resolver: DnsResolver;

/** A body that never ends: one space every 100 ms, stopping when the reader cancels. */
function drip(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async pull(controller) {
      await Bun.sleep(100);
      controller.enqueue(new TextEncoder().encode(" "));
    },
  });
}

/** 10 MiB in 64 KiB chunks without a Content-Length, produced only as fast as it is read. */
/** A body that never ends: only the fetcher's byte cap can end a read of it. */
function endless(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    pull(controller) {
      controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
    },
  });
}

function routes(request: Request): Response {
  const host = (request.headers.get("host") ?? "").replace(/:\d+$/, "");
  const path = new URL(request.url).pathname;
  if (path === "/users/alice/did.json" && host === "ok.test") return Response.json({ id: "did:web:ok.test:users:alice" });
  if (path === "/.well-known/jwks.json" && host === "ok.test") return Response.json(JWKS);
  if (path === "/.well-known/jwks.json" && host === "huge.test") return new Response(endless());
  if (path !== "/.well-known/did.json") return new Response("no such path", { status: 404 });
  switch (host) {
    case "ok.test":
    case "rebind.test":
    case "fallback.test":
      return Response.json(DOCUMENT);
    case "bom.test":
      return new Response(`\uFEFF${JSON.stringify(DOCUMENT)}`, { headers: { "content-type": "application/json" } });
    case "error.test":
      return new Response("internal secret: db password hunter2", { status: 500 });
    case "redirect.test":
      return new Response(null, { status: 302, headers: { location: `https://127.0.0.1:${server.port}/.well-known/did.json` } });
    case "huge.test":
      return new Response(endless());
    case "huge-declared.test":
      return new Response(new Uint8Array(10 * MIB).fill(0x20));
    case "slow.test":
      return new Response(drip());
    case "badjson.test":
      return new Response("{ \"id\": \"did:web:badjson.test\", <html>secret</html>");
    default:
      return new Response("missing", { status: 404 });
  }
}

beforeAll(async () => {
  dns = await startDnsServer();
  ca = (await getTestCa()).cert;
  const [leaf, otherLeaf] = await Promise.all([issueLeaf(NAMES), issueLeaf(["other.test"])]);
  server = await startHttpsServer({ ...leaf, routes });
  // Same port, other loopback addresses: where a rebound or IPv6 connection would land.
  evil = await startHttpsServer({ ...leaf, hostname: "127.0.0.2", port: server.port, routes: () => Response.json({ id: "did:web:evil" }) });
  v6 = await startHttpsServer({ ...leaf, hostname: "::1", port: server.port, routes });
  wrongCert = await startHttpsServer({ ...otherLeaf, routes });
  for (const name of NAMES) dns.setA(name, ["127.0.0.1"]);
  dns.setA("wrongcert.test", ["127.0.0.1"]);
  resolver = createDnsPacketResolver({ servers: [dns.address], timeoutMs: 300 });
});

afterAll(async () => {
  await Promise.all([server.stop(), evil.stop(), v6.stop(), wrongCert.stop(), dns.stop()]);
});

beforeEach(() => {
  for (const s of [server, evil, v6, wrongCert]) s.requests.length = 0;
  dns.queries.length = 0;
});

const fetcher = (options: Partial<HttpsDidDocumentFetcherOptions> = {}) =>
  createHttpsDidDocumentFetcher({
    resolver,
    allowPrivateNetwork: true,
    ca,
    timeoutMs: 2000,
    portOverride: server.port,
    ...options,
  });

describe("createHttpsDidDocumentFetcher()", () => {
  test("fetches /.well-known/did.json from the checked address with the real Host and TLS name", async () => {
    expect(await fetcher().fetchDidDocument("ok.test")).toEqual({
      status: "ok",
      document: DOCUMENT,
      url: "https://ok.test/.well-known/did.json",
    });
    expect(server.requests).toEqual([{ host: "ok.test", path: "/.well-known/did.json" }]);
  });

  test("maps did:web path segments to /<segments>/did.json and keeps an explicit port", async () => {
    expect(await fetcher().fetchDidDocument("OK.test", ["users", "alice"])).toEqual({
      status: "ok",
      document: { id: "did:web:ok.test:users:alice" },
      url: "https://ok.test/users/alice/did.json",
    });
    const withPort = await fetcher({ portOverride: undefined }).fetchDidDocument(`ok.test%3A${server.port}`);
    expect(withPort).toMatchObject({ status: "ok", url: `https://ok.test:${server.port}/.well-known/did.json` });
    expect(server.requests[1]).toEqual({ host: `ok.test:${server.port}`, path: "/.well-known/did.json" });
  });

  test("accepts a UTF-8 byte order mark", async () => {
    expect(await fetcher().fetchDidDocument("bom.test")).toMatchObject({ status: "ok", document: DOCUMENT });
  });

  test("404 is not-found and 500 is http-status, without any upstream body text", async () => {
    expect(await fetcher().fetchDidDocument("missing.test")).toEqual({
      status: "not-found",
      url: "https://missing.test/.well-known/did.json",
    });
    const failed = await fetcher().fetchDidDocument("error.test");
    expect(failed).toEqual({
      status: "unavailable",
      url: "https://error.test/.well-known/did.json",
      reason: "http-status",
      httpStatus: 500,
    });
    expect(JSON.stringify(failed)).not.toContain("hunter2");
  });

  test("a redirect, here to a loopback address, is refused without following it", async () => {
    expect(await fetcher().fetchDidDocument("redirect.test")).toMatchObject({ status: "unavailable", reason: "redirect" });
    expect(server.requests).toEqual([{ host: "redirect.test", path: "/.well-known/did.json" }]);
  });

  test("a body past the byte cap is aborted there, streamed without end or declared at 10 MiB", async () => {
    // The streamed body never ends, so a fetcher that read past the cap would never answer: the answer itself proves
    // the read stopped (no clock involved).
    expect(await fetcher().fetchDidDocument("huge.test")).toMatchObject({ status: "unavailable", reason: "too-large" });
    expect(await fetcher().fetchDidDocument("huge-declared.test")).toMatchObject({ status: "unavailable", reason: "too-large" });
    expect(await fetcher({ maxBytes: 10 }).fetchDidDocument("ok.test")).toMatchObject({ reason: "too-large" });
  });

  test("a slow-drip body hits the total deadline", async () => {
    const started = performance.now();
    expect(await fetcher({ timeoutMs: 300 }).fetchDidDocument("slow.test")).toEqual({
      status: "unavailable",
      url: "https://slow.test/.well-known/did.json",
      reason: "timeout",
    });
    // The drip never ends: only the deadline can end the fetch. It ran its whole time (a lower bound, which a slow
    // machine cannot break).
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  test("the deadline covers DNS too", async () => {
    dns.setTimeout("silent-dns.test");
    const slowResolver = createDnsPacketResolver({ servers: [dns.address], timeoutMs: 2000 });
    expect(await fetcher({ resolver: slowResolver, timeoutMs: 200 }).fetchDidDocument("silent-dns.test")).toMatchObject({
      reason: "timeout",
    });
  });

  test("a body that is not JSON is invalid-json and is not echoed", async () => {
    const result = await fetcher().fetchDidDocument("badjson.test");
    expect(result).toEqual({ status: "unavailable", url: "https://badjson.test/.well-known/did.json", reason: "invalid-json" });
  });

  test("a name resolving to loopback is blocked by default and no connection is made", async () => {
    const strict = fetcher({ allowPrivateNetwork: false });
    expect(await strict.fetchDidDocument("private.test")).toMatchObject({ status: "unavailable", reason: "blocked-address" });
    dns.setA("mapped.test", []);
    dns.setAAAA("mapped.test", ["::ffff:127.0.0.1"]);
    expect(await strict.fetchDidDocument("mapped.test")).toMatchObject({ reason: "blocked-address" });
    expect(server.requests).toEqual([]);
    expect(v6.requests).toEqual([]);
    expect(dns.queries.filter((q) => q.name === "private.test").map((q) => q.type).sort()).toEqual(["A", "AAAA"]);
  });

  test("one private address among public ones blocks the fetch before any connection", async () => {
    const mixed: DnsResolver = {
      resolveTxt: () => Promise.resolve({ status: "nodata" }),
      resolveAddresses: () => Promise.resolve({ status: "found", addresses: ["8.8.8.8", "10.0.0.1"] }),
    };
    const fetchSpy = spyOn(globalThis, "fetch").mockImplementation((() => {
      throw new Error("fetch must not be called");
    }) as unknown as typeof fetch);
    try {
      expect(await fetcher({ resolver: mixed, allowPrivateNetwork: false }).fetchDidDocument("mixed.test")).toMatchObject({
        reason: "blocked-address",
      });
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      fetchSpy.mockRestore();
    }
  });

  test("DNS rebinding: the connection goes to the address that was checked, never to a second answer", async () => {
    // Answers alternate 127.0.0.1 / 127.0.0.2; `evil` listens on 127.0.0.2 on the same port.
    dns.setA("rebind.test", ["127.0.0.1", "127.0.0.2"], { rotate: true });
    const first = await fetcher().fetchDidDocument("rebind.test");
    expect(first).toMatchObject({ status: "ok", document: DOCUMENT });
    expect(server.requests).toEqual([{ host: "rebind.test", path: "/.well-known/did.json" }]);
    expect(evil.requests).toEqual([]);
    // Exactly one lookup: nothing resolved the name again between the check and the connection.
    expect(dns.queries.filter((q) => q.name === "rebind.test" && q.type === "A")).toHaveLength(1);

    // The second answer is reachable, so the first fetch really could have been rebound had it looked again.
    const second = await fetcher().fetchDidDocument("rebind.test");
    expect(second).toMatchObject({ status: "ok", document: { id: "did:web:evil" } });
    expect(evil.requests).toEqual([{ host: "rebind.test", path: "/.well-known/did.json" }]);
  });

  test("falls back once to the other address family when the first connection fails", async () => {
    dns.setA("fallback.test", ["127.0.0.3"]);
    dns.setAAAA("fallback.test", ["::1"]);
    expect(await fetcher().fetchDidDocument("fallback.test")).toMatchObject({ status: "ok", document: DOCUMENT });
    expect(v6.requests).toEqual([{ host: "fallback.test", path: "/.well-known/did.json" }]);
  });

  test("a certificate for another name is a tls-error", async () => {
    expect(await fetcher().fetchDidDocument(`wrongcert.test:${wrongCert.port}`)).toMatchObject({
      status: "unavailable",
      reason: "tls-error",
    });
    expect(await fetcher({ ca: undefined }).fetchDidDocument("ok.test")).toMatchObject({ reason: "tls-error" });
    expect(wrongCert.requests).toEqual([]);
  });

  test("a name that does not exist or has no address is not-found; a failed lookup is a dns-failure", async () => {
    expect(await fetcher().fetchDidDocument("nowhere.test")).toEqual({ status: "not-found", url: "https://nowhere.test/.well-known/did.json" });
    dns.setTxt("txtonly.test", [["v=1"]]);
    expect(await fetcher().fetchDidDocument("txtonly.test")).toMatchObject({ status: "not-found" });
    dns.setServfail("broken.test");
    expect(await fetcher().fetchDidDocument("broken.test")).toMatchObject({ status: "unavailable", reason: "dns-failure" });
  });

  test("IP literals, userinfo, bad labels, ports and paths are invalid-host with no lookup", async () => {
    const hosts = [
      "127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "[::1]", "::1", "::ffff:127.0.0.1", "user@ok.test",
      "user:pw@ok.test", "ok..test", ".ok.test", "", "ok.test:0", "ok.test:99999", "ok.test:", "ok.test:1:2",
      "ok.test/evil", "ok.test?x", "ok.test#x", "ok.test%2F", "foo.123", "-bad.test", "ok test", "ök.test", "ok_test.test",
      `${"a".repeat(64)}.test`,
    ];
    for (const host of hosts) {
      expect({ host, result: await fetcher().fetchDidDocument(host) }).toMatchObject({
        host,
        result: { status: "unavailable", reason: "invalid-host" },
      });
    }
    for (const path of [[".."], ["%2e%2E"], ["a", ""], ["a/b"], ["a%2Fb"], ["a?b"]]) {
      expect({ path, result: await fetcher().fetchDidDocument("ok.test", path) }).toMatchObject({
        path,
        result: { reason: "invalid-host" },
      });
    }
    expect(dns.queries).toEqual([]);
    expect(server.requests).toEqual([]);
  });
});

describe("fetchJwks() (decisions §25)", () => {
  test("fetches /.well-known/jwks.json of the host under the same checks: pinned address, TLS name, cap, no private address", async () => {
    expect(await fetcher().fetchJwks!("ok.test")).toEqual({ status: "ok", document: JWKS, url: "https://ok.test/.well-known/jwks.json" });
    expect(server.requests).toEqual([{ host: "ok.test", path: "/.well-known/jwks.json" }]);
    expect(await fetcher().fetchJwks!("huge.test")).toMatchObject({ status: "unavailable", reason: "too-large" });
    expect(await fetcher({ allowPrivateNetwork: false }).fetchJwks!("ok.test")).toMatchObject({ status: "unavailable", reason: "blocked-address" });
    expect(await fetcher().fetchJwks!("127.0.0.1")).toMatchObject({ status: "unavailable", reason: "invalid-host" });
    expect(await fetcher().fetchJwks!("missing.test")).toEqual({ status: "not-found", url: "https://missing.test/.well-known/jwks.json" });
  });
});

describe("a body that ends with the connection (no Content-Length, not chunked)", () => {
  const DID = JSON.stringify({ id: "did:web:cut.test", verificationMethod: [{ blockchainAccountId: "eip155:1:0x1111111111111111111111111111111111111111" }] });
  const head = (framing: string) => `HTTP/1.1 200 OK\r\ncontent-type: application/did+json\r\n${framing}\r\n`;
  /** How the raw server answers the next request: what it writes, then how it closes once that is flushed. */
  let answer: { text: string | Buffer; close: "end" | "destroy" | "reset" } = { text: "", close: "end" };
  let raw: import("node:tls").Server;
  let rawPort = 0;

  beforeAll(async () => {
    const tls = await import("node:tls");
    const leaf = await issueLeaf(["cut.test"]);
    raw = tls.createServer({ cert: leaf.cert, key: leaf.key }, (socket) => {
      socket.on("error", () => {});
      socket.once("data", () => {
        const { text, close } = answer;
        // Closed once the bytes are handed to the kernel: `end` with TLS close_notify, `destroy` a bare FIN, `reset` an RST.
        if (close === "end") socket.end(text);
        else socket.write(text, () => (close === "reset" ? socket.resetAndDestroy() : socket.destroy()));
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    rawPort = (raw.address() as { port: number }).port;
    dns.setA("cut.test", ["127.0.0.1"]);
  });
  afterAll(() => void raw.close());

  const fetchCut = () => fetcher({ portOverride: rawPort }).fetchDidDocument("cut.test");
  const fetchCutJwks = () => fetcher({ portOverride: rawPort }).fetchJwks!("cut.test");
  const fetchCutUrl = () => fetcher().fetchJsonUrl(`https://cut.test:${rawPort}/api?module=account`);

  test("cut halfway (close_notify, a bare FIN or a reset) is a network-error, never invalid-json: did.json, jwks.json and any JSON URL", async () => {
    for (const close of ["end", "destroy", "reset"] as const) {
      for (const cut of [0, 1, 30, DID.length - 1]) {
        answer = { text: `${head("connection: close\r\n")}${DID.slice(0, cut)}`, close };
        for (const read of [fetchCut, fetchCutJwks, fetchCutUrl]) {
          expect({ close, cut, result: await read() }).toMatchObject({ close, cut, result: { status: "unavailable", reason: "network-error" } });
        }
      }
    }
    // A byte order mark, white space, then the cut.
    answer = { text: `${head("connection: close\r\n")}\uFEFF \n${DID.slice(0, 10)}`, close: "destroy" };
    expect(await fetchCut()).toMatchObject({ reason: "network-error" });
    // Cut inside the byte order mark.
    answer = { text: Buffer.concat([Buffer.from(head("connection: close\r\n")), Buffer.from([0xef, 0xbb])]), close: "destroy" };
    expect(await fetchCut()).toMatchObject({ reason: "network-error" });
  });

  test("whole it is read; a body no cut could make JSON stays invalid-json; a cut body with a length or chunks stays a network-error", async () => {
    answer = { text: `${head("connection: close\r\n")}${DID}`, close: "destroy" };
    expect(await fetchCut()).toMatchObject({ status: "ok", document: JSON.parse(DID) });
    answer = { text: `${head("connection: close\r\n")}<html>blocked</html>`, close: "destroy" };
    expect(await fetchCut()).toMatchObject({ status: "unavailable", reason: "invalid-json" });
    // A declared length the body fills: garbage is the host's answer.
    answer = { text: `${head("content-length: 9\r\n")}{not json`, close: "end" };
    expect(await fetchCut()).toMatchObject({ status: "unavailable", reason: "invalid-json" });
    answer = { text: `${head("transfer-encoding: chunked\r\n")}9\r\n{not json\r\n0\r\n\r\n`, close: "end" };
    expect(await fetchCut()).toMatchObject({ status: "unavailable", reason: "invalid-json" });
    // Framed, cut short of its frame.
    answer = { text: `${head(`content-length: ${DID.length}\r\n`)}${DID.slice(0, 30)}`, close: "destroy" };
    expect(await fetchCut()).toMatchObject({ status: "unavailable", reason: "network-error" });
    answer = { text: `${head("transfer-encoding: chunked\r\n")}1e\r\n${DID.slice(0, 30)}\r\n`, close: "destroy" };
    expect(await fetchCut()).toMatchObject({ status: "unavailable", reason: "network-error" });
  });
});

describe("the framing and the cut-JSON guess (review of the connection-delimited fix)", () => {
  const headers = (fields: [string, string][]) => {
    const h = new Headers();
    for (const [name, value] of fields) h.append(name, value);
    return h;
  };

  test("a 204 or 205 ends at its headers; a repeated identical Content-Length frames the body; differing ones do not", () => {
    expect(lengthDelimited(new Headers(), 204)).toBe(true);
    expect(lengthDelimited(new Headers(), 205)).toBe(true);
    expect(lengthDelimited(new Headers(), 200)).toBe(false);
    expect(lengthDelimited(headers([["content-length", "2"], ["content-length", "2"]]), 200)).toBe(true);
    expect(lengthDelimited(headers([["content-length", "2"], ["content-length", "3"]]), 200)).toBe(false);
    expect(lengthDelimited(headers([["content-length", "12"]]), 200)).toBe(true);
    expect(lengthDelimited(headers([["transfer-encoding", "gzip, chunked"]]), 200)).toBe(true);
    expect(lengthDelimited(headers([["transfer-encoding", "gzip"], ["content-length", "5"]]), 200)).toBe(false);
  });

  test("plain text that merely starts like a literal or a number is not cut JSON; a start of one is", () => {
    const cut = (text: string) => mayBeCutJson(new TextEncoder().encode(text));
    for (const text of ["forbidden", "not found", "0 results", "-- comment", "truex"]) expect([text, cut(text)]).toEqual([text, false]);
    for (const text of ["", "  ", "tr", "fals", "nu", "12", "-1.5e", "{\"id\":", "[1,", "\"did:"]) expect([text, cut(text)]).toEqual([text, true]);
  });
});
