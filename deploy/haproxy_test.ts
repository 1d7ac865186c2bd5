// The compose balancer's own answers (deploy/haproxy.cfg, decisions §28): Debian's HAProxy runs the committed file,
// only its listening addresses and servers moved to loopback, no instance behind it ready. Every answer HAProxy
// makes itself carries the service's error body, {error, code}, in JSON: it answered its HTML pages (a 503 when no
// instance was ready, the 404 in front of /metrics), which no client of the service reads.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../e2e/support/free_port.ts";
import { waitFor } from "../e2e/support/wait_for.ts";

const HAPROXY = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].find((path) => existsSync(path));
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (HAPROXY === undefined && IN_CI) throw new Error("CI=true but HAProxy is not installed (apt-get install haproxy)");
const describeHaproxy = HAPROXY === undefined ? describe.skip : describe;

let dir: string;
let proc: ReturnType<typeof Bun.spawn> | undefined;
let url: string;

beforeAll(async () => {
  if (HAPROXY === undefined) return;
  dir = mkdtempSync(join(tmpdir(), "ats-haproxy-"));
  const [front, stats, closed] = [freePort(), freePort(), freePort()];
  const committed = readFileSync(join(import.meta.dir, "haproxy.cfg"), "utf8");
  const local = committed
    .replace(/^  bind :8080$/m, `  bind 127.0.0.1:${front}`)
    .replace(/^  bind :8404$/m, `  bind 127.0.0.1:${stats}`)
    .replace(/ resolvers containers init-addr [^\n]*/, " init-addr none")
    .replace(/^  server (ats\d) \1:8080$/gm, `  server $1 127.0.0.1:${closed}`);
  expect(local.split("\n").filter((line) => !line.trimStart().startsWith("#")).join("\n")).not.toContain(":8080");
  writeFileSync(join(dir, "haproxy.cfg"), local);
  proc = Bun.spawn([HAPROXY, "-db", "-f", join(dir, "haproxy.cfg")], { stdout: "ignore", stderr: "pipe" });
  url = `http://127.0.0.1:${front}`;
  await waitFor("HAProxy to listen", () => fetch(`${url}/healthz`).then(() => true, () => undefined));
});

afterAll(async () => {
  proc?.kill();
  await proc?.exited;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describeHaproxy("the compose balancer's own answers are the service's error bodies", () => {
  test("no instance ready: 503 SERVICE_UNAVAILABLE in JSON, with Retry-After", async () => {
    for (const request of [new Request(`${url}/v1/trust-anchors`), new Request(`${url}/v1/identity-resolve`, { method: "POST", body: "{}" })]) {
      const answer = await fetch(request);
      expect(answer.status).toBe(503);
      expect(answer.headers.get("content-type")).toBe("application/json");
      expect(answer.headers.get("retry-after")).toBe("5");
      expect(await answer.json()).toEqual({ error: "No instance of the service is ready; try again shortly", code: "SERVICE_UNAVAILABLE" });
    }
  });

  test("/metrics from the public side: 404 NOT_FOUND in JSON, as the service answers an unknown path", async () => {
    const answer = await fetch(`${url}/metrics`);
    expect(answer.status).toBe(404);
    expect(answer.headers.get("content-type")).toBe("application/json");
    expect(await answer.json()).toEqual({ error: "Not found", code: "NOT_FOUND" });
  });
});
