import { afterEach, expect, test } from "bun:test";
import type { Server } from "bun";
import { createWsNewHeads, wsChainId } from "./ws_new_heads.ts";

let server: Server<undefined> | undefined;
afterEach(() => {
  server?.stop(true);
  server = undefined;
});

/** A node's WebSocket endpoint: answers eth_subscribe (or refuses it), and lets the test push notifications or hang up. */
function node(options: { refuse?: boolean; chainId?: number } = {}) {
  const subscribed: ((push: (number: string) => void, hangUp: () => void) => void)[] = [];
  let subscriptions = 0;
  let chainIdAsked = 0;
  const next = () => new Promise<{ push: (number: string) => void; hangUp: () => void }>((resolve) => subscribed.push((push, hangUp) => resolve({ push, hangUp })));
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request, s) => (s.upgrade(request) ? undefined : new Response("no", { status: 400 })),
    websocket: {
      message(ws, message) {
        const call = JSON.parse(String(message)) as { id: number; method: string };
        if (call.method === "eth_chainId") {
          chainIdAsked++;
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: call.id, result: `0x${(options.chainId ?? 31337).toString(16)}` }));
          return;
        }
        if (call.method !== "eth_subscribe") return;
        subscriptions++;
        if (options.refuse) {
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: call.id, error: { code: -32601, message: "subscriptions are not supported" } }));
          return;
        }
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: call.id, result: "0xabc" }));
        const push = (number: string) =>
          ws.send(JSON.stringify({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription: "0xabc", result: { number, hash: "0x01" } } }));
        subscribed.shift()?.(push, () => ws.close());
      },
    },
  });
  return { url: `ws://127.0.0.1:${server.port}`, next, subscriptions: () => subscriptions, chainIdAsked: () => chainIdAsked };
}

test("createWsNewHeads(): each newHeads notification is reported; a closed connection is opened and subscribed again", async () => {
  const endpoint = node();
  const heads: (bigint | null)[] = [];
  let waiting: (() => void) | undefined;
  const seen = (n: number) => new Promise<void>((resolve) => (waiting = () => heads.length >= n && resolve()));
  const lines: string[] = [];
  const first = endpoint.next();
  const stop = createWsNewHeads({ url: endpoint.url, retryMs: 5, log: (event) => lines.push(event) }).subscribe((head) => {
    heads.push(head);
    waiting?.();
  });
  try {
    const one = await first;
    const two = seen(2);
    one.push("0x10");
    one.push("0x11");
    await two;
    expect(heads).toEqual([16n, 17n]);
    // The node hangs up: the adapter connects and subscribes again, and heads flow as before.
    const second = endpoint.next();
    one.hangUp();
    const again = await second;
    const three = seen(3);
    again.push("0x12");
    await three;
    expect(heads).toEqual([16n, 17n, 18n]);
    expect(endpoint.subscriptions()).toBe(2);
    expect(lines).toContain("index_ws_closed");
  } finally {
    stop();
  }
});

test("createWsNewHeads(): a node that refuses subscriptions reports no head; the connection is closed and opened again after a backoff", async () => {
  const endpoint = node({ refuse: true });
  const lines: string[] = [];
  let refusals = 0;
  let twice: () => void = () => {};
  const refusedTwice = new Promise<void>((resolve) => (twice = resolve));
  const heads: unknown[] = [];
  const stop = createWsNewHeads({
    url: endpoint.url,
    retryMs: 5,
    log: (event) => {
      lines.push(event);
      if (event === "index_ws_refused" && ++refusals === 2) twice();
    },
  }).subscribe((head) => heads.push(head));
  try {
    await refusedTwice;
    expect(heads).toEqual([]);
    expect(lines.filter((l) => l === "index_ws_closed").length).toBeGreaterThanOrEqual(1);
  } finally {
    stop();
  }
});

test("createWsNewHeads({chainId}): a node of that chain is subscribed to after its eth_chainId; another chain's node never is", async () => {
  const ours = node({ chainId: 31338 });
  const heads: (bigint | null)[] = [];
  let seen: () => void = () => {};
  const one = new Promise<void>((resolve) => (seen = resolve));
  const first = ours.next();
  const stop = createWsNewHeads({ url: ours.url, chainId: 31338, retryMs: 5 }).subscribe((head) => {
    heads.push(head);
    seen();
  });
  try {
    (await first).push("0x20");
    await one;
    expect(heads).toEqual([32n]);
    expect([ours.chainIdAsked(), ours.subscriptions()]).toEqual([1, 1]);
  } finally {
    stop();
    server?.stop(true);
  }

  // A wsUrl naming another chain's node (found by attack): its heads were this chain's sightings and froze its index.
  const foreign = node({ chainId: 31337 });
  const lines: { event: string; fields: Record<string, unknown> }[] = [];
  let twice: () => void = () => {};
  const refusedTwice = new Promise<void>((resolve) => (twice = resolve));
  const stopForeign = createWsNewHeads({
    url: foreign.url,
    chainId: 31338,
    retryMs: 5,
    log: (event, fields) => {
      lines.push({ event, fields });
      if (lines.filter((l) => l.event === "index_ws_wrong_chain").length === 2) twice();
    },
  }).subscribe((head) => heads.push(head));
  try {
    await refusedTwice;
    expect(foreign.subscriptions()).toBe(0);
    expect(heads).toEqual([32n]);
    expect(lines.find((l) => l.event === "index_ws_wrong_chain")?.fields).toEqual({ chainId: 31338, answered: 31337 });
  } finally {
    stopForeign();
  }
});

test("wsChainId(): the chain id a node's WebSocket answers; undefined from an endpoint that answers none", async () => {
  expect(await wsChainId(node({ chainId: 8453 }).url, 5_000)).toBe(8453);
  server?.stop(true);
  const silent = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (request, s) => (s.upgrade(request) ? undefined : new Response("no")), websocket: { message() {} } });
  try {
    expect(await wsChainId(`ws://127.0.0.1:${silent.port}`, 200)).toBeUndefined();
  } finally {
    silent.stop(true);
  }
  expect(await wsChainId(`ws://127.0.0.1:${silent.port}`, 5_000)).toBeUndefined();
});
