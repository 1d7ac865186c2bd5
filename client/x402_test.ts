import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { OFFER_RECEIPT, offerHashOf, type OfferPayload, type ReceiptPayload, readReceiptPayload, type SignedReceipt } from "../domain/payments/mod.ts";
import { evaluateKeyTrust, type VerifiedSigner, type WitnessEvidence } from "../domain/payments/mod.ts";
import type { DidDocumentFetcher } from "../ports/discovery.ts";
import { offersExtension, receiptExtension } from "../x402/extension.ts";
import { createEip712Issuer, createJwsIssuerFromJwk, generateSigningJwk } from "../x402/signers.ts";
import { AtsClientError, isAtsClientError } from "./errors.ts";
import {
  buildReceiptReview,
  checkSignerTrust,
  extractOffers,
  extractReceipt,
  findAcceptForOffer,
  findOfferOfReceipt,
  receiptBindingToOffer,
  receiptContradictsOffer,
  receiptMatchesOffer,
  verifyOffer,
  verifyReceipt,
  verifyReceiptAuthorization,
} from "./x402.ts";
import { submitServiceReview } from "./review_submit.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";

const NOW = 1_800_000_000;
const URL_ = "https://api.example.com/premium";
const payer = privateKeyToAccount(generatePrivateKey());
const OFFER: OfferPayload = {
  version: 1,
  resourceUrl: URL_,
  scheme: "exact",
  network: "eip155:84532",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "1000",
  validUntil: NOW + 300,
};
const RECEIPT: ReceiptPayload = { version: 1, network: "eip155:84532", resourceUrl: URL_, payer: payer.address, issuedAt: NOW };
const b64 = (value: unknown) => btoa(JSON.stringify(value));

function didHost(document: unknown): DidDocumentFetcher {
  return { fetchDidDocument: () => Promise.resolve({ status: "ok", url: "https://api.example.com/.well-known/did.json", document }) };
}

async function jwsIssuer() {
  return await createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "EdDSA", privateJwk: await generateSigningJwk("EdDSA") });
}

describe("extraction", () => {
  test("offers come from the v2 PAYMENT-REQUIRED header, else from a v1 body", async () => {
    const offer = await createEip712Issuer({ privateKey: generatePrivateKey() }).signOffer(OFFER);
    const pr = { x402Version: 2, accepts: [], resource: { url: URL_ }, extensions: { [OFFER_RECEIPT]: offersExtension([offer]) } };
    expect(await extractOffers(new Response("{}", { status: 402, headers: { "payment-required": b64(pr) } }))).toEqual([offer]);
    expect(await extractOffers(new Response(JSON.stringify({ ...pr, x402Version: 1 }), { status: 402 }))).toEqual([offer]);
    expect(await extractOffers(new Response("not json", { status: 402 }))).toEqual([]);
  });

  test("the receipt comes from PAYMENT-RESPONSE, else X-PAYMENT-RESPONSE, verbatim; junk gives undefined", async () => {
    const receipt = await createEip712Issuer({ privateKey: generatePrivateKey() }).signReceipt(RECEIPT);
    const settlement = { success: true, transaction: "", network: "eip155:84532", extensions: { [OFFER_RECEIPT]: receiptExtension(receipt) } };
    expect(extractReceipt(new Headers({ "payment-response": b64(settlement) }))).toEqual(receipt);
    expect(extractReceipt(new Response(null, { headers: { "x-payment-response": b64(settlement) } }))).toEqual(receipt);
    expect(extractReceipt(new Headers({ "payment-response": "%%%" }))).toBeUndefined();
    expect(extractReceipt(new Headers())).toBeUndefined();
  });

  test("an offer is matched to its accept entry by its terms, not by a wrong acceptIndex", async () => {
    const offer = { ...(await createEip712Issuer({ privateKey: generatePrivateKey() }).signOffer(OFFER)), acceptIndex: 0 };
    const other = { scheme: "exact", network: "eip155:84532", asset: OFFER.asset, payTo: OFFER.payTo, amount: "5" };
    const mine = { scheme: "exact", network: "base-sepolia", asset: OFFER.asset, payTo: OFFER.payTo, maxAmountRequired: "1000" };
    expect(findAcceptForOffer(offer, [other, mine])).toBe(mine);
  });
});

describe("verification", () => {
  test("a receipt matches its offer on URL, network and payer", () => {
    expect(receiptMatchesOffer(RECEIPT, OFFER, [payer.address.toLowerCase()], { nowSeconds: NOW })).toBe(true);
    expect(receiptMatchesOffer({ ...RECEIPT, resourceUrl: `${URL_}?x=1` }, OFFER, [payer.address], { nowSeconds: NOW })).toBe(false);
  });

  test("a tampered eip712 payload recovers some other signer, never the issuer", async () => {
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const receipt = await issuer.signReceipt(RECEIPT) as Extract<SignedReceipt, { format: "eip712" }>;
    const tampered = { ...receipt, payload: { ...receipt.payload, payer: "0x0000000000000000000000000000000000000001" } };
    const result = await verifyReceipt(tampered, { nowSeconds: NOW });
    expect(result.ok && result.value.signer.address).not.toBe(issuer.address!);
  });

  test("an expired offer, a receipt from the future and a too-old receipt are refused", async () => {
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const offer = await issuer.signOffer({ ...OFFER, validUntil: NOW - 1 });
    expect(await verifyOffer(offer, { nowSeconds: NOW })).toMatchObject({ ok: false, code: "EXPIRED" });
    const future = await issuer.signReceipt({ ...RECEIPT, issuedAt: NOW + 3600 });
    expect(await verifyReceipt(future, { nowSeconds: NOW })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    const old = await issuer.signReceipt({ ...RECEIPT, issuedAt: NOW - 7200 });
    expect(await verifyReceipt(old, { nowSeconds: NOW, maxAgeSeconds: 3600 })).toMatchObject({ ok: false, code: "EXPIRED" });
  });

  test("a did:web key must be named in assertionMethod of a document whose id is the DID", async () => {
    const issuer = await jwsIssuer();
    const receipt = await issuer.signReceipt(RECEIPT);
    const did = "did:web:api.example.com";
    const method = { id: `${did}#key-1`, type: "JsonWebKey2020", controller: did, publicKeyJwk: issuer.publicJwk };
    const good = { id: did, verificationMethod: [method], assertionMethod: [`${did}#key-1`] };
    expect((await verifyReceipt(receipt, { nowSeconds: NOW, didDocuments: didHost(good) })).ok).toBe(true);
    expect((await verifyReceipt(receipt, { nowSeconds: NOW, didDocuments: didHost({ ...good, assertionMethod: ["#relative-other"] }) })))
      .toMatchObject({ ok: false, code: "UNRESOLVABLE_KEY" });
    expect((await verifyReceipt(receipt, { nowSeconds: NOW, didDocuments: didHost({ ...good, id: "did:web:evil.example" }) })))
      .toMatchObject({ ok: false, code: "UNRESOLVABLE_KEY" });
    // A relative `#key-1` in assertionMethod names the same method.
    expect((await verifyReceipt(receipt, { nowSeconds: NOW, didDocuments: didHost({ ...good, assertionMethod: ["#key-1"] }) })).ok).toBe(true);
  });

  test("alg none and HMAC are refused, whatever the key", async () => {
    const issuer = await jwsIssuer();
    const receipt = await issuer.signReceipt(RECEIPT) as { format: "jws"; signature: string };
    const [, payload, sig] = receipt.signature.split(".");
    for (const alg of ["none", "HS256"]) {
      const header = btoa(JSON.stringify({ alg, kid: issuer.kid })).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
      const forged = { format: "jws", signature: `${header}.${payload}.${sig}` };
      expect(await verifyReceipt(forged, { nowSeconds: NOW })).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    }
  });
});

describe("trust tiers", () => {
  const subjectDid = "did:web:api.example.com";
  const key = privateKeyToAccount(generatePrivateKey());
  const signer: VerifiedSigner = { format: "eip712", controllerDid: `did:pkh:eip155:1:${key.address.toLowerCase()}`, address: key.address };
  const controllerOtherChain = `did:pkh:eip155:66238:${key.address}`;
  const witness = (over: Partial<WitnessEvidence> = {}): WitnessEvidence => ({
    controller: controllerOtherChain,
    observedAt: BigInt(NOW - 100),
    time: BigInt(NOW - 90),
    approvedIssuer: true,
    revoked: false,
    ...over,
  });
  // The service's controller wallet writes the bindings; it was witnessed for the subject before.
  const controller = "0x00000000000000000000000000000000000000cc";
  const controllerWitness = witness({ controller: `did:pkh:eip155:31337:${controller}`, time: BigInt(NOW - 60) });
  const binding = (over: Record<string, unknown> = {}) => ({
    uid: "0xb1",
    keyId: `${controllerOtherChain}#key-1`,
    keyPurpose: ["assertionMethod"],
    attester: controller,
    time: BigInt(NOW - 50),
    effectiveAt: 0n,
    expiresAt: 0n,
    revocationTime: 0n,
    ...over,
  });
  const tier = (evidence: Parameters<typeof evaluateKeyTrust>[0]["evidence"], s: VerifiedSigner = signer) =>
    evaluateKeyTrust({ subjectDid, signer: s, at: NOW, evidence });

  test("no evidence is tier 0; endpoint evidence (any eip155 chain) is tier 1", () => {
    expect(tier({})).toEqual({ tier: 0, level: "low", basis: "none" });
    expect(tier({ endpointKeys: [controllerOtherChain] })).toEqual({ tier: 1, level: "moderate", basis: "endpoint-evidence" });
  });

  test("a jws key published in the resource's own did.json is tier 1", () => {
    const jwsSigner: VerifiedSigner = { format: "jws", controllerDid: "did:jwk:eyJ4IjoiMSJ9", keyDocumentDid: subjectDid };
    expect(tier({}, jwsSigner).basis).toBe("did-json-kid");
    expect(tier({}, { ...jwsSigner, keyDocumentDid: "did:web:other.example" }).tier).toBe(0);
  });

  test("an approved witness observed before issuedAt is tier 2; after it, or unapproved, or revoked, it does not count", () => {
    expect(tier({ witnesses: [witness()] })).toEqual({ tier: 2, level: "high", basis: "controller-witness" });
    expect(tier({ witnesses: [witness({ observedAt: BigInt(NOW + 10) })] }).tier).toBe(0);
    expect(tier({ witnesses: [witness({ approvedIssuer: false })] }).tier).toBe(0);
    expect(tier({ witnesses: [witness({ revoked: true })], endpointKeys: [signer.controllerDid] }).tier).toBe(1);
  });

  test("a key binding is tier 3 when the controller that wrote it was witnessed for the subject before", () => {
    expect(tier({ keyBindings: [binding()], witnesses: [controllerWitness], chainId: 31337 }))
      .toEqual({ tier: 3, level: "highest", basis: "key-binding", evidenceUid: "0xb1" });
    // No witness of its writer, a witness after the binding, or one by an unapproved witness wallet: no tier 3.
    expect(tier({ keyBindings: [binding()], chainId: 31337 }).tier).toBe(0);
    expect(tier({ keyBindings: [binding()], witnesses: [{ ...controllerWitness, time: BigInt(NOW - 40) }], chainId: 31337 }).tier).toBe(0);
    expect(tier({ keyBindings: [binding()], witnesses: [{ ...controllerWitness, approvedIssuer: false }], chainId: 31337 }).tier).toBe(0);
  });

  test("a binding written by a controller whose own binding was revoked before is not tier 3 (domain/bindings)", () => {
    // Another witnessed controller bound the writer and revoked that binding before the writer bound the signing key.
    const other = "0x00000000000000000000000000000000000000dd";
    const otherWitness = witness({ controller: `did:pkh:eip155:31337:${other}`, time: BigInt(NOW - 70) });
    const cut = binding({ uid: "0xb0", keyId: `did:pkh:eip155:31337:${controller}`, attester: other, time: BigInt(NOW - 58), revocationTime: BigInt(NOW - 55) });
    const evidence = { keyBindings: [cut, binding()], witnesses: [controllerWitness, otherWitness], chainId: 31337 };
    expect(tier(evidence).tier).toBe(0);
    // Cut after it bound the key: the binding was made while it could, tier 3.
    expect(tier({ ...evidence, keyBindings: [{ ...cut, revocationTime: BigInt(NOW - 45) }, binding()] })).toMatchObject({ tier: 3, evidenceUid: "0xb1" });
  });

  test("a binding the key wrote of itself before its controller's revocation does not keep it tier 3 (domain/bindings)", () => {
    // The key (witnessed) is stolen; the thief binds it by itself at NOW-40, and the controller revokes its binding at
    // NOW-30. Before, the key's own binding stood and its receipts stayed "highest".
    const keyWitness = witness();
    const self = binding({ uid: "0xb2", attester: key.address.toLowerCase(), time: BigInt(NOW - 40) });
    const evidence = { keyBindings: [binding({ revocationTime: BigInt(NOW - 30) }), self], witnesses: [controllerWitness, keyWitness], chainId: 31337 };
    expect(tier(evidence)).toEqual({ tier: 0, level: "low", basis: "none" });
    // Not revoked: both stand, the key's own binding among them.
    expect(tier({ ...evidence, keyBindings: [binding(), self] }).tier).toBe(3);
  });

  test("the key's newest binding revoked or expired before issuedAt, or without assertionMethod, leaves no tier: not its witness, not live evidence", () => {
    // The signing key is witnessed (tier 2 alone) and published (tier 1 alone); its controller bound it, then the
    // binding was revoked before the receipt: a leaked key kept "high".
    const keyWitness = witness();
    const evidence = (over: Record<string, unknown>) => ({
      keyBindings: [binding(over)],
      witnesses: [controllerWitness, keyWitness],
      endpointKeys: [signer.controllerDid],
      chainId: 31337,
    });
    expect(tier({ witnesses: [keyWitness], endpointKeys: [signer.controllerDid] })).toMatchObject({ tier: 2 });
    expect(tier(evidence({ revocationTime: BigInt(NOW - 1) }))).toEqual({ tier: 0, level: "low", basis: "none" });
    expect(tier(evidence({ expiresAt: BigInt(NOW - 1) })).tier).toBe(0);
    expect(tier(evidence({ keyPurpose: ["keyAgreement"] })).tier).toBe(0);
    // Revoked after issuedAt: the receipt was signed while bound.
    expect(tier(evidence({ revocationTime: BigInt(NOW + 100) })).tier).toBe(3);
  });

  test("a witness counts from its chain time: one written after issuedAt naming an earlier observedAt covers nothing", () => {
    expect(tier({ witnesses: [witness({ observedAt: BigInt(NOW - 500), time: BigInt(NOW + 500) })] }).tier).toBe(0);
    expect(tier({ witnesses: [witness({ observedAt: BigInt(NOW - 500), time: BigInt(NOW - 400) })] }).tier).toBe(2);
  });

  test("an approved witness issuer writing the binding itself is not the witness a key binding requires", () => {
    // The approved-issuer role is scoped to controller-witness attestations; a binding it writes has no witness behind it.
    const witnessWallet = "0x00000000000000000000000000000000000000aa";
    expect(tier({ keyBindings: [binding({ attester: witnessWallet })], chainId: 31337 }).tier).toBe(0);
    // With the signing key itself witnessed, that is tier 2 (the witness), not tier 3.
    expect(tier({ keyBindings: [binding({ attester: witnessWallet })], witnesses: [witness()], chainId: 31337 })).toMatchObject({ tier: 2 });
  });

  test("an expired, revoked or non-assertion key binding is not tier 3", () => {
    const evidence = (over: Record<string, unknown>) => ({ keyBindings: [binding(over)], witnesses: [controllerWitness], chainId: 31337 });
    expect(tier(evidence({ expiresAt: BigInt(NOW - 1) })).tier).toBe(0);
    expect(tier(evidence({ revocationTime: BigInt(NOW - 1) })).tier).toBe(0);
    expect(tier(evidence({ keyPurpose: ["authentication"] })).tier).toBe(0);
    // Revoked after the receipt was issued: the receipt was made while the key was bound.
    expect(tier(evidence({ revocationTime: BigInt(NOW + 100) })).tier).toBe(3);
  });

  test("checkSignerTrust maps the resource URL to its did:web and asks the endpoint evidence for it", async () => {
    const asked: string[] = [];
    const result = await checkSignerTrust(
      { resourceUrl: "https://WWW.api.example.com/premium?x=1", signer, at: NOW },
      { endpointKeys: (did) => (asked.push(did), Promise.resolve([controllerOtherChain])) },
    );
    expect(asked).toEqual(["did:web:api.example.com"]);
    expect(result).toMatchObject({ tier: 1, subjectDid: "did:web:api.example.com" });
  });
});

describe("checkSignerTrust when evidence cannot be read", () => {
  const key = privateKeyToAccount(generatePrivateKey());
  const signer: VerifiedSigner = { format: "eip712", controllerDid: `did:pkh:eip155:1:${key.address.toLowerCase()}`, address: key.address };
  const input = { resourceUrl: "https://api.example.com/premium", signer, at: NOW };
  const answering = (response: () => Promise<Response>) => ({ baseUrl: "http://ats.test", fetch: response as never });

  test("an unreachable service, a 5xx, or a refusal that is no answer about the subject (429, 401, 403, 408) is NETWORK_ERROR, never tier 0", async () => {
    const status = (code: number) => () => Promise.resolve(Response.json({ error: "x", code: "RATE_LIMITED" }, { status: code }));
    for (const fetchFn of [() => Promise.reject(new TypeError("connect ECONNREFUSED")), () => Promise.resolve(new Response("{}", { status: 503 })), status(429), status(401), status(403), status(408)]) {
      const error = await checkSignerTrust(input, answering(fetchFn)).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(AtsClientError);
      expect((error as AtsClientError).code).toBe("NETWORK_ERROR");
      expect((error as AtsClientError).message).not.toContain("ECONNREFUSED");
    }
  });

  test("a 400 INVALID_DID is the service's answer about the subject: no endpoint evidence, tier 0; a 404 is no answer", async () => {
    const result = await checkSignerTrust(input, answering(() => Promise.resolve(Response.json({ error: "x", code: "INVALID_DID" }, { status: 400 }))));
    expect(result).toMatchObject({ tier: 0, endpointKeys: undefined });
    // The route's only 404 is "no such route" (client/endpoint_evidence_test.ts has the rest).
    const missing = await checkSignerTrust(input, answering(() => Promise.resolve(new Response("{}", { status: 404 })))).then(() => undefined, (e: unknown) => e);
    expect(isAtsClientError(missing) && [missing.code, missing.status]).toEqual(["NETWORK_ERROR", 404]);
  });

  test("a source unread whose word could make a key binding count (an owner's revocation) is NETWORK_ERROR, as key status answers, whether it failed now or is unusable for good", async () => {
    // DNS names the signing key (tier 1); did.json did not answer, and the owner it names revoked the key's binding
    // before the receipt. Before, the x402 tiers ignored that binding (its writer was no witnessed controller) and
    // answered tier 1, where key status says it cannot tell (decisions §25: one computation). Found in review: a
    // did.json read and unusable for good (`lasting`: a WAF page anyone can provoke) was passed to the rule as read.
    const owner = "0x00000000000000000000000000000000000000a1";
    const bindingUid = `0x${"22".repeat(32)}`;
    const schema = findSchemaByName("key-binding")!;
    const bindingSchemaUid = computeSchemaUid(schema).toLowerCase();
    const anchors = { version: 1, updatedAt: "", chains: { "eip155:31337": { easContract: "0x0000000000000000000000000000000000000001", schemas: { "key-binding": bindingSchemaUid } } } };
    const data = encodeSchemaData(schema.schema, {
      subject: "did:web:api.example.com", keyId: signer.controllerDid, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0n, effectiveAt: 0n, expiresAt: 0n,
    });
    const rpc = {
      getLogs: () => Promise.resolve([{ args: { uid: bindingUid } }]),
      readContract: () => Promise.resolve({
        uid: bindingUid, schema: bindingSchemaUid, time: BigInt(NOW - 700), expirationTime: 0n, revocationTime: BigInt(NOW - 300), refUID: `0x${"00".repeat(32)}`,
        recipient: "0x0000000000000000000000000000000000000000", attester: owner, revocable: true, data: (data as { value: string }).value,
      }),
    };
    for (const lasting of [false, true]) {
      const confirm = () => Promise.resolve(Response.json({
        subject: { canonical: "did:web:api.example.com" },
        controllerKeys: [{ canonicalId: signer.controllerDid }],
        evidence: [{ kind: "dns-txt", status: "found" }, { kind: "did-json", status: "unavailable", ...(lasting ? { lasting } : {}) }],
      }));
      const error = await checkSignerTrust(input, { ...answering(confirm), chain: { rpc: rpc as never, chainId: 31337, trustAnchors: anchors as never } })
        .then((v) => v, (e: unknown) => e);
      expect({ lasting, code: isAtsClientError(error) && error.code }).toEqual({ lasting, code: "NETWORK_ERROR" });
    }
  });

  test("a failed chain read is NETWORK_ERROR", async () => {
    const anchors = { version: 1, updatedAt: "", chains: { "eip155:31337": { easContract: "0x0000000000000000000000000000000000000001", schemas: { "controller-witness": `0x${"11".repeat(32)}` } } } };
    const options = {
      endpointKeys: () => Promise.resolve([]),
      chain: { rpc: "http://127.0.0.1:9/", chainId: 31337, trustAnchors: anchors as never },
    };
    const error = await checkSignerTrust(input, options).then(() => undefined, (e: unknown) => e);
    expect((error as AtsClientError).code).toBe("NETWORK_ERROR");
  });
});

describe("the review proof", () => {
  test("the receipt is wrapped verbatim as x402-receipt / commercial-tx, JSON-stringified in proofs, for the receipt's did:web", async () => {
    const receipt = await createEip712Issuer({ privateKey: generatePrivateKey() }).signReceipt(RECEIPT);
    const data = buildReceiptReview(receipt, { ratingValue: 5, reviewBody: "Fast", reviewer: payer.address });
    expect(data).toEqual({
      subject: "did:web:api.example.com",
      version: "1.0.0",
      ratingValue: 5,
      reviewBody: "Fast",
      screenshotUrls: [],
      proofs: [JSON.stringify({ proofType: "x402-receipt", proofPurpose: "commercial-tx", proofObject: receipt })],
    });
    expect(JSON.parse(data.proofs[0]!).proofObject).toEqual(receipt);
  });

  test("a reviewer other than the payer, or a rating outside 1..5, is refused", async () => {
    const receipt = await createEip712Issuer({ privateKey: generatePrivateKey() }).signReceipt(RECEIPT);
    expect(() => buildReceiptReview(receipt, { ratingValue: 5, reviewer: "0x0000000000000000000000000000000000000001" }))
      .toThrow(AtsClientError);
    expect(() => buildReceiptReview(receipt, { ratingValue: 6 })).toThrow("ratingValue must be an integer from 1 to 5");
  });
});

describe("receiptBindingToOffer() (decisions §18, issue 33)", () => {
  test("an EIP-712 receipt with another purchase's offer contradicts nothing, and is unknown, never bound", async () => {
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const receipt = await issuer.signReceipt(RECEIPT);
    const anotherPurchase = await issuer.signOffer({ ...OFFER, amount: "999999" });
    const read = await verifyReceipt(receipt, { nowSeconds: NOW });
    if (!read.ok) throw new Error(read.message);
    expect(receiptContradictsOffer(read.value.payload, anotherPurchase)).toEqual([]);
    expect(receiptBindingToOffer(read.value.payload, anotherPurchase)).toEqual({ status: "unknown", reasons: [] });
    expect(receiptBindingToOffer(read.value.payload, await issuer.signOffer({ ...OFFER, network: "eip155:8453" })))
      .toEqual({ status: "unbound", reasons: ["the receipt's network is not the offer's"] });
  });

  test("a JWS receipt is bound only to the offer its offerHash names", async () => {
    const issuer = await jwsIssuer();
    const offer = await issuer.signOffer(OFFER);
    const other = await issuer.signOffer({ ...OFFER, amount: "999999" });
    const receipt = readReceiptPayload(await issuer.signReceipt({ ...RECEIPT, offerHash: offerHashOf(offer) }));
    if (!receipt.ok) throw new Error(receipt.message);
    expect(receiptBindingToOffer(receipt.value, offer)).toEqual({ status: "bound", reasons: [] });
    expect(receiptBindingToOffer(receipt.value, other)).toEqual({ status: "unbound", reasons: ["the receipt is bound to another offer (offerHash differs)"] });
  });

  test("the receipt as sent (what extractReceipt gives) is judged as its payload is; anything else is INVALID_INPUT", async () => {
    // Before, a signed JWS receipt was read as a payload: unbound to every offer (no resourceUrl, no network).
    const issuer = await jwsIssuer();
    const offer = await issuer.signOffer(OFFER);
    const signed = await issuer.signReceipt({ ...RECEIPT, offerHash: offerHashOf(offer) });
    expect(receiptBindingToOffer(signed, offer)).toEqual({ status: "bound", reasons: [] });
    expect(receiptContradictsOffer(signed, offer)).toEqual([]);
    expect(findOfferOfReceipt(signed, [await issuer.signOffer({ ...OFFER, amount: "7" }), offer])).toBe(offer);
    const error = (() => {
      try {
        receiptBindingToOffer({ format: "jws" } as never, offer);
      } catch (e) {
        return e;
      }
    })();
    expect(isAtsClientError(error) ? error.code : error).toBe("INVALID_INPUT");
  });
});

describe("verifyReceiptAuthorization(): key status as of issuedAt (decisions §18)", () => {
  const past = Math.floor(Date.now() / 1000) - 86_400;
  const record = (over: Record<string, unknown>) => ({
    subjectDid: "did:web:api.example.com",
    keyDid: "",
    at: past,
    status: "registered",
    trustLevel: "basic",
    endpointEvidence: { found: true, sources: ["dns-txt"], checkedAt: past },
    controllerWitness: null,
    keyBinding: null,
    ...over,
  });
  /** A key-status service that records what it was asked and answers `answer`. */
  const service = (answer: Record<string, unknown> | number) => {
    const asked: URL[] = [];
    const fetchFn = (input: string | URL | Request) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      asked.push(url);
      return Promise.resolve(typeof answer === "number"
        ? new Response(JSON.stringify({ error: "Chain unavailable", code: "NETWORK_ERROR" }), { status: answer, headers: { "content-type": "application/json" } })
        : new Response(JSON.stringify({ ...answer, keyDid: url.searchParams.get("keyDid") }), { headers: { "content-type": "application/json" } }));
    };
    return { asked, fetch: fetchFn as typeof fetch };
  };

  test("a receipt of a service with no domain name (a devnet's 127.0.0.1) is the failure value, and review builders say INVALID_DID", async () => {
    // Before: verifyReceiptAuthorization threw INVALID_DID (documented: a failure value, or NETWORK_ERROR); the review
    // builders disagreed (buildReceiptReview INVALID_INPUT, submitServiceReview INVALID_DID).
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const receipt = await issuer.signReceipt({ ...RECEIPT, resourceUrl: "http://127.0.0.1:8080/v1/paid/delegated-attest", issuedAt: past });
    const s = service(record({}));
    const result = await verifyReceiptAuthorization(receipt, { baseUrl: "http://ats.test", fetch: s.fetch, nowSeconds: past + 10 });
    expect(result.ok ? result : [result.code, result.message]).toEqual(["INVALID_INPUT", "resourceUrl http://127.0.0.1:8080/v1/paid/delegated-attest names no did:web a key can be authorized for"]);
    expect(s.asked).toHaveLength(0);
    const codeOf = (run: () => unknown) => {
      try {
        run();
      } catch (e) {
        return isAtsClientError(e) ? e.code : e;
      }
    };
    expect(codeOf(() => buildReceiptReview(receipt, { ratingValue: 5 }))).toBe("INVALID_DID");
    expect(await submitServiceReview({ receipt, ratingValue: 5, attester: payer.address, sign: () => Promise.reject(new Error("never signed")) }, { baseUrl: "http://ats.test", fetch: s.fetch })
      .then(() => "submitted", (e: unknown) => isAtsClientError(e) ? e.code : e)).toBe("INVALID_DID");
  });

  test("asks GET /v1/key-status for the receipt's service and the signer's controller id at the receipt's issuedAt", async () => {
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const receipt = await issuer.signReceipt({ ...RECEIPT, issuedAt: past });
    const s = service(record({ status: "active", trustLevel: "advanced", keyBinding: { uid: "0xb1", attester: "0x1", keyPurpose: [], effectiveAt: 0, expiresAt: 0, revocationTime: 0 } }));
    const result = await verifyReceiptAuthorization(receipt, { baseUrl: "http://ats.test", fetch: s.fetch, nowSeconds: past + 10 });
    if (!result.ok) throw new Error(result.message);
    expect(s.asked).toHaveLength(1);
    expect(s.asked[0]!.pathname).toBe("/v1/key-status");
    expect(Object.fromEntries(s.asked[0]!.searchParams)).toEqual({
      subjectDid: "did:web:api.example.com",
      keyDid: `did:pkh:eip155:1:${issuer.address!.toLowerCase()}`,
      at: String(past),
    });
    expect(result.value).toMatchObject({ authorized: true, subjectDid: "did:web:api.example.com", trust: { tier: 3, basis: "key-binding", evidenceUid: "0xb1" } });
  });

  test("a key revoked or expired at issuedAt is not authorised, whatever names it today; none is not; a minimum is honoured", async () => {
    const issuer = await jwsIssuer();
    const didDocuments = didHost({
      id: "did:web:api.example.com",
      verificationMethod: [{ id: "did:web:api.example.com#key-1", type: "JsonWebKey2020", publicKeyJwk: issuer.publicJwk }],
      assertionMethod: ["did:web:api.example.com#key-1"],
    });
    const receipt = await issuer.signReceipt({ ...RECEIPT, issuedAt: past });
    const options = { baseUrl: "http://ats.test", didDocuments, nowSeconds: past + 10 };
    for (const [answer, authorized, tier] of [
      [record({ status: "revoked", trustLevel: "basic" }), false, 0],
      [record({ status: "expired", trustLevel: "basic" }), false, 0],
      [record({ trustLevel: "none", endpointEvidence: { found: false, sources: [], checkedAt: past } }), false, 0],
      [record({ trustLevel: "intermediate", controllerWitness: { uid: "0xw1", attester: "0x2", observedAt: past - 5 } }), true, 2],
    ] as const) {
      const result = await verifyReceiptAuthorization(receipt, { ...options, fetch: service(answer).fetch });
      expect(result.ok && [result.value.authorized, result.value.trust.tier]).toEqual([authorized, tier]);
    }
    const basic = await verifyReceiptAuthorization(receipt, { ...options, fetch: service(record({})).fetch, minimumTrust: "intermediate" });
    expect(basic.ok && basic.value.authorized).toBe(false);
  });

  test("a key status the service cannot give is NETWORK_ERROR, never a guess; a bad receipt is refused before any lookup", async () => {
    const receipt = await createEip712Issuer({ privateKey: generatePrivateKey() }).signReceipt({ ...RECEIPT, issuedAt: past });
    const down = service(502);
    await expect(verifyReceiptAuthorization(receipt, { baseUrl: "http://ats.test", fetch: down.fetch, nowSeconds: past })).rejects.toMatchObject({ code: "NETWORK_ERROR" });
    const untouched = service(record({}));
    const forged = { ...receipt, signature: "0x1234" };
    const refused = await verifyReceiptAuthorization(forged, { baseUrl: "http://ats.test", fetch: untouched.fetch, nowSeconds: past });
    expect(refused.ok).toBe(false);
    expect(untouched.asked).toHaveLength(0);
  });
});
