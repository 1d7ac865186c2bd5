/**
 * The private relay against the public route (issue 17: ratio of server time not waiting on RPC, target ≤ 1.3×).
 * On the embedded devnet, one signed-in account writes user reviews through `POST
 * /api/private/relay/eas/delegated-attest` and another attester writes the same reviews through the public `POST
 * /v1/delegated-attest`, alternately, one request at a time, so that both routes meet the same machine state. The
 * service's JSON-RPC traffic is timed by a wrapped fetch; a request's time not waiting on RPC is its end-to-end
 * time on loopback minus the time at least one JSON-RPC call was in flight. The private route's extra work (session
 * lookup, plan and ownership checks, the sponsored-write reservation and its settlement) is all in that part.
 *
 *   bun run bench/private_relay.ts [N]
 */
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack } from "../e2e/harness.ts";
import { rpcBusyClock } from "./_rpc_busy.ts";
import { signInCookie } from "../e2e/support/sign_in.ts";

const N = Number(process.argv[2] ?? 60);
const APP = "https://bench.test";

const rpcBusy = rpcBusyClock();
const stack = await startStack({
  env: {
    SIWE_DOMAINS: "bench.test",
    CORS_ORIGINS: APP,
    FREE_PLAN_SCHEMAS: "*",
    FREE_PLAN_ANNUAL_WRITES: String(10 * N + 100),
    PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: String(10 * N + 100),
  },
  wrapRpcFetch: rpcBusy.wrap,
});

const def = findSchemaByName("user-review")!;
/** A review by `key` at EAS nonce `nonce` (each attester's requests go one at a time, so nonces are known). */
async function review(key: Hex, nonce: bigint, i: number): Promise<string> {
  const account = privateKeyToAccount(key);
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: `did:web:bench${i}.example`, version: "1", ratingValue: 4, reviewBody: "ok", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return JSON.stringify({ prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address });
}


async function post(path: string, payload: string, cookie?: string) {
  const rpcBefore = rpcBusy.ms();
  const t = performance.now();
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: APP, ...(cookie === undefined ? {} : { cookie }) },
    body: payload,
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${path}: status ${response.status}`);
  const total = performance.now() - t;
  return { total, notRpc: total - (rpcBusy.ms() - rpcBefore) };
}

const privateKey = generatePrivateKey();
const publicKey = generatePrivateKey();
const cookie = await signInCookie(stack.baseUrl, privateKey, { origin: APP });
const WARM = 5;
const privateBodies = await Promise.all(Array.from({ length: N + WARM }, (_, i) => review(privateKey, BigInt(i), i)));
const publicBodies = await Promise.all(Array.from({ length: N + WARM }, (_, i) => review(publicKey, BigInt(i), i)));

const samples = { private: [] as { total: number; notRpc: number }[], public: [] as { total: number; notRpc: number }[] };
for (let i = 0; i < N + WARM; i++) {
  // Alternate which goes first, so neither route always follows the other's block.
  const order = i % 2 === 0 ? ["private", "public"] as const : ["public", "private"] as const;
  for (const route of order) {
    const sample = route === "private"
      ? await post("/api/private/relay/eas/delegated-attest", privateBodies[i]!, cookie)
      : await post("/v1/delegated-attest", publicBodies[i]!);
    if (i >= WARM) samples[route].push(sample);
  }
}

const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const summary = (route: "private" | "public") => ({ total: p50(samples[route].map((s) => s.total)), notRpc: p50(samples[route].map((s) => s.notRpc)) });
const priv = summary("private");
const pub = summary("public");
console.log(`private relay vs public route, N=${N} alternating sequential writes (user-review), same run`);
console.log(`  public  /v1/delegated-attest:                    p50 ${pub.total.toFixed(2)} ms, not waiting on RPC ${pub.notRpc.toFixed(2)} ms`);
console.log(`  private /api/private/relay/eas/delegated-attest: p50 ${priv.total.toFixed(2)} ms, not waiting on RPC ${priv.notRpc.toFixed(2)} ms`);
console.log(`  ratio of server time not waiting on RPC (private / public): ${(priv.notRpc / pub.notRpc).toFixed(2)}× (target ≤ 1.3×)`);
console.log(`  ratio end to end: ${(priv.total / pub.total).toFixed(2)}×`);
await stack.stop();
process.exit(0);
