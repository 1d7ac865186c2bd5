/**
 * A small authoritative DNS server on 127.0.0.1 (UDP and TCP, same random port) for tests, with a
 * challtestsrv-like control surface: set records, inject SERVFAIL/REFUSED/silence, force truncation,
 * rotate A answers for DNS-rebinding tests, and read the query history.
 */
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { createServer, type Server, type Socket } from "node:net";
import * as dnsPacket from "dns-packet";
import type { Answer, DecodedPacket, Question } from "dns-packet";

/** One query the server received. */
export type DnsQueryRecord = { readonly name: string; readonly type: string; readonly transport: "udp" | "tcp" };

/** Options of `setA` / `setAAAA`. */
export type AddressRecordOptions = {
  /** Answer one address per query, the next one each time (DNS rebinding). */
  readonly rotate?: boolean | undefined;
};

/** A running test DNS server. */
export type DnsServer = {
  readonly port: number;
  /** `127.0.0.1:<port>`, ready for a resolver's server list. */
  readonly address: string;
  /** Each record is a list of character-strings (each at most 255 bytes). */
  readonly setTxt: (name: string, records: readonly (readonly string[])[]) => void;
  readonly setA: (name: string, ips: readonly string[], options?: AddressRecordOptions) => void;
  readonly setAAAA: (name: string, ips: readonly string[], options?: AddressRecordOptions) => void;
  readonly setCname: (name: string, target: string) => void;
  readonly setServfail: (name: string) => void;
  readonly setRefused: (name: string) => void;
  /** Never answer queries for this name. */
  readonly setTimeout: (name: string) => void;
  /** Answer every UDP query with TC=1 and no records, so the client must retry over TCP. */
  readonly setTruncateUdp: (on: boolean) => void;
  readonly clear: (name: string) => void;
  readonly queries: DnsQueryRecord[];
  readonly stop: () => Promise<void>;
};

type AddressSet = { ips: string[]; rotate: boolean; next: number };

type Zone = {
  txt?: string[][];
  a?: AddressSet;
  aaaa?: AddressSet;
  cname?: string;
  failure?: "SERVFAIL" | "REFUSED" | "silent";
};

const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 } as const;
const MAX_CNAME_CHAIN = 8;

const key = (name: string) => name.toLowerCase().replace(/\.$/, "");

/** What the server holds: the zones set by the test, the queries received, whether UDP answers are truncated. */
type ServerState = { readonly zones: Map<string, Zone>; readonly queries: DnsQueryRecord[]; truncateUdp: boolean };

/** Builds the reply, or `undefined` to stay silent. */
function answer(state: ServerState, query: DecodedPacket, transport: "udp" | "tcp"): Buffer | undefined {
  const question = query.questions?.[0];
  if (question === undefined) return undefined;
  state.queries.push({ name: key(question.name), type: question.type, transport });
  const rd = (query.flags ?? 0) & dnsPacket.RECURSION_DESIRED;
  const reply = (rcode: number, answers: Answer[], truncated = false) =>
    dnsPacket.encode({
      type: "response",
      id: query.id ?? 0,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | rd | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | rcode,
      questions: [question],
      answers,
    });
  const first = state.zones.get(key(question.name));
  if (first?.failure === "silent") return undefined;
  if (first?.failure === "SERVFAIL") return reply(RCODE.SERVFAIL, []);
  if (first?.failure === "REFUSED") return reply(RCODE.REFUSED, []);
  if (transport === "udp" && state.truncateUdp) return reply(RCODE.NOERROR, [], true);
  if (first === undefined) return reply(RCODE.NXDOMAIN, []);

  const answers = collect(state.zones, question);
  const full = reply(RCODE.NOERROR, answers);
  if (transport === "udp" && full.length > udpLimit(query)) return reply(RCODE.NOERROR, [], true);
  return full;
}

/** The records for the question, following CNAMEs inside this server's own data like an authoritative server. */
function collect(zones: Map<string, Zone>, question: Question): Answer[] {
  const answers: Answer[] = [];
  let name = key(question.name);
  for (let hop = 0; hop <= MAX_CNAME_CHAIN; hop++) {
    const z = zones.get(name);
    if (z === undefined) break;
    if (z.cname !== undefined && question.type !== "CNAME") {
      answers.push({ type: "CNAME", name, ttl: 0, class: "IN", data: z.cname });
      name = key(z.cname);
      continue;
    }
    if (question.type === "TXT" && z.txt) {
      for (const record of z.txt) {
        answers.push({ type: "TXT", name, ttl: 0, class: "IN", data: record.map((s) => Buffer.from(s, "utf8")) });
      }
    }
    const set = question.type === "A" ? z.a : question.type === "AAAA" ? z.aaaa : undefined;
    if (set !== undefined && set.ips.length > 0) {
      const ips = set.rotate ? [set.ips[set.next++ % set.ips.length]!] : set.ips;
      for (const ip of ips) answers.push({ type: question.type as "A" | "AAAA", name, ttl: 0, class: "IN", data: ip });
    }
    break;
  }
  return answers;
}

type Reply = (query: DecodedPacket, transport: "udp" | "tcp") => Buffer | undefined;

/** A UDP socket on a free port of 127.0.0.1, answering each query it can decode. */
async function bindUdp(reply: Reply): Promise<UdpSocket> {
  const socket: UdpSocket = createSocket("udp4");
  socket.on("message", (message, rinfo) => {
    let query: DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const answered = reply(query, "udp");
    if (answered !== undefined) socket.send(answered, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(0, "127.0.0.1", () => resolve());
  });
  return socket;
}

/** The TCP server (not yet listening): length-prefixed queries, each answered in turn; its sockets kept for stop. */
function tcpServer(reply: Reply, sockets: Set<Socket>): Server {
  return createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let buffered: Buffer = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, typeof chunk === "string" ? Buffer.from(chunk) : chunk]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const frame = buffered.subarray(2, 2 + length);
        buffered = buffered.subarray(2 + length);
        let query: DecodedPacket;
        try {
          query = dnsPacket.decode(frame);
        } catch {
          socket.destroy();
          return;
        }
        const answered = reply(query, "tcp");
        if (answered === undefined) continue;
        const prefix = Buffer.alloc(2);
        prefix.writeUInt16BE(answered.length);
        socket.write(Buffer.concat([prefix, answered]));
      }
    });
  });
}

/** UDP picks a free port; TCP must then take the same number, which another socket may hold: try again then. */
async function bindBoth(reply: Reply, tcp: Server): Promise<{ udp: UdpSocket; port: number }> {
  for (let attempt = 0; ; attempt++) {
    const candidate = await bindUdp(reply);
    const port = candidate.address().port;
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once("error", reject);
        tcp.listen(port, "127.0.0.1", () => {
          tcp.off("error", reject);
          resolve();
        });
      });
      return { udp: candidate, port };
    } catch (error) {
      candidate.close();
      if (attempt >= 20 || (error as { code?: string }).code !== "EADDRINUSE") throw error;
    }
  }
}

const addressSet = (ips: readonly string[], options?: AddressRecordOptions): AddressSet => ({
  ips: [...ips],
  rotate: options?.rotate === true,
  next: 0,
});

/** Starts a DNS server on 127.0.0.1 with UDP and TCP on one random port. */
export async function startDnsServer(): Promise<DnsServer> {
  const state: ServerState = { zones: new Map(), queries: [], truncateUdp: false };
  const zone = (name: string): Zone => {
    const k = key(name);
    let z = state.zones.get(k);
    if (z === undefined) {
      z = {};
      state.zones.set(k, z);
    }
    return z;
  };
  const reply: Reply = (query, transport) => answer(state, query, transport);
  const sockets = new Set<Socket>();
  const tcp = tcpServer(reply, sockets);
  const { udp, port } = await bindBoth(reply, tcp);

  return {
    port,
    address: `127.0.0.1:${port}`,
    setTxt: (name, records) => {
      // dns-packet would silently wrap a longer length byte.
      if (records.some((r) => r.some((s) => Buffer.byteLength(s) > 255))) throw new Error("A character-string is at most 255 bytes");
      zone(name).txt = records.map((r) => [...r]);
    },
    setA: (name, ips, options) => {
      zone(name).a = addressSet(ips, options);
    },
    setAAAA: (name, ips, options) => {
      zone(name).aaaa = addressSet(ips, options);
    },
    setCname: (name, target) => {
      zone(name).cname = key(target);
    },
    setServfail: (name) => {
      zone(name).failure = "SERVFAIL";
    },
    setRefused: (name) => {
      zone(name).failure = "REFUSED";
    },
    setTimeout: (name) => {
      zone(name).failure = "silent";
    },
    setTruncateUdp: (on) => {
      state.truncateUdp = on;
    },
    clear: (name) => {
      state.zones.delete(key(name));
    },
    queries: state.queries,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all([
        new Promise<void>((resolve) => udp.close(() => resolve())),
        new Promise<void>((resolve) => tcp.close(() => resolve())),
      ]);
    },
  };
}

/** The UDP payload size the client offered (EDNS0), or the classic 512 bytes. */
function udpLimit(query: DecodedPacket): number {
  const opt = query.additionals?.find((a) => a.type === "OPT");
  const size = opt !== undefined && "udpPayloadSize" in opt ? opt.udpPayloadSize : 512;
  return Math.max(512, Math.min(size, 4096));
}
