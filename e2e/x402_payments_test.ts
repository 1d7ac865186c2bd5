/**
 * Agents pay with x402 (issue 18, decisions §13) on the devnet: the devnet's EIP-3009 token, a facilitator built on
 * the official packages (behind a fault switch), and the official client (`@x402/core` client with the `@x402/evm`
 * exact scheme and a viem account) as the paying agent. Token balances are read on chain after every case.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Facilitator, startFacilitator, TEST_USD } from "../adapters/devnet/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import type { Service } from "../app/service.ts";
import { runOps } from "../app/ops.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";
import { cancelAuthorization, type SignedAuthorization, submitAuthorization } from "./support/test_usd.ts";
import { startFacilitatorProxy, x402Settings } from "./support/facilitator_proxy.ts";

const APP = "https://app.test";
const LINKED = findSchemaByName("linked-identifier")!;
const PRICES = { witness: 10_000n, relay: 5_000n, plan: 1_000_000n };
const controllerKey = privateKeyToAccount(generatePrivateKey());

let dns: DnsServer;
let stack: Stack;
let service: Service;
let facilitator: Facilitator;
/**
 * The facilitator as the service reaches it: `down` answers 503, `cancelBeforeSettle` has the payer cancel first,
 * `frontRun` has a third party submit the payer's authorization first (`frontRunner`'s wallet).
 */
let proxy: ReturnType<typeof Bun.serve>;
let mode: "up" | "down" | "cancelBeforeSettle" | "frontRun" = "up";
let frontRunner: Hex;
/** The front-runners' transactions, in order. */
const frontRuns: Hex[] = [];
/** The facilitator's calls through the proxy, by path. */
const facilitatorCalls = new Map<string, number>();
/** When set, `/verify` calls are held until `size` of them arrived, then all pass together (parallel payments, counted). */
let verifyBarrier: { size: number; waiting: (() => void)[] } | undefined;
let payers: Hex[];

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
const token = () => stack.devnet.x402.token;
const balance = (address: Hex) => chain().readContract({ address: token(), abi: TEST_USD.abi, functionName: "balanceOf", args: [address] }) as Promise<bigint>;
const payTo = () => stack.devnet.x402.payTo;
const witnessNonce = () => chain().getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.witness).address });
const delegateNonce = () => chain().getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.delegate).address });

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.paid.test", [[`v=1;controller=did:pkh:eip155:31337:${controllerKey.address}`]]);
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      WITNESS_USER_RATE_PER_MINUTE: "1000",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "1000",
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "1000",
      FREE_PLAN_ANNUAL_WRITES: "1",
    },
  });
  payers = stack.devnet.keys.users;
  dns.setTxt("_controllers.relay.test", [[`v=1;controller=did:pkh:eip155:31337:${privateKeyToAccount(payers[1]!).address}`]]);
  facilitator = startFacilitator({ rpcUrl: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, privateKey: stack.devnet.keys.facilitator });
  proxy = startFacilitatorProxy(facilitator.url, async (path, body) => {
    if (mode === "down") return new Response("upstream down", { status: 503 });
    facilitatorCalls.set(path, (facilitatorCalls.get(path) ?? 0) + 1);
    const barrier = verifyBarrier;
    if (barrier !== undefined && path === "/verify") {
      await new Promise<void>((resolve) => {
        barrier.waiting.push(resolve);
        if (barrier.waiting.length >= barrier.size) for (const release of barrier.waiting) release();
      });
    }
    if (mode === "cancelBeforeSettle" && path === "/settle") {
      const { paymentPayload } = JSON.parse(body!) as { paymentPayload: { payload: { authorization: { from: string; nonce: Hex } } } };
      const from = paymentPayload.payload.authorization.from.toLowerCase();
      const key = payers.find((k) => privateKeyToAccount(k).address.toLowerCase() === from)!;
      await cancelAuthorization(stack.devnet, token(), key, paymentPayload.payload.authorization.nonce);
    }
    if (mode === "frontRun" && path === "/settle") {
      const { paymentPayload } = JSON.parse(body!) as { paymentPayload: { payload: SignedAuthorization } };
      frontRuns.push(await submitAuthorization(stack.devnet, token(), frontRunner, paymentPayload.payload));
    }
  });
  // The service takes payments on a second process-in-process start against the same chain and database: the
  // token's address is only known once the devnet is up.
  service = await stack.restartService({
    ...x402Settings(proxy, stack.devnet.x402),
    X402_WITNESS_PRICE: String(PRICES.witness),
    X402_RELAY_PRICE: String(PRICES.relay),
    X402_PAID_PLAN_PRICE: String(PRICES.plan),
  });
});
afterAll(async () => {
  proxy?.stop(true);
  await facilitator?.stop();
  await stack?.stop();
  await dns?.stop();
});

/** The official client with the exact EVM scheme, paying as `key`. */
const agent = (key: Hex) =>
  new x402HTTPClient(
    registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(key) })
      // The devnet token is not one of the client's default assets: allow it, capped at a plan year.
      .setSpendControls({ allowedAssets: [{ network: "eip155:31337", asset: token(), maxAmountPerPayment: String(PRICES.plan) }] }),
  );

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return await fetch(`${service.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** {@link post} while the facilitator's proxy behaves as `behaving`; it is back up after, whatever happened. */
async function postWhile(behaving: typeof mode, path: string, body: unknown, headers: Record<string, string> = {}) {
  mode = behaving;
  try {
    return await post(path, body, headers);
  } finally {
    mode = "up";
  }
}

/**
 * The unpaid answer, then the payment header the agent builds for it (`tamper` changes the terms it signs). Decisions
 * §13 amended: the contract's paths answer an unpaid request without credentials 401 with the terms in
 * PAYMENT-REQUIRED; the paid aliases (`/v1/paid/…`) and the plan purchase answer 402.
 */
async function paymentFor(key: Hex, path: string, body: unknown, options: { headers?: Record<string, string>; tamper?: (p: PaymentRequired) => PaymentRequired } = {}) {
  const unpaid = await post(path, body, options.headers);
  expect(unpaid.status).toBe(path.startsWith("/v1/paid/") || path === "/api/private/subscriptions/x402" ? 402 : 401);
  expect(unpaid.headers.get("payment-required")).toBeString();
  const client = agent(key);
  let required = client.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.clone().json());
  if (options.tamper) required = options.tamper(required);
  const payload = await client.createPaymentPayload(required);
  return { unpaid, client, header: client.encodePaymentSignatureHeader(payload), payload };
}

const witnessBody = { subjectDid: "did:web:paid.test", controllerDid: `did:pkh:eip155:31337:${controllerKey.address}` };

async function opsPayments(state?: string): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const code = await runOps(["payments", "list", ...(state ? ["--state", state] : [])], { DATABASE_PATH: join(stack.dir, "ats.sqlite"), DATA_DIR: stack.dir }, (l) => lines.push(l));
  expect(code).toBe(0);
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("paying with x402", () => {
  test("an unpaid request on the contract's path is 401 naming both ways in: the bearer challenge and the same terms a 402 carries", async () => {
    const unpaid = await post("/v1/controller-witness", witnessBody);
    expect(unpaid.status).toBe(401);
    expect(await unpaid.json()).toEqual({ error: "Unauthenticated", code: "UNAUTHENTICATED" });
    expect(unpaid.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata="http[^"]+\/\.well-known\/oauth-protected-resource"$/);
    const terms = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!);
    const alias = await post("/v1/paid/controller-witness", witnessBody);
    expect(alias.status).toBe(402);
    // One Cache-Control (it was repeated: `no-store, no-store`); a payment route's answers are private (decisions §21).
    expect(alias.headers.get("cache-control")).toBe("private, no-store");
    const aliasTerms = decodePaymentRequiredHeader(alias.headers.get("payment-required")!);
    expect(terms.accepts).toEqual(aliasTerms.accepts);
    expect(terms.resource?.url).toMatch(/\/v1\/controller-witness$/);
    const relay = await post("/api/private/relay/eas/delegated-attest", {});
    expect([relay.status, relay.headers.get("payment-required") !== null]).toEqual([401, true]);
    expect((await post("/v1/paid/delegated-attest", {})).status).toBe(402);
  });

  test("witness paid per call on the paid alias: 402 with the terms and a signed offer, then the witness, the transfer and a signed receipt", async () => {
    const payer = privateKeyToAccount(payers[0]!).address;
    const [before, payeeBefore] = [await balance(payer), await balance(payTo())];
    const { unpaid, header } = await paymentFor(payers[0]!, "/v1/paid/controller-witness", witnessBody);
    expect(await unpaid.json()).toEqual({ error: "Payment required: pay with x402 or sign in", code: "PAYMENT_REQUIRED" });
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!);
    expect(required.x402Version).toBe(2);
    expect(required.accepts).toEqual([expect.objectContaining({
      scheme: "exact", network: "eip155:31337", amount: "10000", asset: token(), payTo: payTo(),
      extra: { name: TEST_USD.name, version: TEST_USD.version },
    })]);
    const offers = (required.extensions?.["offer-receipt"] as { info: { offers: { payload: Record<string, unknown>; format: string }[] } }).info.offers;
    expect(offers).toHaveLength(1);
    expect(offers[0]).toMatchObject({ format: "eip712", payload: { amount: "10000", payTo: payTo(), scheme: "exact" } });

    const paid = await post("/v1/paid/controller-witness", witnessBody, header);
    expect(paid.status).toBe(200);
    const written = await paid.json() as { uid: Hex; txHash: Hex };
    expect(written.uid).toMatch(/^0x[0-9a-f]{64}$/);
    const attestation = await chain().readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [written.uid] });
    expect(attestation.attester).toBe(privateKeyToAccount(stack.devnet.keys.witness).address);
    const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response")!);
    expect(settlement).toMatchObject({ success: true, network: "eip155:31337" });
    expect(settlement.payer?.toLowerCase()).toBe(payer.toLowerCase());
    const receipt = (settlement.extensions?.["offer-receipt"] as { info: { receipt: { payload: Record<string, unknown> } } }).info.receipt;
    expect(receipt.payload).toMatchObject({ transaction: settlement.transaction });
    expect(await balance(payer)).toBe(before - PRICES.witness);
    expect(await balance(payTo())).toBe(payeeBefore + PRICES.witness);
    const rows = await opsPayments("settled");
    expect(rows.find((r) => r.workRef === written.txHash)).toMatchObject({ purpose: "witness", payer: payer.toLowerCase(), amount: "10000", settlementTx: settlement.transaction });

    // The same payment again: refused, no second write, no second transfer.
    const witnessTxs = await witnessNonce();
    const replayed = await post("/v1/paid/controller-witness", witnessBody, header);
    expect([replayed.status, (await replayed.json() as { code: string }).code]).toEqual([409, "PAYMENT_ALREADY_USED"]);
    expect(await witnessNonce()).toBe(witnessTxs);
    expect(await balance(payer)).toBe(before - PRICES.witness);
  });

  test("concurrent replays of one payment write once and transfer once", async () => {
    const payer = privateKeyToAccount(payers[2]!).address;
    const before = await balance(payer);
    const witnessTxs = await witnessNonce();
    const { header } = await paymentFor(payers[2]!, "/v1/controller-witness", witnessBody);
    const answers = await Promise.all([0, 1, 2, 3].map(() => post("/v1/controller-witness", witnessBody, header)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409]);
    expect(await witnessNonce()).toBe(witnessTxs + 1);
    expect(await balance(payer)).toBe(before - PRICES.witness);
  });

  test("relay write paid per call: the payer is the attester; a proven subject is written; another attester is refused and nothing is charged", async () => {
    const key = payers[1]!;
    const account = privateKeyToAccount(key);
    const nonce = await chain().readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
    const sign = async (signer: Hex, subject: string, n: bigint) => {
      const who = privateKeyToAccount(signer);
      const prepared = prepareDelegatedAttestation({
        schema: { uid: stack.devnet.schemaUids["linked-identifier"] as Hex, schema: LINKED.schema, revocable: LINKED.revocable },
        data: { subject, linkedId: "did:web:elsewhere.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 },
        attester: who.address,
        nonce: n,
        chainId: service.chainId,
        easAddress: service.easAddress,
      });
      return { prepared, signature: await who.signTypedData(signableTypedData(prepared)), attester: who.address };
    };
    const [before, payeeBefore] = [await balance(account.address), await balance(payTo())];
    const body = { ...await sign(key, "did:web:relay.test", nonce), subjectDid: "relay.test" };
    const { header } = await paymentFor(key, "/api/private/relay/eas/delegated-attest", body);
    const paid = await post("/api/private/relay/eas/delegated-attest", body, header);
    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ success: true, chain: "ATS Devnet" });
    expect(decodePaymentResponseHeader(paid.headers.get("payment-response")!).success).toBe(true);
    expect(await balance(account.address)).toBe(before - PRICES.relay);
    expect(await balance(payTo())).toBe(payeeBefore + PRICES.relay);

    // A write whose attester is not the payer fails its check: nothing written, nothing settled.
    const other = privateKeyToAccount(payers[3]!);
    const otherNonce = await chain().readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [other.address] });
    const foreign = await sign(payers[3]!, `did:pkh:eip155:31337:${other.address.toLowerCase()}`, otherNonce);
    const txs = await delegateNonce();
    const { header: header2 } = await paymentFor(key, "/api/private/relay/eas/delegated-attest", foreign);
    const refused = await post("/api/private/relay/eas/delegated-attest", foreign, header2);
    expect([refused.status, (await refused.json() as { code: string }).code]).toEqual([403, "ATTESTER_MISMATCH"]);
    expect(refused.headers.get("payment-response")).toBeNull();
    expect(await delegateNonce()).toBe(txs);
    expect(await balance(account.address)).toBe(before - PRICES.relay);
  });

  test("an underpaid authorization, an expired one and one valid for less than maxTimeoutSeconds are refused with 402 and the reason; nothing is written or transferred", async () => {
    const key = payers[4]!;
    const payer = privateKeyToAccount(key).address;
    const before = await balance(payer);
    const witnessTxs = await witnessNonce();
    const { header } = await paymentFor(key, "/v1/controller-witness", witnessBody, {
      tamper: (p) => ({ ...p, accepts: p.accepts.map((a) => ({ ...a, amount: "1" })) }),
    });
    const underpaid = await post("/v1/controller-witness", witnessBody, header);
    expect(underpaid.status).toBe(402);
    const body = await underpaid.json() as { code: string; details: string };
    expect(body.code).toBe("PAYMENT_INVALID");
    expect(body.details).toMatch(/^[a-z0-9_]+$/);
    expect(decodePaymentRequiredHeader(underpaid.headers.get("payment-required")!).accepts[0]!.amount).toBe("10000");

    // Expired, or valid for 6 s only (the facilitator's own minimum, so it verified): an authorization signed as EIP-3009
    // says. The short one was taken: its work ran, then its settlement failed as it had expired, so the payer was never
    // charged for work done, and could do it again at will. Both are refused before the facilitator is asked.
    for (const validBefore of [Math.floor(Date.now() / 1000) - 60, Math.floor(Date.now() / 1000) + 6]) {
      const { payload, client } = await paymentFor(key, "/v1/controller-witness", witnessBody);
      const authorization: Record<string, string> = { ...(payload.payload as { authorization: Record<string, string> }).authorization, validAfter: "0", validBefore: String(validBefore) };
      const signature = await privateKeyToAccount(key).signTypedData({
        domain: { name: TEST_USD.name, version: TEST_USD.version, chainId: stack.devnet.chainId, verifyingContract: token() },
        types: {
          TransferWithAuthorization: [
            { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
            { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" },
          ],
        },
        primaryType: "TransferWithAuthorization",
        message: { ...authorization, value: BigInt(authorization.value!), validAfter: 0n, validBefore: BigInt(authorization.validBefore!) } as never,
      });
      const refused = await post("/v1/controller-witness", witnessBody, client.encodePaymentSignatureHeader({ ...payload, payload: { authorization, signature } }));
      expect(refused.status).toBe(402);
      expect(await refused.json()).toMatchObject({ code: "PAYMENT_INVALID", details: "authorization_expires_too_soon" });
      expect(decodePaymentRequiredHeader(refused.headers.get("payment-required")!).accepts[0]!.maxTimeoutSeconds).toBe(300);
    }
    expect(await witnessNonce()).toBe(witnessTxs);
    expect(await balance(payer)).toBe(before);
  });

  test("a payment header whose JSON is not an object (null, a list, a number) is 402 PAYMENT_INVALID, with or without Idempotency-Key", async () => {
    // `bnVsbA==` is base64 `null`: core's decoder returns it as it is, and every paid route answered 500.
    const witnessTxs = await witnessNonce();
    for (const json of ["null", "[]", "1"]) {
      const header = Buffer.from(json).toString("base64");
      for (const [path, extra] of [
        ["/v1/controller-witness", {}],
        ["/v1/paid/controller-witness", {}],
        ["/v1/paid/controller-witness", { "idempotency-key": `not-an-object-${json}` }],
      ] as const) {
        const refused = await post(path, witnessBody, { "payment-signature": header, ...extra });
        expect([json, path, refused.status]).toEqual([json, path, 402]);
        expect(await refused.json()).toMatchObject({ code: "PAYMENT_INVALID", details: "invalid_payload" });
      }
    }
    expect(await witnessNonce()).toBe(witnessTxs);
  });

  test("facilitator down: 502 and nothing written or transferred; the retry under the same Idempotency-Key is processed, not replayed", async () => {
    const key = payers[5]!;
    const payer = privateKeyToAccount(key).address;
    const before = await balance(payer);
    const witnessTxs = await witnessNonce();
    const { header: paid } = await paymentFor(key, "/v1/controller-witness", witnessBody);
    // A client that keys its writes (decisions §23): the 502 said nothing was done, so it was not kept for the key.
    // Kept, the retry it asks for replayed the 502 for the key's 24 hours.
    const header = { ...paid, "idempotency-key": `facilitator-down-${crypto.randomUUID()}` };
    const answer = await postWhile("down", "/v1/controller-witness", witnessBody, header);
    expect(answer.status).toBe(502);
    expect(await answer.json()).toEqual({ error: "The payment facilitator is unavailable; nothing was charged", code: "FACILITATOR_UNAVAILABLE" });
    expect(await witnessNonce()).toBe(witnessTxs);
    expect(await balance(payer)).toBe(before);
    // The authorization was never used: once the facilitator is back it pays for the witness.
    const retried = await post("/v1/controller-witness", witnessBody, header);
    expect([retried.status, retried.headers.get("idempotent-replayed")]).toEqual([200, null]);
    expect(await balance(payer)).toBe(before - PRICES.witness);
    // And that answer is the key's from now on.
    const again = await post("/v1/controller-witness", witnessBody, header);
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
  });

  test("settlement failure after the write: the write stands, no receipt, recorded for the operator and counted", async () => {
    const key = payers[6]!;
    const payer = privateKeyToAccount(key).address;
    const [before, payeeBefore] = [await balance(payer), await balance(payTo())];
    const { header } = await paymentFor(key, "/v1/controller-witness", witnessBody);
    const answer = await postWhile("cancelBeforeSettle", "/v1/controller-witness", witnessBody, header);
    expect(answer.status).toBe(200);
    const written = await answer.json() as { uid: Hex; txHash: Hex };
    const attestation = await chain().readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [written.uid] });
    expect(attestation.uid).toBe(written.uid);
    const settlement = decodePaymentResponseHeader(answer.headers.get("payment-response")!);
    expect(settlement.success).toBe(false);
    expect(settlement.errorReason).toMatch(/^[a-z0-9_]+$/);
    expect(settlement.extensions).toBeUndefined();
    expect(await balance(payer)).toBe(before);
    expect(await balance(payTo())).toBe(payeeBefore);
    const failed = await opsPayments("settle_failed");
    expect(failed.find((r) => r.workRef === written.txHash)).toMatchObject({ purpose: "witness", payer: payer.toLowerCase(), failureReason: settlement.errorReason });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/ats_x402_settlement_failures_total\{purpose="witness"\} 1/);

    // The payer made its settlement fail: it gets no more paid work (before, it could repeat the free write at will).
    const again = await paymentFor(key, "/v1/controller-witness", witnessBody);
    const witnessTxs = await witnessNonce();
    const verified = facilitatorCalls.get("/verify") ?? 0;
    const refused = await post("/v1/controller-witness", witnessBody, again.header);
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ code: "PAYMENT_INVALID", details: "unsettled_payment" });
    expect(refused.headers.get("payment-required")).toBeString();
    expect(await witnessNonce()).toBe(witnessTxs);
    expect(facilitatorCalls.get("/verify") ?? 0).toBe(verified);
    expect(await balance(payer)).toBe(before);
  });

  // Found by an attack review: a third party submitting the payer's own authorization before the facilitator's settle
  // paid payTo, yet the facilitator's `invalid_exact_evm_nonce_already_used` was recorded as the payer's doing: no
  // receipt, the payer's next paid request 402 `unsettled_payment`, a plan purchase 402 `PAYMENT_FAILED` (plan free).
  test("a third party landing the payer's authorization before the facilitator: the chain shows it paid, so it is settled with a receipt and the plan granted", async () => {
    frontRunner = generatePrivateKey();
    await chain().request({ method: "anvil_setBalance" as never, params: [privateKeyToAccount(frontRunner).address, "0xDE0B6B3A7640000"] as never });
    const key = generatePrivateKey();
    const payer = privateKeyToAccount(key).address;
    const funder = createWalletClient({ account: privateKeyToAccount(payers[3]!), transport: http(stack.devnet.rpcUrl) });
    await chain().waitForTransactionReceipt({
      hash: await funder.writeContract({ address: token(), abi: TEST_USD.abi, functionName: "transfer", args: [payer, PRICES.witness * 2n + PRICES.plan], chain: null }),
    });
    const payeeBefore = await balance(payTo());
    dns.setTxt("_controllers.frontrun.test", [[`v=1;controller=did:pkh:eip155:31337:${controllerKey.address}`]]);
    const body = { subjectDid: "did:web:frontrun.test", controllerDid: witnessBody.controllerDid };
    const { header } = await paymentFor(key, "/v1/controller-witness", body);
    const answer = await postWhile("frontRun", "/v1/controller-witness", body, header);
    expect(answer.status).toBe(200);
    const settlement = decodePaymentResponseHeader(answer.headers.get("payment-response")!);
    expect(settlement).toMatchObject({ success: true, transaction: frontRuns.at(-1) });
    expect(settlement.extensions?.["offer-receipt"]).toBeDefined();
    expect(await balance(payTo())).toBe(payeeBefore + PRICES.witness);
    const written = await answer.json() as { txHash: Hex };
    expect((await opsPayments("settled")).find((r) => r.workRef === written.txHash)).toMatchObject({ payer: payer.toLowerCase(), settlementTx: frontRuns.at(-1) });
    // The payer paid: its next paid request is served as any other.
    const again = await paymentFor(key, "/v1/controller-witness", body);
    const next = await post("/v1/controller-witness", body, again.header);
    expect([next.status, decodePaymentResponseHeader(next.headers.get("payment-response")!).success]).toEqual([200, true]);

    // The same on a plan purchase: the year is granted.
    const cookie = await signInCookie(service.url, key, { origin: APP });
    const plan = await paymentFor(key, "/api/private/subscriptions/x402", {}, { headers: { cookie } });
    const bought = await postWhile("frontRun", "/api/private/subscriptions/x402", {}, { cookie, ...plan.header });
    expect(bought.status).toBe(200);
    expect(decodePaymentResponseHeader(bought.headers.get("payment-response")!)).toMatchObject({ success: true, transaction: frontRuns.at(-1) });
    expect(await balance(payTo())).toBe(payeeBefore + PRICES.witness * 2n + PRICES.plan);
    const me = await (await fetch(`${service.url}/api/private/accounts/me`, { headers: { cookie } })).json() as { subscription: Record<string, unknown> };
    expect(me.subscription).toMatchObject({ plan: "paid" });
  });

  test("a signed-in account buys a year of the paid plan; accounts/me shows the plan and its period", async () => {
    const key = payers[0]!;
    const wallet = privateKeyToAccount(key);
    const cookie = await signInCookie(service.url, key, { origin: APP });
    const me = async () => (await (await fetch(`${service.url}/api/private/accounts/me`, { headers: { cookie } })).json() as { subscription: Record<string, unknown> }).subscription;
    expect(await me()).toMatchObject({ plan: "free", annualSponsoredWriteLimit: 1 });
    const before = await balance(wallet.address);

    const { header } = await paymentFor(key, "/api/private/subscriptions/x402", {}, { headers: { cookie } });
    const bought = await post("/api/private/subscriptions/x402", {}, { cookie, ...header });
    expect(bought.status).toBe(200);
    const answer = await bought.json() as { subscription: Record<string, string>; purchased: { periodStart: string; periodEnd: string } };
    expect(answer.subscription).toMatchObject({ plan: "paid", status: "active", annualSponsoredWriteLimit: 1000 });
    const year = Date.parse(answer.purchased.periodEnd) - Date.parse(answer.purchased.periodStart);
    expect(year).toBe(365 * 86_400_000);
    expect(Math.abs(Date.parse(answer.purchased.periodStart) - Date.now())).toBeLessThan(60_000);
    expect(decodePaymentResponseHeader(bought.headers.get("payment-response")!).success).toBe(true);
    expect(await balance(wallet.address)).toBe(before - PRICES.plan);
    expect(await me()).toMatchObject({
      plan: "paid",
      annualSponsoredWriteLimit: 1000,
      entitlementPeriodStart: answer.purchased.periodStart,
      entitlementPeriodEnd: answer.purchased.periodEnd,
    });
    // A token acts as its account with the plan it has now (decisions §19): an API client's token sees the bought plan.
    const created = await post("/api/private/oauth/clients", { client_name: "CI", scope: "account:read", grant_types: ["client_credentials"] }, { cookie, origin: APP });
    expect(created.status).toBe(201);
    const client = await created.json() as { client_id: string; client_secret: string };
    const tokenAnswer = await fetch(`${service.url}/oauth/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`)}`,
      },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: "account:read" }),
    });
    expect(tokenAnswer.status).toBe(200);
    const { access_token } = await tokenAnswer.json() as { access_token: string };
    const byToken = await (await fetch(`${service.url}/api/private/accounts/me`, { headers: { authorization: `Bearer ${access_token}` } })).json() as { subscription: Record<string, unknown> };
    expect(byToken.subscription).toMatchObject({ plan: "paid", annualSponsoredWriteLimit: 1000, annualPremiumReadLimit: (await me()).annualPremiumReadLimit });
    // Without a session the purchase is refused before any payment.
    const anonymous = await post("/api/private/subscriptions/x402", {});
    expect([anonymous.status, (await anonymous.json() as { code: string }).code]).toEqual([401, "UNAUTHENTICATED"]);
  });
});

describe("a payer's unsettled payments never exceed its balance (issue 23)", () => {
  /** A fresh payer holding exactly `amount` of the token (sent by a dev account that pays nothing here, not by the payee). */
  async function fundedPayer(amount: bigint): Promise<{ key: Hex; address: Hex }> {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address;
    await fund(address, amount);
    expect(await balance(address)).toBe(amount);
    return { key, address };
  }
  async function fund(address: Hex, amount: bigint) {
    const wallet = createWalletClient({ account: privateKeyToAccount(payers[3]!), transport: http(stack.devnet.rpcUrl) });
    const hash = await wallet.writeContract({ address: token(), abi: TEST_USD.abi, functionName: "transfer", args: [address, amount], chain: null });
    await chain().waitForTransactionReceipt({ hash });
  }
  /** Five subjects the controller key controls, each with its own witness body. */
  function subjects(prefix: string) {
    return [1, 2, 3, 4, 5].map((i) => {
      dns.setTxt(`_controllers.${prefix}${i}.test`, [[`v=1;controller=did:pkh:eip155:31337:${controllerKey.address}`]]);
      return { subjectDid: `did:web:${prefix}${i}.test`, controllerDid: witnessBody.controllerDid };
    });
  }
  /** One signed payment per body, then all five sent at once; the facilitator verifies them all before any goes on. */
  async function payInParallel(key: Hex, bodies: readonly (typeof witnessBody)[]) {
    const headers: Record<string, string>[] = [];
    for (const body of bodies) headers.push((await paymentFor(key, "/v1/controller-witness", body)).header);
    verifyBarrier = { size: bodies.length, waiting: [] };
    try {
      const answers = await Promise.all(bodies.map((body, i) => post("/v1/controller-witness", body, headers[i])));
      return await Promise.all(answers.map(async (a, i) => ({ status: a.status, body: await a.json() as Record<string, unknown>, header: headers[i]!, body_: bodies[i]!, response: a })));
    } finally {
      verifyBarrier = undefined;
    }
  }
  const rowsOf = async (payer: Hex) => (await opsPayments()).filter((r) => r.payer === payer.toLowerCase());

  test("two payers behind one address under one Idempotency-Key: each is processed and charged as itself; a header naming a payer it was not signed by is 422", async () => {
    // Found by attacking the paid routes: keys were the client address's, so the second payer got the first payer's
    // answer and receipt (Idempotent-Replayed), and was charged nothing.
    const [a, b] = [await fundedPayer(PRICES.witness), await fundedPayer(PRICES.witness)];
    const [body] = subjects("nat");
    const key = `shared-${crypto.randomUUID()}`;
    for (const payer of [a, b]) {
      const { header } = await paymentFor(payer.key, "/v1/paid/controller-witness", body!);
      const paid = await post("/v1/paid/controller-witness", body, { ...header, "idempotency-key": key });
      expect([paid.status, paid.headers.get("idempotent-replayed")]).toEqual([200, null]);
      expect(decodePaymentResponseHeader(paid.headers.get("payment-response")!).payer?.toLowerCase()).toBe(payer.address.toLowerCase());
      expect(await balance(payer.address)).toBe(0n);
    }
    // A new payment of B's rewritten to name A as its payer: another request under A's key, never A's answer.
    const { header: again } = await paymentFor(b.key, "/v1/paid/controller-witness", body!);
    const [name, value] = Object.entries(again).find(([n]) => n.toLowerCase() === "payment-signature")!;
    const decoded = JSON.parse(Buffer.from(value, "base64").toString()) as { payload: { authorization: { from: string } } };
    decoded.payload.authorization.from = a.address;
    const forged = await post("/v1/paid/controller-witness", body, { [name]: Buffer.from(JSON.stringify(decoded)).toString("base64"), "idempotency-key": key });
    expect([forged.status, (await forged.json() as { code: string }).code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
  });

  test("a payer holding one witness price sends five paid witness requests in parallel: one is written and settled, four are refused before any work", async () => {
    const { key, address } = await fundedPayer(PRICES.witness);
    const payeeBefore = await balance(payTo());
    const witnessTxs = await witnessNonce();
    const answers = await payInParallel(key, subjects("one"));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const refused = answers.filter((a) => a.status === 409);
    for (const a of refused) {
      expect(a.body).toEqual({
        error: "The payer's unsettled payments already hold its token balance; nothing was done or charged, retry once they settle",
        code: "PAYMENT_IN_PROGRESS",
      });
      expect(a.response.headers.get("payment-response")).toBeNull();
    }
    const written = answers.find((a) => a.status === 200)!;
    expect(decodePaymentResponseHeader(written.response.headers.get("payment-response")!).success).toBe(true);
    // On chain: one witness transaction, one transfer of one price.
    expect(await witnessNonce()).toBe(witnessTxs + 1);
    const attestation = await chain().readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [written.body.uid as Hex] });
    expect(attestation.uid).toBe(written.body.uid as Hex);
    expect(await balance(address)).toBe(0n);
    expect(await balance(payTo())).toBe(payeeBefore + PRICES.witness);
    // Recorded: the one settled payment; the refused ones left nothing behind and nothing failed.
    const rows = await rowsOf(address);
    expect(rows.map((r) => r.state)).toEqual(["settled"]);
    expect(rows[0]).toMatchObject({ workRef: written.body.txHash, amount: String(PRICES.witness) });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/ats_x402_payments_total\{outcome="in_progress",purpose="witness"\} 4/);

    // A refused authorization was not used: once the payer holds another price, it pays for its witness.
    await fund(address, PRICES.witness);
    const retried = await post("/v1/controller-witness", refused[0]!.body_, refused[0]!.header);
    expect(retried.status).toBe(200);
    expect(await witnessNonce()).toBe(witnessTxs + 2);
    expect(await balance(address)).toBe(0n);
    expect(await balance(payTo())).toBe(payeeBefore + 2n * PRICES.witness);
  });

  test("a payer holding five witness prices gets all five parallel requests written and settled", async () => {
    const { key, address } = await fundedPayer(5n * PRICES.witness);
    const payeeBefore = await balance(payTo());
    const witnessTxs = await witnessNonce();
    const answers = await payInParallel(key, subjects("five"));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    for (const a of answers) expect(decodePaymentResponseHeader(a.response.headers.get("payment-response")!).success).toBe(true);
    expect(await witnessNonce()).toBe(witnessTxs + 5);
    expect(await balance(address)).toBe(0n);
    expect(await balance(payTo())).toBe(payeeBefore + 5n * PRICES.witness);
    expect((await rowsOf(address)).map((r) => r.state)).toEqual(["settled", "settled", "settled", "settled", "settled"]);
  });
});

describe("the service signs JWS offers and receipts (issue 25, decisions §18)", () => {
  test("X402_SIGNING_FORMAT=jws: the official client pays; offer and receipt carry kid and jwk (the did.json key, jose verifies both ways); the receipt names the offer the client saw", async () => {
    const { generateSigningJwk } = await import("../x402/signers.ts");
    const { compactVerify, decodeProtectedHeader, EmbeddedJWK, importJWK } = await import("jose");
    const { offerHashOf, verifySignedReceipt } = await import("../domain/payments/mod.ts");
    const { createWebCryptoJwsVerifier } = await import("../client/jws_verifier.ts");
    const jwsService = await stack.restartService({
      ...x402Settings(proxy, stack.devnet.x402),
      X402_WITNESS_PRICE: String(PRICES.witness),
      X402_SIGNING_FORMAT: "jws",
      X402_JWS_KEY: JSON.stringify(await generateSigningJwk("ES256")),
      PUBLIC_BASE_URL: "https://paid.example",
    });
    const doc = await (await fetch(`${jwsService.url}/.well-known/did.json`)).json() as {
      id: string;
      verificationMethod: { id: string; publicKeyJwk: Record<string, string> }[];
      assertionMethod: string[];
    };
    expect(doc.id).toBe("did:web:paid.example");
    expect(doc.assertionMethod).toEqual(["did:web:paid.example#key-1"]);
    const publishedKey = doc.verificationMethod[0]!.publicKeyJwk;
    expect(publishedKey).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256" });
    expect(publishedKey.d).toBeUndefined();

    const unpaid = await fetch(`${jwsService.url}/v1/paid/controller-witness`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(witnessBody) });
    expect(unpaid.status).toBe(402);
    const client = agent(payers[2]!);
    const required = client.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.clone().json());
    const [seen] = (required.extensions?.["offer-receipt"] as { info: { offers: { format: "jws"; signature: string }[] } }).info.offers;
    expect(seen!.format).toBe("jws");
    expect(decodeProtectedHeader(seen!.signature)).toEqual({ alg: "ES256", kid: "did:web:paid.example#key-1", jwk: publishedKey });
    const paid = await fetch(`${jwsService.url}/v1/paid/controller-witness`, {
      method: "POST",
      headers: { "content-type": "application/json", ...client.encodePaymentSignatureHeader(await client.createPaymentPayload(required)) },
      body: JSON.stringify(witnessBody),
    });
    expect(paid.status).toBe(200);
    const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response")!);
    const info = (settlement.extensions?.["offer-receipt"] as { info: { receipt: { format: string; signature: string }; offer: unknown } }).info;
    expect(info.offer).toEqual(seen);
    const viaJwk = await compactVerify(info.receipt.signature, EmbeddedJWK);
    const viaDidJson = await compactVerify(info.receipt.signature, await importJWK(publishedKey, "ES256"));
    expect(viaJwk.protectedHeader).toEqual({ alg: "ES256", kid: "did:web:paid.example#key-1", jwk: publishedKey });
    const payload = JSON.parse(new TextDecoder().decode(viaDidJson.payload)) as Record<string, unknown>;
    expect(payload).toMatchObject({
      version: 1,
      network: "eip155:31337",
      resourceUrl: "https://paid.example/v1/paid/controller-witness",
      payer: privateKeyToAccount(payers[2]!).address,
      offerHash: offerHashOf(seen!),
    });
    // Our verifier resolves the kid (here: the service's did.json over loopback) and accepts the jwk beside it.
    const didDocuments = { fetchDidDocument: async () => ({ status: "ok" as const, url: `${jwsService.url}/.well-known/did.json`, document: doc as unknown }) };
    const verified = await verifySignedReceipt(info.receipt, { jws: createWebCryptoJwsVerifier(), didDocuments }, { nowSeconds: Math.floor(Date.now() / 1000) });
    expect(verified.ok && verified.value.signer.keyDocumentDid).toBe("did:web:paid.example");
  });
});

describe("a payment header names its payer only once the facilitator verified it (found by attacking the paid routes)", () => {
  /** A `/verify` whose body carries `marker` is held until `release`; `arrived` says it came. */
  let hold: { marker: string; arrived: () => void; release: Promise<void> } | undefined;
  let front: ReturnType<typeof Bun.serve>;
  /** Started as the harness starts it, PORT=0 and no PUBLIC_BASE_URL, in front of its own facilitator proxy. */
  let own: Service;
  beforeAll(async () => {
    front = startFacilitatorProxy(facilitator.url, async (path, body) => {
      const held = hold;
      if (held !== undefined && path === "/verify" && body!.includes(held.marker)) {
        held.arrived();
        await held.release;
      }
    });
    own = await stack.restartService({
      ...x402Settings(front, stack.devnet.x402),
      X402_WITNESS_PRICE: String(PRICES.witness),
      X402_RELAY_PRICE: String(PRICES.relay),
    });
  });
  afterAll(() => {
    front?.stop(true);
  });

  const WITNESS = "/v1/paid/controller-witness";
  const RELAY = "/v1/paid/delegated-attest";
  const to = async (path: string, body: unknown, headers: Record<string, string> = {}) =>
    await fetch(`${own.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  /** The official client's payment header for `body` on `path` of this service, paying as `key`. */
  async function pay(key: Hex, path: string, body: unknown): Promise<Record<string, string>> {
    const unpaid = await to(path, body);
    expect(unpaid.status).toBe(402);
    const client = agent(key);
    return client.encodePaymentSignatureHeader(await client.createPaymentPayload(client.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.json())));
  }
  /** A fresh payer holding `amount` of the token. */
  async function fresh(amount: bigint): Promise<{ key: Hex; address: Hex }> {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address;
    const wallet = createWalletClient({ account: privateKeyToAccount(payers[3]!), transport: http(stack.devnet.rpcUrl) });
    const hash = await wallet.writeContract({ address: token(), abi: TEST_USD.abi, functionName: "transfer", args: [address, amount], chain: null });
    await chain().waitForTransactionReceipt({ hash });
    return { key, address };
  }
  /** A linked-identifier of the attester's own did:pkh, signed by it for the paid relay. */
  async function ownLink(key: Hex) {
    const who = privateKeyToAccount(key);
    const nonce = await chain().readContract({ address: own.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [who.address] });
    const prepared = prepareDelegatedAttestation({
      schema: { uid: stack.devnet.schemaUids["linked-identifier"] as Hex, schema: LINKED.schema, revocable: LINKED.revocable },
      data: { subject: `did:pkh:eip155:31337:${who.address.toLowerCase()}`, linkedId: "did:web:elsewhere.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 },
      attester: who.address,
      nonce,
      chainId: own.chainId,
      easAddress: own.easAddress,
    });
    return { prepared, signature: await who.signTypedData(signableTypedData(prepared)), attester: who.address };
  }
  /** `header`'s payment rewritten: `from` the payer it names, and `signature` when given. */
  function naming(header: Record<string, string>, from: Hex, signature?: Hex): Record<string, string> {
    const [name, value] = Object.entries(header).find(([n]) => n.toLowerCase() === "payment-signature")!;
    const decoded = JSON.parse(Buffer.from(value, "base64").toString()) as { payload: { authorization: { from: string }; signature: string } };
    decoded.payload.authorization.from = from;
    if (signature !== undefined) decoded.payload.signature = signature;
    return { [name]: Buffer.from(JSON.stringify(decoded)).toString("base64") };
  }
  const signatureOf = (header: Record<string, string>) =>
    (JSON.parse(Buffer.from(Object.entries(header).find(([n]) => n.toLowerCase() === "payment-signature")![1], "base64").toString()) as { payload: { signature: string } }).payload.signature;
  const codeOf = async (r: Response) => [r.status, (await r.clone().json() as { code?: string }).code];

  test("a spent nonce (public on chain) under a payer's address, not signed by it, takes none of its Idempotency-Keys: the payer's own request under the key is processed", async () => {
    // Found by an attacker: the 409 PAYMENT_ALREADY_USED of the replay check, answered before the facilitator verified
    // anything, was kept under the key of the payer the header named, so that payer's own request under its key was
    // 422 IDEMPOTENCY_KEY_REUSED for 24 hours.
    const other = await fresh(PRICES.witness);
    const spent = await pay(other.key, WITNESS, witnessBody);
    expect((await to(WITNESS, witnessBody, spent)).status).toBe(200);
    const victim = await fresh(PRICES.witness + PRICES.relay);
    const forged = naming(spent, victim.address, `0x${"11".repeat(65)}`);
    const link = await ownLink(victim.key);
    const keys = { [WITNESS]: `order-${crypto.randomUUID()}`, [RELAY]: `order-${crypto.randomUUID()}` };
    const bodies = [[WITNESS, witnessBody], [RELAY, link]] as const;
    for (const [path, body] of bodies) {
      expect(await codeOf(await to(path, body, { ...forged, "idempotency-key": keys[path] }))).toEqual([409, "PAYMENT_ALREADY_USED"]);
    }
    for (const [path, body] of bodies) {
      const header = { ...await pay(victim.key, path, body), "idempotency-key": keys[path] };
      const paid = await to(path, body, header);
      expect([path, paid.status, paid.headers.get("idempotent-replayed")]).toEqual([path, 200, null]);
      expect(decodePaymentResponseHeader(paid.headers.get("payment-response")!).payer?.toLowerCase()).toBe(victim.address.toLowerCase());
      // Its retry is answered from its key; the forged header under it now is another request (422), never its answer.
      const again = await to(path, body, header);
      expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
      expect(await codeOf(await to(path, body, { ...forged, "idempotency-key": keys[path] }))).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    }
    expect(await balance(victim.address)).toBe(0n);
  });

  test("while a payment naming a payer it was not signed by waits on the facilitator, the payer's own request under the key runs (it was 422): the key is taken once verified", async () => {
    const other = await fresh(PRICES.witness);
    const victim = await fresh(PRICES.witness);
    const key = `order-${crypto.randomUUID()}`;
    // Another payer's fresh authorization, rewritten to name the victim: its signature is not the victim's.
    const foreign = await pay(other.key, WITNESS, witnessBody);
    let arrived!: () => void;
    const came = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    hold = { marker: signatureOf(foreign), arrived, release: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const forged = to(WITNESS, witnessBody, { ...naming(foreign, victim.address), "idempotency-key": key });
      await came;
      const header = { ...await pay(victim.key, WITNESS, witnessBody), "idempotency-key": key };
      const paid = await to(WITNESS, witnessBody, header);
      expect([paid.status, paid.headers.get("idempotent-replayed")]).toEqual([200, null]);
      release();
      expect(await codeOf(await forged)).toEqual([402, "PAYMENT_INVALID"]);
      const again = await to(WITNESS, witnessBody, header);
      expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    } finally {
      release();
      hold = undefined;
    }
    expect([await balance(victim.address), await balance(other.address)]).toEqual([0n, PRICES.witness]);
  });

  test("PORT=0 without PUBLIC_BASE_URL: offers, receipts and the did.json name the port bound (they named port 0)", async () => {
    const payer = await fresh(PRICES.witness);
    const unpaid = await to(WITNESS, witnessBody);
    const offer = (decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!).extensions?.["offer-receipt"] as { info: { offers: { payload: { resourceUrl: string } }[] } }).info.offers[0]!;
    expect(offer.payload.resourceUrl).toBe(`http://127.0.0.1:${own.port}${WITNESS}`);
    const paid = await to(WITNESS, witnessBody, await pay(payer.key, WITNESS, witnessBody));
    expect(paid.status).toBe(200);
    const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response")!);
    const receipt = (settlement.extensions?.["offer-receipt"] as { info: { receipt: { payload: { resourceUrl: string } } } }).info.receipt;
    expect(receipt.payload.resourceUrl).toBe(`http://127.0.0.1:${own.port}${WITNESS}`);
    const doc = await (await fetch(`${own.url}/.well-known/did.json`)).json() as { id: string };
    expect(doc.id).toBe(`did:web:127.0.0.1%3A${own.port}`);
  });
});
