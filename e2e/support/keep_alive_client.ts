/**
 * Clients that send one request after another over kept-alive HTTP/1.1 connections (node:net), as a pooling client or
 * a balancer does, and record for each request whether it went on a reused connection: a reset there is the one a
 * stopping server must not cause (the client had every reason to think the connection open). Each connection is kept
 * until an answer says `Connection: close` or the server closes it, as Bun's fetch and node's Agent do.
 */
import { connect, type Socket } from "node:net";

/** What became of one request. */
export type Outcome = {
  /** Sent on a connection that had already carried an answer. */
  readonly reused: boolean;
  /** Sent after {@link KeepAliveLoops.mark} was called. */
  readonly afterMark: boolean;
} & (
  | { readonly answered: true; readonly status: number; readonly close: boolean; readonly code: string | undefined }
  | { readonly answered: false; readonly error: string }
);

/** A request as the loops send it. */
export type LoopRequest = { readonly method: string; readonly path: string; readonly body?: string | undefined };

/** Loops running; each ends once its connection is refused (nothing listens any more), or at `stop`. */
export type KeepAliveLoops = {
  /** Each loop's outcomes, in order. */
  readonly outcomes: readonly (readonly Outcome[])[];
  /** From now on every request is recorded `afterMark`. */
  readonly mark: () => void;
  /** Ends every loop after its request under way. */
  readonly stop: () => void;
  /** Resolves once every loop has ended. */
  readonly ended: Promise<void>;
};

/** One connection: `ask` sends a request and resolves with the answer's status line and headers, or rejects with the error. */
class Connection {
  readonly socket: Socket;
  /** Answers read on it. */
  used = 0;
  /** The server said it closes the connection (FIN, or `Connection: close`). */
  closing = false;
  #received = Buffer.alloc(0);
  #waiting: { resolve: (answer: Answer) => void; reject: (error: Error) => void } | undefined;
  #error: string | undefined;

  constructor(port: number, host: string) {
    this.socket = connect(port, host);
    this.socket.on("data", (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      this.#answer();
    });
    this.socket.on("end", () => (this.closing = true));
    this.socket.on("error", (error: NodeJS.ErrnoException) => (this.#error ??= error.code ?? error.message));
    this.socket.on("close", () => {
      this.closing = true;
      this.#waiting?.reject(new Error(this.#error ?? "closed before an answer"));
      this.#waiting = undefined;
    });
  }

  ask(raw: string): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.socket.write(raw);
    });
  }

  /** Hands the waiting request its answer once its head and its Content-Length of body have arrived. */
  #answer() {
    if (this.#waiting === undefined) return;
    const end = this.#received.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = this.#received.subarray(0, end).toString("latin1");
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.#received.length < end + 4 + length) return;
    const body = this.#received.subarray(end + 4, end + 4 + length).toString("utf8");
    this.#received = this.#received.subarray(end + 4 + length);
    const close = /\r\nconnection: *close/i.test(head);
    if (close) this.closing = true;
    this.used++;
    let code: string | undefined;
    try {
      code = (JSON.parse(body) as { code?: string }).code;
    } catch {
      code = undefined;
    }
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting.resolve({ status: Number(head.split(" ")[1]), close, code });
  }
}

type Answer = { readonly status: number; readonly close: boolean; readonly code: string | undefined };

/**
 * Starts `count` loops sending `request` to `url` one after another, each over its kept-alive connections. A loop ends
 * once a connection is refused, at `stop`, or after `maxRequests` (a bound, never reached by a test that passes).
 */
export function keepAliveLoops(url: string, count: number, request: LoopRequest, maxRequests = 100_000): KeepAliveLoops {
  const { hostname, port } = new URL(url);
  const body = request.body ?? "";
  const raw = `${request.method} ${request.path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  let marked = false;
  let stopped = false;
  const outcomes: Outcome[][] = Array.from({ length: count }, () => []);
  const loop = async (mine: Outcome[]) => {
    let connection: Connection | undefined;
    while (!stopped && mine.length < maxRequests) {
      if (connection === undefined || connection.closing) {
        connection?.socket.destroy();
        connection = new Connection(Number(port), hostname);
      }
      const reused = connection.used > 0;
      const afterMark = marked;
      try {
        const answer = await connection.ask(raw);
        mine.push({ reused, afterMark, answered: true, ...answer });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        mine.push({ reused, afterMark, answered: false, error: message });
        connection.socket.destroy();
        connection = undefined;
        if (message === "ECONNREFUSED") break;
      }
    }
    connection?.socket.destroy();
  };
  const ended = Promise.all(outcomes.map(loop)).then(() => undefined);
  return { outcomes, mark: () => void (marked = true), stop: () => void (stopped = true), ended };
}
