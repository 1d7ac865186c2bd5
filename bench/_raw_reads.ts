// Child process of bench/reads.ts: the raw floor, a bare `Bun.serve` on 127.0.0.1 that answers each path with the
// exact bytes the service answered for it once (read from a JSON file of path → body text), precomputed. Prints
// {"port":port} once it listens.
//
//   bun bench/_raw_reads.ts <bodies.json>
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (file === undefined) throw new Error("usage: bun bench/_raw_reads.ts <bodies.json>");
const encoder = new TextEncoder();
const bodies = new Map(
  Object.entries(JSON.parse(readFileSync(file, "utf8")) as Record<string, string>).map(([path, text]) => [path, encoder.encode(text)]),
);
const headers = { "content-type": "application/json; charset=utf-8", "access-control-allow-origin": "*" };

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(request) {
    const body = bodies.get(new URL(request.url).pathname);
    return body === undefined ? new Response("{}", { status: 404, headers }) : new Response(body, { headers });
  },
});
console.log(JSON.stringify({ port: server.port }));
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
