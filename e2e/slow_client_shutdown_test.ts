/**
 * A slow client does not hold a draining instance (issue 33 item 13): 150 connections sending
 * `POST /v1/identity-resolve` with `Content-Length: 100000` and dripping a byte every 2 s kept the process alive for
 * 247 s after SIGTERM. Here the service (`bun main.ts` on its embedded devnet, as an operator runs it) gets SIGTERM
 * while 30 such clients drip, at the edge and in the app, with a body deadline far longer than the test: it exits 0,
 * every slow client is answered 503 `SHUTTING_DOWN` and its connection closed, and a restart finds the chain and the
 * database as they were (an attestation written before the stop is a duplicate of itself) and bounds its bodies by
 * `BODY_TIMEOUT_MS` (408 `REQUEST_TIMEOUT`, the service going on). The bodies never end, so nothing here depends on
 * speed.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generatePrivateKey } from "viem/accounts";
import { postDelegatedAttest, signedReviewBody } from "./support/review_signer.ts";
import { waitFor } from "./support/wait_for.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-slow-client-"));
const running: ServiceProcess[] = [];
const sockets: Socket[] = [];
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  for (const service of running) {
    if (service.proc.exitCode === null && service.proc.signalCode === null) service.proc.kill("SIGKILL");
    await service.proc.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

const env = { DATA_DIR: dir, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", BODY_TIMEOUT_MS: "60000", SHUTDOWN_GRACE_MS: "2000" };

/**
 * Headers announcing 100,000 bytes, then a byte every 100 ms while the connection is open. `sent` resolves once the
 * headers are handed to the kernel, `closed` with what the server wrote once it closes the connection.
 */
function drip(url: string, path: string): { sent: Promise<void>; closed: Promise<string> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let received = "";
  let timer: ReturnType<typeof setInterval> | undefined;
  socket.on("data", (chunk) => (received += chunk.toString()));
  socket.on("error", () => {});
  const closed = new Promise<string>((resolve) => socket.on("close", () => {
    clearInterval(timer);
    resolve(received);
  }));
  const sent = new Promise<void>((resolve) =>
    socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"identifiers":[`, () => resolve())
  );
  timer = setInterval(() => socket.writable && socket.write(" "), 100);
  return { sent, closed };
}

test("SIGTERM with 30 clients dripping their bodies: exit 0, each answered 503 SHUTTING_DOWN and closed, nothing lost", async () => {
  const service = await startServiceProcess(env, 60_000);
  running.push(service);
  const before = await (await fetch(`${service.url}/v1/trust-anchors`)).text();
  const [caip2, chain] = Object.entries((JSON.parse(before) as { chains: Record<string, { easContract: string; schemas: Record<string, string> }> }).chains)[0]!;
  const review = await signedReviewBody({ chainId: Number(caip2.split(":")[1]), easAddress: chain.easContract, schemaUids: chain.schemas }, generatePrivateKey());
  const written = await postDelegatedAttest(service.url, review);
  expect(written.status).toBe(200);

  const paths = ["/v1/identity-resolve", "/v1/delegated-attest", "/api/private/controller-witness"];
  const slow = Array.from({ length: 30 }, (_, i) => drip(service.url, paths[i % paths.length]!));
  // Every slow request is under way (its headers read by the server) once a request sent after all of them is answered.
  await Promise.all(slow.map((client) => client.sent));
  expect((await fetch(`${service.url}/healthz`)).status).toBe(200);

  expect(await service.stop()).toBe(0);
  const answers = await Promise.all(slow.map((client) => client.closed));
  const statuses = answers.map((raw) => {
    const [head, body] = raw.split("\r\n\r\n", 2) as [string, string | undefined];
    return { status: head.split(" ")[1], closes: /\r\nconnection: close/i.test(head), code: (JSON.parse(body ?? "{}") as { code?: string }).code };
  });
  expect(statuses).toEqual(Array.from({ length: 30 }, () => ({ status: "503", closes: true, code: "SHUTTING_DOWN" })));

  // The clean stop saved the devnet and closed the database: a restart serves the same chain. Its bodies must arrive
  // within 300 ms (BODY_TIMEOUT_MS): a dripping client is 408 and cut while the service goes on.
  const again = await startServiceProcess({ ...env, BODY_TIMEOUT_MS: "300" }, 60_000);
  running.push(again);
  // The same document, but for its widget origins: the service's own origin is the new port it bound (PORT=0).
  expect(await (await fetch(`${again.url}/v1/trust-anchors`)).text()).toBe(before.replaceAll(`"${service.url}"`, `"${again.url}"`));
  // The attestation answered before the stop is still known: the same signature is 409 with its uid.
  expect(await postDelegatedAttest(again.url, review)).toMatchObject({ status: 409, body: { code: "DUPLICATE", details: written.body.uid } });
  const timedOut = await Promise.all(paths.map((path) => drip(again.url, path).closed));
  for (const raw of timedOut) {
    expect(raw).toStartWith("HTTP/1.1 408 ");
    expect(raw).toContain('"code":"REQUEST_TIMEOUT"');
  }
  expect((await fetch(`${again.url}/healthz`)).status).toBe(200);
  expect(await again.stop()).toBe(0);
}, 120_000);

test("SIGTERM with SHUTDOWN_DELAY_MS: /readyz answers 503 at once while every request is still served; a second signal drains, exit 0", async () => {
  // Behind the compose balancer, stopping at once reset the writes it still sent before its checks of /readyz had taken
  // the instance out (a bare connection reset, no answer). The delay is long here, and a second signal ends it, so
  // nothing depends on speed.
  const service = await startServiceProcess({ ...env, SHUTDOWN_DELAY_MS: "60000", SHUTDOWN_GRACE_MS: "90000" }, 60_000);
  running.push(service);
  expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  service.proc.kill("SIGTERM");
  const unready = await waitFor("/readyz to answer 503", async () => {
    const answer = await fetch(`${service.url}/readyz`);
    const body = await answer.json() as { status: string; checks: Record<string, boolean> };
    return answer.status === 503 ? body : undefined;
  });
  expect(unready).toMatchObject({ status: "not-ready", checks: { accepting: false, database: true } });
  // Still served, on a new connection: the balancer has not taken it out yet.
  const served = await fetch(`${service.url}/v1/identity-resolve`, { method: "POST", headers: { "content-type": "application/json", connection: "close" }, body: JSON.stringify({ identifiers: ["did:web:example.com"] }) });
  expect(served.status).toBe(200);
  // The index goes on too: a read from it is answered, not INDEX_STALE.
  expect((await fetch(`${service.url}/v1/attestations?schema=user-review`)).status).toBe(200);
  expect(service.proc.exitCode).toBeNull();
  service.proc.kill("SIGTERM");
  expect(await service.proc.exited).toBe(0);
}, 120_000);
