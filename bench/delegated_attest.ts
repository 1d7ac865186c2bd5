/**
 * Delegated-attest benchmark on the embedded devnet: for N sequential and N concurrent requests,
 * JSON-RPC calls and round trips per request, server time not spent waiting on RPC (p50/p99), process CPU per
 * request, and end-to-end p50/p95. Sequentially, "not waiting on RPC" is the request's time minus the time any
 * RPC call was in flight. Concurrently, each RPC call is charged to the request it was made for (the service's
 * request context, keyed by X-Request-Id), so it is the request's time minus the time its own calls were in
 * flight: that includes queueing behind other requests (the event loop, the delegate wallet's nonce order).
 * Absolute times on a noisy 2-core machine mean little, so every latency is also printed as a ratio to a
 * baseline measured in the same run: one raw `eth_call` to the same Anvil.
 *
 *   bun run bench/delegated_attest.ts [N]
 */
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack } from "../e2e/harness.ts";
import { currentRequestContext } from "../http/request_context.ts";

const N = Number(process.argv[2] ?? 100);

// Time during which at least one RPC fetch of the service is in flight: overall, and per request id.
type Busy = { ms: number; inFlight: number; since: number };
const overall: Busy = { ms: 0, inFlight: 0, since: 0 };
const byRequest = new Map<string, Busy>();
const enter = (b: Busy) => {
  if (b.inFlight++ === 0) b.since = performance.now();
};
const leave = (b: Busy) => {
  if (--b.inFlight === 0) b.ms += performance.now() - b.since;
};
const stack = await startStack({
  wrapRpcFetch: (inner) =>
    (async (input: RequestInfo | URL, init?: RequestInit) => {
      const id = currentRequestContext()?.requestId;
      const own = id === undefined ? undefined : byRequest.get(id);
      enter(overall);
      if (own) enter(own);
      try {
        return await inner(input, init);
      } finally {
        leave(overall);
        if (own) leave(own);
      }
    }) as typeof fetch,
});

const client = createPublicClient({ transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
const def = findSchemaByName("user-review")!;

async function body(): Promise<string> {
  const account = privateKeyToAccount(generatePrivateKey());
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: "did:web:bench.example", version: "1", ratingValue: 4, reviewBody: "ok", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce: 0n,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  const signature = await account.signTypedData(signableTypedData(prepared));
  return JSON.stringify({ prepared, signature, attester: account.address });
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function baseline(samples: number): Promise<number> {
  const times: number[] = [];
  const attester = privateKeyToAccount(generatePrivateKey()).address;
  for (let i = 0; i < samples; i++) {
    const t = performance.now();
    await client.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [attester] });
    times.push(performance.now() - t);
  }
  return pct(times, 50);
}

let nextId = 0;
async function post(payload: string) {
  const id = `bench-${nextId++}`;
  const own: Busy = { ms: 0, inFlight: 0, since: 0 };
  byRequest.set(id, own);
  const t = performance.now();
  const rpcBefore = overall.ms;
  const response = await fetch(`${stack.baseUrl}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": id },
    body: payload,
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`status ${response.status}`);
  const total = performance.now() - t;
  byRequest.delete(id);
  return { total, rpc: overall.ms - rpcBefore, ownRpc: own.ms };
}

const payloads = await Promise.all(Array.from({ length: N * 2 + 5 }, () => body()));
for (const p of payloads.splice(0, 5)) await post(p); // warm-up
const base = await baseline(50);

// CPU time of this process (the service, plus the client's side of each HTTP exchange; Anvil runs in its own
// process) per request, in ms: the server overhead that still means something when requests overlap.
const cpuMsPerRequest = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000 / N;
};

stack.rpc.reset();
const seq: { total: number; rpc: number; ownRpc: number }[] = [];
let cpu = process.cpuUsage();
for (const p of payloads.splice(0, N)) seq.push(await post(p));
const seqCpu = cpuMsPerRequest(cpu);
const seqCalls = stack.rpc.methods().length / N;
const seqTrips = stack.rpc.roundTrips() / N;

stack.rpc.reset();
const t0 = performance.now();
cpu = process.cpuUsage();
const conc = await Promise.all(payloads.splice(0, N).map((p) => post(p)));
const concCpu = cpuMsPerRequest(cpu);
const concWall = performance.now() - t0;
const concCalls = stack.rpc.methods().length / N;

const overhead = seq.map((r) => r.total - r.rpc);
const fmt = (ms: number) => `${ms.toFixed(2)} ms (${(ms / base).toFixed(1)}× baseline)`;
console.log(`baseline: one eth_call round trip to Anvil, p50 ${base.toFixed(2)} ms`);
console.log(`sequential, N=${N}`);
console.log(`  JSON-RPC calls per request: ${seqCalls.toFixed(2)}, HTTP round trips per request: ${seqTrips.toFixed(2)}`);
console.log(`  server time not waiting on RPC: p50 ${fmt(pct(overhead, 50))}, p99 ${fmt(pct(overhead, 99))}`);
console.log(`  end to end: p50 ${fmt(pct(seq.map((r) => r.total), 50))}, p95 ${fmt(pct(seq.map((r) => r.total), 95))}`);
console.log(`  process CPU per request (service + client HTTP): ${fmt(seqCpu)}`);
console.log(`concurrent, N=${N} at once`);
console.log(`  JSON-RPC calls per request: ${concCalls.toFixed(2)}`);
const concOverhead = conc.map((r) => r.total - r.ownRpc);
console.log(`  server time not waiting on its own RPC calls: p50 ${fmt(pct(concOverhead, 50))}, p99 ${fmt(pct(concOverhead, 99))}`);
console.log(`  process CPU per request (service + client HTTP): ${fmt(concCpu)}`);
console.log(`  end to end: p50 ${fmt(pct(conc.map((r) => r.total), 50))}, p95 ${fmt(pct(conc.map((r) => r.total), 95))}`);
console.log(`  wall time for all: ${concWall.toFixed(0)} ms, ${(N / (concWall / 1000)).toFixed(0)} attestations/s`);
await stack.stop();
process.exit(0);
