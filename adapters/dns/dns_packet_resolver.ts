/**
 * DnsResolver over plain DNS (RFC 1035) built with dns-packet: UDP with TCP fallback on truncation, random
 * query ids checked against the answer, a timeout per attempt and a bounded number of retries that rotate
 * through the configured servers (decisions §8).
 *
 * dns-packet is used directly rather than `node:dns` because Bun's `resolveTxt` was seen splitting one
 * multi-string TXT record into several records (environment notes).
 */
import { createSocket } from "node:dgram";
import { connect } from "node:net";
import * as dnsPacket from "dns-packet";
import type { DecodedPacket, OptAnswer, RecordType } from "dns-packet";
import { classifyAddress } from "../../domain/discovery/mod.ts";
import type { AddressLookup, DnsResolver, TxtLookup } from "../../ports/discovery.ts";

/** Options of {@link createDnsPacketResolver}. */
export type DnsPacketResolverOptions = {
  /** Resolver addresses: `ip`, `ip:port` or `[ipv6]:port`; port 53 by default. */
  readonly servers: readonly string[];
  /** Per attempt (the TCP fallback of a truncated answer gets its own); default 1500. */
  readonly timeoutMs?: number | undefined;
  /** Extra attempts after a timeout, SERVFAIL, REFUSED or network error, each on the next server; default 1. */
  readonly retries?: number | undefined;
};

type DnsServerAddress = { readonly host: string; readonly port: number; readonly family: 4 | 6 };

type Exchange =
  | { readonly kind: "answer"; readonly packet: DecodedPacket }
  | { readonly kind: "timeout" }
  | { readonly kind: "network-error" };

type Failure = Extract<TxtLookup, { status: "servfail" | "refused" | "timeout" | "network-error" }>;

const RCODE_NOERROR = 0;
const RCODE_NXDOMAIN = 3;
const RCODE_REFUSED = 5;
const EDNS_UDP_PAYLOAD = 1232;
const MAX_CNAME_CHAIN = 8;
const utf8 = new TextDecoder("utf-8");
const utf8Encoder = new TextEncoder();

/** Builds a DnsResolver that queries the given servers with dns-packet over UDP, falling back to TCP. */
export function createDnsPacketResolver(options: DnsPacketResolverOptions): DnsResolver {
  const servers = options.servers.map(parseServer);
  if (servers.length === 0) throw new Error("At least one DNS server is required");
  const timeoutMs = options.timeoutMs ?? 1500;
  const attempts = 1 + Math.max(0, options.retries ?? 1);

  async function query(name: string, type: RecordType): Promise<Exchange> {
    let last: Exchange = { kind: "network-error" };
    for (let attempt = 0; attempt < attempts; attempt++) {
      const server = servers[attempt % servers.length]!;
      last = await exchange(server, name, type, timeoutMs);
      if (last.kind === "answer") {
        const rcode = rcodeOf(last.packet);
        if (rcode === RCODE_NOERROR || rcode === RCODE_NXDOMAIN) return last;
      }
    }
    return last;
  }

  return {
    async resolveTxt(name) {
      const qname = normalizeName(name);
      if (qname === undefined) return { status: "nxdomain" };
      const result = await query(qname, "TXT");
      if (result.kind !== "answer") return { status: result.kind };
      const failure = rcodeFailure(result.packet);
      if (failure !== undefined) return failure;
      if (rcodeOf(result.packet) === RCODE_NXDOMAIN) return { status: "nxdomain" };
      const names = aliasChain(result.packet, qname);
      const records: string[] = [];
      for (const answer of result.packet.answers ?? []) {
        if (answer.type !== "TXT" || !names.has(normalizeName(answer.name) ?? "")) continue;
        const strings = Array.isArray(answer.data) ? answer.data : [answer.data];
        // One record's character-strings form one value (RFC 7208 §3.3); records stay apart.
        records.push(strings.map((s) => (typeof s === "string" ? s : utf8.decode(s))).join(""));
      }
      return records.length > 0 ? { status: "found", records } : { status: "nodata" };
    },

    async resolveAddresses(host) {
      const qname = normalizeName(host);
      if (qname === undefined) return { status: "nxdomain" };
      const [a, aaaa] = await Promise.all([query(qname, "A"), query(qname, "AAAA")]);
      const found: string[] = [];
      const outcomes = [addressOutcome(a, qname, "A", found), addressOutcome(aaaa, qname, "AAAA", found)];
      // Each address is pinned and checked by the caller, so a failed AAAA next to a good A is still an answer.
      if (found.length > 0) return { status: "found", addresses: found };
      const failure = outcomes.find((o): o is Failure => o !== "nxdomain" && o !== "nodata");
      if (failure !== undefined) return failure;
      return { status: outcomes.includes("nxdomain") ? "nxdomain" : "nodata" };
    },
  };
}

/** Collects the addresses of one answer into `found`; returns what the answer said when it has none. */
function addressOutcome(
  result: Exchange,
  qname: string,
  type: "A" | "AAAA",
  found: string[],
): Failure | "nxdomain" | "nodata" | "found" {
  if (result.kind !== "answer") return { status: result.kind };
  const failure = rcodeFailure(result.packet);
  if (failure !== undefined) return failure;
  if (rcodeOf(result.packet) === RCODE_NXDOMAIN) return "nxdomain";
  const names = aliasChain(result.packet, qname);
  const kind = type === "A" ? "ipv4" : "ipv6";
  let any = false;
  for (const answer of result.packet.answers ?? []) {
    if (answer.type !== type || !names.has(normalizeName(answer.name) ?? "")) continue;
    const parsed = typeof answer.data === "string" ? classifyAddress(answer.data) : undefined;
    if (parsed === undefined || parsed.kind !== kind) continue;
    any = true;
    if (!found.includes(parsed.address)) found.push(parsed.address);
  }
  return any ? "found" : "nodata";
}

function rcodeOf(packet: DecodedPacket): number {
  return (packet.flags ?? 0) & 0xf;
}

function rcodeFailure(packet: DecodedPacket): Failure | undefined {
  const rcode = rcodeOf(packet);
  if (rcode === RCODE_NOERROR || rcode === RCODE_NXDOMAIN) return undefined;
  if (rcode === RCODE_REFUSED) return { status: "refused" };
  // SERVFAIL, and FORMERR/NOTIMP/… which also mean "this server could not answer".
  return { status: "servfail" };
}

/** The query name plus the CNAME targets the server itself put in the answer section, in chain order. */
function aliasChain(packet: DecodedPacket, qname: string): Set<string> {
  const names = new Set([qname]);
  let current = qname;
  for (let hop = 0; hop < MAX_CNAME_CHAIN; hop++) {
    let target: string | undefined;
    for (const answer of packet.answers ?? []) {
      if (answer.type === "CNAME" && normalizeName(answer.name) === current) {
        target = normalizeName(answer.data);
        break;
      }
    }
    if (target === undefined || names.has(target)) break;
    names.add(target);
    current = target;
  }
  return names;
}

/** Lowercase, no trailing dot; `undefined` for names DNS cannot carry. */
function normalizeName(name: string): string | undefined {
  const trimmed = name.trim().toLowerCase().replace(/\.$/, "");
  if (trimmed === "" || trimmed.length > 253) return undefined;
  const labels = trimmed.split(".");
  if (labels.some((l) => l.length === 0 || utf8Encoder.encode(l).length > 63)) return undefined;
  return trimmed;
}

function parseServer(text: string): DnsServerAddress {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  let host: string;
  let port = "53";
  if (bracketed) {
    host = bracketed[1]!;
    port = bracketed[2] ?? "53";
  } else if (text.split(":").length === 2) {
    [host, port] = text.split(":") as [string, string];
  } else {
    host = text;
  }
  const parsed = classifyAddress(host);
  const portNumber = Number(port);
  if (parsed === undefined || !/^\d{1,5}$/.test(port) || portNumber < 1 || portNumber > 65535) {
    throw new Error(`Invalid DNS server address: ${text}`);
  }
  return { host: parsed.address, port: portNumber, family: parsed.kind === "ipv4" ? 4 : 6 };
}

function randomId(): number {
  return crypto.getRandomValues(new Uint16Array(1))[0]!;
}

function buildQuery(id: number, name: string, type: RecordType): Buffer {
  const opt: OptAnswer = {
    type: "OPT",
    name: ".",
    udpPayloadSize: EDNS_UDP_PAYLOAD,
    extendedRcode: 0,
    ednsVersion: 0,
    flags: 0,
    flag_do: false,
    options: [],
  };
  return dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: "IN" }],
    additionals: [opt],
  });
}

/** Accepts only the response to our question with our id; anything else is ignored as noise or spoofing. */
function decodeAnswer(buffer: Buffer, id: number, name: string, type: RecordType): DecodedPacket | undefined {
  let packet: DecodedPacket;
  try {
    packet = dnsPacket.decode(buffer);
  } catch {
    return undefined;
  }
  const question = packet.questions?.[0];
  if (!packet.flag_qr || packet.id !== id || packet.questions?.length !== 1 || question === undefined) return undefined;
  if (normalizeName(question.name) !== name || question.type !== type) return undefined;
  return packet;
}

/** One attempt: UDP, then TCP when the UDP answer is truncated. */
async function exchange(server: DnsServerAddress, name: string, type: RecordType, timeoutMs: number): Promise<Exchange> {
  const udp = await exchangeUdp(server, name, type, timeoutMs);
  if (udp.kind === "answer" && udp.packet.flag_tc) return await exchangeTcp(server, name, type, timeoutMs);
  return udp;
}

function exchangeUdp(server: DnsServerAddress, name: string, type: RecordType, timeoutMs: number): Promise<Exchange> {
  const id = randomId();
  const query = buildQuery(id, name, type);
  return new Promise((resolve) => {
    const socket = createSocket(server.family === 4 ? "udp4" : "udp6");
    let done = false;
    const finish = (result: Exchange) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        socket.close();
      } catch {
        // already closed
      }
      resolve(result);
    };
    const timer = setTimeout(() => finish({ kind: "timeout" }), timeoutMs);
    socket.on("error", () => finish({ kind: "network-error" }));
    // A connected socket only accepts datagrams from the server and reports ICMP unreachable as an error.
    socket.on("message", (message) => {
      const packet = decodeAnswer(message, id, name, type);
      if (packet !== undefined) finish({ kind: "answer", packet });
    });
    socket.connect(server.port, server.host, () => {
      socket.send(query, (error) => {
        if (error) finish({ kind: "network-error" });
      });
    });
  });
}

function exchangeTcp(server: DnsServerAddress, name: string, type: RecordType, timeoutMs: number): Promise<Exchange> {
  const id = randomId();
  const query = buildQuery(id, name, type);
  const framed = Buffer.alloc(2 + query.length);
  framed.writeUInt16BE(query.length, 0);
  query.copy(framed, 2);
  return new Promise((resolve) => {
    const socket = connect({ host: server.host, port: server.port });
    let done = false;
    const frames = createDnsFrameReader();
    const finish = (result: Exchange) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ kind: "timeout" }), timeoutMs);
    socket.on("error", () => finish({ kind: "network-error" }));
    socket.on("close", () => finish({ kind: "network-error" }));
    socket.on("connect", () => socket.write(framed));
    socket.on("data", (chunk) => {
      for (const frame of frames.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk)) {
        const packet = decodeAnswer(frame, id, name, type);
        if (packet !== undefined) return finish({ kind: "answer", packet });
      }
    });
  });
}

/**
 * Splits a DNS-over-TCP byte stream into messages (RFC 1035 §4.2.2: each after a two-byte length). Linear in the
 * bytes received: chunks are only joined once a whole message has arrived (joining on every chunk was quadratic in
 * the number of chunks, and a 64 KiB answer can come a byte at a time).
 */
export function createDnsFrameReader(): { readonly push: (chunk: Buffer) => Buffer[] } {
  let chunks: Buffer[] = [];
  let buffered = 0;
  /** All received bytes as one buffer (joined once). */
  const joined = (): Buffer => {
    if (chunks.length > 1) chunks = [Buffer.concat(chunks, buffered)];
    return chunks[0]!;
  };
  return {
    push(chunk) {
      chunks.push(chunk);
      buffered += chunk.length;
      const frames: Buffer[] = [];
      while (buffered >= 2) {
        const head = chunks[0]!.length >= 2 ? chunks[0]! : joined();
        const end = 2 + head.readUInt16BE(0);
        if (buffered < end) break;
        const all = joined();
        frames.push(all.subarray(2, end));
        const rest = all.subarray(end);
        chunks = rest.length > 0 ? [rest] : [];
        buffered = rest.length;
      }
      return frames;
    },
  };
}
