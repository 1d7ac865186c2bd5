/**
 * The whole x402 loop on loopback: a resource server (Elysia + official core + our extension, test
 * facilitator in process) published as `https://svc.test:<port>` through a real DNS server and a test
 * CA, a paying client (the official x402Client), and the service on Anvil with EAS:
 * 402 with offers → pay → 200 with receipt → verify (did.json over HTTPS) → trust tier (the service's
 * controller discovery; a controller witness on chain; a key binding by a witnessed controller) → review
 * proof → delegated attest → read back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { didToAddress, normalizeDid } from "../domain/did/mod.ts";
import { decodeSchemaData, encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import type { SignedReceipt } from "../domain/payments/mod.ts";
import { clearTrustAnchorsCache } from "../client/trust_anchors.ts";
import {
  attestReceiptReview,
  checkSignerTrust,
  extractOffers,
  extractReceipt,
  findAcceptForOffer,
  receiptMatchesOffer,
  verifyOffer,
  verifyReceipt,
} from "../client/x402.ts";
import { testSchemeClient } from "../x402/testing.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { PAID_NETWORK, type PaidService, startPaidService } from "./support/paid_service.ts";
import { easWriter } from "./support/eas_writer.ts";
import { getTestCa } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

const NETWORK = PAID_NETWORK;

let dns: DnsServer;
let paidService: PaidService;
let stack: Stack;
let publicBase: string;
let subjectDid: string;

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  paidService = await startPaidService({ dns, caCert: ca.cert });
  ({ publicBase, subjectDid } = paidService);
  stack = await startStack({ env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true" }, didJsonCa: ca.cert });
  clearTrustAnchorsCache();
});

afterAll(async () => {
  await stack?.stop();
  await paidService?.stop();
  await dns?.stop();
});

describe("x402 receipt → user review on the devnet", () => {
  test("402 with offers, pay, 200 with receipt, verify, trust tier, review submitted and read back from EAS", async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const didDocuments = paidService.didDocuments;
    const url = `${paidService.url}?ref=e2e`;

    /** Pays for one more request and returns its receipt. */
    const payOnce = async () => {
      const c = new x402HTTPClient(new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false));
      const r402 = await fetch(url);
      const required = c.getPaymentRequiredResponse((n) => r402.headers.get(n), await r402.json());
      const r200 = await fetch(url, { headers: c.encodePaymentSignatureHeader(await c.createPaymentPayload(required)) });
      return extractReceipt(r200) as SignedReceipt;
    };

    // 402: one signed offer, verified against the did.json the public front serves over HTTPS.
    const unpaid = await fetch(url);
    expect(unpaid.status).toBe(402);
    const offers = await extractOffers(unpaid);
    expect(offers).toHaveLength(1);
    const offer = await verifyOffer(offers[0], { didDocuments });
    if (!offer.ok) throw new Error(`offer: ${offer.message}`);
    expect(offer.value.payload.resourceUrl).toBe(`${publicBase}/premium`);
    expect(offer.value.signer.kid).toBe(`${subjectDid}#key-1`);

    // Pay with the official client; the accept entry is found from the offer's terms.
    const client = new x402HTTPClient(new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false));
    const paymentRequired = client.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.json());
    expect(findAcceptForOffer(offers[0]!, paymentRequired.accepts)).toBe(paymentRequired.accepts[0]);
    const payload = await client.createPaymentPayload(paymentRequired);
    const paid = await fetch(url, { headers: client.encodePaymentSignatureHeader(payload) });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ weather: "sunny" });
    const settlement = client.getPaymentSettleResponse((n) => paid.headers.get(n));
    const receipt = extractReceipt(paid) as SignedReceipt;
    const verified = await verifyReceipt(receipt, { didDocuments, maxAgeSeconds: 3600 });
    if (!verified.ok) throw new Error(`receipt: ${verified.message}`);
    expect(verified.value.payload).toMatchObject({ payer: payer.address, network: NETWORK, transaction: settlement.transaction, resourceUrl: `${publicBase}/premium` });
    expect(receiptMatchesOffer(verified.value.payload, offer.value.payload, [payer.address])).toBe(true);

    // Tier 1: the service's controller discovery finds the key in the subject's did.json.
    const chain = { rpc: stack.devnet.rpcUrl, chainId: stack.service.chainId };
    const live = await checkSignerTrust(
      { resourceUrl: verified.value.payload.resourceUrl, signer: verified.value.signer, at: verified.value.payload.issuedAt },
      { baseUrl: stack.baseUrl, chain },
    );
    expect(live).toMatchObject({ tier: 1, basis: "endpoint-evidence", subjectDid: (normalizeDid(subjectDid) as { value: string }).value });
    expect(live.endpointKeys).toContain(verified.value.signer.controllerDid);

    // Tier 2: the approved witness wallet attests the key as a controller of the subject.
    const witnessSchema = findSchemaByName("controller-witness")!;
    const data = encodeSchemaData(witnessSchema.schema, {
      subject: subjectDid,
      controller: verified.value.signer.controllerDid,
      method: "did-json",
      observedAt: BigInt(verified.value.payload.issuedAt - 1),
    });
    if (!data.ok) throw new Error(data.message);
    const recipient = didToAddress(subjectDid);
    if (!recipient.ok) throw new Error(recipient.message);
    const writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.service.easAddress });
    const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));
    /**
     * A receipt signed once `written` is on chain. A witness covers a receipt only from its chain time on, so the
     * evidence is judged at a receipt issued after it: the first receipt's second may be over before the witness is
     * mined (and Anvil's block time may run a second or two ahead of the clock).
     */
    const receiptAfter = async (written: { blockNumber: bigint }) => {
      const time = (await writer.client.getBlock({ blockNumber: written.blockNumber })).timestamp;
      while (nowSeconds() < time) await Bun.sleep(100);
      const checked = await verifyReceipt(await payOnce(), { didDocuments });
      if (!checked.ok) throw new Error(`receipt: ${checked.message}`);
      return checked.value;
    };
    const trustOf = (r: { payload: { resourceUrl: string; issuedAt: number }; signer: typeof verified.value.signer }) =>
      checkSignerTrust({ resourceUrl: r.payload.resourceUrl, signer: r.signer, at: r.payload.issuedAt }, { baseUrl: stack.baseUrl, chain });
    const witness = await writer.attest(
      stack.devnet.keys.witness,
      stack.devnet.schemaUids["controller-witness"] as Hex,
      { recipient: recipient.value, data: data.value, revocable: witnessSchema.revocable },
    );
    const witnessed = await trustOf(await receiptAfter(witness));
    expect(witnessed).toMatchObject({ tier: 2, level: "high", basis: "controller-witness" });

    // Tier 3: a key binding (assertionMethod) of the signing key. It "requires a prior controller witness":
    // one written by the approved witness wallet itself has none behind it, so the key stays tier 2 ...
    const bindingSchema = findSchemaByName("key-binding")!;
    const bindingSchemaUid = stack.devnet.schemaUids["key-binding"] as Hex;
    const keyBinding = (issuedAt: bigint) => {
      const encoded = encodeSchemaData(bindingSchema.schema, {
        subject: subjectDid,
        keyId: verified.value.signer.controllerDid,
        publicKeyJwk: JSON.stringify(paidService.issuer.publicJwk),
        keyPurpose: ["assertionMethod"],
        proofs: [JSON.stringify({ proofType: "evidence-pointer", proofPurpose: "shared-control", proofObject: { url: `${publicBase}/.well-known/did.json` } })],
        issuedAt,
        effectiveAt: issuedAt,
        expiresAt: 0n,
      });
      if (!encoded.ok) throw new Error(encoded.message);
      return { recipient: recipient.value, data: encoded.value, revocable: bindingSchema.revocable };
    };
    const byWitnessWallet = await writer.attest(stack.devnet.keys.witness, bindingSchemaUid, keyBinding(nowSeconds()));
    const unbacked = await trustOf(await receiptAfter(byWitnessWallet));
    expect(unbacked).toMatchObject({ tier: 2, basis: "controller-witness" });
    expect(unbacked.keyBindings.map((b) => b.uid)).toEqual([byWitnessWallet.uid]);

    // ... while the service's controller wallet, witnessed for the subject first, binding the key makes it tier 3.
    const controller = privateKeyToAccount(stack.devnet.keys.users[2] as Hex);
    const controllerWitness = encodeSchemaData(witnessSchema.schema, {
      subject: subjectDid,
      controller: `did:pkh:eip155:${stack.service.chainId}:${controller.address}`,
      method: "dns-txt",
      observedAt: nowSeconds(),
    });
    if (!controllerWitness.ok) throw new Error(controllerWitness.message);
    await writer.attest(stack.devnet.keys.witness, stack.devnet.schemaUids["controller-witness"] as Hex, {
      recipient: recipient.value,
      data: controllerWitness.value,
      revocable: witnessSchema.revocable,
    });
    const byController = await writer.attest(stack.devnet.keys.users[2] as Hex, bindingSchemaUid, keyBinding(nowSeconds()));
    const tier3 = await trustOf(await receiptAfter(byController));
    expect(tier3).toMatchObject({ tier: 3, level: "highest", basis: "key-binding", evidenceUid: byController.uid });
    expect(tier3.keyBindings.map((b) => b.attester)).toEqual([privateKeyToAccount(stack.devnet.keys.witness).address, controller.address]);

    // The review: the payer attests through the service's delegated-attest endpoint (gas paid by the delegate).
    const result = await attestReceiptReview(
      receipt,
      { ratingValue: 4, reviewBody: "Paid, delivered", attester: payer.address, sign: (td) => payer.signTypedData(td) },
      { baseUrl: stack.baseUrl },
    );
    expect(result.success).toBe(true);

    // Read back from EAS: the payer is the attester, the subject's DID address the recipient, the receipt verbatim.
    const reader = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
    const onChain = await reader.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [result.uid!] });
    expect(onChain.attester).toBe(payer.address);
    expect(onChain.recipient.toLowerCase()).toBe(recipient.value);
    expect(onChain.schema).toBe(stack.devnet.schemaUids["user-review"] as Hex);
    const review = decodeSchemaData(findSchemaByName("user-review")!.schema, onChain.data);
    if (!review.ok) throw new Error(review.message);
    expect(review.value).toMatchObject({ subject: (normalizeDid(subjectDid) as { value: string }).value, ratingValue: "4", reviewBody: "Paid, delivered" });
    const proof = JSON.parse((review.value.proofs as string[])[0]!);
    expect(proof).toEqual({ proofType: "x402-receipt", proofPurpose: "commercial-tx", proofObject: receipt });
    // The proof read back from the chain still verifies, and names the attester as payer.
    const again = await verifyReceipt(proof.proofObject, { didDocuments });
    expect(again.ok && again.value.payload.payer).toBe(onChain.attester);
  });
});
