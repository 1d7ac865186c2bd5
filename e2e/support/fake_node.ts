/**
 * A JSON-RPC node on loopback that answers only what a start-up test needs: `answer(method)` gives a method's result,
 * or undefined for "method not found" (-32601). Single and batched requests; every method asked is kept in `asked`.
 */
export function fakeJsonRpcNode(answer: (method: string) => unknown) {
  const asked: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.json() as { id: number; method: string } | { id: number; method: string }[];
      const calls = Array.isArray(body) ? body : [body];
      asked.push(...calls.map((c) => c.method));
      const answers = calls.map((c) => {
        const result = answer(c.method);
        return result === undefined ? { jsonrpc: "2.0", id: c.id, error: { code: -32601, message: "not here" } } : { jsonrpc: "2.0", id: c.id, result };
      });
      return Response.json(Array.isArray(body) ? answers : answers[0]);
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, asked, stop: () => server.stop(true) };
}
