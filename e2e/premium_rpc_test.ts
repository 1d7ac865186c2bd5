/**
 * `POST /api/private/rpc-premium` on the devnet (issue 17, item 7): read calls forwarded and counted against the
 * plan, writes and over-wide log ranges refused as JSON-RPC errors and never forwarded, a node failure given
 * back, the limit (five reads: the sixth is 403), no session 401, a foreign origin 403. Every JSON-RPC call the
 * service makes goes through a recording proxy in front of Anvil.
 *
 * Issue 23 (premium reads stalled the node free of charge): a state override is refused before the node; an
 * endless loop at a deployed contract runs with its gas capped and is counted; a call that times out at the node
 * is a read spent; a slow node holds neither other requests past the in-flight bounds (429), nor delegated
 * attestation, nor shutdown.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { signInWithWallet, type WalletSession } from "../client/session.ts";
import { type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
let stack: Stack;
let proxy: RpcProxy;
beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      FREE_PLAN_ANNUAL_PREMIUM_READS: "5",
      PREMIUM_RPC_MAX_LOG_RANGE: "100",
      // Issue 23: a call held at the node ends here (the tests count what it costs, not how long it took).
      PREMIUM_RPC_TIMEOUT_MS: "2000",
    },
    rpcUrlFor: (url) => {
      proxy.upstream = url;
      return proxy.url;
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

async function signIn(): Promise<WalletSession> {
  const wallet = privateKeyToAccount(generatePrivateKey());
  return await signInWithWallet({
    walletDid: `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`,
    domain: "app.test",
    uri: `${APP}/login`,
    sign: (message) => wallet.signMessage({ message }),
  }, { baseUrl: stack.baseUrl, origin: APP });
}

async function premium(body: unknown, cookie?: string, origin = APP, baseUrl = stack.baseUrl) {
  const res = await fetch(`${baseUrl}/api/private/rpc-premium`, {
    method: "POST",
    headers: { "content-type": "application/json", origin, ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() as any };
}
const used = async (cookie: string) =>
  (await (await fetch(`${stack.baseUrl}/api/private/accounts/me`, { headers: { cookie, origin: APP } })).json() as any).subscription.premiumReadsUsedCurrentYear;
const rpcCall = (id: unknown, method: string, params: unknown[] = []) => ({ jsonrpc: "2.0", id, method, params });

describe("premium reads", () => {
  test("reads are answered by the chain and counted; writes and wide ranges are refused and never forwarded; a node failure is given back; the sixth read of five is 403", async () => {
    const session = await signIn();
    const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
    const head = await chain.getBlockNumber({ cacheTime: 0 });

    // 1. A single eth_blockNumber, answered by the chain.
    const single = await premium(rpcCall(7, "eth_blockNumber"), session.cookie);
    expect(single.status).toBe(200);
    expect(single.body).toEqual({ jsonrpc: "2.0", id: 7, result: expect.any(String) });
    expect(BigInt(single.body.result)).toBeGreaterThanOrEqual(head);
    expect(await used(session.cookie)).toBe(1);

    // 2. A batch: a read, a real signed transfer from a funded wallet (refused), a log range of 4,097 blocks
    //    (refused: at most 100 here) and a balance, answered in order.
    const sender = privateKeyToAccount(stack.devnet.keys.users[0] as Hex);
    const nonceBefore = await chain.getTransactionCount({ address: sender.address, blockTag: "pending" });
    const balanceBefore = await chain.getBalance({ address: sender.address });
    const rawTransaction = await sender.signTransaction({
      chainId: stack.devnet.chainId,
      nonce: nonceBefore,
      to: privateKeyToAccount(generatePrivateKey()).address,
      value: parseEther("1"),
      gas: 21_000n,
      maxFeePerGas: 100_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    });
    proxy.calls.length = 0;
    const batch = await premium([
      rpcCall("chain", "eth_chainId"),
      rpcCall("write", "eth_sendRawTransaction", [rawTransaction]),
      rpcCall("wide", "eth_getLogs", [{ fromBlock: "0x0", toBlock: "0x1000" }]),
      rpcCall("balance", "eth_getBalance", [sender.address, "latest"]),
    ], session.cookie);
    expect(batch.status).toBe(200);
    expect(batch.body.map((a: { id: string }) => a.id)).toEqual(["chain", "write", "wide", "balance"]);
    expect(BigInt(batch.body[0].result)).toBe(BigInt(stack.devnet.chainId));
    expect(batch.body[1].error.code).toBe(-32601);
    expect(batch.body[1].result).toBeUndefined();
    expect(batch.body[2].error.code).toBe(-32602);
    expect(BigInt(batch.body[3].result)).toBe(balanceBefore);
    // Neither refused call reached the node (other traffic of the service, such as the index follower, may have).
    expect(proxy.calls.filter((c) => c.method === "eth_sendRawTransaction")).toEqual([]);
    expect(proxy.calls.filter((c) => c.method === "eth_getLogs" && JSON.stringify(c.params).includes("0x1000"))).toEqual([]);
    expect(proxy.calls.filter((c) => c.method === "eth_getBalance" && JSON.stringify(c.params).includes(sender.address))).toHaveLength(1);
    // And the chain did not move: the transfer was never sent.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await chain.getTransactionCount({ address: sender.address, blockTag: "pending" })).toBe(nonceBefore);
    expect(await chain.getBalance({ address: sender.address })).toBe(balanceBefore);
    expect(await used(session.cookie)).toBe(3);

    // 3. A log range with its upper bound missing (the head, read first) within the limit: forwarded and counted.
    const recent = await chain.getBlockNumber({ cacheTime: 0 });
    const tagged = await premium(rpcCall("logs", "eth_getLogs", [{ fromBlock: `0x${(recent > 5n ? recent - 5n : 0n).toString(16)}` }]), session.cookie);
    expect([tagged.status, tagged.body.id, Array.isArray(tagged.body.result)]).toEqual([200, "logs", true]);
    const afterTagged = 4;
    expect(await used(session.cookie)).toBe(afterTagged);

    // 4. The node cannot be reached: 502 without its text, the reads given back.
    proxy.onHttp = (calls) => (calls.some((c) => c.method === "eth_getCode") ? new Response("upstream secret", { status: 502 }) : undefined);
    const down = await premium(rpcCall(1, "eth_getCode", [sender.address, "latest"]), session.cookie);
    proxy.onHttp = undefined;
    expect([down.status, down.body]).toEqual([502, { error: "The chain did not answer", code: "NETWORK_ERROR" }]);
    expect(await used(session.cookie)).toBe(afterTagged);

    // 5. Five reads a year on this plan: a batch that does not fit is refused whole, then reads up to five, the sixth 403.
    const left = 5 - afterTagged;
    const tooMany = await premium(Array.from({ length: left + 1 }, (_, i) => rpcCall(i, "eth_chainId")), session.cookie);
    expect([tooMany.status, tooMany.body.code]).toEqual([403, "PREMIUM_READ_LIMIT_EXCEEDED"]);
    expect(await used(session.cookie)).toBe(afterTagged);
    for (let i = 0; i < left; i++) expect((await premium(rpcCall(i, "eth_chainId"), session.cookie)).status).toBe(200);
    expect(await used(session.cookie)).toBe(5);
    proxy.calls.length = 0;
    const sixth = await premium(rpcCall(6, "eth_blockNumber"), session.cookie);
    expect([sixth.status, sixth.body]).toEqual([403, { error: "Premium read limit exceeded", code: "PREMIUM_READ_LIMIT_EXCEEDED" }]);
    expect(await used(session.cookie)).toBe(5);
    // A refused call needs no read: it is still answered at the limit.
    const refusedAtLimit = await premium(rpcCall(8, "eth_sendRawTransaction", [rawTransaction]), session.cookie);
    expect([refusedAtLimit.status, refusedAtLimit.body.error.code]).toEqual([200, -32601]);
    expect(proxy.calls.filter((c) => c.method === "eth_sendRawTransaction")).toEqual([]);

    // Another account has its own five.
    const other = await signIn();
    expect((await premium(rpcCall(1, "eth_chainId"), other.cookie)).status).toBe(200);
    expect(await used(other.cookie)).toBe(1);
  });

  test("without a session 401; a foreign origin 403; a malformed body 400", async () => {
    const none = await premium(rpcCall(1, "eth_chainId"));
    expect([none.status, none.body.code]).toEqual([401, "UNAUTHENTICATED"]);
    const session = await signIn();
    const foreign = await premium(rpcCall(1, "eth_chainId"), session.cookie, "https://evil.test");
    expect([foreign.status, foreign.body.code]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
    const empty = await premium([], session.cookie);
    expect([empty.status, empty.body.code]).toEqual([400, "INVALID_INPUT"]);
    const res = await fetch(`${stack.baseUrl}/api/private/rpc-premium`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: APP, cookie: session.cookie },
      body: "{\"jsonrpc\":",
    });
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([400, "INVALID_JSON"]);
    expect(await used(session.cookie)).toBe(0);
  });
});

/** Init code that deploys `0x5b600056` (JUMPDEST PUSH1 0 JUMP): an endless loop, ended only by the gas. */
const LOOP_INIT = "0x635b6000566000526004601cf3" as Hex;
/** `PREMIUM_RPC_MAX_CALL_GAS`'s default, as the node sees it. */
const CAPPED_GAS = `0x${(30_000_000).toString(16)}`;
/** An address the proxy holds calls to until released (a node stuck on a call). */
const STUCK = "0x5107000000000000000000000000000000005107";

/** Deploys the loop with a create transaction from an Anvil dev account; its address. */
async function deployLoop(): Promise<Hex> {
  const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 20 });
  const wallet = createWalletClient({ account: privateKeyToAccount(stack.devnet.keys.users[2] as Hex), transport: http(stack.devnet.rpcUrl) });
  const hash = await wallet.sendTransaction({ chain: null, data: LOOP_INIT });
  const receipt = await chain.waitForTransactionReceipt({ hash });
  expect(await chain.getCode({ address: receipt.contractAddress! })).toBe("0x5b600056");
  return receipt.contractAddress!;
}

/** A delegated attestation (a user review) through the public relay: its status. */
async function delegatedAttest(baseUrl = stack.baseUrl): Promise<number> {
  const account = privateKeyToAccount(generatePrivateKey());
  const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
  const nonce = await chain.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: "did:web:example.com", version: "1.0.0", ratingValue: 5, reviewBody: "Still fast", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  const signature = await account.signTypedData(signableTypedData(prepared));
  const res = await fetch(`${baseUrl}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prepared, signature, attester: account.address }),
  });
  await res.body?.cancel();
  return res.status;
}

/** The eth_calls the node was sent to `address`. */
const callsTo = (address: string) =>
  proxy.calls.filter((c) => c.method === "eth_call" && String((c.params[0] as { to?: string } | undefined)?.to).toLowerCase() === address.toLowerCase());

/** Holds every HTTP request to the node that calls {@link STUCK} until `release()`; counts them. */
function holdStuckCalls() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  proxy.onHttp = async (calls) => {
    if (!calls.some((c) => c.method === "eth_call" && (c.params[0] as { to?: string } | undefined)?.to === STUCK)) return undefined;
    held++;
    await released;
    return Response.json(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, result: "0x" })));
  };
  return {
    held: () => held,
    release() {
      proxy.onHttp = undefined;
      release();
    },
  };
}

/** Waits until `check` holds (polling the proxy's counts; no timing is asserted). */
async function until(check: () => boolean) {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("premium reads cannot stall the node (issue 23)", () => {
  test("the attack: a state override placing an endless loop, gas 0xffffffffffff, is refused without reaching the node and not counted; so are block overrides and unknown call fields", async () => {
    const session = await signIn();
    // Should a call get past the service, the proxy answers it itself: the node is never made to run the loop.
    proxy.onHttp = (calls) =>
      calls.some((c) => c.method === "eth_call" && c.params.length > 2)
        ? Response.json(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, error: { code: -32000, message: "override reached the node" } })))
        : undefined;
    proxy.calls.length = 0;
    const target = privateKeyToAccount(generatePrivateKey()).address;
    const loop = { to: target, data: "0x", gas: "0xffffffffffff" };
    const override = { [target]: { code: "0x5b600056" } };
    const attack = await premium(rpcCall(1, "eth_call", [loop, "latest", override]), session.cookie);
    proxy.onHttp = undefined;
    expect(attack.status).toBe(200);
    expect(attack.body).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message: expect.stringContaining("state overrides") } });
    const batch = await premium([
      rpcCall("block", "eth_call", [loop, "latest", {}, { number: "0x1" }]),
      rpcCall("auth", "eth_call", [{ ...loop, authorizationList: [] }, "latest"]),
      rpcCall("extra", "eth_getBalance", [target, "latest", override]),
    ], session.cookie);
    expect(batch.body.map((a: { id: string; error?: { code: number } }) => [a.id, a.error?.code])).toEqual([["block", -32602], ["auth", -32602], ["extra", -32602]]);
    expect(callsTo(target)).toEqual([]);
    expect(proxy.calls.filter((c) => c.method === "eth_getBalance")).toEqual([]);
    expect(await used(session.cookie)).toBe(0);
    expect(await delegatedAttest()).toBe(200);
  });

  test("an endless loop at a deployed contract with gas 0xffffffffffff is forwarded with the gas capped, and counted; a call without gas gets the cap; delegated attestation works right after", async () => {
    const session = await signIn();
    const loop = await deployLoop();
    // Should uncapped gas get past the service, the proxy refuses it itself: the node would run for days.
    proxy.onHttp = (calls) =>
      calls.some((c) => c.method === "eth_call" && BigInt((c.params[0] as { gas?: string }).gas ?? "0") > 30_000_000n)
        ? Response.json(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, error: { code: -32000, message: "uncapped gas reached the node" } })))
        : undefined;
    proxy.calls.length = 0;
    const answer = await premium(rpcCall("loop", "eth_call", [{ to: loop, gas: "0xffffffffffff" }, "latest"]), session.cookie);
    const noGas = await premium(rpcCall("nogas", "eth_call", [{ to: loop, data: "0x" }]), session.cookie);
    proxy.onHttp = undefined;
    // The node ran out of gas (an error object, passed on), and the read is spent.
    expect([answer.status, answer.body.id, answer.body.error?.message]).toEqual([200, "loop", expect.stringContaining("OutOfGas")]);
    expect([noGas.status, noGas.body.id, noGas.body.error?.message]).toEqual([200, "nogas", expect.stringContaining("OutOfGas")]);
    expect(callsTo(loop).map((c) => c.params)).toEqual([[{ to: loop, gas: CAPPED_GAS }, "latest"], [{ to: loop, data: "0x", gas: CAPPED_GAS }]]);
    expect(await used(session.cookie)).toBe(2);
    expect(await delegatedAttest()).toBe(200);
  });

  test("a call that times out at the node is a read spent (502 NETWORK_ERROR); one the node never took is given back", async () => {
    const session = await signIn();
    const stuck = holdStuckCalls();
    const timedOut = await premium(rpcCall(1, "eth_call", [{ to: STUCK }, "latest"]), session.cookie);
    stuck.release();
    expect(stuck.held()).toBe(1);
    expect([timedOut.status, timedOut.body]).toEqual([502, { error: "The chain did not answer in time", code: "NETWORK_ERROR" }]);
    expect(await used(session.cookie)).toBe(1);
    // The node refusing the request outright (it ran nothing): given back.
    proxy.onHttp = () => new Response("busy", { status: 503 });
    const refused = await premium(rpcCall(2, "eth_call", [{ to: STUCK }, "latest"]), session.cookie);
    proxy.onHttp = undefined;
    expect([refused.status, refused.body.code]).toEqual([502, "NETWORK_ERROR"]);
    expect(await used(session.cookie)).toBe(1);
    expect(await delegatedAttest()).toBe(200);
  });

  test("a slow node: past two requests of an account or three in all waiting on it, 429 RATE_LIMITED with Retry-After and nothing forwarded; delegated attestation still works; the service stops without waiting for them, the reads spent", async () => {
    // A second instance on the same chain and database whose premium calls would wait on the node for two minutes.
    const service = await stack.restartService({
      PREMIUM_RPC_TIMEOUT_MS: "120000",
      PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT: "2",
      PREMIUM_RPC_MAX_IN_FLIGHT: "3",
    });
    const [a, b] = [await signIn(), await signIn()];
    proxy.calls.length = 0;
    const stuck = holdStuckCalls();
    try {
      const slow = (cookie: string, id: number) => premium(rpcCall(id, "eth_call", [{ to: STUCK }, "latest"]), cookie, APP, service.url);
      const waiting = [slow(a.cookie, 1), slow(a.cookie, 2)];
      await until(() => stuck.held() === 2);
      // The account's third: refused before the node, not counted.
      const third = await slow(a.cookie, 3);
      expect([third.status, third.retryAfter, third.body.code]).toEqual([429, "1", "RATE_LIMITED"]);
      // Another account has room until three wait in all.
      waiting.push(slow(b.cookie, 4));
      await until(() => stuck.held() === 3);
      const fourth = await slow(b.cookie, 5);
      expect([fourth.status, fourth.retryAfter, fourth.body.code]).toEqual([429, "1", "RATE_LIMITED"]);
      expect(stuck.held()).toBe(3);
      expect(callsTo(STUCK)).toHaveLength(3);
      // A request that forwards nothing needs no slot, and the rest of the service is not held.
      expect((await premium(rpcCall(6, "eth_sendRawTransaction", ["0x02"]), a.cookie, APP, service.url)).body.error.code).toBe(-32601);
      expect(await delegatedAttest(service.url)).toBe(200);
      // Stopping does not wait for the node: the waiting requests end (502) while the node still holds their calls.
      await service.stop();
      expect(stuck.held()).toBe(3);
      const ended = await Promise.all(waiting);
      expect(ended.map((r) => [r.status, r.body.code])).toEqual([[502, "NETWORK_ERROR"], [502, "NETWORK_ERROR"], [502, "NETWORK_ERROR"]]);
      // Handed to the node, they are reads spent.
      expect([await used(a.cookie), await used(b.cookie)]).toEqual([2, 1]);
    } finally {
      stuck.release();
    }
  });
});
