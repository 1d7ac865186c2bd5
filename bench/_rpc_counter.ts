// Child process of bench/reads.ts: a JSON-RPC proxy on 127.0.0.1 in front of one node that counts the calls it
// forwards (each call of a batch is one), for the JSON-RPC calls the service processes make per read. In a process of
// its own so that forwarding does not take the load generator's CPU. `GET /count` answers
// {"calls":n,"exchanges":n,"byMethod":{…}} (exchanges: HTTP requests, a batch being one).
// Prints {"port":port} once it listens.
//
//   bun bench/_rpc_counter.ts <upstream RPC URL>
const upstream = process.argv[2];
if (upstream === undefined) throw new Error("usage: bun bench/_rpc_counter.ts <upstream RPC URL>");

let calls = 0;
let exchanges = 0;
const byMethod = new Map<string, number>();
const count = (call: unknown) => {
  const method = typeof call === "object" && call !== null && "method" in call ? String(call.method) : "?";
  calls++;
  byMethod.set(method, (byMethod.get(method) ?? 0) + 1);
};

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    if (request.method === "GET" && new URL(request.url).pathname === "/count") {
      return Response.json({ calls, exchanges, byMethod: Object.fromEntries(byMethod) });
    }
    exchanges++;
    const body = await request.text();
    try {
      const parsed: unknown = JSON.parse(body);
      for (const call of Array.isArray(parsed) ? parsed : [parsed]) count(call);
    } catch {
      count(undefined);
    }
    try {
      const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: { "content-type": "application/json" } });
    } catch {
      return new Response("upstream unavailable", { status: 502 });
    }
  },
});
console.log(JSON.stringify({ port: server.port }));
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
