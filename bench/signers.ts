/**
 * Delegated attestation per signer backend (decisions §27, issue 44 item 8): one devnet, one service per backend on
 * it (its own delegate key: a raw env: key, a keystore, Anvil's own account through jsonrpc:, a SoftHSM2 key through
 * pkcs11:, a loopback KMS key through awskms:), N sequential requests each; p50 latency and this process's CPU per
 * request, printed as ratios to the raw-key run measured in the same run. Then a batch of B requests at once per
 * backend, and the signatures it took (one per batch transaction).
 *
 * The KMS endpoint runs in this process (its request handling counts in the awskms row's CPU); SoftHSM2 runs in the
 * pkcs11 signer's worker thread (counted too); Anvil, the jsonrpc: signer, runs in its own process (not counted).
 *
 *   bun run bench/signers.ts [N] [B]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keystore } from "ox";
import { getAddress, type Hex, keccak256 } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { startStack } from "../e2e/harness.ts";
import { startKmsServer, TEST_KMS_CREDENTIALS, TEST_KMS_REGION } from "../e2e/support/kms_server.ts";
import { signedReviewBody } from "../e2e/support/review_signer.ts";
import { createSoftHsm, softHsmAvailable, useSoftHsmInThisProcess } from "../e2e/support/softhsm.ts";

const N = Number(process.argv[2] ?? 40);
const B = Number(process.argv[3] ?? 8);

Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: TEST_KMS_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: TEST_KMS_CREDENTIALS.secretAccessKey,
  AWS_REGION: TEST_KMS_REGION,
  AWS_EC2_METADATA_DISABLED: "true",
  AWS_CONFIG_FILE: "/nonexistent/aws-config",
  AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/aws-credentials",
});
const addressOf = (publicKey: Uint8Array) => getAddress(`0x${keccak256(publicKey.subarray(1)).slice(-40)}`);

const stack = await startStack();
const rpc = async (method: string, params: unknown[]) => {
  const res = await fetch(stack.devnet.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await res.json()) as { result: unknown }).result;
};
const fund = (address: string) => rpc("anvil_setBalance", [address, "0x3635c9adc5dea00000"]);

// Each backend's delegate key.
const backends: { name: string; env: Record<string, string> }[] = [];
const rawKey = ANVIL_DEV_KEYS[6]!;
backends.push({ name: "env (raw key)", env: { DELEGATE_SIGNER: "env:BENCH_RAW_KEY", BENCH_RAW_KEY: rawKey } });
const keystoreDir = mkdtempSync(join(tmpdir(), "ats-bench-keystore-"));
{
  const key = generatePrivateKey();
  const [derived, options] = Keystore.scrypt({ password: "bench", n: 1 << 14, r: 8, p: 1 });
  writeFileSync(join(keystoreDir, "key.json"), JSON.stringify(Keystore.encrypt(key, derived, options)));
  writeFileSync(join(keystoreDir, "pw"), "bench");
  await fund(privateKeyToAccount(key).address);
  backends.push({ name: "keystore", env: { DELEGATE_SIGNER: `keystore:${join(keystoreDir, "key.json")}?password-file=${join(keystoreDir, "pw")}` } });
}
backends.push({ name: "jsonrpc (Anvil)", env: { DELEGATE_SIGNER: `jsonrpc:${stack.devnet.rpcUrl}#${privateKeyToAccount(ANVIL_DEV_KEYS[7]!).address}` } });
let hsm: ReturnType<typeof createSoftHsm> | undefined;
if (softHsmAvailable()) {
  hsm = createSoftHsm();
  await useSoftHsmInThisProcess(hsm);
  hsm.createToken("bench", "1234");
  const address = addressOf(hsm.generateKey("bench", "1234", "delegate", "secp256k1", "01"));
  await fund(address);
  backends.push({ name: "pkcs11 (SoftHSM2)", env: { DELEGATE_SIGNER: hsm.uri("bench", "delegate", "1234") } });
}
const kms = startKmsServer();
{
  const key = kms.createKey("ECC_SECG_P256K1");
  await fund(addressOf(key.publicKey));
  backends.push({ name: "awskms (loopback)", env: { DELEGATE_SIGNER: `awskms://${kms.hostPort}/${key.id}` } });
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

type Row = { name: string; p50: number; cpu: number; batchSignatures: number; batchMs: number };
const rows: Row[] = [];
for (const backend of backends) {
  const service = await stack.restartService(backend.env);
  const post = async (path: string, payload: string) => {
    const res = await fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: payload });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${backend.name}: ${res.status} ${text}`);
    return text;
  };
  const bodies = await Promise.all(Array.from({ length: N + 3 }, async () => JSON.stringify(await signedReviewBody(stack.devnet, generatePrivateKey()))));
  for (const body of bodies.splice(0, 3)) await post("/v1/delegated-attest", body); // warm-up: nonce, fees, sessions
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (const body of bodies) {
    const t = performance.now();
    await post("/v1/delegated-attest", body);
    times.push(performance.now() - t);
  }
  const used = process.cpuUsage(cpu);
  // A batch of B requests: one multiAttestByDelegation, so one signature.
  const batch = await Promise.all(Array.from({ length: B }, async () => await signedReviewBody(stack.devnet, generatePrivateKey())));
  const t = performance.now();
  const answer = JSON.parse(await post("/v1/delegated-attest/batch", JSON.stringify({ requests: batch }))) as { txHash?: string; results?: { txHash?: string }[] };
  const batchMs = performance.now() - t;
  // One transaction for the whole batch: one signature.
  const hashes = new Set([answer.txHash, ...(answer.results ?? []).map((r) => r.txHash)].filter((h) => typeof h === "string"));
  rows.push({ name: backend.name, p50: pct(times, 50), cpu: (used.user + used.system) / 1000 / N, batchSignatures: hashes.size, batchMs });
  await service.stop();
}

const base = rows[0]!;
console.log(`delegated attestation per signer backend: ${N} sequential requests each, a batch of ${B}; ratios to the raw-key run`);
console.log("backend              p50 ms  (× raw)   CPU ms/req  (× raw)   batch: transactions signed  ms");
for (const r of rows) {
  console.log(
    `${r.name.padEnd(20)} ${r.p50.toFixed(2).padStart(6)}  (${(r.p50 / base.p50).toFixed(2)}×)   ${r.cpu.toFixed(2).padStart(9)}  (${(r.cpu / base.cpu).toFixed(2)}×)   ${String(r.batchSignatures).padStart(22)}  ${r.batchMs.toFixed(0)}`,
  );
}
await kms.stop();
await stack.stop();
hsm?.remove();
rmSync(keystoreDir, { recursive: true, force: true });
process.exit(0);
