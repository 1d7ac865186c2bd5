import { afterEach, describe, expect, test } from "bun:test";
import { createHttp1Post, http1Serves, parseAnswer } from "./http1_post.ts";
import { createJsonRpc, RpcTransportError } from "./json_rpc.ts";

/** A raw TCP server that answers each request with what `answer` writes, counting connections and requests. */
function rawServer(answer: (write: (text: string) => void, close: () => void, request: number) => void) {
  const state = { connections: 0, requests: 0, bodies: [] as string[] };
  const pending = new Map<object, string>();
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        state.connections++;
        pending.set(socket, "");
      },
      data(socket, data) {
        let text = pending.get(socket)! + new TextDecoder().decode(data);
        for (;;) {
          const end = text.indexOf("\r\n\r\n");
          if (end < 0) break;
          const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
          if (text.length < end + 4 + length) break;
          state.bodies.push(text.slice(end + 4, end + 4 + length));
          text = text.slice(end + 4 + length);
          answer((out) => socket.write(out), () => socket.end(), ++state.requests);
        }
        pending.set(socket, text);
      },
      close(socket) {
        pending.delete(socket);
      },
    },
  });
  return { url: `http://127.0.0.1:${server.port}/rpc`, state, stop: () => server.stop(true) };
}

const servers: { stop: () => void }[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.stop();
});
const serve = (answer: Parameters<typeof rawServer>[0]) => {
  const server = rawServer(answer);
  servers.push(server);
  return server;
};
const signal = () => new AbortController().signal;
const ok = (body: string, extra = "") => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe("createHttp1Post()", () => {
  test("posts the body and reads the answer; one kept-alive connection serves requests in a row", async () => {
    const server = serve((write, _close, n) => write(ok(`{"n":${n},"é":"ü"}`)));
    const post = createHttp1Post(server.url);
    for (let n = 1; n <= 3; n++) expect(await post(`{"call":${n}}`, signal())).toEqual({ status: 200, text: `{"n":${n},"é":"ü"}` });
    expect(server.state.bodies).toEqual(['{"call":1}', '{"call":2}', '{"call":3}']);
    expect(server.state.connections).toBe(1);
  });

  test("requests in flight together each get a connection, kept for the next ones", async () => {
    const server = serve((write, _close, n) => setTimeout(() => write(ok(String(n))), 5));
    const post = createHttp1Post(server.url);
    const first = await Promise.all([post("1", signal()), post("2", signal()), post("3", signal())]);
    expect(first.map((a) => a.status)).toEqual([200, 200, 200]);
    await Promise.all([post("4", signal()), post("5", signal()), post("6", signal())]);
    expect(server.state.connections).toBe(3);
  });

  test("answers framed by chunks (split anywhere), after a 100 Continue, or by the connection's close", async () => {
    const body = '{"jsonrpc":"2.0","id":1,"result":"0x1"}';
    const chunked = `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n${body.slice(0, 5)}\r\n${(body.length - 5).toString(16)};ext=1\r\n${body.slice(5)}\r\n0\r\n\r\n`;
    const server = serve((write, close, n) => {
      if (n === 1) {
        // One byte at a time: every partial state of the parser is met.
        let at = 0;
        const next = () => {
          if (at < chunked.length) write(chunked[at++]!);
          if (at < chunked.length) setTimeout(next, 0);
        };
        next();
      } else {
        write(`HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${body}`);
        close();
      }
    });
    const post = createHttp1Post(server.url);
    expect(await post("{}", signal())).toEqual({ status: 200, text: body });
    expect(await post("{}", signal())).toEqual({ status: 200, text: body });
    // The close-framed answer's connection is not kept: the next request opens another.
    expect(await post("{}", signal())).toEqual({ status: 200, text: body });
    expect(server.state.connections).toBe(2);
  });

  test("a connection the server closed while idle is not used again; one closed mid-answer fails the request", async () => {
    const server = serve((write, close, n) => {
      if (n === 2) {
        write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial");
        return close();
      }
      write(ok("{}"));
      if (n === 1) queueMicrotask(close);
    });
    const post = createHttp1Post(server.url);
    expect((await post("{}", signal())).status).toBe(200);
    expect(post.idle()).toBe(1);
    // Waits for the client to see the server's close (a condition, not a time).
    while (post.idle() > 0) await Bun.sleep(1);
    await expect(post("{}", signal())).rejects.toThrow("closed before the answer");
    while (server.state.requests < 2) await Bun.sleep(1);
    expect((await post("{}", signal())).status).toBe(200);
    expect(server.state.connections).toBe(3);
  });

  test("an abort rejects with its reason and drops the connection; a refused connection rejects", async () => {
    const server = serve(() => {
      // Never answers.
    });
    const post = createHttp1Post(server.url);
    const controller = new AbortController();
    const answer = post("{}", controller.signal);
    while (server.state.requests < 1) await Bun.sleep(1);
    controller.abort(new Error("gave up"));
    await expect(answer).rejects.toThrow("gave up");
    expect(post.idle()).toBe(0);
    server.stop();
    const closedPort = createHttp1Post(server.url);
    await expect(closedPort("{}", signal())).rejects.toBeDefined();
  });

  test("an answer that comes before the whole request was written (a refusal) does not leave its connection kept", async () => {
    let answered = false;
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket) {
          if (answered) return;
          answered = true;
          socket.write("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n");
        },
      },
    });
    servers.push({ stop: () => server.stop(true) });
    const post = createHttp1Post(`http://127.0.0.1:${server.port}/`);
    // Far more than the kernel's buffers take at once: the socket holds the rest when the answer comes.
    const answer = await post(`"${"x".repeat(64 * 1024 * 1024)}"`, signal());
    expect(answer.status).toBe(413);
    expect(post.idle()).toBe(0);
  });

  test("a URL with userinfo sends Basic authorization, and the path and query as given", async () => {
    let head = "";
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket, data) {
          head += new TextDecoder().decode(data);
          if (head.includes("\r\n\r\n{}")) socket.write(ok("{}"));
        },
      },
    });
    servers.push({ stop: () => server.stop(true) });
    const post = createHttp1Post(`http://us%40er:p%3Ass@127.0.0.1:${server.port}/v3/abc?x=1`);
    expect((await post("{}", signal())).status).toBe(200);
    expect(head.startsWith("POST /v3/abc?x=1 HTTP/1.1\r\n")).toBe(true);
    expect(head).toContain(`Authorization: Basic ${btoa("us@er:p:ss")}\r\n`);
    expect(head).toContain(`Host: 127.0.0.1:${server.port}\r\n`);
  });
});

describe("parseAnswer()", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  test("waits for a whole answer and refuses what is not HTTP/1.x", () => {
    expect(parseAnswer(bytes("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab"), false)).toBeUndefined();
    expect(parseAnswer(bytes("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab"), true)).toEqual({ error: "The answer ended early" });
    expect(parseAnswer(bytes("SSH-2.0-x\r\n\r\n"), false)).toEqual({ error: "The answer is not HTTP/1.1" });
    expect(parseAnswer(bytes("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"), false)).toEqual({ error: "The answer's length is not a number" });
    expect(parseAnswer(bytes("HTTP/1.1 503 Busy\r\nContent-Length: 2\r\n\r\nno"), false)).toEqual({ status: 503, text: "no", reusable: true });
    // Bytes after the answer (nothing was asked for them): the connection is not kept.
    expect(parseAnswer(bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP"), false)).toEqual({ status: 200, text: "ok", reusable: false });
  });
});

describe("http1Serves()", () => {
  test("plain http without a proxy only", () => {
    expect(http1Serves("http://127.0.0.1:8545", {})).toBe(true);
    expect(http1Serves("https://rpc.example/v3/key", {})).toBe(false);
    expect(http1Serves("ws://127.0.0.1:8546", {})).toBe(false);
    expect(http1Serves("not a url", {})).toBe(false);
    expect(http1Serves("http://127.0.0.1:8545", { HTTP_PROXY: "http://proxy:3128" })).toBe(false);
    expect(http1Serves("http://127.0.0.1:8545", { http_proxy: "" })).toBe(true);
  });
});

describe("createJsonRpc() over createHttp1Post()", () => {
  test("answers, a node's HTTP refusal and an unreadable answer keep the client's distinctions", async () => {
    const server = serve((write, _close, n) => {
      if (n === 1) write(ok('[{"jsonrpc":"2.0","id":1,"result":"0x2a"},{"jsonrpc":"2.0","id":2,"result":"0x1"}]'));
      else if (n <= 3) write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy");
      else write(ok("not json"));
    });
    const rpc = createJsonRpc({ url: server.url, post: createHttp1Post(server.url), retryDelayMs: 1 });
    expect(await Promise.all([rpc.request("eth_blockNumber", []), rpc.request("eth_chainId", [])])).toEqual(["0x2a", "0x1"]);
    // 503 is retried once, as viem's transport would, then given up.
    const refused = await rpc.request("eth_blockNumber", []).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RpcTransportError);
    expect((refused as RpcTransportError).status).toBe(503);
    const unreadable = await rpc.request("eth_blockNumber", [], { retries: 0 }).catch((error: unknown) => error);
    expect((unreadable as Error).message).toBe("The node's answer is not JSON");
    expect(server.state.requests).toBe(4);
    expect(server.state.connections).toBe(1);
  });
});
