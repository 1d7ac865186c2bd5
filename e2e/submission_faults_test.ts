/**
 * Submission outcomes under provider faults (issue 15, decisions §15): a JSON-RPC proxy in front of a real
 * Anvil forwards then drops answers, refuses, or goes away, per method; each case is checked against the
 * chain (attestations per attester, the delegate's nonce), the replay record and the witness quota.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createPublicClient, createTestClient, createWalletClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { createSqliteReplayStore, openSqlite } from "../adapters/sqlite/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { fetchSession, requestControllerWitness, signInWithWallet } from "../client/session.ts";
import { isAtsClientError } from "../client/errors.ts";
import type { Service } from "../app/service.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { postDelegatedAttest, replayRecordOf } from "./support/review_signer.ts";
import { type RpcCall, type RpcProxy, inFrontOf, isSend, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
/** Longer than the JSON-RPC client's own timeout (10 s): a sync send always ends with its answer or that timeout. */
const SYNC_ANSWER_ALWAYS_AWAITED_MS = 120_000;
let proxy: RpcProxy;
let dns: DnsServer;
let stack: Stack;
const controllerKey = privateKeyToAccount(generatePrivateKey());
const env = (dnsAddress: string) => ({
  DNS_SERVERS: dnsAddress,
  ALLOW_PRIVATE_NETWORK: "true",
  SIWE_DOMAINS: "app.test",
  CORS_ORIGINS: APP,
  FREE_PLAN_ANNUAL_WRITES: "5",
  WITNESS_USER_RATE_PER_MINUTE: "100",
  WITNESS_DOMAIN_RATE_PER_MINUTE: "100",
  DISCOVERY_DOMAIN_RATE_PER_MINUTE: "100",
});

beforeAll(async () => {
  proxy = startRpcProxy("");
  dns = await startDnsServer();
  dns.setTxt("_controllers.faults.test", [[`v=1;controller=did:pkh:eip155:31337:${controllerKey.address}`]]);
  stack = await startStack({
    env: env(dns.address),
    rpcUrlFor: inFrontOf(proxy),
    // The proxy answers every send (or the node behind it does): that answer decides each case, however long it
    // takes on a loaded machine. With the 100 ms default, a late answer sent the sender to ask about the hash first, and
    // "goes away after taking the send" then found it mined and waited for a receipt from a node that was gone.
    sendSyncGraceMs: SYNC_ANSWER_ALWAYS_AWAITED_MS,
  });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
  await dns?.stop();
});
beforeEach(() => healProxy());

function healProxy() {
  proxy.onHttp = undefined;
  proxy.onCall = undefined;
  proxy.onAnswered = undefined;
}

/** Whether an HTTP request carries a send, by either method (the sync one on this automining Anvil). */
const sends = (calls: readonly RpcCall[]) => calls.some((c) => isSend(c.method));
const lostAnswer = () => new Response("bad gateway", { status: 502 });

/** From the first send on, the node is out of reach: the send itself is forwarded when `forwardSend`. */
function goAwayAtSend(forwardSend: boolean) {
  let gone = false;
  proxy.onHttp = (calls) => {
    if (gone) return lostAnswer();
    if (sends(calls) && !forwardSend) {
      gone = true;
      return lostAnswer();
    }
    return undefined;
  };
  proxy.onAnswered = (calls) => {
    if (!sends(calls)) return undefined;
    gone = true;
    return lostAnswer();
  };
}

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
const testClient = () => createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) });

async function signedReview(key: Hex) {
  const account = privateKeyToAccount(key);
  const nonce = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: "did:web:example.com", version: "1.0.0", ratingValue: 4, reviewBody: "ok", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  const signature = await account.signTypedData(signableTypedData(prepared));
  return { body: { prepared, signature, attester: account.address }, attester: account.address, signature };
}

const attest = (body: unknown, base = stack.baseUrl) => postDelegatedAttest(base, body);

/** Attestations on chain by an attester, read from the node directly. */
async function attestationsBy(attester: Hex): Promise<number> {
  const logs = await chain().getContractEvents({
    address: stack.service.easAddress,
    abi: EAS_ABI,
    eventName: "Attested",
    args: { attester },
    fromBlock: 0n,
  });
  return logs.length;
}

const replayRow = (signature: Hex) => replayRecordOf(stack.dir, stack.service.chainId, signature);

const delegateNonce = () => chain().getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.delegate).address });

/**
 * Mines a transfer of nothing from the delegate to itself at its next nonce, sent to the node directly: it takes the
 * nonce of a stored transaction that never reached the node, which can then never land.
 */
async function takeDelegateNonce() {
  const account = privateKeyToAccount(stack.devnet.keys.delegate);
  const wallet = createWalletClient({ account, transport: http(stack.devnet.rpcUrl) });
  const hash = await wallet.sendTransaction({ to: account.address, value: 0n, nonce: await delegateNonce(), chain: null });
  expect((await chain().waitForTransactionReceipt({ hash, pollingInterval: 20, timeout: 50_000 })).status).toBe("success");
}

describe("delegated attestation under provider faults", () => {
  test("the node takes the transaction but its answer is lost: 200 with the uid, one attestation, a retry is 409 with the uid", async () => {
    const { body, attester, signature } = await signedReview(generatePrivateKey());
    proxy.onAnswered = (calls) => (sends(calls) ? lostAnswer() : undefined);
    const first = await attest(body);
    expect(first.status).toBe(200);
    expect(first.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    healProxy();
    const again = await attest(body);
    expect([again.status, again.body.code, again.body.details]).toEqual([409, "DUPLICATE", first.body.uid]);
    expect(await attestationsBy(attester)).toBe(1);
    expect(await replayRow(signature)).toMatchObject({ state: "mined", uid: first.body.uid });
  });

  test("the node refuses the send: 500 SUBMISSION_FAILED, the signature is released and works once the node accepts", async () => {
    const { body, attester, signature } = await signedReview(generatePrivateKey());
    const nonceBefore = await delegateNonce();
    proxy.onCall = (call) => (isSend(call.method) ? { code: -32000, message: "txpool is full" } : undefined);
    const refused = await attest(body);
    expect([refused.status, refused.body.code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect(JSON.stringify(refused.body)).not.toContain("txpool");
    expect(await replayRow(signature)).toBeUndefined();
    expect(await delegateNonce()).toBe(nonceBefore);
    healProxy();
    const retried = await attest(body);
    expect(retried.status).toBe(200);
    expect(await attestationsBy(attester)).toBe(1);
  });

  test("an unfunded delegate wallet: 503 SUBMISSION_FAILED with nothing recorded, and the same signature works after a refill", async () => {
    const { body, attester, signature } = await signedReview(generatePrivateKey());
    const delegate = privateKeyToAccount(stack.devnet.keys.delegate).address;
    const balance = await chain().getBalance({ address: delegate });
    await testClient().setBalance({ address: delegate, value: 0n });
    try {
      const refused = await attest(body);
      expect([refused.status, refused.body.code]).toEqual([503, "SUBMISSION_FAILED"]);
      expect(await replayRow(signature)).toBeUndefined();
    } finally {
      await testClient().setBalance({ address: delegate, value: balance });
    }
    expect((await attest(body)).status).toBe(200);
    expect(await attestationsBy(attester)).toBe(1);
  });

  test("the node is unreachable from the send on: 503 OUTCOME_UNKNOWN with the hash, 409 with the hash, then settled by the reconciler", async () => {
    const { body, attester, signature } = await signedReview(generatePrivateKey());
    goAwayAtSend(false);
    const unknown = await attest(body);
    expect([unknown.status, unknown.body.code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    const txHash = unknown.body.details as string;
    expect(txHash).toMatch(/^0x[0-9a-f]{64}$/);
    const row = await replayRow(signature);
    expect(row).toMatchObject({ state: "sent", txHash });
    expect(row?.tx?.raw).toMatch(/^0x02/);
    const retry = await attest(body);
    expect([retry.status, retry.body.code, retry.body.details]).toEqual([409, "DUPLICATE", txHash]);
    expect(await attestationsBy(attester)).toBe(0);

    // The node is back; the transaction never reached it: the reconciler sends the stored bytes, same hash.
    healProxy();
    const restarted = await stack.restartService(env(dns.address));
    expect(await replayRow(signature)).toMatchObject({ state: "mined", txHash });
    const settled = await attest(body, restarted.url);
    expect([settled.status, settled.body.code]).toEqual([409, "DUPLICATE"]);
    expect(settled.body.details).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await attestationsBy(attester)).toBe(1);
    const receipt = await chain().getTransactionReceipt({ hash: txHash as Hex });
    expect(receipt.status).toBe("success");
    await restarted.stop();
  });

  test("the node takes the transaction, then goes away: 503 OUTCOME_UNKNOWN, and the restart finds it mined without sending again", async () => {
    const { body, attester, signature } = await signedReview(generatePrivateKey());
    goAwayAtSend(true);
    const unknown = await attest(body);
    expect([unknown.status, unknown.body.code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    expect(await attestationsBy(attester)).toBe(1);
    healProxy();
    const sendsBefore = proxy.calls.filter((c) => isSend(c.method)).length;
    const restarted = await stack.restartService(env(dns.address));
    expect(await replayRow(signature)).toMatchObject({ state: "mined", txHash: unknown.body.details });
    expect(proxy.calls.filter((c) => isSend(c.method)).length).toBe(sendsBefore);
    const again = await attest(body, restarted.url);
    expect([again.status, again.body.code]).toEqual([409, "DUPLICATE"]);
    expect(await attestationsBy(attester)).toBe(1);
    await restarted.stop();
  });
});

describe("controller witness under provider faults", () => {
  const subjectDid = "did:web:faults.test";
  const controllerDid = `did:pkh:eip155:31337:${controllerKey.address}`;
  const opts = (service?: Service) => ({ baseUrl: service?.url ?? stack.baseUrl, origin: APP });
  const signIn = async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    return await signInWithWallet({
      walletDid: `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`,
      domain: "app.test",
      uri: `${APP}/login`,
      sign: (message) => wallet.signMessage({ message }),
    }, opts());
  };
  const outcome = async (promise: Promise<unknown>) => {
    try {
      return { status: 200, value: await promise as Record<string, any> };
    } catch (error) {
      if (isAtsClientError(error)) return { status: error.status, code: error.code, details: (error.body as { details?: string } | undefined)?.details };
      throw error;
    }
  };
  const witnessesFor = async () =>
    (await chain().getContractEvents({
      address: stack.service.easAddress,
      abi: EAS_ABI,
      eventName: "Attested",
      args: { schemaUID: stack.devnet.schemaUids["controller-witness"] as Hex },
      fromBlock: 0n,
    })).length;

  test("the answer to the send is lost: the witness is written, answered 200 and charged once", async () => {
    const session = await signIn();
    const before = await witnessesFor();
    proxy.onAnswered = (calls) => (sends(calls) ? lostAnswer() : undefined);
    const written = await outcome(requestControllerWitness({ subjectDid, controllerDid }, session, opts()));
    healProxy();
    expect(written.status).toBe(200);
    expect(await witnessesFor()).toBe(before + 1);
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 1, reserved: 0 });
  });

  test("the node refuses the send: 500 SUBMISSION_FAILED, nothing written, nothing charged", async () => {
    const session = await signIn();
    const before = await witnessesFor();
    proxy.onCall = (call) => (isSend(call.method) ? { code: -32000, message: "nonce too high" } : undefined);
    const refused = await outcome(requestControllerWitness({ subjectDid, controllerDid }, session, opts()));
    healProxy();
    expect([refused.status, refused.code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect(await witnessesFor()).toBe(before);
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 0, reserved: 0 });
    expect((await outcome(requestControllerWitness({ subjectDid, controllerDid }, session, opts()))).status).toBe(200);
  });

  test("the node goes away after taking the send: 503 OUTCOME_UNKNOWN, the write stays reserved, and the restart charges it", async () => {
    const session = await signIn();
    const before = await witnessesFor();
    goAwayAtSend(true);
    const unknown = await outcome(requestControllerWitness({ subjectDid, controllerDid }, session, opts()));
    healProxy();
    expect([unknown.status, unknown.code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    expect(await witnessesFor()).toBe(before + 1);
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 0, reserved: 1 });
    const restarted = await stack.restartService(env(dns.address));
    expect((await fetchSession(session, opts(restarted))).quota).toMatchObject({ used: 1, reserved: 0 });
    await restarted.stop();
  });

  test("fifteen concurrent requests with no evidence never make a request with evidence hit the limit", async () => {
    const session = await signIn();
    const missing = `did:pkh:eip155:31337:${privateKeyToAccount(generatePrivateKey()).address}`;
    const results = await Promise.all([
      ...Array.from({ length: 15 }, () => outcome(requestControllerWitness({ subjectDid, controllerDid: missing }, session, opts()))),
      outcome(requestControllerWitness({ subjectDid, controllerDid }, session, opts())),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([...Array(15).fill(422), 200].sort());
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 1, reserved: 0 });
  });
});

describe("a transaction the node dropped", () => {
  test("is found lost by the reconciler and sent again from its stored bytes; the transaction queued behind it mines too", async () => {
    const { createViemEas } = await import("../adapters/chain/mod.ts");
    const { createViemTxStatusReader } = await import("../adapters/chain/mod.ts");
    const { createSubmissionReconciler, replayBook } = await import("../domain/delegation/mod.ts");
    const { systemClock } = await import("../adapters/system/mod.ts");
    const key = generatePrivateKey();
    const wallet = privateKeyToAccount(key).address;
    await testClient().setBalance({ address: wallet, value: 10n ** 18n });
    const eas = createViemEas({
      rpcUrl: stack.devnet.rpcUrl,
      chainId: stack.devnet.chainId,
      easAddress: stack.service.easAddress,
      receiptTimeoutMs: 300,
    });
    const sender = eas.senderFor(key);
    const db = openSqlite(join(stack.dir, "dropped.sqlite"));
    const replay = createSqliteReplayStore(db);
    const submit = async (name: string, nonce: bigint) => {
      await replay.claim({ key: name, chainId: stack.devnet.chainId, attester: wallet, nonce, deadline: 4_000_000_000n, createdAtMs: 0 });
      return await sender.send({
        to: wallet,
        data: "0x",
        gas: 21_000n,
        onSigned: async (tx) => void (await replay.markSigned(stack.devnet.chainId, name, tx)),
        onSent: () => replay.markSent(stack.devnet.chainId, name),
      });
    };
    await testClient().setAutomine(false);
    let first: Hex;
    let second: Hex;
    try {
      const a = await submit("first", 0n);
      if (a.ok || a.reason !== "unknown-outcome") throw new Error("expected an unknown outcome with automine off");
      first = a.txHash;
      await testClient().dropTransaction({ hash: first });
      await testClient().setAutomine(true);
      // Sent after the drop: its nonce leaves a gap, so the node queues it behind the lost one.
      const b = await submit("second", 1n);
      if (b.ok || b.reason !== "unknown-outcome") throw new Error("expected the second to wait behind the gap");
      second = b.txHash;
    } finally {
      await testClient().setAutomine(true);
    }
    expect(await chain().getTransactionCount({ address: wallet })).toBe(0);
    const reconcile = createSubmissionReconciler({
      chainId: stack.devnet.chainId,
      books: [replayBook(replay, stack.devnet.chainId)],
      txStatus: createViemTxStatusReader({ client: eas.client, easAddress: stack.service.easAddress, senderOf: eas.senderOf }),
      clock: systemClock,
      graceMs: 0,
      lostAfterMs: 600_000,
    });
    const report = await reconcile();
    expect(report.rebroadcast).toBe(1);
    // Awaited for as long as the test may run: Anvil mines the resent transaction (and the one queued behind it) just
    // after it took it, and how soon says nothing about the outcome (a receipt read at once was not there yet, now and then).
    const receiptOf = (hash: Hex) => chain().waitForTransactionReceipt({ hash, pollingInterval: 20, timeout: 50_000 });
    expect((await receiptOf(first)).status).toBe("success");
    expect((await receiptOf(second)).status).toBe("success");
    await reconcile();
    expect([(await replay.find(stack.devnet.chainId, "first"))?.state, (await replay.find(stack.devnet.chainId, "second"))?.state]).toEqual(["mined", "mined"]);
    expect(await chain().getTransactionCount({ address: wallet })).toBe(2);
    db.close();
  });
});

describe("a 409 DUPLICATE naming a transaction on its way, under an Idempotency-Key", () => {
  test("is not kept: once the reconciler released the record, a retry under the same key runs again (single and batch)", async () => {
    // It was kept (its `details`, a hash, read as an outcome): the retry replayed "on its way" for 24 hours though the
    // released signature was accepted again (decisions §15).
    const { body, attester, signature } = await signedReview(generatePrivateKey());
    const post = async (base: string, path: string, payload: unknown, key: string) => {
      const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify(payload) });
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, any> };
    };
    // The bytes never reach the node: the record stays "sent" with their hash.
    goAwayAtSend(false);
    const unknown = await attest(body);
    expect([unknown.status, unknown.body.code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    const txHash = unknown.body.details as string;
    // From here the node answers again; the stored transaction's nonce is taken by another of the delegate's, so the
    // restart's reconciler finds it replaced and releases the record (the periodic rounds leave rows younger than their
    // grace alone; the restart's does not). A refusal of its resent bytes would prove nothing (found in review).
    healProxy();
    const singleKey = crypto.randomUUID();
    const batchKey = crypto.randomUUID();
    const single = await post(stack.baseUrl, "/v1/delegated-attest", body, singleKey);
    expect([single.status, single.body.code, single.body.details, single.body.error]).toEqual([409, "DUPLICATE", txHash, "Duplicate submission: its transaction is on its way"]);
    const batch = await post(stack.baseUrl, "/v1/delegated-attest/batch", { requests: [body] }, batchKey);
    expect([batch.status, batch.body.txHash, batch.body.results[0].status, batch.body.results[0].code, batch.body.results[0].details]).toEqual([200, null, 409, "DUPLICATE", txHash]);

    await takeDelegateNonce();
    // Its nonce read taken at the restart, and again five minutes on (one reading proves nothing: found in review).
    let later = 0;
    const restarted = await stack.restartService(env(dns.address), { reconcileClock: { nowMs: () => Date.now() + later } });
    try {
      expect(await replayRow(signature)).toMatchObject({ state: "sent" });
      later = 5 * 60_000;
      await restarted.reconcile();
      expect(await replayRow(signature)).toBeUndefined();
      // Released: the retries under the same keys run again, the single one sending the attestation.
      const again = await post(restarted.url, "/v1/delegated-attest", body, singleKey);
      expect([again.status, again.replayed]).toEqual([200, null]);
      expect(again.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
      const batchAgain = await post(restarted.url, "/v1/delegated-attest/batch", { requests: [body] }, batchKey);
      expect([batchAgain.status, batchAgain.replayed, batchAgain.body.results[0].code, batchAgain.body.results[0].details]).toEqual([200, null, "DUPLICATE", again.body.uid]);
      expect(await attestationsBy(attester)).toBe(1);
      // A 409 naming the mined outcome is final: kept under its key.
      const minedKey = crypto.randomUUID();
      const mined = await post(restarted.url, "/v1/delegated-attest", body, minedKey);
      expect([mined.status, mined.body.details, mined.replayed]).toEqual([409, again.body.uid, null]);
      const replayed = await post(restarted.url, "/v1/delegated-attest", body, minedKey);
      expect([replayed.status, replayed.replayed, replayed.body]).toEqual([409, "true", mined.body]);
    } finally {
      await restarted.stop();
    }
  });
});

describe("a 503 OUTCOME_UNKNOWN kept under an Idempotency-Key", () => {
  test("is answered, on a retry under the key, as its submission now stands: mined, the 200 with the uid (single and batch); released, its failure, and the signature runs again", async () => {
    // It was replayed verbatim for the key's 24 hours: "unknown" after the transaction was mined, or released and its
    // signature accepted again (decisions §15, §23).
    const post = async (base: string, path: string, payload: unknown, key?: string) => {
      const headers: Record<string, string> = { "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) };
      const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(payload) });
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, any> };
    };
    const single = "/v1/delegated-attest";
    const batchPath = "/v1/delegated-attest/batch";
    const minedKey = crypto.randomUUID();
    const batchKey = crypto.randomUUID();
    const releasedKey = crypto.randomUUID();
    // The node takes these two transactions (they mine) but the answers are lost.
    const mined = await signedReview(generatePrivateKey());
    goAwayAtSend(true);
    const unknown = await post(stack.baseUrl, single, mined.body, minedKey);
    expect([unknown.status, unknown.body.code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    healProxy();
    const batched = await signedReview(generatePrivateKey());
    goAwayAtSend(true);
    const batchUnknown = await post(stack.baseUrl, batchPath, { requests: [batched.body] }, batchKey);
    expect([batchUnknown.status, batchUnknown.body.results[0].code]).toEqual([200, "OUTCOME_UNKNOWN"]);
    expect([await attestationsBy(mined.attester), await attestationsBy(batched.attester)]).toEqual([1, 1]);
    // These bytes never reach the node: the record stays "sent".
    healProxy();
    const released = await signedReview(generatePrivateKey());
    goAwayAtSend(false);
    const releasedUnknown = await post(stack.baseUrl, single, released.body, releasedKey);
    expect([releasedUnknown.status, releasedUnknown.body.code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    healProxy();

    // Not settled yet (the periodic rounds leave rows younger than their grace alone): the kept answers, replayed.
    for (const [path, payload, key, kept] of [[single, mined.body, minedKey, unknown], [batchPath, { requests: [batched.body] }, batchKey, batchUnknown], [single, released.body, releasedKey, releasedUnknown]] as const) {
      const again = await post(stack.baseUrl, path, payload, key);
      expect([again.status, again.replayed, again.body]).toEqual([kept.status, "true", kept.body]);
    }

    // The restart's reconciler finds the two mined, and releases the third, its nonce taken by another transaction (a
    // refusal of its resent bytes proves nothing: found in review).
    await takeDelegateNonce();
    // The third's nonce read taken at the restart, and again five minutes on (one reading proves nothing: found in review).
    let later = 0;
    const restarted = await stack.restartService(env(dns.address), { reconcileClock: { nowMs: () => Date.now() + later } });
    try {
      expect(await replayRow(mined.signature)).toMatchObject({ state: "mined" });
      expect(await replayRow(released.signature)).toMatchObject({ state: "sent" });
      later = 5 * 60_000;
      await restarted.reconcile();
      expect(await replayRow(released.signature)).toBeUndefined();
      const sendsBefore = proxy.calls.filter((c) => isSend(c.method)).length;
      const minedAgain = await post(restarted.url, single, mined.body, minedKey);
      expect([minedAgain.status, minedAgain.replayed, minedAgain.body.success, minedAgain.body.txHash]).toEqual([200, "true", true, unknown.body.details]);
      expect(minedAgain.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
      // Kept now: the same answer again.
      const minedThird = await post(restarted.url, single, mined.body, minedKey);
      expect([minedThird.status, minedThird.replayed, minedThird.body.uid]).toEqual([200, "true", minedAgain.body.uid]);
      const batchAgain = await post(restarted.url, batchPath, { requests: [batched.body] }, batchKey);
      expect([batchAgain.status, batchAgain.replayed, batchAgain.body.txHash]).toEqual([200, "true", batchUnknown.body.txHash]);
      expect(batchAgain.body.results[0].uid).toMatch(/^0x[0-9a-f]{64}$/);
      // Released: answered as a dead request's retry is (its failure, nothing of it attested), and nothing sent.
      const releasedAgain = await post(restarted.url, single, released.body, releasedKey);
      expect([releasedAgain.status, releasedAgain.replayed, releasedAgain.body.code]).toEqual([500, "true", "SUBMISSION_FAILED"]);
      expect(proxy.calls.filter((c) => isSend(c.method)).length).toBe(sendsBefore);
      // The signature is accepted again: under a new key it runs, and is attested once.
      const fresh = await post(restarted.url, single, released.body, crypto.randomUUID());
      expect([fresh.status, fresh.replayed]).toEqual([200, null]);
      expect([await attestationsBy(mined.attester), await attestationsBy(batched.attester), await attestationsBy(released.attester)]).toEqual([1, 1, 1]);
    } finally {
      await restarted.stop();
    }
  });
});

describe("a relay transaction whose resends get no verdict, on a chain that mines only on demand", () => {
  test("is released once the chain's head stood still for QUIET_HEAD_MS and the node's next block is stamped past its deadline, never on our clock", async () => {
    const { createViemEas, createViemTxStatusReader } = await import("../adapters/chain/mod.ts");
    const { createSubmissionReconciler, replayBook } = await import("../domain/delegation/mod.ts");
    const { fakeClock } = await import("../ports/fakes/mod.ts");
    const { encodeFunctionData } = await import("viem");
    const key = generatePrivateKey();
    const wallet = privateKeyToAccount(key).address;
    await testClient().setBalance({ address: wallet, value: 10n ** 18n });
    // The node's own clock (its pending block's stamp), not ours: the deadline ten minutes after it (the test's real
    // time until its second round stays far below that; it needed under a minute).
    const pendingStamp = async () => (await chain().getBlock({ blockTag: "pending" })).timestamp;
    const deadline = (await pendingStamp()) + 600n;
    const zero = `0x${"00".repeat(32)}` as Hex;
    const data = encodeFunctionData({
      abi: EAS_ABI,
      functionName: "attestByDelegation",
      args: [{
        schema: stack.devnet.schemaUids["user-review"] as Hex,
        data: { recipient: wallet, expirationTime: 0n, revocable: true, refUID: zero, data: "0x", value: 0n },
        signature: { v: 27, r: zero, s: zero },
        attester: wallet,
        deadline,
      }],
    });
    // Every send through the proxy answers an internal error: no verdict, and the node never sees the bytes.
    proxy.onCall = (call) => (isSend(call.method) ? { code: -32603, message: "internal error" } : undefined);
    const eas = createViemEas({ rpcUrl: proxy.url, chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, receiptTimeoutMs: 300 });
    const db = openSqlite(join(stack.dir, "quiet.sqlite"));
    const replay = createSqliteReplayStore(db);
    await replay.claim({ key: "quiet", chainId: stack.devnet.chainId, attester: wallet, nonce: 0n, deadline, createdAtMs: 0 });
    const sent = await eas.senderFor(key).send({
      to: stack.service.easAddress,
      data,
      gas: 300_000n,
      onSigned: async (tx) => void (await replay.markSigned(stack.devnet.chainId, "quiet", tx)),
      onSent: () => replay.markSent(stack.devnet.chainId, "quiet"),
    });
    expect(sent.ok).toBe(false);
    const head = await chain().getBlockNumber();
    const clock = fakeClock(Date.now());
    const reconcile = createSubmissionReconciler({
      chainId: stack.devnet.chainId,
      books: [replayBook(replay, stack.devnet.chainId)],
      // No sender: each resend goes through the proxy, which answers it no verdict.
      txStatus: createViemTxStatusReader({ client: eas.client, easAddress: stack.service.easAddress }),
      clock,
      graceMs: 0,
      lostAfterMs: 600_000,
      // Anvil mines on demand (the service declares it so for its embedded devnet): its `pending` block may count.
      minesOnDemand: true,
    });
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // The head stood still for QUIET_HEAD_MS, but the node's next block would still be stamped before the deadline.
    clock.set(clock.nowMs() + 600_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // The node's clock moved past the deadline, no block mined: the next one EAS refuses the call in.
    await testClient().increaseTime({ seconds: 1_200 });
    expect(await pendingStamp()).toBeGreaterThan(deadline);
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
    expect(await replay.find(stack.devnet.chainId, "quiet")).toBeUndefined();
    expect(await chain().getBlockNumber()).toBe(head);
    expect(await chain().getTransactionCount({ address: wallet })).toBe(0);
    db.close();
  });
});

describe("an Anvil reached through RPC_URL (the compose and Kubernetes devnets; found in review)", () => {
  test("is taken for a chain that mines on demand: its node is asked web3_clientVersion once, at start, never per request", async () => {
    const { startService } = await import("../app/service.ts");
    const { readConfig } = await import("../app/config.ts");
    const methods: string[] = [];
    proxy.onCall = (call) => void methods.push(call.method);
    const lines: { event: string; fields?: Record<string, unknown> }[] = [];
    const note = (event: string, fields?: Record<string, unknown>) => void lines.push({ event, fields });
    const service = await startService(readConfig({
      PORT: "0",
      RPC_URL: proxy.url,
      TRUST_ANCHORS_PATH: stack.devnet.trustAnchorsPath,
      DELEGATE_PRIVATE_KEY: stack.devnet.keys.delegate,
      WITNESS_PRIVATE_KEY: stack.devnet.keys.witness,
      DATABASE_PATH: join(stack.dir, "on-demand.sqlite"),
      DATA_DIR: stack.dir,
      INDEX_FOLLOW: "false",
    }), { log: { debug: () => {}, info: note, warn: note, error: note } });
    try {
      expect(lines.filter((l) => l.event === "chain_mines_on_demand")).toEqual([
        { event: "chain_mines_on_demand", fields: { chainId: stack.devnet.chainId, clientVersion: expect.stringMatching(/^anvil\//) } },
      ]);
      expect(methods.filter((m) => m === "web3_clientVersion")).toHaveLength(1);
      // Requests that read the chain (a write here would be refused: the test before moved the node's clock past its
      // signature's deadline) ask nothing more of it.
      const attester = privateKeyToAccount(generatePrivateKey()).address;
      for (let i = 0; i < 3; i++) expect((await fetch(`${service.url}/v1/nonce?attester=${attester}`)).status).toBe(200);
      expect(methods).toContain("eth_call");
      expect(methods.filter((m) => m === "web3_clientVersion")).toHaveLength(1);
    } finally {
      await service.stop();
    }
  });
});
