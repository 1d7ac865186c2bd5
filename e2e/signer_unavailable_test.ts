// Decisions §27 on a real Anvil: the delegate wallet signs through a jsonrpc: signer (Anvil's own
// eth_signTransaction, behind a loopback proxy the test switches off). While it is down a delegated attestation is
// 503 SIGNER_UNAVAILABLE with Retry-After before anything is spent; once it is back the same request succeeds with the
// nonce the failed one would have used (no gap), and /readyz names the signer's state throughout.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Hex, hashTypedData, parseTransaction, recoverAddress, recoverTransactionAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { openJsonRpcSigner } from "../adapters/signers/mod.ts";
import { startStack, type Stack } from "./harness.ts";
import { startRpcProxy, type RpcProxy } from "./support/rpc_proxy.ts";

const DELEGATE = privateKeyToAccount(ANVIL_DEV_KEYS[1]!).address;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

let stack: Stack;
let signer: RpcProxy;
beforeAll(async () => {
  signer = startRpcProxy("http://127.0.0.1:9");
  // The signer is Anvil's own; it signs one test typed data at start, so it answers from the devnet's start on.
  stack = await startStack({
    env: { DELEGATE_SIGNER: `jsonrpc:${signer.url}#${DELEGATE}` },
    rpcUrlFor: (devnetRpcUrl) => (signer.upstream = devnetRpcUrl),
  });
});
afterAll(async () => {
  await stack?.stop();
  await signer?.stop();
});

const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
  const res = await fetch(stack.devnet.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await res.json()) as { result: T }).result;
};

async function signedBody() {
  const account = privateKeyToAccount(generatePrivateKey());
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: false },
    data: { subject: "did:web:example.com", version: "1", ratingValue: 4, reviewBody: "", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce: 0n,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

const post = async (body: unknown) => {
  const res = await fetch(`${stack.baseUrl}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), text: await res.text() };
};
const readyz = async () => (await (await fetch(`${stack.baseUrl}/readyz`)).json()) as { signers?: Record<string, string> };

describe("jsonrpc: signer against Anvil's dev accounts", () => {
  test("eth_signTransaction and eth_signTypedData_v4 answers are checked and used", async () => {
    const s = openJsonRpcSigner(stack.devnet.rpcUrl, DELEGATE, { role: "delegate", audit: { log: quiet, timeoutMs: 5_000 } });
    const tx = { chainId: stack.service.chainId, nonce: 7, maxPriorityFeePerGas: 1n, maxFeePerGas: 2_000_000_000n, gas: 21_000n, to: DELEGATE as Hex, value: 0n, data: "0x1234" as Hex };
    const signed = await s.signTransaction(tx, { purpose: "test" });
    if (!signed.ok) throw new Error(`not signed: ${signed.reason}`);
    expect(parseTransaction(signed.raw)).toMatchObject({ nonce: 7, gas: 21_000n, data: "0x1234" });
    expect(await recoverTransactionAddress({ serializedTransaction: signed.raw as `0x02${string}` })).toBe(DELEGATE);
    const typedData = {
      domain: { name: "ats", version: "1", chainId: stack.service.chainId },
      types: { Ping: [{ name: "value", type: "uint256" }] },
      primaryType: "Ping",
      message: { value: 42n },
    } as const;
    const typed = await s.signTypedData({ ...typedData, types: { Ping: [...typedData.types.Ping] } }, { purpose: "test" });
    if (!typed.ok) throw new Error(`not signed: ${typed.reason}`);
    expect(await recoverAddress({ hash: hashTypedData(typedData), signature: typed.signature })).toBe(DELEGATE);
    // An address the node holds no key for is refused, never a signature of another key.
    const other = openJsonRpcSigner(stack.devnet.rpcUrl, privateKeyToAccount(generatePrivateKey()).address, { role: "delegate", audit: { log: quiet, timeoutMs: 5_000 } });
    expect(await other.signTransaction(tx, { purpose: "test" })).toEqual({ ok: false, reason: "refused" });
  });
});

describe("a delegate signer that is down", () => {
  test("503 SIGNER_UNAVAILABLE with Retry-After, nothing spent; after recovery the same request succeeds without a nonce gap", async () => {
    const body = await signedBody();
    // The service's first send finds the wallet's nonce; warm it with one attestation while the signer is up.
    const first = await post(await signedBody());
    expect(first.status).toBe(200);
    expect((await readyz()).signers?.delegate).toBe("up");
    const before = BigInt(await rpc<string>("eth_getTransactionCount", [DELEGATE, "pending"]));

    signer.onHttp = () => new Response("signer down", { status: 503 });
    const down = await post(body);
    expect(down.status).toBe(503);
    expect(JSON.parse(down.text)).toMatchObject({ code: "SIGNER_UNAVAILABLE" });
    expect(Number(down.retryAfter)).toBeGreaterThan(0);
    expect(down.text).not.toContain(signer.url);
    expect(down.text).not.toContain("127.0.0.1");
    expect((await readyz()).signers?.delegate).toBe("down");
    // Neither /readyz nor /metrics names the signer's URL (decisions §27).
    expect(await (await fetch(`${stack.baseUrl}/readyz`)).text()).not.toContain(signer.url);
    expect(await (await fetch(`${stack.baseUrl}/metrics`)).text()).not.toContain(signer.url);
    // Nothing left the wallet.
    expect(BigInt(await rpc<string>("eth_getTransactionCount", [DELEGATE, "pending"]))).toBe(before);

    signer.onHttp = undefined;
    const again = await post(body);
    expect(again.status).toBe(200);
    const { txHash } = JSON.parse(again.text) as { txHash: Hex };
    const tx = await rpc<{ nonce: string; from: string }>("eth_getTransactionByHash", [txHash]);
    // The nonce the failed request would have used: no gap in the delegate wallet's nonces.
    expect(BigInt(tx.nonce)).toBe(before);
    expect(tx.from.toLowerCase()).toBe(DELEGATE.toLowerCase());
    expect((await readyz()).signers?.delegate).toBe("up");
    // The audit's counters: every signature by role, backend and outcome, and their latency.
    const metrics = await (await fetch(`${stack.baseUrl}/metrics`)).text();
    expect(metrics).toContain('ats_signatures_total{backend="jsonrpc",outcome="unavailable",role="delegate"} 1\n');
    // Two writes and the test signature at start.
    expect(metrics).toContain('ats_signatures_total{backend="jsonrpc",outcome="ok",role="delegate"} 3\n');
    expect(metrics).toContain("ats_signature_duration_seconds_bucket");
    // The witness's raw key, and the remote delegate: it answers for Anvil's published dev account.
    expect(metrics).toMatch(/ats_raw_signing_keys 2\b/);
  });
});

describe("a delegate signer that signs with another key", () => {
  test("503 SIGNER_UNAVAILABLE, nothing sent from either wallet; the next request is sent with the delegate's next nonce", async () => {
    // The signer answers the transaction asked for, signed by Anvil's account 5 instead of the delegate (a
    // misconfigured Web3Signer, a node holding several keys). Before, the service sent it: it sat pending on the other
    // wallet's nonce, the request waited out its deadline, and the delegate's nonce count moved past the chain's.
    const rogue = privateKeyToAccount(ANVIL_DEV_KEYS[5]!).address;
    expect((await post(await signedBody())).status).toBe(200);
    const delegateBefore = BigInt(await rpc<string>("eth_getTransactionCount", [DELEGATE, "pending"]));
    const rogueBefore = BigInt(await rpc<string>("eth_getTransactionCount", [rogue, "pending"]));
    signer.onHttp = async (calls) => {
      const call = calls[0]!;
      if (calls.length !== 1 || call.method !== "eth_signTransaction") return undefined;
      const params = [{ ...(call.params[0] as Record<string, unknown>), from: rogue }];
      const answered = await fetch(stack.devnet.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: call.id, method: call.method, params }) });
      return new Response(await answered.text(), { headers: { "content-type": "application/json" } });
    };
    const refused = await post(await signedBody());
    expect([refused.status, JSON.parse(refused.text).code]).toEqual([503, "SIGNER_UNAVAILABLE"]);
    expect(BigInt(await rpc<string>("eth_getTransactionCount", [DELEGATE, "pending"]))).toBe(delegateBefore);
    expect(BigInt(await rpc<string>("eth_getTransactionCount", [rogue, "pending"]))).toBe(rogueBefore);

    signer.onHttp = undefined;
    const next = await post(await signedBody());
    expect(next.status).toBe(200);
    const tx = await rpc<{ nonce: string; from: string }>("eth_getTransactionByHash", [(JSON.parse(next.text) as { txHash: Hex }).txHash]);
    expect([BigInt(tx.nonce), tx.from.toLowerCase()]).toEqual([delegateBefore, DELEGATE.toLowerCase()]);
  });
});
