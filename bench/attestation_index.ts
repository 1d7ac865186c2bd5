/**
 * Attestation-index benchmark on the devnet, behind a JSON-RPC proxy that refuses log ranges wider than a
 * provider window (20 blocks: Anvil mines empty blocks slowly, so the window is small and the chain 100 of
 * them long). Prints, for an artifact with 8 candidates:
 *
 * - JSON-RPC calls and p50 latency per artifact-trust request, cold (the first after a start: the schema strings)
 *   and warm, on a short chain and on a chain 100 windows long; since issue 34 requests answer from the index alone
 *   (no per-request scan remains to compare with), so warm requests make no JSON-RPC call; latencies also as a ratio
 *   to the short chain's, measured in the same run;
 * - the backfill rate (blocks/s and logs/s) of a fresh index on a chain holding 10,000 attestations.
 *
 *   bun run bench/attestation_index.ts [requests per case, default 30]
 */
import { join } from "node:path";
import { createTestClient, type Hex, http, sha256, stringToBytes } from "viem";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { startStack } from "../e2e/harness.ts";
import { writeAnchorsWithIssuers } from "../e2e/support/devnet_fixtures.ts";
import { easWriter } from "../e2e/support/eas_writer.ts";
import { type RpcCall, inFrontOf, startRpcProxy } from "../e2e/support/rpc_proxy.ts";
import type { Service } from "../app/service.ts";

const REQUESTS = Number(process.argv[2] ?? 30);
const WINDOW = 20n;
const LONG = 2_000;
const BULK = 10_000;

const proxy = startRpcProxy("");
const width = (call: RpcCall) => {
  const f = call.params[0] as { fromBlock: string; toBlock: string };
  return BigInt(f.toBlock) - BigInt(f.fromBlock) + 1n;
};
proxy.onCall = (call) =>
  call.method === "eth_getLogs" && width(call) > WINDOW ? { code: -32005, message: "query exceeds max block range 20" } : undefined;
const stack = await startStack({
  rpcUrlFor: inFrontOf(proxy),
});
const { devnet } = stack;
const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl, { timeout: 120_000 }) });
const writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress });
const auditor = devnet.keys.users[0] as Hex;
const schema = findSchemaByName("security-assessment")!;
const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("bench index artifact")));
const recipient = (didToAddress(ARTIFACT) as { value: Hex }).value;
const assessment = (version: string) =>
  (encodeSchemaData(schema.schema, {
    subject: ARTIFACT, organization: "Bench", version, versionHW: "", payload: "{}", payloadVersion: "1", payloadSpecURI: "",
    payloadSpecDigest: "", issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n,
  }) as { value: Hex }).value;

const anchorsPath = writeAnchorsWithIssuers(devnet.trustAnchorsPath, join(stack.dir, "bench-index-anchors.json"), [
  { key: auditor, label: "Bench", schemas: [schema.name] },
]);

let databases = 0;
async function service(): Promise<Service> {
  return await stack.restartService({
    TRUST_ANCHORS_PATH: anchorsPath,
    DATABASE_PATH: join(stack.dir, `bench-${++databases}.sqlite`),
    INDEX_CONFIRMATIONS: "0",
    INDEX_POLL_MS: "600000",
    INDEX_LEASE_SECONDS: "1200",
    INDEX_STEP_BLOCKS: "5000",
    LOG_LEVEL: "error",
  });
}
async function caughtUp(s: Service) {
  if (!(await s.index.catchUp())) throw new Error("the index did not catch up");
}
const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

type Figures = { coldCalls: number; coldMs: number; warmCalls: number; warmMs: number };
async function measure(s: Service): Promise<Figures> {
  const url = `${s.url}/v1/artifact-trust?artifactDid=${ARTIFACT}`;
  proxy.calls.length = 0;
  let t = performance.now();
  const cold = await fetch(url);
  await cold.arrayBuffer();
  const coldMs = performance.now() - t;
  const coldCalls = proxy.calls.length;
  if (cold.status !== 200) throw new Error(`artifact trust answered ${cold.status}`);
  const times: number[] = [];
  proxy.calls.length = 0;
  for (let i = 0; i < REQUESTS; i++) {
    t = performance.now();
    await (await fetch(url)).arrayBuffer();
    times.push(performance.now() - t);
  }
  return { coldCalls, coldMs, warmCalls: proxy.calls.length / REQUESTS, warmMs: p50(times) };
}

const rows: [string, Figures][] = [];
try {
  for (let i = 0; i < 8; i++) await writer.attest(auditor, devnet.schemaUids[schema.name]!, { recipient, data: assessment(`v${i}`), revocable: schema.revocable });
  const shortIndexed = await service();
  await caughtUp(shortIndexed);
  rows.push(["short chain, index", await measure(shortIndexed)]);

  for (let mined = 0; mined < LONG; mined += 250) await anvil.mine({ blocks: 250 });
  const longIndexed = await service();
  await caughtUp(longIndexed);
  rows.push([`chain ${LONG / Number(WINDOW)} windows long, index`, await measure(longIndexed)]);

  const base = rows[0]![1];
  console.log(`attestation index bench: ${REQUESTS} warm requests per case, provider window ${WINDOW} blocks, 8 candidates`);
  console.log("case | cold calls | cold ms | warm calls/req | warm p50 ms | warm p50 ratio (to short chain, index)");
  for (const [name, f] of rows) {
    console.log([
      name.padEnd(30),
      String(f.coldCalls).padStart(10),
      f.coldMs.toFixed(1).padStart(7),
      f.warmCalls.toFixed(1).padStart(14),
      f.warmMs.toFixed(1).padStart(11),
      (f.warmMs / base.warmMs).toFixed(2).padStart(14),
    ].join(" | "));
  }

  // Backfill: 10,000 attestations (10 per transaction: the payload is large), then a fresh index, no provider window.
  proxy.onCall = undefined;
  const data = assessment("bulk");
  for (let i = 0; i < BULK; i += 10) {
    await writer.multiAttest(auditor, devnet.schemaUids[schema.name]!, Array.from({ length: 10 }, () => ({ recipient, data, revocable: schema.revocable })));
  }
  const head = Number(await writer.client.getBlockNumber());
  const started = performance.now();
  const backfill = await service();
  await caughtUp(backfill);
  const seconds = (performance.now() - started) / 1000;
  const logs = BULK + 8;
  console.log(
    `backfill of ${head} blocks holding ${logs} attestations: ${seconds.toFixed(2)} s (start-up included), ` +
      `${Math.round(head / seconds)} blocks/s, ${Math.round(logs / seconds)} logs/s`,
  );
} finally {
  await stack.stop();
  await proxy.stop();
}
