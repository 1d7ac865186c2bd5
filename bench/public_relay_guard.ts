/**
 * The public relay guard's cost per request (issue 17: under 5% of the route's server time). On the embedded
 * devnet, N sequential public delegated attestations give the route's server time (all of it, and the part not
 * waiting on RPC); after each, the guard's own work for one request (open, admit: two token buckets in the storage
 * and a read of this hour's budget, then the atomic charge of the simulated gas) is timed against the service's own
 * SQLite file, so both numbers come from the same run and the same machine. The guard's signer recovery is not counted:
 * the route does it anyway for the verdict and reuses it.
 *
 *   bun run bench/public_relay_guard.ts [N]
 */
import { join } from "node:path";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { TYPICAL_ATTEST_GAS } from "../adapters/chain/mod.ts";
import { createSharedRateLimiter, SHARED_LIMITS } from "../domain/rate_limit.ts";
import { createRelayGuard } from "../domain/delegation/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack } from "../e2e/harness.ts";
import { rpcBusyClock } from "./_rpc_busy.ts";

const N = Number(process.argv[2] ?? 100);

const rpcBusy = rpcBusyClock();
const stack = await startStack({ wrapRpcFetch: rpcBusy.wrap });

const def = findSchemaByName("user-review")!;
async function body(): Promise<{ payload: string; attester: string }> {
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
  return { payload: JSON.stringify({ prepared, signature, attester: account.address }), attester: account.address };
}

// The guard as main.ts builds it, on a second connection to the service's database (WAL: as another instance would).
const storage = openSqliteStorage(join(stack.dir, "ats.sqlite"));
const guard = createRelayGuard({
  enabled: true,
  // The buckets in the storage, as app/limits.ts builds them (issue 34: counted once for every instance).
  clientRate: createSharedRateLimiter(storage.rateCounter, systemClock, { scope: SHARED_LIMITS.publicRelayClient, capacity: 30, perMinute: 30 }),
  attesterRate: createSharedRateLimiter(storage.rateCounter, systemClock, { scope: SHARED_LIMITS.publicRelayAttester, capacity: 20, perMinute: 20 / 60 }),
  gasBudget: storage.gasBudget,
  gasPerHour: 10n ** 15n,
  typicalGas: TYPICAL_ATTEST_GAS,
  clock: systemClock,
});
async function guardOnce(i: number, attester: string): Promise<number> {
  const t = performance.now();
  if (guard.open() !== undefined) throw new Error("closed");
  if ((await guard.admit({ clientKey: `198.51.${i >> 8 & 255}.${i & 255}`, attester })) !== undefined) throw new Error("refused");
  if ((await guard.charge(250_000n)) !== undefined) throw new Error("over budget");
  return performance.now() - t;
}

async function post(payload: string) {
  const rpcBefore = rpcBusy.ms();
  const t = performance.now();
  const response = await fetch(`${stack.baseUrl}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body: payload });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`status ${response.status}`);
  const total = performance.now() - t;
  return { total, notRpc: total - (rpcBusy.ms() - rpcBefore) };
}

const bodies = await Promise.all(Array.from({ length: N + 5 }, () => body()));
for (const [i, b] of bodies.splice(0, 5).entries()) {
  await post(b.payload); // warm-up
  await guardOnce(1_000_000 + i, b.attester);
}
const route: { total: number; notRpc: number }[] = [];
const guardMs: number[] = [];
for (const [i, b] of bodies.entries()) {
  route.push(await post(b.payload));
  guardMs.push(await guardOnce(i, b.attester));
}

const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const cost = p50(guardMs);
const notRpc = p50(route.map((r) => r.notRpc));
const total = p50(route.map((r) => r.total));
console.log(`public relay guard, N=${N} sequential requests`);
console.log(`  guard per request (open + admit + charge, SQLite): p50 ${(cost * 1000).toFixed(0)} µs`);
console.log(`  route time (end to end on loopback): p50 ${total.toFixed(2)} ms, of which not waiting on RPC p50 ${notRpc.toFixed(2)} ms`);
console.log(`  guard / route time: ${(100 * cost / total).toFixed(2)}% (target < 5%)`);
console.log(`  guard / route time not waiting on RPC: ${(100 * cost / notRpc).toFixed(2)}%`);
await storage.close();
await stack.stop();
process.exit(0);
