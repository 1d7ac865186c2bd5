import type { RawRpc, RpcAnswer } from "../ports/premium_reads.ts";

/** What {@link createFetchRawRpc} needs. */
export type FetchRawRpcOptions = {
  readonly rpcUrl: string;
  /** The fetch to send with (main.ts passes the metered one); default the global fetch. */
  readonly fetchFn?: typeof fetch | undefined;
  /** How long one round trip may take, in ms (default 10,000). */
  readonly timeoutMs?: number | undefined;
};

const isAnswer = (value: unknown): value is RpcAnswer =>
  typeof value === "object" && value !== null && !Array.isArray(value) && "id" in value &&
  ("result" in value || (typeof (value as { error?: unknown }).error === "object" && (value as { error?: unknown }).error !== null));

/**
 * JSON-RPC calls sent to the node as one batch over HTTP, as they are. Any transport failure, a status other
 * than 200, a timeout, or an answer that is not an array of JSON-RPC responses (a node that refuses the whole
 * batch answers one error object) is "unreachable" (undefined), never the node's text.
 */
export function createFetchRawRpc(options: FetchRawRpcOptions): RawRpc {
  const fetchFn = options.fetchFn ?? fetch;
  return {
    async forward(calls) {
      try {
        const response = await fetchFn(options.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(calls),
          signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
        });
        if (!response.ok) {
          await response.body?.cancel().catch(() => {});
          return undefined;
        }
        const body: unknown = await response.json();
        if (!Array.isArray(body) || !body.every(isAnswer)) return undefined;
        return body;
      } catch {
        return undefined;
      }
    },
  };
}
