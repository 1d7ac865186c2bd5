// Reads on two attestation chains in the running service (decisions §30, issue 48 item 2): `bun main.ts` with a
// CHAINS_FILE naming the two chains of `startThreeChains` and its proof chain. Chain B is reached through a forwarder
// that counts the JSON-RPC calls not made by its index follower (which names itself, `x-ats-reader: index-follower`):
// an attestation written on chain B is listed under ?chain=<B> only, each answer names its chain, a cursor of one
// chain is refused on the other, reads of chain A make no call on chain B, and chain B's provider going down makes
// B's reads 503 INDEX_STALE (naming it) while A's still answer.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWalletClient, defineChain, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { startThreeChains, type ThreeChains } from "./support/three_chains.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-chain-reads-"));

const PROVIDER_KEY = "prov-key-5f2c9a";
let three: ThreeChains;
let service: ServiceProcess;
/** Chain B's forwarder: every call not made by its index follower. */
let forwarder: ReturnType<typeof Bun.serve>;
const notFollower: string[] = [];
let attester: Hex;

const A = () => three.chains[0];
const B = () => three.chains[1];

/** Writes `n` reviews on chain B straight to its node (not counted), as `attester`. */
async function attestOnB(n: number, key: Hex): Promise<void> {
  const b = B();
  const chain = defineChain({ id: b.chainId, name: "B", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [b.nodeUrl] } } });
  const wallet = createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(b.nodeUrl) });
  const schema = b.schemaUids!["user-review"]!;
  for (let i = 0; i < n; i++) {
    const data = encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 4, reviewBody: `on B ${i}`, screenshotUrls: [], proofs: [] });
    if (!data.ok) throw new Error("encode");
    await wallet.writeContract({
      address: b.easAddress!,
      abi: EAS_ABI,
      functionName: "attest",
      args: [{ schema, data: { recipient: `0x${"0".repeat(40)}`, expirationTime: 0n, revocable: false, refUID: `0x${"0".repeat(64)}`, data: data.value, value: 0n } }],
    });
  }
}

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
  forwarder = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.text();
      if (request.headers.get("x-ats-reader") !== "index-follower") notFollower.push(body);
      return await fetch(B().rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    },
  });
  const chainsFile = join(dir, "two_attestation_chains.json");
  writeFileSync(chainsFile, JSON.stringify([
    { caip2: A().caip2, rpcUrl: A().rpcUrl, role: "attestations" },
    // A provider's key in the path, as hosted providers give them: it must never reach a client, a log or /metrics.
    { caip2: B().caip2, rpcUrl: `http://127.0.0.1:${forwarder.port}/v3/${PROVIDER_KEY}`, role: "attestations" },
    { caip2: three.chains[2].caip2, rpcUrl: three.chains[2].rpcUrl, role: "proofs" },
  ]));
  const key = three.keys.users[0]! as Hex;
  attester = privateKeyToAccount(key).address.toLowerCase() as Hex;
  await attestOnB(2, key);
  service = await startServiceProcess({
    PORT: "0",
    CHAINS_FILE: chainsFile,
    TRUST_ANCHORS_PATH: three.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: three.keys.delegate,
    // Chains 31338 and 31339 are not devnet ids to the raw-key rule (decisions §27).
    ALLOW_RAW_KEYS: "true",
    WITNESS_PRIVATE_KEY: three.keys.witness,
    DATA_DIR: join(dir, "service"),
    INDEX_POLL_MS: "200",
    INDEX_STALL_SECONDS: "3",
    LOG_LEVEL: "info",
    ...TEST_RELAY_LIMITS,
  }, 60_000);
}, 180_000);

afterAll(async () => {
  if (service !== undefined) expect(await service.stop()).toBe(0);
  await forwarder?.stop(true);
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function get(path: string): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${service.url}${path}`);
  return { status: res.status, body: await res.json() as Record<string, any> };
}

/** Asks until `done` holds (the follower's own pace), at most `ms`. */
async function until(ask: () => Promise<{ status: number; body: Record<string, any> }>, done: (r: { status: number; body: Record<string, any> }) => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await ask();
    if (done(answer) || Date.now() > deadline) return answer;
    await Bun.sleep(100);
  }
}

const chainOf = (c: { chainId: number; caip2: string; easAddress?: string | undefined }) => ({ chainId: c.chainId, caip2: c.caip2, easContract: c.easAddress!.toLowerCase() });

test("/v1/trust-anchors lists the served chains, the first attestation chain the default", async () => {
  const { body } = await get("/v1/trust-anchors");
  expect(body.servedChains).toEqual([
    { caip2: "eip155:31337", chainId: 31337, role: "attestations", default: true },
    { caip2: "eip155:31338", chainId: 31338, role: "attestations", default: false },
    { caip2: "eip155:31339", chainId: 31339, role: "proofs", default: false },
  ]);
  expect(body.defaultChain).toBe("eip155:31337");
});

test("an attestation written on chain B is listed under ?chain=<B> only; each answer names its chain and its own asOf", async () => {
  const onB = await until(() => get(`/v1/attestations?attester=${attester}&chain=eip155:31338`), (r) => r.body.items?.length === 2);
  expect(onB.status).toBe(200);
  expect(onB.body.chain).toEqual(chainOf(B()));
  expect(onB.body.items.map((i: any) => i.attestation.data.reviewBody).sort()).toEqual(["on B 0", "on B 1"]);
  const count = await get(`/v1/attestations/count?attester=${attester}&chain=31338`);
  expect(count.body).toMatchObject({ count: 2, chain: chainOf(B()) });
  const one = await get(`/v1/attestations/${onB.body.items[0].attestation.uid}?chain=31338`);
  expect(one.body).toMatchObject({ chain: chainOf(B()), attestation: { uid: onB.body.items[0].attestation.uid } });
  for (const path of [`/v1/attestations?attester=${attester}`, `/v1/attestations?attester=${attester}&chain=31337`]) {
    const onA = await get(path);
    expect(onA.status).toBe(200);
    expect(onA.body).toMatchObject({ items: [], chain: chainOf(A()) });
  }
  expect((await get(`/v1/attestations/${onB.body.items[0].attestation.uid}`)).status).toBe(404);
  // Each chain's own head.
  expect(onB.body.asOf.blockNumber).toBeGreaterThan(0);
  const unknown = await get(`/v1/attestations?attester=${attester}&chain=eip155:1`);
  expect(unknown).toEqual({ status: 400, body: { code: "UNSUPPORTED_CHAIN", error: expect.any(String) } });
  expect((await get(`/v1/attestations?attester=${attester}&chain=31339`)).body.code).toBe("UNSUPPORTED_CHAIN");
});

test("a cursor is bound to its chain: chain B's cursor given with chain A is 400 INVALID_INPUT", async () => {
  const page = await get(`/v1/attestations?attester=${attester}&chain=31338&limit=1`);
  expect(typeof page.body.nextCursor).toBe("string");
  const next = await get(`/v1/attestations?attester=${attester}&chain=31338&limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
  expect(next.body.items).toHaveLength(1);
  const crossed = await get(`/v1/attestations?attester=${attester}&limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
  expect(crossed.status).toBe(400);
  expect(crossed.body.code).toBe("INVALID_INPUT");
});

test("reads of chain A make no JSON-RPC call on chain B", async () => {
  const before = notFollower.length;
  for (const path of [
    `/v1/attestations?attester=${attester}`,
    `/v1/attestations/count?attester=${attester}`,
    `/v1/artifact-trust?artifactDid=did:artifact:bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy`,
    `/v1/key-status?subjectDid=did:web:shop.example&keyDid=did:pkh:eip155:1:${attester}`,
  ]) expect((await get(path)).status).toBeLessThan(500);
  expect(notFollower.slice(before)).toEqual([]);
});

test("the default chain's provider down: A's reads 503 naming it, B's reads 200, /readyz still ready (B serves); both down, not ready", async () => {
  // Both chains serving first (each follower has polled).
  expect((await until(() => get(`/v1/attestations?attester=${attester}&chain=31338`), (r) => r.status === 200)).status).toBe(200);
  expect((await until(() => get("/readyz"), (r) => r.status === 200)).status).toBe(200);
  A().proxy.onHttp = () => new Response("down", { status: 502 });
  try {
    const onA = await until(() => get(`/v1/attestations?attester=${attester}`), (r) => r.status === 503);
    expect([onA.status, onA.body.code]).toEqual([503, "INDEX_STALE"]);
    const onB = await get(`/v1/attestations?attester=${attester}&chain=31338`);
    expect(onB.status).toBe(200);
    // Before, /readyz was 503 here: a balancer took the instance out, and chain B's reads with it.
    const ready = await get("/readyz");
    expect([ready.status, ready.body.status, ready.body.checks.rpc, ready.body.checks.index, ready.body.chains["eip155:31338"].index]).toEqual([200, "ready", false, false, true]);
    B().proxy.onHttp = () => new Response("down", { status: 502 });
    const none = await until(() => get("/readyz"), (r) => r.status === 503);
    expect([none.status, none.body.status, none.body.chains["eip155:31338"].index]).toEqual([503, "not-ready", false]);
  } finally {
    A().proxy.onHttp = undefined;
    B().proxy.onHttp = undefined;
  }
  // Both back: each chain's reads answer again once its follower has polled (ready alone says only that one serves).
  expect((await until(() => get(`/v1/attestations?attester=${attester}`), (r) => r.status === 200)).status).toBe(200);
  expect((await until(() => get(`/v1/attestations?attester=${attester}&chain=31338`), (r) => r.status === 200)).status).toBe(200);
  expect((await until(() => get("/readyz"), (r) => r.status === 200 && r.body.checks.index === true)).status).toBe(200);
});

test("chain B's provider down: B's reads 503 INDEX_STALE naming it, A's reads still 200, /readyz ready showing B stale", async () => {
  B().proxy.onHttp = () => new Response("down", { status: 502 });
  try {
    const onB = await until(() => get(`/v1/attestations?attester=${attester}&chain=31338`), (r) => r.status === 503);
    expect(onB.status).toBe(503);
    expect(onB.body.code).toBe("INDEX_STALE");
    expect(onB.body.error).toContain("eip155:31338");
    const onA = await get(`/v1/attestations?attester=${attester}`);
    expect(onA.status).toBe(200);
    expect(onA.body.chain).toEqual(chainOf(A()));
    // /readyz shows chain B's index stale and stays ready: taking the instance out would fail chain A's reads too.
    const ready = await get("/readyz");
    expect([ready.status, ready.body.status, ready.body.checks.index, ready.body.chains["eip155:31338"].index]).toEqual([200, "ready", true, false]);
    // Chain B's provider URL (its key) is in no answer, no /metrics line and no log line, while B fails.
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    for (const text of [JSON.stringify(onB.body), JSON.stringify(ready.body), metrics, service.stderrTail()]) expect(text).not.toContain(PROVIDER_KEY);
  } finally {
    B().proxy.onHttp = undefined;
  }
});
