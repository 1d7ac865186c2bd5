/**
 * Loopback ports for servers that must be named before they start (PUBLIC_BASE_URL, the issuer, PostgreSQL's -p).
 *
 * A port chosen by binding port 0 and closing comes from the kernel's ephemeral range, the range every other port-0
 * bind on the machine draws from: with test files in parallel (`bun test --parallel`), another file's Anvil, server
 * or browser could take it before its server binds it. These ports are taken below that range instead, where no
 * port-0 bind lands, starting at a point spread by the process id so that two test processes do not walk the same
 * ports; each is checked free by binding it before it is handed out.
 */
import { readFileSync } from "node:fs";

const LOWEST = 10_000;

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST + 1_000 ? low : 32_768;
  } catch {
    return 32_768; // Linux's default range starts here; other systems pick from 49152 up.
  }
}

const top = ephemeralLow();
const span = top - LOWEST;
let next = (process.pid * 7_919) % span;

function isFree(port: number): boolean {
  try {
    Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response() }).stop(true);
    return true;
  } catch {
    return false;
  }
}

/** A loopback port free now and outside the ephemeral range, so that a setting can name it before its server starts. */
export function freePort(): number {
  for (let tried = 0; tried < span; tried++) {
    const port = LOWEST + (next++ % span);
    if (isFree(port)) return port;
  }
  throw new Error(`no free loopback port between ${LOWEST} and ${top}`);
}
