// Writes on several chains (decisions §30, issue 48 item 3): `bun main.ts` with a CHAINS_FILE of two attestation
// chains (31337, 31338) and a proof chain (31339), each behind a proxy that counts JSON-RPC calls. A write signed for
// chain B lands on chain B (read back on B's EAS) and costs chain A nothing; one on chain A costs chain B nothing; a
// write for a chain not served, or for a served chain's id with another EAS, is 400 UNSUPPORTED_CHAIN with no call on
// any chain; a batch of two chains is refused whole; the nonce is read per chain. The followers are off
// (INDEX_FOLLOW=false), so every call a proxy sees is the request's. Chain B has a delegate of its own
// (DELEGATE_SIGNER_31338), chain A the role's.
// A second instance that follows (polling once an hour) lists a write on chain B at once: B's index is told of it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { startThreeChains, threeChainsServiceEnv, type TestChain, type ThreeChains } from "./support/three_chains.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-write-chains-"));
let three: ThreeChains;
let service: ServiceProcess;

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
  service = await startServiceProcess({
    ...threeChainsServiceEnv(three, dir),
    INDEX_FOLLOW: "false",
    DELEGATE_SIGNER_31338: "env:CHAIN_B_DELEGATE_KEY",
    CHAIN_B_DELEGATE_KEY: three.keys.users[6]!,
    LOG_LEVEL: "error",
    ...TEST_RELAY_LIMITS,
  }, 60_000);
}, 180_000);

afterAll(async () => {
  if (service !== undefined) expect(await service.stop()).toBe(0);
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const total = () => three.chains.map((c) => three.calls(c.chainId));
const sends = (chainId: number) => three.calls(chainId, "eth_sendRawTransaction") + three.calls(chainId, "eth_sendRawTransactionSync");
const reader = (chain: TestChain) => createPublicClient({ cacheTime: 0, transport: http(chain.nodeUrl) });

async function nonceOn(chain: TestChain, attester: Hex): Promise<bigint> {
  return await reader(chain).readContract({ address: chain.easAddress!, abi: EAS_ABI, functionName: "getNonce", args: [attester] });
}

/** A user-review signed by `key` for `domain` (chain id and EAS), with the nonce it has on `nonceChain`. */
async function signed(key: Hex, domain: { chainId: number; easAddress: Hex }, nonceChain: TestChain, item = "write") {
  const account = privateKeyToAccount(key);
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: three.chains[0].schemaUids!["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: {
      subject: "did:web:chains.example",
      version: "1.0.0",
      ratingValue: 5,
      reviewBody: `${item}: on the chain it was signed for`,
      screenshotUrls: [],
      proofs: [],
    },
    attester: account.address,
    nonce: await nonceOn(nonceChain, account.address),
    chainId: domain.chainId,
    easAddress: domain.easAddress,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

async function get(path: string): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${service.url}${path}`);
  return { status: res.status, body: await res.json() as Record<string, any> };
}

test("the nonce per chain: chainId names a served attestation chain (decimal or CAIP-2), absent the default; others 400 UNSUPPORTED_CHAIN with no call", async () => {
  const [a, b] = three.chains;
  const attester = privateKeyToAccount(three.keys.users[0]!).address;
  const onDefault = await get(`/v1/nonce?attester=${attester}`);
  expect(onDefault.status).toBe(200);
  expect([onDefault.body.chainId, onDefault.body.easAddress.toLowerCase()]).toEqual([a.chainId, a.easAddress!.toLowerCase()]);
  // `chain` as every other public read names it, alone or with a `chainId` naming the same chain.
  for (const query of ["chainId=31338", "chainId=eip155:31338", "chain=31338", "chain=eip155:31338", "chainId=31338&chain=eip155:31338"]) {
    const before = total();
    const onB = await get(`/v1/nonce?attester=${attester}&${query}`);
    expect(onB.status).toBe(200);
    expect([onB.body.chainId, onB.body.easAddress.toLowerCase(), onB.body.nonce]).toEqual([b.chainId, b.easAddress!.toLowerCase(), String(await nonceOn(b, attester))]);
    // Read on chain B, nothing on the others.
    const spent = total().map((n, i) => n - before[i]!);
    expect([spent[0], spent[2]]).toEqual([0, 0]);
    expect(spent[1]!).toBeGreaterThan(0);
  }
  const before = total();
  for (const chainId of ["1", "31339", "eip155:8453"]) {
    const refused = await get(`/v1/nonce?attester=${attester}&chainId=${chainId}`);
    expect([refused.status, refused.body.code]).toEqual([400, "UNSUPPORTED_CHAIN"]);
  }
  // Two chains named, or one named twice: a 400 that says which, with no call. It was the attester's message, or
  // (`chain=`, which the route ignored) the default chain's nonce.
  for (const [query, message] of [
    ["chainId=31338&chain=31337", "chainId and chain name different chains; give one"],
    ["chainId=31338&chainId=31337", "chainId must be given once"],
    ["chain=31338&chain=31338", "chain must be given once"],
  ] as const) {
    const refused = await get(`/v1/nonce?attester=${attester}&${query}`);
    expect([refused.status, refused.body.code, refused.body.error]).toEqual([400, "INVALID_INPUT", message]);
  }
  expect(total()).toEqual(before);
});

test("a write signed for chain B lands on chain B (read back on its EAS), sent by B's own delegate; it makes no call on chain A or the proof chain", async () => {
  const [a, b] = three.chains;
  const body = await signed(three.keys.users[1]!, { chainId: b.chainId, easAddress: b.easAddress! }, b, "on B");
  const before = total();
  const sentOnA = sends(a.chainId);
  const written = await post("/v1/delegated-attest", body);
  expect(written.status).toBe(200);
  const uid = written.body.uid as Hex;
  const after = total();
  expect(after[0]).toBe(before[0]);
  expect(after[2]).toBe(before[2]);
  expect(after[1]!).toBeGreaterThan(before[1]!);
  expect(sends(a.chainId)).toBe(sentOnA);
  const onB = await reader(b).readContract({ address: b.easAddress!, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
  expect([onB.uid, onB.attester]).toEqual([uid, body.attester]);
  const onA = await reader(a).readContract({ address: a.easAddress!, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
  expect(onA.uid).toBe(`0x${"0".repeat(64)}`);
  // Sent by chain B's own delegate (DELEGATE_SIGNER_31338).
  const tx = await reader(b).getTransaction({ hash: written.body.txHash as Hex });
  expect(tx.from.toLowerCase()).toBe(privateKeyToAccount(three.keys.users[6]!).address.toLowerCase());
  // The submission names its chain, its confirmations counted on chain B's head.
  const submission = await get(`/v1/submissions/${written.body.submissionId}`);
  expect([submission.status, submission.body.state, submission.body.chain]).toEqual([200, "mined", { chainId: b.chainId, caip2: b.caip2, easContract: b.easAddress!.toLowerCase() }]);
  expect(submission.body.uid).toBe(uid);
});

test("a write on chain A makes no call on chain B's proxy", async () => {
  const [a] = three.chains;
  const body = await signed(three.keys.users[2]!, { chainId: a.chainId, easAddress: a.easAddress! }, a, "on A");
  const before = total();
  const written = await post("/v1/delegated-attest", body);
  expect(written.status).toBe(200);
  const after = total();
  expect([after[1], after[2]]).toEqual([before[1], before[2]]);
  const onA = await reader(a).readContract({ address: a.easAddress!, abi: EAS_ABI, functionName: "getAttestation", args: [written.body.uid as Hex] });
  expect(onA.attester).toBe(body.attester);
  const tx = await reader(a).getTransaction({ hash: written.body.txHash as Hex });
  expect(tx.from.toLowerCase()).toBe(privateKeyToAccount(three.keys.delegate).address.toLowerCase());
  const submission = await get(`/v1/submissions/${written.body.submissionId}`);
  expect(submission.body.chain.chainId).toBe(a.chainId);
});

test("a write for a chain not served, a proof chain, or a served chain id with another EAS is 400 UNSUPPORTED_CHAIN with no JSON-RPC call", async () => {
  const [a, b, proof] = three.chains;
  const other = "0x000000000000000000000000000000000000dEaD" as Hex;
  const domains = [
    { chainId: 1, easAddress: a.easAddress! },
    { chainId: proof.chainId, easAddress: a.easAddress! },
    { chainId: b.chainId, easAddress: other },
  ];
  for (const domain of domains) {
    const body = await signed(three.keys.users[3]!, domain, a, "nowhere");
    const before = total();
    const refused = await post("/v1/delegated-attest", body);
    expect([refused.status, refused.body.code]).toEqual([400, "UNSUPPORTED_CHAIN"]);
    expect(total()).toEqual(before);
  }
});

test("a batch holds one chain: two chains in one batch are 400 naming both, with no call; a batch for chain B lands on B", async () => {
  const [a, b] = three.chains;
  const onA = await signed(three.keys.users[4]!, { chainId: a.chainId, easAddress: a.easAddress! }, a, "batch A");
  const onB = await signed(three.keys.users[5]!, { chainId: b.chainId, easAddress: b.easAddress! }, b, "batch B");
  const before = total();
  const mixed = await post("/v1/delegated-attest/batch", { requests: [onA, onB] });
  expect(mixed.status).toBe(400);
  expect(mixed.body.error).toContain("eip155:31337");
  expect(mixed.body.error).toContain("eip155:31338");
  expect(total()).toEqual(before);

  const sentOnA = sends(a.chainId);
  const batch = await post("/v1/delegated-attest/batch", { requests: [onB] });
  expect(batch.status).toBe(200);
  const uid = batch.body.results[0].uid as Hex;
  expect(sends(a.chainId)).toBe(sentOnA);
  const read = await reader(b).readContract({ address: b.easAddress!, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
  expect(read.attester).toBe(onB.attester);
});

test("a write on chain B is listed by the writer's immediate ?chain= read of B: B's index is told of the write, as the default chain's is", async () => {
  const [, b] = three.chains;
  // An instance that follows, polling once an hour: only the after-mined hook can make B's index hold the write now.
  const following = await startServiceProcess({
    PORT: "0",
    CHAINS_FILE: three.chainsFilePath,
    TRUST_ANCHORS_PATH: three.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: three.keys.users[0]!,
    // Chains 31338 and 31339 are not devnet ids to the raw-key rule (decisions §27).
    ALLOW_RAW_KEYS: "true",
    DATA_DIR: join(dir, "following"),
    INDEX_POLL_MS: "3600000",
    LOG_LEVEL: "error",
    ...TEST_RELAY_LIMITS,
  }, 60_000);
  try {
    const attester = privateKeyToAccount(three.keys.users[3]!).address;
    const list = async () => {
      const res = await fetch(`${following.url}/v1/attestations?attester=${attester}&chain=${b.caip2}`);
      return { status: res.status, body: await res.json() as Record<string, any> };
    };
    // B's follower has made its first poll (the list answers), before the write.
    let first = await list();
    for (let i = 0; i < 400 && first.status !== 200; i++) {
      await Bun.sleep(50);
      first = await list();
    }
    expect(first.status).toBe(200);
    const body = await signed(three.keys.users[3]!, { chainId: b.chainId, easAddress: b.easAddress! }, b, "listed on B");
    const res = await fetch(`${following.url}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const written = await res.json() as Record<string, any>;
    expect(res.status).toBe(200);
    const listed = await list();
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((item: { attestation: { uid: string } }) => item.attestation.uid)).toContain(written.uid);
    expect(listed.body.chain.chainId).toBe(b.chainId);
  } finally {
    expect(await following.stop()).toBe(0);
  }
}, 120_000);
