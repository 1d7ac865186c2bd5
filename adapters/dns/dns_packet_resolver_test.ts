import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createSocket } from "node:dgram";
import * as dnsPacket from "dns-packet";
import { type DnsServer, startDnsServer } from "../../e2e/support/dns_server.ts";
import { createDnsFrameReader, createDnsPacketResolver } from "./dns_packet_resolver.ts";

let dns: DnsServer;
let spare: DnsServer;

beforeAll(async () => {
  [dns, spare] = await Promise.all([startDnsServer(), startDnsServer()]);
});
afterAll(async () => {
  await Promise.all([dns.stop(), spare.stop()]);
});
beforeEach(() => {
  dns.queries.length = 0;
  spare.queries.length = 0;
  dns.setTruncateUdp(false);
});

// Long enough that a loaded machine never turns a loopback answer into a retry (300 ms did, and a test counting one
// query saw two); the tests of timeouts give their own.
const resolver = (servers = [dns.address], timeoutMs = 10_000) => createDnsPacketResolver({ servers, timeoutMs });
const history = (server: DnsServer, name: string) =>
  server.queries.filter((q) => q.name === name).map((q) => `${q.type}/${q.transport}`);

/** A UDP port on loopback where nothing listens. */
async function deadPort(): Promise<number> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

describe("createDnsPacketResolver().resolveTxt()", () => {
  test("joins the character-strings of one record and keeps several records apart", async () => {
    dns.setTxt("_controllers.multi.test", [["controller=did:pkh:eip155:1:0xab", "cd;v=1"], ["v=1 controller=did:web:x.test"]]);
    expect(await resolver().resolveTxt("_controllers.multi.test")).toEqual({
      status: "found",
      records: ["controller=did:pkh:eip155:1:0xabcd;v=1", "v=1 controller=did:web:x.test"],
    });
    expect(history(dns, "_controllers.multi.test")).toEqual(["TXT/udp"]);
  });

  test("matches names case-insensitively and ignores a trailing dot", async () => {
    dns.setTxt("case.test", [["a"]]);
    expect(await resolver().resolveTxt("CASE.Test.")).toEqual({ status: "found", records: ["a"] });
  });

  test("retries over TCP when the UDP answer is truncated", async () => {
    const chunks = Array.from({ length: 8 }, (_, i) => String.fromCharCode(97 + i).repeat(255));
    dns.setTxt("big.test", [chunks]);
    expect(await resolver().resolveTxt("big.test")).toEqual({ status: "found", records: [chunks.join("")] });
    expect(history(dns, "big.test")).toEqual(["TXT/udp", "TXT/tcp"]);

    dns.setTxt("small.test", [["x"]]);
    dns.setTruncateUdp(true);
    expect(await resolver().resolveTxt("small.test")).toEqual({ status: "found", records: ["x"] });
    expect(history(dns, "small.test")).toEqual(["TXT/udp", "TXT/tcp"]);
  });

  test("NXDOMAIN is nxdomain and an existing name without TXT is nodata, both without retry", async () => {
    dns.setA("only-a.test", ["127.0.0.1"]);
    const r = resolver();
    expect(await r.resolveTxt("missing.test")).toEqual({ status: "nxdomain" });
    expect(await r.resolveTxt("only-a.test")).toEqual({ status: "nodata" });
    expect(history(dns, "missing.test")).toEqual(["TXT/udp"]);
    expect(history(dns, "only-a.test")).toEqual(["TXT/udp"]);
  });

  test("SERVFAIL and REFUSED are reported after one retry, never as found", async () => {
    dns.setTxt("broken.test", [["controller=did:web:evil.test"]]);
    dns.setServfail("broken.test");
    dns.setRefused("refused.test");
    const r = resolver();
    expect(await r.resolveTxt("broken.test")).toEqual({ status: "servfail" });
    expect(await r.resolveTxt("refused.test")).toEqual({ status: "refused" });
    expect(history(dns, "broken.test")).toEqual(["TXT/udp", "TXT/udp"]);
    expect(history(dns, "refused.test")).toEqual(["TXT/udp", "TXT/udp"]);
  });

  test("a server that never answers gives timeout after one retry", async () => {
    dns.setTimeout("silent.test");
    // The server never answers: only the timeout ends the lookup, and the history counts its attempts.
    expect(await createDnsPacketResolver({ servers: [dns.address], timeoutMs: 150 }).resolveTxt("silent.test")).toEqual({
      status: "timeout",
    });
    expect(history(dns, "silent.test")).toEqual(["TXT/udp", "TXT/udp"]);
  });

  test("the retry goes to the next server", async () => {
    spare.setTimeout("fallback.test");
    dns.setTxt("fallback.test", [["ok"]]);
    // The silent server's wait ends the first try; the second server's answer then has as long again.
    expect(await resolver([spare.address, dns.address], 1_000).resolveTxt("fallback.test")).toEqual({
      status: "found",
      records: ["ok"],
    });
    expect(history(spare, "fallback.test")).toEqual(["TXT/udp"]);
    expect(history(dns, "fallback.test")).toEqual(["TXT/udp"]);
  });

  test("a port where nothing listens is a network error, not a hang", async () => {
    const port = await deadPort();
    // "network-error", not "timeout": the refusal ended the lookup, not the timer (the outcome says so, not a clock).
    expect(await createDnsPacketResolver({ servers: [`127.0.0.1:${port}`], timeoutMs: 1000 }).resolveTxt("x.test")).toEqual({
      status: "network-error",
    });
  });

  test("reads TXT behind a CNAME the server answered with, and does not chase a dangling one", async () => {
    dns.setCname("_controllers.alias.test", "records.other.test");
    dns.setTxt("records.other.test", [["controller=did:web:alias.test"]]);
    expect(await resolver().resolveTxt("_controllers.alias.test")).toEqual({
      status: "found",
      records: ["controller=did:web:alias.test"],
    });
    dns.setCname("_controllers.dangling.test", "nowhere.test");
    expect(await resolver().resolveTxt("_controllers.dangling.test")).toEqual({ status: "nodata" });
    expect(history(dns, "nowhere.test")).toEqual([]);
  });

  test("ignores answers with another id or another question", async () => {
    const spoofer = createSocket("udp4");
    spoofer.on("message", (message, rinfo) => {
      const query = dnsPacket.decode(message);
      const question = query.questions![0]!;
      const reply = (id: number, name: string, text: string) =>
        dnsPacket.encode({
          type: "response",
          id,
          questions: [{ ...question, name }],
          answers: [{ type: "TXT", name, data: [text] }],
        });
      spoofer.send(reply((query.id! + 1) & 0xffff, question.name, "wrong id"), rinfo.port, rinfo.address);
      spoofer.send(reply(query.id!, "other.test", "wrong question"), rinfo.port, rinfo.address);
      if (question.name !== "silent.spoof.test") spoofer.send(reply(query.id!, question.name, "real"), rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve) => spoofer.bind(0, "127.0.0.1", () => resolve()));
    try {
      const server = `127.0.0.1:${spoofer.address().port}`;
      const r = createDnsPacketResolver({ servers: [server], timeoutMs: 10_000, retries: 0 });
      expect(await r.resolveTxt("spoof.test")).toEqual({ status: "found", records: ["real"] });
      const short = createDnsPacketResolver({ servers: [server], timeoutMs: 150, retries: 0 });
      expect(await short.resolveTxt("silent.spoof.test")).toEqual({ status: "timeout" });
    } finally {
      spoofer.close();
    }
  });
});

describe("createDnsPacketResolver().resolveAddresses()", () => {
  test("merges A and AAAA answers", async () => {
    dns.setA("both.test", ["127.0.0.1", "127.0.0.2"]);
    dns.setAAAA("both.test", ["::1"]);
    expect(await resolver().resolveAddresses("both.test")).toEqual({
      status: "found",
      addresses: ["127.0.0.1", "127.0.0.2", "::1"],
    });
    expect(history(dns, "both.test").sort()).toEqual(["A/udp", "AAAA/udp"]);
  });

  test("follows an answered CNAME to the target's addresses", async () => {
    dns.setCname("www.alias.test", "host.alias.test");
    dns.setA("host.alias.test", ["127.0.0.3"]);
    expect(await resolver().resolveAddresses("www.alias.test")).toEqual({ status: "found", addresses: ["127.0.0.3"] });
  });

  test("reports nxdomain, nodata and failures", async () => {
    dns.setTxt("txt-only.test", [["x"]]);
    dns.setServfail("failing.test");
    const r = resolver();
    expect(await r.resolveAddresses("nothing.test")).toEqual({ status: "nxdomain" });
    expect(await r.resolveAddresses("txt-only.test")).toEqual({ status: "nodata" });
    expect(await r.resolveAddresses("failing.test")).toEqual({ status: "servfail" });
    expect(await r.resolveAddresses("bad..name")).toEqual({ status: "nxdomain" });
  });
});

test("createDnsPacketResolver() refuses a server list it cannot use", () => {
  expect(() => createDnsPacketResolver({ servers: [] })).toThrow("At least one DNS server is required");
  expect(() => createDnsPacketResolver({ servers: ["dns.example"] })).toThrow("Invalid DNS server address: dns.example");
  expect(() => createDnsPacketResolver({ servers: ["127.0.0.1:99999"] })).toThrow("Invalid DNS server address");
  expect(() => createDnsPacketResolver({ servers: ["[::1]:5353", "::1", "127.0.0.1"] })).not.toThrow();
});

describe("createDnsFrameReader()", () => {
  /** A largest DNS-over-TCP message (64 KiB) behind its two-byte length, then a second short one. */
  const stream = () => {
    const big = Buffer.alloc(65_535, 7);
    const small = Buffer.from([1, 2, 3]);
    const framed = Buffer.alloc(2 + big.length + 2 + small.length);
    framed.writeUInt16BE(big.length, 0);
    big.copy(framed, 2);
    framed.writeUInt16BE(small.length, 2 + big.length);
    small.copy(framed, 4 + big.length);
    return { framed, big, small };
  };
  const split = (bytes: Buffer, size: number) => {
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
    return chunks;
  };
  const read = (chunks: readonly Buffer[]) => {
    const reader = createDnsFrameReader();
    return chunks.flatMap((chunk) => reader.push(chunk));
  };

  test("gives the same messages whatever the chunks the stream arrives in", () => {
    const { framed, big, small } = stream();
    for (const size of [1, 2, 3, 1000, framed.length]) {
      const frames = read(split(framed, size));
      expect(frames.length).toBe(2);
      expect(frames[0]!.equals(big)).toBe(true);
      expect(frames[1]!.equals(small)).toBe(true);
    }
    expect(read([Buffer.from([0])])).toEqual([]);
  });

  test("a 64 KiB answer a byte at a time costs no more than a bounded multiple of it in 1 KiB chunks (issue 15)", () => {
    // Joining the buffer on every chunk copied 2 GB for this stream: quadratic in the number of chunks.
    const { framed } = stream();
    const bytes = split(framed, 1);
    const kib = split(framed, 1024);
    const best = (chunks: readonly Buffer[]) => {
      let fastest = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        read(chunks);
        fastest = Math.min(fastest, performance.now() - started);
      }
      return fastest;
    };
    const base = best(kib);
    const worst = best(bytes);
    expect(worst).toBeLessThanOrEqual(Math.max(20 * base, base + 50));
  });
});
