/**
 * A wallet contract that tells a simulation from a transaction, on the real chain. Its `isValidSignature` says yes
 * only while `tx.gasprice` is 0, as it is in an `eth_estimateGas` sent without fees: the service's ERC-1271 check
 * and its simulation both pass, the real `attestByDelegation` reverts, and the delegate pays. With random signature
 * bytes each time (no key, no replay hit, an EAS nonce that never moves) it went on as long as the relay's limits
 * allowed: five requests, five reverted transactions. Now the revert is simulated once more, the wallet still
 * accepts, and the relays no longer send for it (ports/wallet_refusals.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation } from "../client/delegated_attest.ts";
import { startStack, type Stack } from "./harness.ts";
import { isSend } from "./support/rpc_proxy.ts";

/**
 * The tests count the service's sends, so the node's answer decides what a send does, never its speed (docs/testing.md):
 * longer than the JSON-RPC client's own timeout (10 s), a sync send always ends with its answer or that timeout. With the
 * 100 ms default, an answer later than that on a loaded machine sent the sender to ask about the hash, and when the node
 * did not hold it yet, to send the same bytes again by `eth_sendRawTransaction`: two sends counted for one transaction.
 */
const SYNC_ANSWER_ALWAYS_AWAITED_MS = 120_000;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ sendSyncGraceMs: SYNC_ANSWER_ALWAYS_AWAITED_MS });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

// GASPRICE ISZERO PUSH4 0x1626ba7e MUL PUSH1 0xe0 SHL PUSH1 0 MSTORE PUSH1 0x20 PUSH1 0 RETURN: the magic value when
// the gas price is 0, else 0.
const RUNTIME = "3a15631626ba7e0260e01b60005260206000f3";
const LENGTH = (RUNTIME.length / 2).toString(16).padStart(2, "0");
const INIT = `0x60${LENGTH}600c60003960${LENGTH}6000f3${RUNTIME}` as Hex;

/** Deploys the wallet contract from one of the devnet's user keys. */
async function deploySimulationOnlyWallet(user: number): Promise<Hex> {
  const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
  const deployer = createWalletClient({
    account: privateKeyToAccount(stack.devnet.keys.users[user] as Hex),
    chain: { id: stack.devnet.chainId, name: "devnet", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [stack.devnet.rpcUrl] } } },
    transport: http(stack.devnet.rpcUrl),
  });
  const receipt = await chain.waitForTransactionReceipt({ hash: await deployer.deployContract({ abi: [], bytecode: INIT }) });
  return receipt.contractAddress! as Hex;
}

type Answer = { code: string; error: string; details?: string };

/** Asks a relay route (alone or as a batch of one) for a review signed "by" `wallet` with random bytes. */
function asker(wallet: Hex) {
  const review = findSchemaByName("user-review")!;
  const randomHex = () => [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
  return async (route = "/v1/delegated-attest") => {
    const prepared = prepareDelegatedAttestation({
      schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: review.schema, revocable: review.revocable },
      data: { subject: "did:web:victim.test", version: "1", ratingValue: 1, reviewBody: "x", screenshotUrls: [], proofs: [] },
      attester: wallet,
      nonce: 0n,
      chainId: stack.service.chainId,
      easAddress: stack.service.easAddress,
    });
    // Random r and s (s low), v 27: no key at all.
    const signature = `0x${randomHex()}3${randomHex().slice(1)}1b`;
    const one = { prepared, signature, attester: wallet };
    const answer = await fetch(`${stack.baseUrl}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(route.endsWith("/batch") ? { requests: [one] } : one),
    });
    const body = await answer.json() as Answer & { results?: Answer[] };
    return { status: answer.status, body: body.results?.[0] ?? body };
  };
}

describe("a wallet contract that accepts signatures only in simulations", () => {
  test("makes the delegate pay for one reverted transaction, then is refused before anything is sent", async () => {
    const ask = asker(await deploySimulationOnlyWallet(5));
    stack.rpc.reset();
    const first = await ask();
    expect([first.status, first.body.code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
    for (let i = 0; i < 4; i++) {
      const next = await ask();
      expect([next.status, next.body.code]).toEqual([400, "INVALID_SIGNATURE"]);
      expect(next.body.error).toContain(first.body.details!);
    }
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
  }, 120_000);

  test("sent in batches of one, makes the delegate pay once, then is refused in batches and alone", async () => {
    const wallet = await deploySimulationOnlyWallet(6);
    const ask = asker(wallet);
    stack.rpc.reset();
    const first = await ask("/v1/delegated-attest/batch");
    expect(first.body.code).toBe("SUBMISSION_FAILED");
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
    for (const route of ["/v1/delegated-attest/batch", "/v1/delegated-attest/batch", "/v1/delegated-attest"]) {
      const next = await ask(route);
      expect([next.status, next.body.code]).toEqual([route.endsWith("/batch") ? 200 : 400, "INVALID_SIGNATURE"]);
    }
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
  }, 120_000);
});
