/**
 * A JSON-RPC proxy on 127.0.0.1 in front of a real node, for fault tests: it can answer a whole HTTP
 * request itself (5xx, slow, reset) or fail single calls inside a batch with a provider's error text,
 * and it records every call it saw.
 */
import type { Server } from "bun";

/**
 * The JSON-RPC methods that send a transaction. The service sends by `eth_sendRawTransactionSync` while the node mines
 * on arrival and by `eth_sendRawTransaction` otherwise (RPC_SEND_SYNC): a fault meant for "the send" covers both.
 */
export const SEND_METHODS: ReadonlySet<string> = new Set(["eth_sendRawTransaction", "eth_sendRawTransactionSync"]);
/** Whether a JSON-RPC method sends a transaction (either of {@link SEND_METHODS}). */
export const isSend = (method: string): boolean => SEND_METHODS.has(method);

/** One JSON-RPC call. */
export type RpcCall = { readonly id: unknown; readonly method: string; readonly params: unknown[] };

/** One JSON-RPC answer. */
export type RpcAnswer = { readonly jsonrpc: "2.0"; readonly id: unknown; readonly result?: unknown; readonly error?: unknown };

/** A running proxy. */
export type RpcProxy = {
  readonly url: string;
  /** Every call received, in order (also those the proxy answered itself). */
  readonly calls: RpcCall[];
  /** Answers a whole HTTP request instead of forwarding it; return undefined to forward. */
  onHttp: ((calls: readonly RpcCall[]) => Response | undefined | Promise<Response | undefined>) | undefined;
  /** Fails one call with a JSON-RPC error instead of forwarding it; return undefined to forward. */
  onCall: ((call: RpcCall) => { code: number; message: string } | undefined) | undefined;
  /**
   * Runs after the calls were forwarded and answered: return a response to send instead of the node's
   * answers (e.g. a 502: the node acted, its answer is lost), or undefined to pass them on.
   */
  onAnswered: ((calls: readonly RpcCall[]) => Response | undefined | Promise<Response | undefined>) | undefined;
  /**
   * Rewrites one forwarded call's answer (a provider's backend out of step: an empty `eth_getLogs`, another head);
   * return the answer to send.
   */
  onAnswer: ((call: RpcCall, answer: RpcAnswer) => RpcAnswer) | undefined;
  /** Where calls are forwarded; settable, so a proxy can be started before its node. */
  upstream: string;
  readonly stop: () => Promise<void>;
};

/** Starts a proxy to `upstream` on a random loopback port. */
export function startRpcProxy(upstream: string): RpcProxy {
  const proxy: RpcProxy = {
    url: "",
    calls: [],
    onHttp: undefined,
    onCall: undefined,
    onAnswered: undefined,
    onAnswer: undefined,
    upstream,
    stop: async () => await server.stop(true),
  };
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body: unknown = JSON.parse(await request.text());
      const batch = Array.isArray(body);
      const calls = (batch ? body : [body]) as RpcCall[];
      proxy.calls.push(...calls);
      const whole = await proxy.onHttp?.(calls);
      if (whole !== undefined) return whole;
      const answers = new Map<number, unknown>();
      const forward: RpcCall[] = [];
      calls.forEach((call, i) => {
        const error = proxy.onCall?.(call);
        if (error !== undefined) answers.set(i, { jsonrpc: "2.0", id: call.id, error });
        else forward.push(call);
      });
      if (forward.length > 0) {
        let upstreamResponse: Response;
        try {
          upstreamResponse = await fetch(proxy.upstream, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(batch ? forward : forward[0]),
          });
        } catch {
          // The chain went away (a test stopped it, maybe mid-request): answer as a gateway would, instead of
          // throwing inside the proxy, which the test runner would blame on whichever test is running.
          return new Response("upstream unavailable", { status: 502 });
        }
        const parsed: unknown = await upstreamResponse.json();
        const results = (Array.isArray(parsed) ? parsed : [parsed]) as { id: unknown }[];
        calls.forEach((call, i) => {
          if (answers.has(i)) return;
          const answer = results.find((r) => r.id === call.id) as RpcAnswer | undefined;
          answers.set(i, answer !== undefined && proxy.onAnswer !== undefined ? proxy.onAnswer(call, answer) : answer);
        });
      }
      const out = calls.map((_, i) => answers.get(i));
      const replaced = forward.length > 0 ? await proxy.onAnswered?.(calls) : undefined;
      if (replaced !== undefined) return replaced;
      return Response.json(batch ? out : out[0]);
    },
  });
  return Object.assign(proxy, { url: `http://127.0.0.1:${server.port}` });
}

/** For `startStack({ rpcUrlFor })`: points the proxy at the devnet and gives the service the proxy's URL. */
export function inFrontOf(proxy: RpcProxy): (devnetRpcUrl: string) => string {
  return (devnetRpcUrl) => {
    proxy.upstream = devnetRpcUrl;
    return proxy.url;
  };
}
