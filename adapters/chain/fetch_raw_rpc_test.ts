import { afterAll, describe, expect, test } from "bun:test";
import type { RpcCall, RpcSendOutcome } from "../../ports/premium_reads.ts";
import { ChainNotCheckedError, createChainCheckGate } from "./chain_check_gate.ts";
import { createFetchRawRpc } from "./fetch_raw_rpc.ts";

/** How the fake node answers the next request. */
let answer: (body: unknown) => Response | Promise<Response> = () => new Response("");
const received: unknown[] = [];
const node = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body: unknown = await request.json();
    received.push(body);
    return await answer(body);
  },
});
afterAll(() => node.stop(true));
const url = `http://127.0.0.1:${node.port}`;
const calls: RpcCall[] = [
  { jsonrpc: "2.0", id: 0, method: "eth_chainId", params: [] },
  { jsonrpc: "2.0", id: 1, method: "eth_call", params: [{ to: "0x0000000000000000000000000000000000000001" }, "latest"] },
];

/** Clears what the node received and has it hold every answer (an empty batch) until the returned function is called. */
function holdAnswers(): () => void {
  received.length = 0;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  answer = async () => {
    await held;
    return Response.json([]);
  };
  return release;
}

describe("createFetchRawRpc()", () => {
  test("sends the calls as one batch as they are and returns the node's answers, errors included", async () => {
    received.length = 0;
    answer = () => Response.json([{ jsonrpc: "2.0", id: 1, error: { code: 3, message: "execution reverted", data: "0x" } }, { jsonrpc: "2.0", id: 0, result: "0x7a69" }]);
    const answers = await createFetchRawRpc({ rpcUrl: url }).forward(calls);
    expect(received).toEqual([calls]);
    expect(answers).toEqual([
      { jsonrpc: "2.0", id: 1, error: { code: 3, message: "execution reverted", data: "0x" } },
      { jsonrpc: "2.0", id: 0, result: "0x7a69" },
    ] as never);
  });

  test("uses the fetch it is given (the metered one)", async () => {
    const seen: string[] = [];
    const fetchFn = ((input: string, init?: RequestInit) => {
      seen.push(String(init?.body));
      return fetch(input, init);
    }) as typeof fetch;
    answer = () => Response.json([{ jsonrpc: "2.0", id: 0, result: "0x1" }, { jsonrpc: "2.0", id: 1, result: "0x" }]);
    expect(await createFetchRawRpc({ rpcUrl: url, fetchFn }).forward(calls)).toHaveLength(2);
    expect(seen).toEqual([JSON.stringify(calls)]);
  });

  test("a failed round trip is undefined, never the node's text", async () => {
    const cases: [string, () => Response | Promise<Response>][] = [
      ["HTTP 502", () => new Response("upstream secret text", { status: 502 })],
      ["HTTP 429", () => Response.json({ jsonrpc: "2.0", id: null, error: { code: -32005, message: "rate limited" } }, { status: 429 })],
      ["not JSON", () => new Response("<html>gateway</html>")],
      ["one error object for the whole batch", () => Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch too large" } })],
      ["an array of non-answers", () => Response.json([1, 2])],
      ["answers without result or error", () => Response.json([{ jsonrpc: "2.0", id: 0 }, { jsonrpc: "2.0", id: 1 }])],
    ];
    for (const [name, respond] of cases) {
      answer = respond;
      expect({ name, answers: await createFetchRawRpc({ rpcUrl: url }).forward(calls) }).toEqual({ name, answers: undefined });
    }
  });

  test("a node that does not answer in time, or cannot be reached, is undefined", async () => {
    // A good answer, held until the forward gave up: only the timeout can end it (no wall-clock bound to race).
    let release = () => {};
    answer = () => new Promise((resolve) => (release = () => resolve(Response.json([{ jsonrpc: "2.0", id: 0, result: "0x1" }, { jsonrpc: "2.0", id: 1, result: "0x" }]))));
    expect(await createFetchRawRpc({ rpcUrl: url, timeoutMs: 100 }).forward(calls)).toBeUndefined();
    release();
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const closedUrl = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    expect(await createFetchRawRpc({ rpcUrl: closedUrl }).forward(calls)).toBeUndefined();
  });
});

describe("createFetchRawRpc().send(): whether the node may have run the calls (issue 23)", () => {
  test("never reached, or refused with a status before running: not_sent; a gateway timeout or an unreadable 200: lost", async () => {
    const cases: [string, () => Response | Promise<Response>, RpcSendOutcome][] = [
      ["HTTP 502", () => new Response("upstream secret text", { status: 502 }), { kind: "not_sent" }],
      ["HTTP 429", () => new Response("slow down", { status: 429 }), { kind: "not_sent" }],
      ["HTTP 504", () => new Response("gateway timeout", { status: 504 }), { kind: "lost", timedOut: true }],
      ["not JSON", () => new Response("<html>gateway</html>"), { kind: "lost", timedOut: false }],
      ["one error object for the whole batch", () => Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "no" } }), { kind: "lost", timedOut: false }],
    ];
    for (const [name, respond, outcome] of cases) {
      answer = respond;
      expect({ name, outcome: await createFetchRawRpc({ rpcUrl: url }).send(calls) }).toEqual({ name, outcome });
    }
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const closedUrl = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    expect(await createFetchRawRpc({ rpcUrl: closedUrl }).send(calls)).toEqual({ kind: "not_sent" });
  });

  test("calls the chain's gate held (its node being checked again after a failed exchange) were never sent: not_sent", async () => {
    const held = (() => Promise.reject(new ChainNotCheckedError("eip155:31337", false))) as unknown as typeof fetch;
    expect(await createFetchRawRpc({ rpcUrl: url, fetchFn: held }).send(calls)).toEqual({ kind: "not_sent" });
  });

  test("a node that does not answer in time: lost (timed out); the service stopping: lost, and nothing sent once stopped", async () => {
    const release = holdAnswers();
    expect(await createFetchRawRpc({ rpcUrl: url, timeoutMs: 100 }).send(calls)).toEqual({ kind: "lost", timedOut: true });
    const stop = new AbortController();
    const pending = createFetchRawRpc({ rpcUrl: url, signal: stop.signal }).send(calls);
    while (received.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort();
    expect(await pending).toEqual({ kind: "lost", timedOut: false });
    expect(await createFetchRawRpc({ rpcUrl: url, signal: stop.signal }).send(calls)).toEqual({ kind: "not_sent" });
    expect(received).toHaveLength(2);
    release();
  });
});

describe("createFetchRawRpc().send() behind a chain's gate (app/chain_checks.ts): whether the calls left the gate", () => {
  /** A gate whose check never answers (the node asked its chain id hangs), as the premium route's fetch sees it. */
  function hangingGate(initial: "checked" | "unchecked") {
    let asked = 0;
    const gate = createChainCheckGate({ caip2: "eip155:31337", check: () => (asked++, new Promise<never>(() => {})), retryMs: 0, initial });
    return { fetchFn: gate.fetch(fetch), asked: () => asked };
  }

  test("the exchange's timeout or the service's stop while the calls wait for the node's chain-id check: not_sent (nothing reached the node)", async () => {
    received.length = 0;
    answer = () => Response.json([{ jsonrpc: "2.0", id: 0, result: "0x7a69" }, { jsonrpc: "2.0", id: 1, result: "0x" }]);
    const timedOut = hangingGate("unchecked");
    expect(await createFetchRawRpc({ rpcUrl: url, fetchFn: timedOut.fetchFn, timeoutMs: 50 }).send(calls)).toEqual({ kind: "not_sent" });
    const stop = new AbortController();
    const stopped = hangingGate("unchecked");
    const pending = createFetchRawRpc({ rpcUrl: url, fetchFn: stopped.fetchFn, signal: stop.signal }).send(calls);
    while (stopped.asked() === 0) await Bun.sleep(5);
    stop.abort(new Error("stopping"));
    expect(await pending).toEqual({ kind: "not_sent" });
    expect([timedOut.asked(), stopped.asked(), received.length]).toEqual([1, 1, 0]);
  });

  test("calls the gate let through (an open gate) that then time out or are stopped: still lost (the node may have run them)", async () => {
    const release = holdAnswers();
    const open = hangingGate("checked");
    expect(await createFetchRawRpc({ rpcUrl: url, fetchFn: open.fetchFn, timeoutMs: 100 }).send(calls)).toEqual({ kind: "lost", timedOut: true });
    const stop = new AbortController();
    const pending = createFetchRawRpc({ rpcUrl: url, fetchFn: open.fetchFn, signal: stop.signal }).send(calls);
    while (received.length < 2) await Bun.sleep(5);
    stop.abort(new Error("stopping"));
    expect(await pending).toEqual({ kind: "lost", timedOut: false });
    expect([open.asked(), received.length]).toEqual([0, 2]);
    release();
  });
});
