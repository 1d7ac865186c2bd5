/**
 * A fee bump with one signature live on two chains (decisions §30) on real Anvils (e2e/support/three_chains.ts):
 * `bun main.ts` serves chains A (31337) and B (31338), one delegate key (one address) on both. The attester is a
 * contract wallet at one address on both chains whose `isValidSignature` accepts any 65 bytes (as a Safe's approved
 * hashes do), so the same signature is a write on A and a write on B: two replay records under one key. With
 * automine off on both, each chain's transaction waits in its pool; the service dies. B's node then drops B's
 * transaction (evicted from its pool), and the next start's reconcilers run, A's first: A's transaction, pending past
 * FEE_BUMP_AFTER_SECONDS, is replaced. B's reconciler must read B's fee bumps only: it sends B's own transaction again
 * (and may replace it), never A's bytes, and never gives B's write back. Before fee bumps named their chain it took
 * A's replacement for B's newest transaction, sent A's bytes to B, had them refused, and released B's write; B's
 * submission showed A's hash. Blocks are mined explicitly (evm_mine): each chain's write lands once, and the next
 * start settles each submission with its own chain's transaction and uid.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { startThreeChains, threeChainsServiceEnv, type TestChain, type ThreeChains } from "./support/three_chains.ts";

/** Runtime code answering every call with ERC-1271's magic value: a wallet that accepts any signature, on any chain. */
const ACCEPTS_ANY_SIGNATURE = "0x631626ba7e60e01b60005260206000f3";

const dir = mkdtempSync(join(tmpdir(), "ats-two-chain-bump-"));
let three: ThreeChains;
const running: ServiceProcess[] = [];

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
}, 180_000);

afterAll(async () => {
  for (const service of running) if (service.proc.exitCode === null && service.proc.signalCode === null) await service.stop();
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** One JSON-RPC call to a chain's node itself (not its proxy); an error answer throws. */
async function rpc(chain: TestChain, method: string, params: unknown[] = []): Promise<any> {
  const res = await fetch(chain.nodeUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body = await res.json() as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** The transactions from `from` in a chain's pending block. */
async function poolFrom(chain: TestChain, from: string): Promise<{ hash: Hex; nonce: Hex }[]> {
  const block = await rpc(chain, "eth_getBlockByNumber", ["pending", true]) as { transactions: { hash: Hex; from: string; nonce: Hex }[] };
  return block.transactions.filter((t) => t.from.toLowerCase() === from.toLowerCase());
}

/** The first transaction from `from` in a chain's pool, once there is one (the test's limit stops a broken run). */
async function pendingFrom(chain: TestChain, from: string): Promise<Hex> {
  for (;;) {
    const ours = await poolFrom(chain, from);
    if (ours.length > 0) return ours[0]!.hash;
    await Bun.sleep(25);
  }
}

const start = async () => {
  const service = await startServiceProcess({
    ...threeChainsServiceEnv(three, dir),
    INDEX_FOLLOW: "false",
    FEE_BUMP_AFTER_SECONDS: "1",
    LOG_LEVEL: "error",
    ...TEST_RELAY_LIMITS,
  }, 60_000);
  running.push(service);
  return service;
};

type View = { state: string; txHash: string | null; uid?: string | null; feeBumps: number; chain?: { chainId: number } };

describe("a fee bump with one signature live on two chains", () => {
  test("chain A's bump leaves chain B's write alone: B's dropped transaction is sent again on B, not given back; B's submission shows B's hash; each chain's write lands once", async () => {
    const [a, b] = three.chains;
    const reader = (chain: TestChain) => createPublicClient({ cacheTime: 0, transport: http(chain.nodeUrl) });
    const delegate = privateKeyToAccount(three.keys.delegate).address;
    // The wallet: one address, the same code, on both chains.
    const wallet = privateKeyToAccount(generatePrivateKey()).address;
    for (const chain of [a, b]) await rpc(chain, "anvil_setCode", [wallet, ACCEPTS_ANY_SIGNATURE]);

    const def = findSchemaByName("user-review")!;
    const prepared = async (chain: TestChain) =>
      prepareDelegatedAttestation({
        schema: { uid: chain.schemaUids!["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
        data: { subject: "did:web:two-chain-bump.example", version: "1.0.0", ratingValue: 4, reviewBody: "one signature, two chains", screenshotUrls: [], proofs: [] },
        attester: wallet,
        nonce: await reader(chain).readContract({ address: chain.easAddress!, abi: EAS_ABI, functionName: "getNonce", args: [wallet] }),
        chainId: chain.chainId,
        easAddress: chain.easAddress!,
      });
    // One signature (a well-formed 65 bytes; the wallet accepts it) for chain A's typed data, sent for both chains.
    const onA = await prepared(a);
    const signature = await privateKeyToAccount(generatePrivateKey()).signTypedData(signableTypedData(onA));
    const bodies = new Map<TestChain, string>([
      [a, JSON.stringify({ prepared: onA, signature, attester: wallet })],
      [b, JSON.stringify({ prepared: await prepared(b), signature, attester: wallet })],
    ]);
    const post = (url: string, chain: TestChain, async: boolean) =>
      fetch(`${url}/v1/delegated-attest`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(async ? { prefer: "respond-async" } : {}) },
        body: bodies.get(chain)!,
      });

    const first = await start();
    const minedBefore = new Map<TestChain, number>();
    for (const chain of [a, b]) {
      await rpc(chain, "evm_setAutomine", [false]);
      minedBefore.set(chain, await reader(chain).getTransactionCount({ address: delegate }));
    }
    const submissionIds = new Map<TestChain, string>();
    const originals = new Map<TestChain, Hex>();
    for (const chain of [a, b]) {
      const accepted = await post(first.url, chain, true);
      expect(accepted.status).toBe(202);
      submissionIds.set(chain, (await accepted.json() as { submissionId: string }).submissionId);
      originals.set(chain, await pendingFrom(chain, delegate));
    }
    expect(submissionIds.get(a)).not.toBe(submissionIds.get(b));
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    // B's node drops B's transaction from its pool (its nonce still free): only a resend of B's bytes brings it back.
    await rpc(b, "anvil_dropTransaction", [originals.get(b)!]);
    expect(await poolFrom(b, delegate)).toEqual([]);
    // Past FEE_BUMP_AFTER_SECONDS since both were signed (a lower bound only: a slower machine waits longer).
    await Bun.sleep(1_100);

    // The next start's reconcilers run before it listens, chain A's first: A's transaction is replaced.
    const second = await start();
    const submission = async (url: string, chain: TestChain) => await (await fetch(`${url}/v1/submissions/${submissionIds.get(chain)}`)).json() as View;
    const poolA = await poolFrom(a, delegate);
    expect(poolA).toHaveLength(1);
    expect(poolA[0]!.hash).not.toBe(originals.get(a));
    const onChainA = await submission(second.url, a);
    expect([onChainA.state, onChainA.txHash, onChainA.chain?.chainId]).toEqual(["replaced", poolA[0]!.hash, a.chainId]);
    expect(onChainA.feeBumps).toBeGreaterThanOrEqual(1);
    // B's write was not given back: B's own transaction is in B's pool again (resent, or B's own replacement of it),
    // and B's submission shows that hash, never one of chain A's.
    const poolB = await poolFrom(b, delegate);
    expect(poolB).toHaveLength(1);
    const onChainB = await submission(second.url, b);
    expect(["sent", "replaced"]).toContain(onChainB.state);
    expect([onChainB.txHash, onChainB.chain?.chainId]).toEqual([poolB[0]!.hash, b.chainId]);
    // B's bumps are B's own: none while it is merely resent, as many as replaced B's transaction otherwise.
    expect(onChainB.state === "sent" ? onChainB.feeBumps === 0 : onChainB.feeBumps >= 1).toBe(true);
    expect([originals.get(a), poolA[0]!.hash]).not.toContain(onChainB.txHash);
    // Its replay record is still taken: the signature on B is 409 DUPLICATE, and nothing more is sent on B.
    const again = await post(second.url, b, false);
    expect([again.status, (await again.json() as { code: string }).code]).toEqual([409, "DUPLICATE"]);
    // By hash: a pending transaction's block fields are the pending block's, which moves with the clock (red once in a
    // full run, a second later).
    expect((await poolFrom(b, delegate)).map((tx) => tx.hash)).toEqual(poolB.map((tx) => tx.hash));

    // Each chain mines its block: one transaction of the delegate each, the one in its pool.
    const landed = new Map<TestChain, Hex>([[a, poolA[0]!.hash], [b, poolB[0]!.hash]]);
    for (const chain of [a, b]) {
      await rpc(chain, "evm_mine");
      await rpc(chain, "evm_setAutomine", [true]);
      expect(await reader(chain).getTransactionCount({ address: delegate })).toBe(minedBefore.get(chain)! + 1);
      expect((await reader(chain).getTransactionReceipt({ hash: landed.get(chain)! })).status).toBe("success");
    }
    expect(await reader(a).getTransactionReceipt({ hash: originals.get(a)! }).catch(() => null)).toBeNull();
    expect(await second.stop()).toBe(0);

    // The next start settles each submission with its own chain's transaction and uid; one attestation per chain.
    const third = await start();
    for (const chain of [a, b]) {
      const settled = await submission(third.url, chain);
      expect(["mined", "confirmed"]).toContain(settled.state);
      expect([settled.txHash, settled.chain?.chainId]).toEqual([landed.get(chain)!, chain.chainId]);
      const logs = await reader(chain).getContractEvents({ address: chain.easAddress!, abi: EAS_ABI, eventName: "Attested", fromBlock: 0n, args: { attester: wallet } });
      expect(logs).toHaveLength(1);
      expect([logs[0]!.transactionHash, logs[0]!.args.uid]).toEqual([landed.get(chain)!, settled.uid as Hex]);
      const duplicate = await post(third.url, chain, false);
      expect([duplicate.status, (await duplicate.json() as { details: string }).details]).toEqual([409, settled.uid as string]);
    }
    expect(await third.stop()).toBe(0);
  }, 180_000);
});
