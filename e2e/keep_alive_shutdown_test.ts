/**
 * Kept-alive clients and SIGTERM (review: 16 keep-alive loops POSTing `/v1/delegated-attest` each got a bare
 * `ECONNRESET` when the instance stopped, with or without `SHUTDOWN_DELAY_MS`: no answer carried `Connection: close`,
 * so every client kept its connection, and the stop closed it as the next request was on its way). Here the service
 * (`bun main.ts` on its embedded devnet) serves 16 loops over kept-alive connections, each request recorded as sent on
 * a reused connection or a new one (e2e/support/keep_alive_client.ts), and the outcomes are counted; nothing depends on
 * speed (the delay is long and ended by a second signal; every wait is on a condition).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generatePrivateKey } from "viem/accounts";
import { signedReviewBody } from "./support/review_signer.ts";
import { waitFor } from "./support/wait_for.ts";
import { type KeepAliveLoops, keepAliveLoops, type Outcome } from "./support/keep_alive_client.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-keep-alive-"));
const running: ServiceProcess[] = [];
const loops: KeepAliveLoops[] = [];
afterAll(async () => {
  for (const each of loops) each.stop();
  for (const service of running) {
    if (service.proc.exitCode === null && service.proc.signalCode === null) service.proc.kill("SIGKILL");
    await service.proc.exited;
  }
  await Promise.all(loops.map((each) => each.ended));
  rmSync(dir, { recursive: true, force: true });
});

const env = { PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" };
const CLIENTS = 16;

/** Starts the service and 16 loops POSTing one signed review (a write: 200 once, then 409 DUPLICATE or a limit's 429). */
async function serviceUnderLoad(settings: Record<string, string>) {
  const service = await startServiceProcess({ ...env, DATA_DIR: mkdtempSync(join(dir, "instance-")), ...settings }, 60_000);
  running.push(service);
  const anchors = await (await fetch(`${service.url}/v1/trust-anchors`)).json() as { chains: Record<string, { easContract: string; schemas: Record<string, string> }> };
  const [caip2, chain] = Object.entries(anchors.chains)[0]!;
  const review = await signedReviewBody({ chainId: Number(caip2.split(":")[1]), easAddress: chain.easContract, schemaUids: chain.schemas }, generatePrivateKey());
  const load = keepAliveLoops(service.url, CLIENTS, { method: "POST", path: "/v1/delegated-attest", body: JSON.stringify(review) });
  loops.push(load);
  // Every client reuses its connection before the stop.
  await waitFor("every client to reuse its connection", () => load.outcomes.every((mine) => mine.some((o) => o.answered && o.reused)) || undefined);
  return { service, load };
}

/** The outcomes counted: answers by status and code, failures by error, each split by reused or new connection. */
function counted(outcomes: readonly Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = `${o.answered ? `${o.status}${o.code ? ` ${o.code}` : ""}` : o.error} on a ${o.reused ? "reused" : "new"} connection`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

const failedOnReused = (outcomes: readonly Outcome[]) => outcomes.filter((o) => !o.answered && o.reused);

test("SIGTERM with SHUTDOWN_DELAY_MS: every answer from the signal on says Connection: close; no request on a reused connection is reset", async () => {
  const { service, load } = await serviceUnderLoad({ SHUTDOWN_DELAY_MS: "60000", SHUTDOWN_GRACE_MS: "90000" });
  service.proc.kill("SIGTERM");
  await waitFor("/readyz to answer 503", async () => (await fetch(`${service.url}/readyz`, { headers: { connection: "close" } })).status === 503 || undefined);
  load.mark();
  const duringDelay = () => load.outcomes.flat().filter((o) => o.afterMark);
  // Every request sent once the instance said it was stopping is answered, and each answer closes its connection.
  await waitFor("every client to be answered during the delay", () => load.outcomes.every((mine) => mine.some((o) => o.afterMark)) || undefined);
  expect(duringDelay().filter((o) => !o.answered || !o.close)).toEqual([]);
  // So each client is served again on a new connection, still during the delay.
  await waitFor("every client to be answered on a new connection during the delay", () =>
    load.outcomes.every((mine) => mine.some((o) => o.afterMark && o.answered && !o.reused)) || undefined);
  expect(service.proc.exitCode).toBeNull();
  expect(duringDelay().filter((o) => !o.answered || !o.close)).toEqual([]);

  // A second signal ends the delay: the drain. The loops go on until nothing listens.
  service.proc.kill("SIGTERM");
  expect(await service.proc.exited).toBe(0);
  await load.ended;
  const all = load.outcomes.flat();
  console.log("SHUTDOWN_DELAY_MS=60000, second signal:", counted(all));
  // No client had a connection left to reuse when the listener stopped: none got a reset for a request it sent on one.
  expect(failedOnReused(all)).toEqual([]);
  // Each client ends refused: nothing listens.
  for (const mine of load.outcomes) expect(mine.at(-1)).toMatchObject({ answered: false, error: "ECONNREFUSED", reused: false });
  // Any other failure is a request on a new connection the stop closed before reading it (HTTP/1.1 cannot avoid it;
  // behind a balancer the delay means none comes then). Every answer after the signal closed its connection.
  for (const o of all.filter((o) => o.afterMark)) {
    if (o.answered) expect(o.close).toBe(true);
    else expect(o.reused).toBe(false);
  }
}, 180_000);

test("SIGTERM with SHUTDOWN_DELAY_MS=0: the answers under way say Connection: close and the clients then find nothing listening; exit 0", async () => {
  const { service, load } = await serviceUnderLoad({ SHUTDOWN_DELAY_MS: "0", SHUTDOWN_GRACE_MS: "20000" });
  const before = load.outcomes.map((mine) => mine.length);
  service.proc.kill("SIGTERM");
  expect(await service.proc.exited).toBe(0);
  await load.ended;
  const after = load.outcomes.map((mine, i) => mine.slice(before[i]));
  console.log("SHUTDOWN_DELAY_MS=0:", counted(after.flat()));
  for (const mine of after) {
    // Each client ends refused: nothing listens.
    expect(mine.at(-1)).toMatchObject({ answered: false, error: "ECONNREFUSED", reused: false });
    // A client is reset on a reused connection at most once: only a connection with no request under way when the
    // listener stopped can be (its client sent its next request just as Bun closed it; docs/deployment.md).
    expect(failedOnReused(mine).length).toBeLessThanOrEqual(1);
  }
  // Before, every client was: the answers under way said nothing of the close that followed them, so each client sent
  // its next request on a connection Bun closed once the answer was written. Now those answers say close.
  expect(failedOnReused(after.flat()).length).toBeLessThan(CLIENTS);
}, 180_000);
