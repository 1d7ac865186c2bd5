/**
 * Issue 23, finding 2 (ERC-6492 gas drain) on the devnet with the real EAS, the service behind a JSON-RPC proxy that
 * counts what reaches the node. The attacker's factory (e2e/contracts/GasDrainFactory.sol) deploys the wallet only
 * when given more gas than MAX_GAS_PER_TX: the read-only ERC-6492 check deploys it and accepts the signature, the
 * real factory transaction burns its gas and deploys nothing. The same signed attestation posted five times, through
 * the public relay and through the private relay: one factory transaction reaches the node, its gas is charged (the
 * public and the private relay's hourly budgets, the account's sponsored write), later attempts are refused before
 * any gas. The private relay's budget, once spent, is 429 with Retry-After before any RPC.
 *
 * The sends are counted, so the node's answer decides what a send does, never its speed (docs/testing.md): the
 * service waits for a sync send's answer longer than the JSON-RPC timeout, and the proxy answers every sync send later
 * than the default grace, as a loaded machine does. With the 100 ms default, a late answer sent the sender to ask
 * about the hash, and when the node did not hold it yet, to send the same bytes again by `eth_sendRawTransaction`:
 * two sends counted for the one factory transaction (red once in the full suite).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http, keccak256, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { BUDGET_HOUR_TEST_MS, startStack, type Stack, withinOneBudgetHour } from "./harness.ts";
import { inFrontOf, isSend, type RpcProxy, SEND_METHODS, startRpcProxy } from "./support/rpc_proxy.ts";
import { signInCookie } from "./support/sign_in.ts";
import { deployGasDrainFactory, type WalletFactory } from "./support/test_wallet.ts";

const APP = "https://app.test";
/** Above MAX_GAS_PER_TX (default 1,000,000): only a read-only call with the node's gas cap gets there. */
const DEPLOY_ABOVE = 2_000_000n;
/** The factory reverts below this, so its estimate (×1.2 headroom) is about 750,000: under MAX_GAS_PER_TX. */
const REQUIRE_ABOVE = 600_000n;
/** Longer than the JSON-RPC client's own timeout (10 s): a sync send always ends with its answer or that timeout. */
const SYNC_ANSWER_ALWAYS_AWAITED_MS = 120_000;
/** How long the proxy holds each sync send before the node sees it: past the default grace, as on a loaded machine. */
const SYNC_SEND_HELD_MS = 200; // twice SEND_SYNC_GRACE_MS (adapters/chain/viem_tx_sender.ts, 100 ms)

let stack: Stack;
let proxy: RpcProxy;
let drain: WalletFactory;
let chain: PublicClient;
const owner = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  proxy = startRpcProxy("");
  // Every sync send reaches the node after the default grace. This hold races nothing: the service waits for the
  // answer (SYNC_ANSWER_ALWAYS_AWAITED_MS), so what it sends is the same whether the answer takes 2 ms or this long.
  proxy.onHttp = async (calls) => {
    if (calls.some((c) => c.method === "eth_sendRawTransactionSync")) await Bun.sleep(SYNC_SEND_HELD_MS);
    return undefined;
  };
  stack = await startStack({
    rpcUrlFor: inFrontOf(proxy),
    sendSyncGraceMs: SYNC_ANSWER_ALWAYS_AWAITED_MS,
    env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, SIWE_CHALLENGE_RATE_PER_MINUTE: "1000", FREE_PLAN_SCHEMAS: "*" },
  });
  // The test's own chain traffic goes to the node directly: the proxy sees the service's alone.
  chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 }) as PublicClient;
  const deployer = createWalletClient({
    account: privateKeyToAccount(stack.devnet.keys.users[6]!),
    chain: { id: stack.devnet.chainId, name: "devnet", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [stack.devnet.rpcUrl] } } },
    transport: http(stack.devnet.rpcUrl),
  });
  drain = await deployGasDrainFactory(deployer, chain, { deployAbove: DEPLOY_ABOVE, requireAbove: REQUIRE_ABOVE });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

const code = async (address: Hex) => (await chain.getCode({ address })) ?? "0x";
/** The raw transactions the service sent (by either send method), as the proxy saw them. */
const sentRaw = () => proxy.calls.filter((c) => isSend(c.method)).map((c) => c.params[0] as Hex);
/** Methods that read or spend on the attester's behalf: none may reach the node once the wallet is on record. */
const SPENDING = new Set(["eth_call", "eth_estimateGas", "eth_getCode", ...SEND_METHODS]);

async function post(baseUrl: string, path: string, body: unknown, cookie?: string) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: APP, ...(cookie === undefined ? {} : { cookie }) },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: await res.json() as Record<string, any>,
    cookie: res.headers.get("set-cookie")?.split(";")[0],
  };
}

/** A gauge's value from /metrics; a missing sample fails here, naming what was answered (a -1 for both reads read as 0 gas charged). */
async function metric(baseUrl: string, name: string): Promise<bigint> {
  const res = await fetch(`${baseUrl}/metrics`);
  const text = await res.text();
  const match = new RegExp(`^${name} (-?\\d+)$`, "m").exec(text);
  if (match === null) throw new Error(`${name} not in /metrics (HTTP ${res.status}): ${text.split("\n").filter((l) => l.includes(name) || l.includes("gauge_failures")).join(" | ") || text.slice(0, 200)}`);
  return BigInt(match[1]!);
}

/** A delegated attestation by `attester`, signed by the owner at the attester's EAS nonce, wrapped by `wrap`. */
async function signedFor(attester: Hex, schemaName: "user-review" | "linked-identifier", data: Record<string, unknown>, wrap = (s: Hex) => s) {
  const def = findSchemaByName(schemaName)!;
  const nonce = await chain.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [attester] });
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids[schemaName] as Hex, schema: def.schema, revocable: def.revocable },
    data,
    attester,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return { prepared, signature: wrap(await owner.signTypedData(signableTypedData(prepared))), attester };
}

/**
 * Posts `body` five times and checks the outcome both relays must show: the first attempt sends the one factory
 * transaction (500 SUBMISSION_FAILED naming it), the four others are 400 INVALID_SIGNATURE without any call that
 * reads or spends for the wallet reaching the node. Returns the factory transaction's receipt.
 */
async function postFiveTimes(path: string, body: unknown, wallet: Hex, cookie?: string) {
  const sentBefore = sentRaw().length;
  const first = await post(stack.baseUrl, path, body, cookie);
  const callsAfterFirst = proxy.calls.length;
  const later = [];
  for (let i = 0; i < 4; i++) later.push(await post(stack.baseUrl, path, body, cookie));
  const sent = sentRaw().slice(sentBefore);

  expect(sent).toHaveLength(1);
  expect([first.status, first.body.code]).toEqual([500, "SUBMISSION_FAILED"]);
  expect(later.map((r) => [r.status, r.body.code])).toEqual(Array(4).fill([400, "INVALID_SIGNATURE"]));
  expect(later[0]!.body.error).toContain("deploy the wallet");
  expect(proxy.calls.slice(callsAfterFirst).filter((c) => SPENDING.has(c.method))).toEqual([]);
  expect(await code(wallet)).toBe("0x");
  const receipt = await chain.getTransactionReceipt({ hash: keccak256(sent[0]!) });
  expect(first.body.details).toBe(receipt.transactionHash);
  // The transaction did burn gas (about its limit), to the factory, not EAS.
  expect(receipt.to?.toLowerCase()).toBe(drain.address.toLowerCase());
  expect(receipt.gasUsed).toBeGreaterThan(REQUIRE_ABOVE);
  return receipt;
}

const review = { subject: "did:web:drain.test", version: "1.0.0", ratingValue: 1, reviewBody: "gas drain", screenshotUrls: [], proofs: [] };

describe("an ERC-6492 factory that deploys only with more gas than the service sends", () => {
  test("public relay: the same attestation five times sends one factory transaction, charged to the hourly budget; later attempts are refused before any gas", async () => {
    const wallet = await drain.predict(owner.address, 1);
    const body = await signedFor(wallet, "user-review", review, (s) => drain.wrap6492(owner.address, 1, s));
    // The gauge is the gas charged this UTC hour: before and after must be read in one hour.
    await withinOneBudgetHour();
    const budgetBefore = await metric(stack.baseUrl, "ats_public_relay_gas_used");

    const receipt = await postFiveTimes("/v1/delegated-attest", body, wallet);
    expect(await metric(stack.baseUrl, "ats_public_relay_gas_used") - budgetBefore).toBeGreaterThanOrEqual(receipt.gasUsed);
  }, BUDGET_HOUR_TEST_MS);

  test("private relay: five times sends one factory transaction, the sponsored write stays used and the private budget is charged", async () => {
    const wallet = await drain.predict(owner.address, 2);
    const wrap = (s: Hex) => drain.wrap6492(owner.address, 2, s);
    // Sign-in asks the ERC-6492 validator (a read-only call): the factory deploys there, so the wallet signs in.
    const challenge = await post(stack.baseUrl, "/v1/session/wallet/challenge", { walletDid: `did:pkh:eip155:31337:${wallet}`, domain: "app.test", uri: `${APP}/login` });
    const signedIn = await post(stack.baseUrl, "/v1/session/wallet/verify", {
      challengeId: challenge.body.challengeId,
      siweMessage: challenge.body.siweMessage,
      signature: wrap(await owner.signMessage({ message: challenge.body.siweMessage })),
    });
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.cookie!;
    const subject = `did:pkh:eip155:31337:${wallet.toLowerCase()}`;
    const body = await signedFor(wallet, "linked-identifier", {
      subject, linkedId: "did:web:drain.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0,
    }, wrap);
    await withinOneBudgetHour();
    const budgetBefore = await metric(stack.baseUrl, "ats_private_relay_gas_used");

    const receipt = await postFiveTimes("/api/private/relay/eas/delegated-attest", body, wallet, cookie);
    expect(await metric(stack.baseUrl, "ats_private_relay_gas_used") - budgetBefore).toBeGreaterThanOrEqual(receipt.gasUsed);
    const me = await fetch(`${stack.baseUrl}/api/private/accounts/me`, { headers: { cookie, origin: APP } });
    expect(((await me.json()) as any).subscription.sponsoredWritesUsedCurrentYear).toBe(1);
  }, BUDGET_HOUR_TEST_MS);

  test("the private relay's hourly gas budget, once spent, is 429 RATE_LIMITED with Retry-After before any RPC", async () => {
    const key = generatePrivateKey();
    const account = privateKeyToAccount(key);
    const cookie = await signInCookie(stack.baseUrl, key, { origin: APP });
    // A second instance on the same chain and database whose budget has no room for a typical attestation.
    const tight = await stack.restartService({ PRIVATE_RELAY_GAS_BUDGET_PER_HOUR: "1" });
    const nonce = await chain.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
    const def = findSchemaByName("linked-identifier")!;
    const prepared = prepareDelegatedAttestation({
      schema: { uid: stack.devnet.schemaUids["linked-identifier"] as Hex, schema: def.schema, revocable: def.revocable },
      data: { subject: `did:pkh:eip155:31337:${account.address.toLowerCase()}`, linkedId: "did:web:budget.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 },
      attester: account.address,
      nonce,
      chainId: stack.service.chainId,
      easAddress: stack.service.easAddress,
    });
    const body = { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
    const callsBefore = proxy.calls.length;
    const refused = await post(tight.url, "/api/private/relay/eas/delegated-attest", body, cookie);
    expect([refused.status, refused.body.code]).toEqual([429, "RATE_LIMITED"]);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(3_600);
    expect(proxy.calls.slice(callsBefore).filter((c) => SPENDING.has(c.method) || c.method === "eth_getTransactionCount")).toEqual([]);
    // The same request on an instance with room is written: the refusal was the budget's, nothing was recorded.
    const written = await post(stack.baseUrl, "/api/private/relay/eas/delegated-attest", body, cookie);
    expect(written.status).toBe(200);
  });
});
