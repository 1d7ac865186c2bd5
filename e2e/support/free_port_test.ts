import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { freePort } from "./free_port.ts";

test("freePort hands out distinct loopback ports below the kernel's ephemeral range, free to bind", () => {
  const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  const ports = [freePort(), freePort(), freePort()];
  expect(new Set(ports).size).toBe(3);
  for (const port of ports) {
    expect({ port, belowEphemeral: port >= 10_000 && port < low }).toEqual({ port, belowEphemeral: true });
    const server = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response("ok") });
    expect(server.port).toBe(port);
    server.stop(true);
  }
});

test("a port in use is passed over", () => {
  const first = freePort();
  // The port the next call would try first is held by a server: it is checked and passed over.
  const held = Bun.serve({ port: first + 1, hostname: "127.0.0.1", fetch: () => new Response("") });
  try {
    const next = freePort();
    expect(next).not.toBe(first + 1);
  } finally {
    held.stop(true);
  }
});
