/**
 * `newHeads` over a node's WebSocket endpoint (`RPC_WS_URL`, decisions §21), with Bun's own WebSocket: each new head
 * is reported so the index follower polls at once instead of at its next tick. The subscription is a hint, never
 * the data: the follower still reads every block over HTTP and keeps its timed poll as the fallback, so a dropped
 * connection, a missed notification or a node without subscriptions only costs latency. A closed connection is
 * opened again with backoff (1 s doubling to 30 s). Nothing the node sends is logged.
 *
 * With `chainId`, each connection first asks the node's `eth_chainId` and subscribes only when it is that chain's
 * (decisions §30): a `wsUrl` naming another chain's node gave that chain's heads as this chain's sightings, which
 * froze this chain's index while /readyz said ready.
 */
import type { HeadSignal } from "../../ports/attestation_index.ts";

/** Options of {@link createWsNewHeads}. */
export type WsNewHeadsOptions = {
  readonly url: string;
  readonly log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
  /** First reconnection delay, doubled up to `maxRetryMs`; default 1,000. */
  readonly retryMs?: number | undefined;
  readonly maxRetryMs?: number | undefined;
  /** The chain the heads must be of: a node answering another chain id is never subscribed to. */
  readonly chainId?: number | undefined;
};

const SUBSCRIBE_ID = 1;
const CHAIN_ID_ID = 2;

/** Follows `newHeads` at `url`; every head's number (when the node gives it) goes to each subscriber. */
export function createWsNewHeads(options: WsNewHeadsOptions): HeadSignal {
  const log = options.log ?? (() => {});
  const retryMs = options.retryMs ?? 1_000;
  const maxRetryMs = options.maxRetryMs ?? 30_000;
  return {
    subscribe(onHead) {
      let socket: WebSocket | undefined;
      let stopped = false;
      let failures = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const connect = () => {
        if (stopped) return;
        let opened = false;
        const ws = new WebSocket(options.url);
        socket = ws;
        ws.addEventListener("open", () => {
          opened = true;
          if (options.chainId === undefined) subscribe(ws);
          else ws.send(JSON.stringify({ jsonrpc: "2.0", id: CHAIN_ID_ID, method: "eth_chainId", params: [] }));
        });
        ws.addEventListener("message", (event) => {
          const head = headOf(event.data);
          if (typeof head === "object" && head !== null) {
            if (head.chainId === options.chainId) {
              subscribe(ws);
            } else {
              log("index_ws_wrong_chain", { chainId: options.chainId, answered: head.chainId ?? null });
              ws.close();
            }
          } else if (head === "subscribed") {
            failures = 0;
            log("index_ws_subscribed", {});
          } else if (head === "refused") {
            log("index_ws_refused", {});
            ws.close();
          } else if (head !== undefined) {
            onHead(head);
          }
        });
        ws.addEventListener("close", () => {
          if (socket === ws) socket = undefined;
          if (stopped) return;
          failures++;
          const delay = Math.min(maxRetryMs, retryMs * 2 ** Math.min(failures - 1, 10));
          log("index_ws_closed", { opened, retryInMs: delay, attempt: failures });
          timer = setTimeout(connect, delay);
        });
        // An error is followed by a close, which schedules the next attempt.
        ws.addEventListener("error", () => {});
      };
      connect();
      return () => {
        stopped = true;
        if (timer !== undefined) clearTimeout(timer);
        socket?.close();
      };
    },
  };
}

function subscribe(ws: WebSocket): void {
  ws.send(JSON.stringify({ jsonrpc: "2.0", id: SUBSCRIBE_ID, method: "eth_subscribe", params: ["newHeads"] }));
}

/**
 * The chain id a node's WebSocket endpoint answers, or undefined when it answers none within `timeoutMs` (the start's
 * check of a configured `wsUrl`, app/foundation.ts).
 */
export function wsChainId(url: string, timeoutMs: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    let ws: WebSocket;
    const done = (chainId: number | undefined) => {
      clearTimeout(timer);
      resolve(chainId);
      ws.close();
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    try {
      ws = new WebSocket(url);
    } catch {
      clearTimeout(timer);
      resolve(undefined);
      return;
    }
    ws.addEventListener("open", () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: CHAIN_ID_ID, method: "eth_chainId", params: [] })));
    ws.addEventListener("message", (event) => {
      const answer = headOf(event.data);
      if (typeof answer === "object" && answer !== null) done(answer.chainId);
    });
    ws.addEventListener("close", () => done(undefined));
    ws.addEventListener("error", () => {});
  });
}

/**
 * What a message says: a new head's number (null: a head without a readable number), the subscription's fate, the
 * node's chain id (undefined inside when unreadable), or nothing.
 */
function headOf(data: unknown): bigint | null | "subscribed" | "refused" | { readonly chainId: number | undefined } | undefined {
  if (typeof data !== "string" || data.length > 1_000_000) return undefined;
  let message: { id?: unknown; result?: unknown; error?: unknown; method?: unknown; params?: { result?: { number?: unknown } } };
  try {
    message = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (message.id === CHAIN_ID_ID) {
    const id = typeof message.result === "string" && /^0x[0-9a-fA-F]{1,13}$/.test(message.result) ? Number(message.result) : undefined;
    return { chainId: id };
  }
  if (message.id === SUBSCRIBE_ID) return message.error === undefined && typeof message.result === "string" ? "subscribed" : "refused";
  if (message.method !== "eth_subscription") return undefined;
  const number = message.params?.result?.number;
  return typeof number === "string" && /^0x[0-9a-fA-F]{1,16}$/.test(number) ? BigInt(number) : null;
}
