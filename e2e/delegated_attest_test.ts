import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { decodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { didToAddress } from "../domain/did/mod.ts";
import {
  attestDelegated,
  prepareDelegatedAttestation,
  signableTypedData,
  submitDelegatedAttestation,
} from "../client/delegated_attest.ts";
import { clearTrustAnchorsCache } from "../client/trust_anchors.ts";
import { AtsClientError } from "../client/errors.ts";
import { startStack, type Stack } from "./harness.ts";
import { isSend } from "./support/rpc_proxy.ts";

/**
 * One JSON-RPC round trip of the service held until released (issue 33): once armed, the first that reads the given
 * attester's nonce and carries no fee refresh (another request may be waiting on that refresh, and holding it would
 * hold that request too). It is sent when released, without the JSON-RPC client's timeout.
 */
type Hold = { readonly attester: string; readonly reached: () => void; readonly released: Promise<void> };
let hold: Hold | undefined;
const FEE_METHODS = ['"eth_gasPrice"', '"eth_maxPriorityFeePerGas"'];
function holding(inner: typeof fetch): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const armed = hold;
    const body = String(init?.body ?? "");
    const readsNonce = body.includes('"eth_call"') && body.toLowerCase().includes(armed?.attester ?? "\0");
    if (armed === undefined || !readsNonce || FEE_METHODS.some((m) => body.includes(m))) return await inner(input, init);
    hold = undefined;
    armed.reached();
    await armed.released;
    return await inner(input, { ...init, signal: undefined });
  }) as typeof fetch;
}

let stack: Stack;
beforeAll(async () => {
  // The node mines on arrival: its answer to a sync send decides, however late a loaded machine delivers it (with the
  // 100 ms default grace, a late answer adds hash and receipt reads, and the round trips counted here would vary).
  stack = await startStack({ wrapRpcFetch: holding, sendSyncGraceMs: 120_000 });
  clearTrustAnchorsCache();
});
afterAll(async () => await stack?.stop());

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const client = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
const review = (subject = "did:web:example.com") => ({
  subject,
  version: "1.0.0",
  ratingValue: 5,
  reviewBody: "Fast and correct",
  screenshotUrls: [],
  proofs: [],
});

async function signedReview(key: Hex, overrides: { refUID?: Hex; data?: Record<string, unknown> } = {}) {
  const account = privateKeyToAccount(key);
  const nonce = await client().readContract({
    address: stack.service.easAddress,
    abi: EAS_ABI,
    functionName: "getNonce",
    args: [account.address],
  });
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: overrides.data ?? review(),
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
    refUID: overrides.refUID,
  });
  const signature = await account.signTypedData(signableTypedData(prepared));
  return { prepared, signature, attester: account.address };
}

async function post(body: unknown, raw = false) {
  const response = await fetch(`${stack.baseUrl}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: raw ? (body as string) : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() as Record<string, unknown> };
}

async function delegateTxCount() {
  const delegate = privateKeyToAccount(stack.devnet.keys.delegate).address;
  return await client().getTransactionCount({ address: delegate });
}

describe("delegated attestation on a real chain", () => {
  test("a user review is mined and readable from EAS with the signer as attester", async () => {
    const key = generatePrivateKey();
    const account = privateKeyToAccount(key);
    const result = await attestDelegated(
      { schemaName: "user-review", data: review("did:web:Example.com"), attester: account.address, sign: (td) => account.signTypedData(td) },
      { baseUrl: stack.baseUrl },
    );
    expect(result.success).toBe(true);
    expect(result.uid).toMatch(/^0x[0-9a-f]{64}$/);
    expect(result.elapsed).toMatch(/^\d+ms$/);
    const attestation = await client().readContract({
      address: stack.service.easAddress,
      abi: EAS_ABI,
      functionName: "getAttestation",
      args: [result.uid as Hex],
    });
    expect(attestation.attester).toBe(account.address);
    expect(attestation.schema).toBe(stack.devnet.schemaUids["user-review"] as Hex);
    const expected = didToAddress("did:web:example.com");
    expect(attestation.recipient.toLowerCase()).toBe(expected.ok ? expected.value : "");
    expect(decodeSchemaData(findSchemaByName("user-review")!.schema, attestation.data)).toMatchObject({
      ok: true,
      value: { subject: "did:web:Example.com", ratingValue: "5" },
    });
  });

  test("a linked identifier is mined too", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const result = await attestDelegated(
      {
        schemaName: "linked-identifier",
        data: { subject: "did:web:example.com", linkedId: "did:handle:github:octocat", proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 },
        attester: account.address,
        sign: (td) => account.signTypedData(td),
      },
      { baseUrl: stack.baseUrl },
    );
    expect(result.uid).toMatch(/^0x[0-9a-f]{64}$/);
  });

  test("a replay is 409 DUPLICATE with no RPC and no transaction, whatever the signature encoding", async () => {
    const body = await signedReview(generatePrivateKey());
    expect((await post(body)).status).toBe(200);
    const txs = await delegateTxCount();
    const sig = body.signature;
    const v = Number.parseInt(sig.slice(130), 16);
    const s = BigInt(`0x${sig.slice(66, 130)}`);
    const variants = [
      sig,
      `0x${sig.slice(2).toUpperCase()}`,
      `0x${sig.slice(2, 66)}${(N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}`,
      `0x${sig.slice(2, 130)}${(v - 27).toString(16).padStart(2, "0")}`,
    ];
    stack.rpc.reset();
    for (const signature of variants) {
      const res = await post({ ...body, signature });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe("DUPLICATE");
    }
    expect(stack.rpc.roundTrips()).toBe(0);
    expect(await delegateTxCount()).toBe(txs);
  });

  test("rejections that need no chain make no RPC call", async () => {
    const body = await signedReview(generatePrivateKey());
    const expired = await signedReview(generatePrivateKey());
    (expired.prepared.delegatedRequest as Record<string, unknown>).deadline = "1";
    // Five seconds ahead: inside DEADLINE_MARGIN_SECONDS (30), it could pass before the transaction is mined.
    const soon = await signedReview(generatePrivateKey());
    (soon.prepared.delegatedRequest as Record<string, unknown>).deadline = String(Math.floor(Date.now() / 1000) + 5);
    const unsubsidised = structuredClone(body);
    (unsubsidised.prepared.delegatedRequest as Record<string, unknown>).schema = stack.devnet.schemaUids.certification;
    stack.rpc.reset();
    const cases: [unknown, boolean, number, string][] = [
      ["{not json", true, 400, "INVALID_JSON"],
      [{ attester: body.attester }, false, 400, "INVALID_INPUT"],
      [unsubsidised, false, 403, "SCHEMA_NOT_SUBSIDIZED"],
      [expired, false, 400, "SIGNATURE_EXPIRED"],
      [soon, false, 400, "SIGNATURE_EXPIRED"],
      [{ ...body, signature: "0xdeadbeef" }, false, 400, "INVALID_SIGNATURE"],
    ];
    for (const [payload, raw, status, code] of cases) {
      const res = await post(payload, raw);
      expect([res.status, res.body.code]).toEqual([status, code]);
      expect(res.body.elapsed).toMatch(/^\d+ms$/);
    }
    expect(stack.rpc.roundTrips()).toBe(0);
  });

  test("a successful request makes at most 3 RPC round trips before the transaction is sent", async () => {
    const body = await signedReview(generatePrivateKey());
    await post(await signedReview(generatePrivateKey())); // warm the fee cache and delegate nonce
    stack.rpc.reset();
    expect((await post(body)).status).toBe(200);
    const trips = stack.rpc.trips();
    const sendTrip = trips.findIndex((methods) => methods.some(isSend));
    expect(sendTrip).toBeGreaterThan(0);
    expect(sendTrip).toBeLessThanOrEqual(3);
  });

  test("a warm request reads and simulates in one round trip, then sends and has its receipt in one more (issue 28)", async () => {
    const body = await signedReview(generatePrivateKey());
    await post(await signedReview(generatePrivateKey())); // warm the fee cache and delegate nonce
    stack.rpc.reset();
    expect((await post(body)).status).toBe(200);
    const trips = stack.rpc.trips().map((methods) => [...methods].sort());
    // Fees are cached for two seconds: a refresh may ride in the first trip. The attester's code is not read: the
    // signature recovers to the attester (issue 43).
    const fees = ["eth_gasPrice", "eth_maxPriorityFeePerGas"];
    expect(trips.slice(0, 2).map((methods) => methods.filter((m) => !fees.includes(m)))).toEqual([
      ["eth_call", "eth_estimateGas", "eth_getBalance"],
      ["eth_sendRawTransactionSync"],
    ]);
    // Anvil mines on arrival and answers the sync send with the receipt: no receipt polls (they were one or two).
    expect(trips).toHaveLength(2);
  });

  test("an EAS revert found in simulation is 400 naming it, spends no gas, and the signature can be retried", async () => {
    const body = await signedReview(generatePrivateKey(), { refUID: `0x${"12".repeat(32)}` });
    const txs = await delegateTxCount();
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("INVALID_INPUT");
    expect(String(res.body.error)).toContain("NotFound");
    expect(await delegateTxCount()).toBe(txs);
    expect((await post(body)).status).toBe(400); // released, so not DUPLICATE
  });

  test("20 attesters at once all succeed once, and the delegate's nonces have no gap or duplicate", async () => {
    const before = await delegateTxCount();
    const bodies = await Promise.all(Array.from({ length: 20 }, () => signedReview(generatePrivateKey())));
    const results = await Promise.all(bodies.map((b) => post(b)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const uids = new Set(results.map((r) => r.body.uid));
    expect(uids.size).toBe(20);
    const nonces = await Promise.all(
      results.map(async (r) => (await client().getTransaction({ hash: r.body.txHash as Hex })).nonce),
    );
    nonces.sort((a, b) => a - b);
    expect(nonces).toEqual(Array.from({ length: 20 }, (_, i) => before + i));
    expect(await delegateTxCount()).toBe(before + 20);
  });

  test("two signatures over one attester nonce at once: one succeeds, the other is a 4xx, one transaction", async () => {
    const key = generatePrivateKey();
    const a = await signedReview(key, { data: review("did:web:a.example") });
    const b = await signedReview(key, { data: review("did:web:b.example") });
    const before = await delegateTxCount();
    const results = await Promise.all([post(a), post(b)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect(statuses[1]).toBeGreaterThanOrEqual(400);
    expect(statuses[1]).toBeLessThan(500);
    expect(await delegateTxCount()).toBe(before + 1);
  });

  test("the same signed message twice at once, 20 times: always one 200 and one 409 DUPLICATE naming the first, one transaction each (issue 33)", async () => {
    const before = await delegateTxCount();
    const outcomes: string[] = [];
    for (let pair = 0; pair < 20; pair++) {
      const body = await signedReview(generatePrivateKey());
      const results = await Promise.all([post(body), post(body)]);
      const won = results.find((r) => r.status === 200);
      const lost = results.find((r) => r !== won);
      outcomes.push(`${results.map((r) => `${r.status} ${r.body.code ?? "ok"}`).sort().join(", ")}`);
      if (won === undefined || lost === undefined) continue;
      // The first's uid once mined, its transaction hash while on its way, nothing while it is being checked.
      expect([undefined, won.body.uid, won.body.txHash]).toContain(lost.body.details);
    }
    expect(outcomes).toEqual(Array(20).fill("200 ok, 409 DUPLICATE"));
    expect(await delegateTxCount()).toBe(before + 20);
  });

  test("the same signed message twice, the second reading the nonce only once the first was mined: 409 DUPLICATE with the first's uid, not NONCE_MOVED (issue 33)", async () => {
    // The interleaving is forced: the second request's nonce read is held (after its replay lookup found nothing)
    // until the first was answered. A round trip that also refreshes the delegate's fees cannot be held (the first
    // request waits on that refresh), so a fresh refresh comes first, and an attempt whose read carried one anyway is
    // let through and tried again with a new attester.
    for (let attempt = 1; ; attempt++) {
      const body = await signedReview(generatePrivateKey());
      expect((await post(await signedReview(generatePrivateKey()))).status).toBe(200);
      let reached!: () => void;
      const atHold = new Promise<"held">((resolve) => (reached = () => resolve("held")));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      hold = { attester: body.attester.slice(2).toLowerCase(), reached, released };
      const second = post(body);
      // Whichever happens: the read is held, or the request finished because its read was let through.
      if ((await Promise.race([atHold, second.then(() => "through" as const)])) === "through") {
        hold = undefined;
        expect(attempt).toBeLessThan(5);
        continue;
      }
      const first = await post(body);
      release();
      expect(first.status).toBe(200);
      const res = await second;
      expect([res.status, res.body.code, res.body.details]).toEqual([409, "DUPLICATE", first.body.uid]);
      return;
    }
  });

  test("a moved nonce is reported, and the client helper re-signs and resubmits once", async () => {
    const key = stack.devnet.keys.users[0] as Hex;
    const account = privateKeyToAccount(key);
    const wallet = createWalletClient({ account, transport: http(stack.devnet.rpcUrl) });
    const stale = await signedReview(key);
    const nonce = BigInt(stale.prepared.typedData.message.nonce as string);
    const moved = await wallet.writeContract({
      chain: null,
      address: stack.service.easAddress,
      abi: EAS_ABI,
      functionName: "increaseNonce",
      args: [nonce + 1n],
    });
    await client().waitForTransactionReceipt({ hash: moved });
    const res = await post(stale);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "ATTESTER_MISMATCH", details: "NONCE_MOVED" });

    let signs = 0;
    const result = await attestDelegated(
      {
        schemaName: "user-review",
        data: review(),
        attester: account.address,
        sign: async (td) => {
          signs++;
          const signature = await account.signTypedData(td);
          if (signs === 1) {
            // Another action of the same attester lands between signing and submission.
            const current = await client().readContract({
              address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address],
            });
            const hash = await wallet.writeContract({
              chain: null, address: stack.service.easAddress, abi: EAS_ABI, functionName: "increaseNonce", args: [current + 1n],
            });
            await client().waitForTransactionReceipt({ hash });
          }
          return signature;
        },
      },
      { baseUrl: stack.baseUrl },
    );
    expect(signs).toBe(2);
    expect(result.success).toBe(true);
  });

  test("the client helper surfaces the server's code", async () => {
    const body = await signedReview(generatePrivateKey());
    await submitDelegatedAttestation(body, { baseUrl: stack.baseUrl });
    const error = await submitDelegatedAttestation(body, { baseUrl: stack.baseUrl }).catch((e) => e);
    expect(error).toBeInstanceOf(AtsClientError);
    expect(error).toMatchObject({ code: "DUPLICATE", status: 409 });
  });

  test("replay records survive a restart of the service", async () => {
    const body = await signedReview(generatePrivateKey());
    expect((await post(body)).status).toBe(200);
    await stack.service.stop();
    const restarted = await stack.restartService();
    const res = await fetch(`${restarted.url}/v1/delegated-attest`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe("DUPLICATE");
  });
});
