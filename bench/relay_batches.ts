/**
 * Batches of delegated attestations (issue 36, decisions §23) against single sends, in one run on the embedded devnet
 * through the real service:
 *
 * 1. gas per attestation: the receipt's `gasUsed` of one single send (`attestByDelegation`) and of batches of 1, 10 and
 *    50 (`multiAttestByDelegation`), divided by the attestations each landed;
 * 2. attestations per second one delegate wallet lands: M user reviews (distinct attesters, all signed before the
 *    clock starts) sent as M single requests, all at once, against the same M sent as batches of 50, all at once;
 *    each until every answer is in (mined, as the routes answer once the receipt is read).
 *
 *   bun run bench/relay_batches.ts [M]     (default 200)
 */
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack } from "../e2e/harness.ts";

const M = Number(process.argv[2] ?? 200);
const stack = await startStack({
  env: {
    PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "100000",
    PUBLIC_RELAY_IP_RATE_PER_MINUTE: "100000",
    PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "100000000000",
  },
});
const chain = createPublicClient({ transport: http(stack.devnet.rpcUrl) });
const def = findSchemaByName("user-review")!;

/** A review by a new attester at nonce 0 (or by `key` at `nonce`). */
async function review(i: number, key: Hex = generatePrivateKey(), nonce = 0n) {
  const account = privateKeyToAccount(key);
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: `did:web:bench${i}.example`, version: "1", ratingValue: 4, reviewBody: "a review of ordinary length", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}
const reviews = (count: number, from: number) => Promise.all(Array.from({ length: count }, (_, i) => review(from + i)));

async function post<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`${stack.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const answer = await response.json() as T;
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}
type Single = { txHash: Hex; uid: Hex };
type Batch = { txHash: Hex; results: { uid?: Hex; code?: string }[] };
const gasOf = async (txHash: Hex) => (await chain.getTransactionReceipt({ hash: txHash })).gasUsed;

let next = 0;
// Warm up: the first write of a process pays for code paths and storage slots the rest do not.
await post<Single>("/v1/delegated-attest", await review(next++));
await post<Batch>("/v1/delegated-attest/batch", { requests: await reviews(2, (next += 2) - 2) });

// 1. Gas per attestation.
const gas: { label: string; perAttestation: bigint; total: bigint }[] = [];
const single = await post<Single>("/v1/delegated-attest", await review(next++));
const singleGas = await gasOf(single.txHash);
gas.push({ label: "single send (attestByDelegation)", perAttestation: singleGas, total: singleGas });
for (const size of [1, 10, 50]) {
  const answer = await post<Batch>("/v1/delegated-attest/batch", { requests: await reviews(size, (next += size) - size) });
  const landed = answer.results.filter((r) => r.uid !== undefined).length;
  if (landed !== size) throw new Error(`batch of ${size}: ${landed} landed`);
  const total = await gasOf(answer.txHash);
  gas.push({ label: `batch of ${size} (multiAttestByDelegation)`, perAttestation: total / BigInt(size), total });
}
// A batch of 50 by 10 attesters, 5 consecutive nonces each (requests of one attester share a request of the call).
const keys = Array.from({ length: 10 }, () => generatePrivateKey());
const grouped = await Promise.all(Array.from({ length: 50 }, (_, i) => review(next + i, keys[Math.floor(i / 5)]!, BigInt(i % 5))));
next += 50;
const groupedAnswer = await post<Batch>("/v1/delegated-attest/batch", { requests: grouped });
const groupedGas = await gasOf(groupedAnswer.txHash);
gas.push({ label: "batch of 50, 10 attesters × 5 nonces", perAttestation: groupedGas / 50n, total: groupedGas });

// 2. Attestations per second landed by one delegate wallet.
const singles = await reviews(M, (next += M) - M);
const batched = await reviews(M, (next += M) - M);
let t = performance.now();
await Promise.all(singles.map((body) => post<Single>("/v1/delegated-attest", body)));
const singleSeconds = (performance.now() - t) / 1000;
t = performance.now();
const chunks = Array.from({ length: Math.ceil(M / 50) }, (_, i) => batched.slice(i * 50, i * 50 + 50));
const answers = await Promise.all(chunks.map((requests) => post<Batch>("/v1/delegated-attest/batch", { requests })));
const batchSeconds = (performance.now() - t) / 1000;
const landed = answers.flatMap((a) => a.results).filter((r) => r.uid !== undefined).length;
if (landed !== M) throw new Error(`batches: ${landed} of ${M} landed`);

console.log("relay batches (issue 36), embedded devnet, one delegate wallet, same run");
console.log("gas per attestation (receipt gasUsed / attestations):");
for (const row of gas) {
  console.log(`  ${row.label.padEnd(40)} ${String(row.perAttestation).padStart(8)} gas  (tx ${row.total}; ${(Number(row.perAttestation) / Number(singleGas) * 100).toFixed(0)}% of a single send)`);
}
console.log(`attestations per second, ${M} reviews of ${M} attesters, all requests at once:`);
console.log(`  single sends:      ${(M / singleSeconds).toFixed(1)} /s  (${singleSeconds.toFixed(2)} s, ${M} transactions)`);
console.log(`  batches of 50:     ${(M / batchSeconds).toFixed(1)} /s  (${batchSeconds.toFixed(2)} s, ${chunks.length} transactions)`);
console.log(`  ratio: ${(singleSeconds / batchSeconds).toFixed(1)}×`);
await stack.stop();
process.exit(0);
