import { afterAll, describe, expect, test } from "bun:test";
import type { MetricLabels, Metrics } from "../../ports/metrics.ts";
import { createJsonRpc, NodeRpcError, RpcTransportError } from "./json_rpc.ts";

type Call = { id: number; method: string; params: unknown[] };
let answer: (calls: Call[]) => Response | Promise<Response> = () => new Response("[]");
const requests: Call[][] = [];
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const calls = (await request.json()) as Call[];
    requests.push(calls);
    return await answer(calls);
  },
});
afterAll(() => server.stop(true));
const url = `http://127.0.0.1:${server.port}`;

function recording() {
  const counted: string[] = [];
  const metrics: Metrics = {
    increment: (name: string, labels: MetricLabels = {}) => void counted.push(`${name}${JSON.stringify(labels)}`),
    observe: (name: string) => void counted.push(name),
  };
  return { counted, metrics };
}

const unexpected = (): never => {
  throw new Error("expected a failure");
};

const results = (calls: Call[]) => calls.map((c) => ({ jsonrpc: "2.0", id: c.id, result: `${c.method}:${String(c.params[0] ?? "")}` }));

describe("createJsonRpc", () => {
  test("calls made in one turn share one HTTP request, and answers are matched by id whatever their order", async () => {
    requests.length = 0;
    answer = (calls) => Response.json(results(calls).reverse());
    const { counted, metrics } = recording();
    const rpc = createJsonRpc({ url, metrics });
    const answers = await Promise.all([rpc.request("eth_call", ["a"]), rpc.request("eth_getCode", ["b"]), rpc.request("eth_getBalance", ["c"])]);
    expect(answers).toEqual(["eth_call:a", "eth_getCode:b", "eth_getBalance:c"]);
    expect(requests.map((r) => r.map((c) => c.method))).toEqual([["eth_call", "eth_getCode", "eth_getBalance"]]);
    expect(counted.filter((c) => c.startsWith("ats_rpc_calls_total"))).toHaveLength(3);
    expect(counted.filter((c) => c === "ats_rpc_round_trip_seconds")).toHaveLength(1);
    // The next turn is the next request.
    expect(await rpc.request("eth_blockNumber", [])).toBe("eth_blockNumber:");
    expect(requests).toHaveLength(2);
  });

  test("a JSON-RPC error object is the node's answer: NodeRpcError with code, message and data, counted by method", async () => {
    answer = (calls) => Response.json(calls.map((c) => c.method === "eth_estimateGas"
      ? { jsonrpc: "2.0", id: c.id, error: { code: 3, message: "execution reverted", data: "0x12345678" } }
      : { jsonrpc: "2.0", id: c.id, result: "0x1" }));
    const { counted, metrics } = recording();
    const rpc = createJsonRpc({ url, metrics });
    const [estimate, balance] = await Promise.allSettled([rpc.request("eth_estimateGas", [{}]), rpc.request("eth_getBalance", ["x"])]);
    expect(balance).toEqual({ status: "fulfilled", value: "0x1" });
    expect(estimate.status).toBe("rejected");
    const error = (estimate as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(NodeRpcError);
    expect([error.code, error.message, error.data]).toEqual([3, "execution reverted", "0x12345678"]);
    expect(counted).toContain('ats_rpc_failures_total{"reason":"rpc_error","code":"3","method":"eth_estimateGas"}');
  });

  test("a node refusing the whole batch with one error object refuses every call", async () => {
    answer = () => Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch too large" } });
    const rpc = createJsonRpc({ url });
    const outcomes = await Promise.allSettled([rpc.request("a", []), rpc.request("b", [])]);
    expect(outcomes.map((o) => o.status === "rejected" && o.reason instanceof NodeRpcError && o.reason.code)).toEqual([-32600, -32600]);
  });

  test("a retryable HTTP status is tried once more, then is a transport failure with the status; 400 is not retried", async () => {
    requests.length = 0;
    answer = () => new Response("busy", { status: 503 });
    const { counted, metrics } = recording();
    const rpc = createJsonRpc({ url, metrics, retryDelayMs: 1 });
    const busy = await rpc.request("eth_sendRawTransaction", ["0x"]).then(unexpected, (e: unknown) => e as RpcTransportError);
    expect(busy).toBeInstanceOf(RpcTransportError);
    expect(busy.status).toBe(503);
    expect(requests).toHaveLength(2);
    expect(counted.filter((c) => c.includes("http_503"))).toHaveLength(2);
    requests.length = 0;
    answer = () => new Response("no", { status: 400 });
    expect((await rpc.request("eth_call", []).then(unexpected, (e: unknown) => e as RpcTransportError)).status).toBe(400);
    expect(requests).toHaveLength(1);
  });

  test("a call sent alone has an HTTP request of its own and, with retries: 0, is not tried again after -32603", async () => {
    requests.length = 0;
    let held: (() => void) | undefined;
    answer = async (calls) => {
      // The node holds a sync send until the test lets it go: the turn's other calls must not wait with it.
      if (calls.some((c) => c.method === "eth_sendRawTransactionSync")) await new Promise<void>((resolve) => (held = resolve));
      return Response.json(calls.map((c) => c.method === "eth_sendRawTransactionSync"
        ? { jsonrpc: "2.0", id: c.id, error: { code: -32603, message: "Transaction confirmation timeout" } }
        : { jsonrpc: "2.0", id: c.id, result: "0x1" }));
    };
    const rpc = createJsonRpc({ url, retryDelayMs: 1 });
    const sync = rpc.request("eth_sendRawTransactionSync", ["0x02"], { alone: true, retries: 0 }).then(unexpected, (e: unknown) => e as NodeRpcError);
    const reads = await Promise.all([rpc.request("eth_getBalance", ["x"]), rpc.request("eth_gasPrice", [])]);
    expect(reads).toEqual(["0x1", "0x1"]);
    expect(requests.map((r) => r.map((c) => c.method))).toEqual([["eth_sendRawTransactionSync"], ["eth_getBalance", "eth_gasPrice"]]);
    held!();
    const timedOut = await sync;
    expect(timedOut).toBeInstanceOf(NodeRpcError);
    expect(timedOut.code).toBe(-32603);
    expect(requests).toHaveLength(2);
    // The same answer to a call with the client's default retries is tried once more.
    requests.length = 0;
    answer = (calls) => Response.json(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, error: { code: -32603, message: "internal error" } })));
    expect((await rpc.request("eth_call", []).then(unexpected, (e: unknown) => e as NodeRpcError)).code).toBe(-32603);
    expect(requests).toHaveLength(2);
  });

  test("a node answering after the timeout, or not reachable, is a transport failure: timed out or not", async () => {
    answer = async (calls) => {
      await Bun.sleep(300);
      return Response.json(results(calls));
    };
    const { counted, metrics } = recording();
    const slow = await createJsonRpc({ url, metrics, timeoutMs: 50, retryCount: 0 }).request("eth_call", []).then(unexpected, (e: unknown) => e as RpcTransportError);
    expect(slow).toBeInstanceOf(RpcTransportError);
    expect(slow.timedOut).toBe(true);
    expect(counted).toContain('ats_rpc_failures_total{"reason":"timeout"}');
    const gone = await createJsonRpc({ url: "http://127.0.0.1:1", metrics, retryCount: 0 }).request("eth_call", []).then(unexpected, (e: unknown) => e as RpcTransportError);
    expect(gone).toBeInstanceOf(RpcTransportError);
    expect([gone.timedOut, gone.status]).toEqual([false, undefined]);
    expect(counted).toContain('ats_rpc_failures_total{"reason":"network"}');
    // No error text names the URL.
    expect(`${slow.message} ${gone.message}`).not.toContain("127.0.0.1");
  });
});
