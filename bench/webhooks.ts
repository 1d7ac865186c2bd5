/**
 * Webhook delivery (issue 35, decisions §22), with the service as an operator runs it: a `bun main.ts` process on
 * an Anvil with EAS (`RPC_URL`, automining, `INDEX_POLL_MS` and `WEBHOOK_POLL_MS` at their defaults, 1000 and 500,
 * `WEBHOOK_CONFIRMATIONS=0`, SQLite), and a receiver (`Bun.serve`, answering 200 at once) in this process on loopback.
 * It prints:
 *
 * - latency from block to receiver: attestations on a watched subject written one at a time (each sent once the
 *   previous one was delivered); from the attester's receipt (the block is mined) to the receiver's arrival, p50/p99;
 * - deliveries per second one instance sustains: 30 endpoints (3 accounts × 10) watch one subject, then 100
 *   attestations land in four transactions, 3,000 deliveries; from the first arrival to the last, at the defaults
 *   (`WEBHOOK_MAX_IN_FLIGHT` 32, 4 per endpoint).
 *
 * Everything (this process, the service, Anvil) shares the machine's cores.
 *
 * The service process inherits this process's environment, so `INDEX_POLL_MS=100 bun run bench/webhooks.ts` measures
 * the pipeline behind a faster poll.
 *
 *   bun run bench/webhooks.ts [latency samples, default 20]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { startDevnet } from "../adapters/devnet/mod.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";
import { e2eArtifacts } from "../e2e/harness.ts";
import { easWriter } from "../e2e/support/eas_writer.ts";
import { startServiceProcess } from "../e2e/support/service_process.ts";
import { signInCookie } from "../e2e/support/sign_in.ts";

const samples = Number(process.argv[2] ?? 20);
const dir = mkdtempSync(join(tmpdir(), "ats-bench-webhooks-"));
const devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
const arrivals: { path: string; uid: string; atMs: number }[] = [];
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = JSON.parse(await request.text()) as { data: { uid?: string } };
    arrivals.push({ path: new URL(request.url).pathname, uid: String(body.data.uid), atMs: performance.now() });
    return new Response("ok");
  },
});
const service = await startServiceProcess({
  PORT: "0",
  HOST: "127.0.0.1",
  RPC_URL: devnet.rpcUrl,
  TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
  DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
  WITNESS_PRIVATE_KEY: devnet.keys.witness,
  DATABASE_PATH: join(dir, "ats.sqlite"),
  DATA_DIR: dir,
  INDEX_CONFIRMATIONS: "0",
  ALLOW_PRIVATE_NETWORK: "true",
  SIWE_DOMAINS: "app.test",
  SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
  LOG_LEVEL: "warn",
}, 60_000);

const linked = findSchemaByName("linked-identifier")!;
const schemaUid = computeSchemaUid(linked) as Hex;
const writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress });
const attester = devnet.keys.users[0] as Hex;
const input = (subject: string) => {
  const data = encodeSchemaData(linked.schema, { subject, linkedId: "did:web:bench.example", proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 });
  const recipient = didToAddress(subject);
  if (!data.ok || !recipient.ok) throw new Error("bad input");
  return { recipient: recipient.value as Hex, data: data.value as Hex, revocable: true };
};
async function endpoint(cookie: string, path: string, subject: string) {
  const res = await fetch(`${service.url}/api/private/webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}${path}`, events: ["attestation.created"], subjects: [subject], ownSubjects: false }),
  });
  if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${await res.text()}`);
}
async function until(done: () => boolean, deadlineMs: number) {
  const end = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(2);
  }
}
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

try {
  // Latency.
  const cookies = await Promise.all([1, 2, 3].map((i) => signInCookie(service.url, devnet.keys.users[i] as Hex)));
  await endpoint(await signInCookie(service.url, devnet.keys.users[4] as Hex), "/latency", "did:web:latency.example");
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const { uid } = await writer.attest(attester, schemaUid, input("did:web:latency.example"));
    const mined = performance.now();
    await until(() => arrivals.some((a) => a.path === "/latency" && a.uid === uid.toLowerCase()), 30_000);
    latencies.push(arrivals.find((a) => a.path === "/latency" && a.uid === uid.toLowerCase())!.atMs - mined);
  }
  console.log(`latency block → receiver over ${samples} attestations: p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms`);

  // Throughput.
  const subject = "did:web:throughput.example";
  for (const cookie of cookies) for (let i = 0; i < 10; i++) await endpoint(cookie, `/fan/${i}`, subject);
  const before = arrivals.length;
  // Four transactions of 25 (100 in one pass the block gas limit), one after the other.
  for (let i = 0; i < 4; i++) await writer.multiAttest(attester, schemaUid, Array.from({ length: 25 }, () => input(subject)));
  const expected = 100 * 30;
  await until(() => arrivals.length - before >= expected, 120_000);
  const burst = arrivals.slice(before);
  const seconds = (burst[burst.length - 1]!.atMs - burst[0]!.atMs) / 1000;
  console.log(`throughput: ${expected} deliveries (100 attestations × 30 endpoints) in ${seconds.toFixed(2)} s from the first arrival to the last: ${(expected / seconds).toFixed(0)} deliveries/s`);
} finally {
  await service.stop();
  receiver.stop(true);
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
