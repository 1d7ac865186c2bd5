/**
 * A provider that fails one read: a wallet's pending nonce (`eth_getTransactionCount` of it at `pending`), the read the
 * service's sender makes under the wallet's lock just before it signs. The other calls of the same JSON-RPC batch are
 * forwarded to the node and answered as it answers them; the failing one is answered the JSON-RPC error a provider
 * gives for a transient fault ("header not found"). Wraps the service's RPC fetch (startStack's `wrapRpcFetch`).
 */

type RpcCall = { readonly id?: unknown; readonly method?: unknown; readonly params?: readonly unknown[] };

/** The fault: which wallet's pending nonce fails while armed, and how many reads it failed. */
export type NonceReadFault = {
  /** The wallet (any case) whose pending-nonce reads fail; undefined: none. */
  wallet: string | undefined;
  /** The reads it failed so far. */
  failed: number;
  readonly wrap: (inner: typeof fetch) => typeof fetch;
};

/** Builds the fault, disarmed. */
export function nonceReadFault(): NonceReadFault {
  const fault: NonceReadFault = {
    wallet: undefined,
    failed: 0,
    wrap: (inner) =>
      (async (input: RequestInfo | URL, init?: RequestInit) => {
        const wallet = fault.wallet?.toLowerCase();
        const body = typeof init?.body === "string" ? init.body : undefined;
        if (wallet === undefined || body === undefined || !body.includes('"eth_getTransactionCount"')) return await inner(input, init);
        const parsed = JSON.parse(body) as RpcCall | RpcCall[];
        const calls = Array.isArray(parsed) ? parsed : [parsed];
        const failing = (call: RpcCall) =>
          call.method === "eth_getTransactionCount" && String(call.params?.[0]).toLowerCase() === wallet && call.params?.[1] === "pending";
        if (!calls.some(failing)) return await inner(input, init);
        fault.failed++;
        const rest = calls.filter((call) => !failing(call));
        let answers: unknown[] = [];
        if (rest.length > 0) {
          const res = await inner(input, { ...init, body: JSON.stringify(rest) });
          const json = await res.json() as unknown;
          answers = Array.isArray(json) ? json : [json];
        }
        const errors = calls.filter(failing).map((call) => ({ jsonrpc: "2.0", id: call.id, error: { code: -32000, message: "header not found" } }));
        const all = [...answers, ...errors];
        return Response.json(Array.isArray(parsed) ? all : all[0]);
      }) as typeof fetch,
  };
  return fault;
}
