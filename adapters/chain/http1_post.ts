/**
 * JSON-RPC's POST over plain HTTP/1.1 on kept-alive sockets (issue 43 item 4). Bun's `fetch` costs about 100 µs of
 * CPU per exchange with a node on loopback (a Request, Headers and a Response built and read, the exchange handed to
 * its HTTP client thread and back); this costs about 50, and a delegated attestation makes two exchanges on its own
 * path. It serves `http:` URLs only, and only when no proxy is set in the environment: a provider behind TLS or a
 * proxy keeps `fetch` (app/foundation.ts decides).
 *
 * One request at a time on a connection (no pipelining); a connection that finished its answer and was told nothing
 * else waits in the pool for the next request, up to `maxIdle` of them, each closed after `idleMs` unused (below the
 * keep-alive timeouts of common servers, so a request is rarely written to a socket the server is closing). A kept
 * connection found closed before any byte of the request was written is replaced by a new one; a request written to a
 * socket the server then closed fails as a network error, as `fetch` would, and is not sent again here: the JSON-RPC
 * client's retry policy decides (a send is never retried blindly). A connection that answered before the whole
 * request was written is not kept.
 * Answers are framed by `Content-Length`, by chunks, or by the connection's close. Error messages name no URL.
 */
import { untilAborted } from "./_until_aborted.ts";

/** What one exchange answered: the HTTP status and the body as text. */
export type Http1Answer = { readonly status: number; readonly text: string };

/** Posts a JSON body; rejects on a network failure, or with the signal's reason once it aborts. */
export type Http1Post = ((body: string, signal: AbortSignal) => Promise<Http1Answer>) & {
  /** Connections waiting for a request (tests wait on it instead of on time). */
  readonly idle: () => number;
};

/** Options of {@link createHttp1Post}. */
export type Http1PostOptions = {
  /** Idle connections kept for reuse (default 8). */
  readonly maxIdle?: number | undefined;
  /** How long an idle connection is kept, in ms (default 4,000). */
  readonly idleMs?: number | undefined;
};

/** Whether `url` can be served by {@link createHttp1Post} in this environment (plain http, no proxy set). */
export function http1Serves(url: string, env: Record<string, string | undefined> = process.env): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const proxied = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"].some((name) => (env[name] ?? "") !== "");
  return parsed.protocol === "http:" && !proxied;
}

type Exchange = {
  readonly resolve: (answer: Http1Answer) => void;
  readonly reject: (error: unknown) => void;
  chunks: Uint8Array[];
  size: number;
};

type Connection = {
  socket: Bun.Socket<undefined> | undefined;
  exchange: Exchange | undefined;
  /** Bytes still to write (the kernel took part of the request). */
  unwritten: Uint8Array | undefined;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  closed: boolean;
};

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Builds the POST of one URL (see the module's comment). */
export function createHttp1Post(url: string, options: Http1PostOptions = {}): Http1Post {
  const target = new URL(url);
  const port = Number(target.port || 80);
  const hostname = target.hostname.startsWith("[") ? target.hostname.slice(1, -1) : target.hostname;
  const auth = target.username === "" && target.password === ""
    ? ""
    : `Authorization: Basic ${btoa(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`)}\r\n`;
  const head = `POST ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n${auth}` +
    "Content-Type: application/json\r\nAccept: application/json\r\nAccept-Encoding: identity\r\nConnection: keep-alive\r\nContent-Length: ";
  const maxIdle = options.maxIdle ?? 8;
  const idleMs = options.idleMs ?? 4_000;
  const idle: Connection[] = [];

  const settleWith = (connection: Connection, outcome: { answer: Http1Answer } | { error: unknown }) => {
    const exchange = connection.exchange;
    connection.exchange = undefined;
    if (exchange === undefined) return;
    if ("answer" in outcome) exchange.resolve(outcome.answer);
    else exchange.reject(outcome.error);
  };

  const close = (connection: Connection) => {
    if (connection.closed) return;
    connection.closed = true;
    clearTimeout(connection.idleTimer);
    const at = idle.indexOf(connection);
    if (at >= 0) idle.splice(at, 1);
    connection.socket?.end();
  };

  const release = (connection: Connection, reusable: boolean) => {
    // An answer that came before the whole request was written (a refusal) leaves the connection mid-request.
    if (!reusable || connection.closed || connection.unwritten !== undefined || idle.length >= maxIdle) return close(connection);
    connection.socket?.unref();
    connection.idleTimer = setTimeout(() => close(connection), idleMs);
    idle.push(connection);
  };

  /** Reads what arrived; settles the exchange once its answer is whole. */
  const received = (connection: Connection, data: Uint8Array) => {
    const exchange = connection.exchange;
    if (exchange === undefined) return close(connection); // bytes nobody asked for: the connection is not trusted again
    exchange.chunks.push(data);
    exchange.size += data.length;
    const parsed = parseAnswer(joined(exchange), false);
    if (parsed === undefined) return;
    if ("error" in parsed) {
      settleWith(connection, { error: new Error(parsed.error) });
      return close(connection);
    }
    settleWith(connection, { answer: { status: parsed.status, text: parsed.text } });
    release(connection, parsed.reusable);
  };

  const ended = (connection: Connection) => {
    const exchange = connection.exchange;
    connection.closed = true;
    clearTimeout(connection.idleTimer);
    const at = idle.indexOf(connection);
    if (at >= 0) idle.splice(at, 1);
    if (exchange === undefined) return;
    // An answer framed by the connection's close is whole now; anything else ended early.
    const parsed = exchange.size === 0 ? undefined : parseAnswer(joined(exchange), true);
    if (parsed !== undefined && !("error" in parsed)) settleWith(connection, { answer: { status: parsed.status, text: parsed.text } });
    else settleWith(connection, { error: new Error("The connection closed before the answer") });
  };

  const connect = async (): Promise<Connection> => {
    const connection: Connection = { socket: undefined, exchange: undefined, unwritten: undefined, idleTimer: undefined, closed: false };
    connection.socket = await Bun.connect({
      hostname,
      port,
      socket: {
        data: (_socket, data) => received(connection, data),
        drain: (socket) => {
          const rest = connection.unwritten;
          if (rest === undefined) return;
          const wrote = socket.write(rest);
          connection.unwritten = wrote >= rest.length ? undefined : rest.subarray(Math.max(0, wrote));
        },
        close: () => ended(connection),
        end: () => ended(connection),
        error: () => ended(connection),
      },
    });
    return connection;
  };

  const post = async (body: string, signal: AbortSignal): Promise<Http1Answer> => {
    if (signal.aborted) throw signal.reason;
    const bytes = encoder.encode(body);
    const request = concat(encoder.encode(`${head}${bytes.length}\r\n\r\n`), bytes);
    const kept = idle.pop();
    if (kept !== undefined) {
      clearTimeout(kept.idleTimer);
      kept.socket?.ref();
      try {
        return await exchangeOn(kept, request, signal);
      } catch (error) {
        // A kept connection found closed before a byte was written: nothing was sent, so a new one may send it.
        if (!(error instanceof NotSent)) throw error;
      }
    }
    return await exchangeOn(await untilAborted(connect(), signal, close), request, signal);
  };

  /** One request on `open`; rejects with {@link NotSent} when the connection was closed before anything was written. */
  const exchangeOn = (open: Connection, request: Uint8Array, signal: AbortSignal) =>
    new Promise<Http1Answer>((resolve, reject) => {
      if (open.closed || open.socket === undefined) return reject(new NotSent());
      const onAbort = () => {
        settleWith(open, { error: signal.reason });
        close(open);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      open.exchange = {
        resolve: (answer) => {
          signal.removeEventListener("abort", onAbort);
          resolve(answer);
        },
        reject: (error) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
        chunks: [],
        size: 0,
      };
      const wrote = open.socket.write(request);
      if (wrote <= 0 && open.socket.readyState !== 1) {
        open.exchange = undefined;
        signal.removeEventListener("abort", onAbort);
        close(open);
        return reject(new NotSent());
      }
      if (wrote < request.length) open.unwritten = request.subarray(Math.max(0, wrote));
    });
  return Object.assign(post, { idle: () => idle.length });
}

/** The connection was closed before any byte of the request was written. */
class NotSent extends Error {
  constructor() {
    super("The connection closed before the request was sent");
  }
}

function joined(exchange: Exchange): Uint8Array {
  if (exchange.chunks.length > 1) exchange.chunks = [concat(...exchange.chunks)];
  return exchange.chunks[0]!;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

type Parsed = { readonly status: number; readonly text: string; readonly reusable: boolean } | { readonly error: string };

const CRLF2 = [13, 10, 13, 10];

function indexOfSequence(bytes: Uint8Array, sequence: readonly number[], from: number): number {
  outer: for (let i = from; i <= bytes.length - sequence.length; i++) {
    for (let j = 0; j < sequence.length; j++) if (bytes[i + j] !== sequence[j]) continue outer;
    return i;
  }
  return -1;
}

/** A header's value in a head already lower-cased (`\r\nname: value`), trimmed; undefined when absent. */
function header(head: string, name: string): string | undefined {
  const at = head.indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const from = at + name.length + 3;
  const end = head.indexOf("\r\n", from);
  return head.slice(from, end < 0 ? undefined : end).trim();
}

/**
 * The answer in `bytes` when it is whole (undefined while more must come). `closed`: the connection ended, which
 * frames an answer that has neither a length nor chunks. Informational answers (1xx) before it are skipped. The head
 * is searched and read with Buffer's native methods: this runs on every JSON-RPC answer of a write.
 */
export function parseAnswer(bytes: Uint8Array, closed: boolean): Parsed | undefined {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let start = 0;
  for (;;) {
    const headEnd = buffer.indexOf("\r\n\r\n", start, "latin1");
    if (headEnd < 0) return bytes.length - start > 65_536 ? { error: "The answer's head is too long" } : undefined;
    const head = buffer.toString("latin1", start, headEnd).toLowerCase();
    const status = /^http\/1\.([01]) (\d{3})/.exec(head);
    if (status === null) return { error: "The answer is not HTTP/1.1" };
    const code = Number(status[2]);
    const bodyStart = headEnd + 4;
    if (code >= 100 && code < 200) {
      start = bodyStart;
      continue;
    }
    const reusable = status[1] === "1" && !/\bclose\b/.test(header(head, "connection") ?? "");
    if (/\bchunked\b/.test(header(head, "transfer-encoding") ?? "")) {
      const body = dechunk(bytes, bodyStart);
      if (body === undefined) return closed ? { error: "The answer ended inside a chunk" } : undefined;
      if ("error" in body) return body;
      return { status: code, text: decoder.decode(body.bytes), reusable: reusable && body.end === bytes.length };
    }
    const length = header(head, "content-length");
    if (length !== undefined) {
      if (!/^\d+$/.test(length)) return { error: "The answer's length is not a number" };
      const end = bodyStart + Number(length);
      if (bytes.length < end) return closed ? { error: "The answer ended early" } : undefined;
      return { status: code, text: buffer.toString("utf8", bodyStart, end), reusable: reusable && end === bytes.length };
    }
    if (code === 204 || code === 304) return { status: code, text: "", reusable: reusable && bodyStart === bytes.length };
    return closed ? { status: code, text: buffer.toString("utf8", bodyStart), reusable: false } : undefined;
  }
}

/** The body of a chunked answer from `from`, and where it ended; undefined while incomplete. */
function dechunk(bytes: Uint8Array, from: number): { readonly bytes: Uint8Array; readonly end: number } | { readonly error: string } | undefined {
  const parts: Uint8Array[] = [];
  let at = from;
  for (;;) {
    const lineEnd = indexOfSequence(bytes, [13, 10], at);
    if (lineEnd < 0) return undefined;
    const sizeText = decoder.decode(bytes.subarray(at, lineEnd)).split(";")[0]!.trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) return { error: "The answer's chunk size is not hex" };
    const size = parseInt(sizeText, 16);
    at = lineEnd + 2;
    if (size === 0) {
      // Trailers (rare) end with an empty line.
      const trailerEnd = bytes[at] === 13 && bytes[at + 1] === 10 ? at : indexOfSequence(bytes, CRLF2, at);
      if (trailerEnd < 0) return undefined;
      return { bytes: concat(...parts), end: trailerEnd + (trailerEnd === at ? 2 : 4) };
    }
    if (bytes.length < at + size + 2) return undefined;
    parts.push(bytes.subarray(at, at + size));
    at += size + 2;
  }
}
