import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { healthcheckUrl, runHealthcheck } from "./healthcheck.ts";

let status = 200;
const asked: string[] = [];
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(request) {
    asked.push(new URL(request.url).pathname);
    return new Response(status === 200 ? "{}" : '{"error":"not ready","code":"NOT_READY"}', { status });
  },
});
afterAll(() => server.stop(true));

test("the URL is /readyz on loopback at PORT, 8080 by default; a bad PORT or URL is refused", () => {
  expect(healthcheckUrl({})).toBe("http://127.0.0.1:8080/readyz");
  expect(healthcheckUrl({ PORT: "0" })).toBe("http://127.0.0.1:8080/readyz");
  expect(healthcheckUrl({ PORT: "9000" })).toBe("http://127.0.0.1:9000/readyz");
  expect(healthcheckUrl({ PORT: "http" })).toBeUndefined();
  expect(healthcheckUrl({ PORT: "70000" })).toBeUndefined();
  expect(healthcheckUrl({}, "http://127.0.0.1:8545/")).toBe("http://127.0.0.1:8545/");
  expect(healthcheckUrl({}, "file:///etc/passwd")).toBeUndefined();
});

test("exit 0 when /readyz answers 200, 1 when it answers 503, 1 when nothing listens", async () => {
  const lines: string[] = [];
  const report = (line: string) => lines.push(line);
  const env = { PORT: String(server.port) };
  status = 200;
  expect(await runHealthcheck({ env, report })).toBe(0);
  status = 503;
  expect(await runHealthcheck({ env, report })).toBe(1);
  expect(lines.at(-1)).toBe(`healthcheck: http://127.0.0.1:${server.port}/readyz answered 503`);
  expect(asked).toEqual(["/readyz", "/readyz"]);
  // A port nothing listens on: the stopped server's.
  const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const closedPort = closed.port;
  closed.stop(true);
  expect(await runHealthcheck({ env: { PORT: String(closedPort) }, report })).toBe(1);
  expect(lines.at(-1)).toStartWith(`healthcheck: http://127.0.0.1:${closedPort}/readyz did not answer`);
  expect(await runHealthcheck({ env: { PORT: "nope" }, report })).toBe(1);
});

test("`main.ts healthcheck` exits with the check's code and starts no service", async () => {
  const run = async (port: number, proxied: Record<string, string> = {}) => {
    const proc = Bun.spawn([process.execPath, "run", join(import.meta.dir, "..", "main.ts"), "healthcheck"], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PORT: String(port), ...proxied },
      stdout: "pipe",
      stderr: "pipe",
    });
    const code = await proc.exited;
    return { code, stdout: await new Response(proc.stdout).text() };
  };
  status = 200;
  const ready = await run(server.port!);
  expect(ready.code).toBe(0);
  expect(ready.stdout).not.toContain("listening");
  // A proxy for the service's outbound calls (nothing listens on it) is not asked: the check was 1 for a ready instance.
  const port9 = { HTTP_PROXY: "http://127.0.0.1:9", http_proxy: "http://127.0.0.1:9" };
  expect((await run(server.port!, port9)).code).toBe(0);
  status = 503;
  expect((await run(server.port!)).code).toBe(1);
}, 30_000);
