import type { RawRpc, RpcAnswer } from "../ports/premium_reads.ts";

/**
 * JSON-RPC calls sent to the node as one batch over HTTP, as they are; any transport failure, a non-JSON or
 * malformed answer, or a timeout is "unreachable" (undefined), never the node's text.
 */
export function createFetchRawRpc(options: { rpcUrl: string; fetchFn?: typeof fetch | undefined; timeoutMs?: number | undefined }): RawRpc {
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
        if (!response.ok) return undefined;
        const body: unknown = await response.json();
        const answers = Array.isArray(body) ? body : [body];
        if (!answers.every((a) => typeof a === "object" && a !== null && "id" in a)) return undefined;
        return answers as RpcAnswer[];
      } catch {
        return undefined;
      }
    },
  };
}
