import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base64UrlEncode, jwkToDidJwk } from "../domain/did/mod.ts";
import { offerHashOf, type OfferPayload, type ReceiptPayload } from "../domain/payments/mod.ts";
import { createEip712Issuer, createJwsIssuerFromJwk, generateSigningJwk } from "../x402/signers.ts";
import { checkReviewProof } from "./reviews.ts";

// Long past: the real clock is far beyond every validUntil here, as it is for any review read later.
const T = 1_700_000_000;
const SUBJECT = "did:web:api.example.com";
const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
const reviewer = privateKeyToAccount(generatePrivateKey());
const OFFER: OfferPayload = {
  version: 1,
  resourceUrl: "https://api.example.com/premium",
  scheme: "exact",
  network: "eip155:84532",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "1000",
  validUntil: T + 300,
};
const RECEIPT: ReceiptPayload = { version: 1, network: "eip155:84532", resourceUrl: OFFER.resourceUrl, payer: reviewer.address, issuedAt: T };
// Tier 1 without any network: the service publishes the issuer's address.
const trust = { endpointKeys: () => Promise.resolve([`did:pkh:eip155:1:${issuer.address!}`]) };
const wrap = (proofType: string, proofObject: unknown) => ({ proofType, proofPurpose: "commercial-tx", proofObject });
const review = (time: number) => ({ attester: reviewer.address, subject: SUBJECT, time: BigInt(time) });

describe("checkReviewProof() judges a proof as of the review", () => {
  test("an offer valid when the review was attested still verifies once validUntil has passed", async () => {
    const offer = await issuer.signOffer(OFFER);
    expect(Date.now() / 1000).toBeGreaterThan(OFFER.validUntil);
    // Even an explicit clock far past validUntil is not what a review is judged by.
    for (const x402 of [undefined, { nowSeconds: T + 100_000 }]) {
      const checked = await checkReviewProof(wrap("x402-offer", offer), review(T + 100), { trust, x402 });
      expect(checked).toMatchObject({
        proofType: "x402-offer",
        valid: true,
        reasons: [],
        signatureValid: true,
        resourceMatchesSubject: true,
        signerTrust: { tier: 1, basis: "endpoint-evidence" },
        // Anyone who asks for the resource gets an offer: it shows a price quoted, not a payment.
        provesPayment: false,
      });
    }
  });

  test("an offer that had already expired when the review was attested is refused, its signature still good", async () => {
    const offer = await issuer.signOffer(OFFER);
    const checked = await checkReviewProof(wrap("x402-offer", offer), review(OFFER.validUntil + 1), { trust });
    expect(checked).toMatchObject({ valid: false, signatureValid: true, reasons: ["the offer had expired when the review was attested"] });
  });

  test("an old receipt still counts; a receipt issued after the review does not", async () => {
    const receipt = await issuer.signReceipt(RECEIPT);
    expect(await checkReviewProof(wrap("x402-receipt", receipt), review(T + 60), { trust })).toMatchObject({
      valid: true,
      signatureValid: true,
      payer: { address: reviewer.address, relation: "attester" },
      signerTrust: { tier: 1 },
    });
    const late = await issuer.signReceipt({ ...RECEIPT, issuedAt: T + 3600 });
    expect(await checkReviewProof(wrap("x402-receipt", late), review(T), { trust })).toMatchObject({
      valid: false,
      signatureValid: false,
      reasons: ["signature: Receipt issuedAt lies in the future"],
    });
  });
});

describe("checkReviewProof() with a receipt carried beside the offer it settles (decisions §18)", () => {
  // A JWS issuer with a self-resolving did:jwk kid (no did.json needed), published by the service as its controller.
  const jwsSetup = async () => {
    const privateJwk = await generateSigningJwk("EdDSA");
    const publicJwk = { kty: privateJwk.kty, crv: privateJwk.crv, x: privateJwk.x };
    const kid = `did:jwk:${base64UrlEncode(new TextEncoder().encode(JSON.stringify(publicJwk)))}#0`;
    const jwsIssuer = await createJwsIssuerFromJwk({ kid, alg: "EdDSA", privateJwk });
    const controller = (jwkToDidJwk(publicJwk, { publicOnly: true }) as { value: string }).value;
    return { jwsIssuer, jwsTrust: { endpointKeys: () => Promise.resolve([controller]) } };
  };
  const withOffer = (receipt: unknown, offer: unknown) => ({ ...wrap("x402-receipt", receipt), offer });

  test("a JWS receipt whose offerHash names the carried offer is bound to it", async () => {
    const { jwsIssuer, jwsTrust } = await jwsSetup();
    const offer = await jwsIssuer.signOffer(OFFER);
    const receipt = await jwsIssuer.signReceipt({ ...RECEIPT, offerHash: offerHashOf(offer) });
    const checked = await checkReviewProof(withOffer(receipt, offer), review(T + 60), { trust: jwsTrust });
    expect(checked).toMatchObject({ valid: true, reasons: [], offerBinding: { bound: true, status: "bound", offerHash: offerHashOf(offer) } });
  });

  test("a receipt bound to another offer is refused with the reason; a receipt alone still works", async () => {
    const { jwsIssuer, jwsTrust } = await jwsSetup();
    const offer = await jwsIssuer.signOffer(OFFER);
    const other = await jwsIssuer.signOffer({ ...OFFER, amount: "2000" });
    const receipt = await jwsIssuer.signReceipt({ ...RECEIPT, offerHash: offerHashOf(other) });
    expect(await checkReviewProof(withOffer(receipt, offer), review(T + 60), { trust: jwsTrust })).toMatchObject({
      valid: false,
      signatureValid: true,
      reasons: ["the receipt is bound to another offer (offerHash differs)"],
      offerBinding: { bound: false, status: "unbound" },
    });
    const alone = await checkReviewProof(wrap("x402-receipt", receipt), review(T + 60), { trust: jwsTrust });
    expect(alone).toMatchObject({ valid: true, reasons: [] });
    expect(alone.offerBinding).toBeUndefined();
  });

  test("an EIP-712 receipt names no offer (issue 33): with any offer of matching terms its binding is unknown, never bound", async () => {
    // The receipt of one purchase carried beside the offer of another: same resource and network, other terms.
    const anotherPurchasesOffer = await issuer.signOffer({ ...OFFER, amount: "999999", payTo: reviewer.address });
    const receipt = await issuer.signReceipt(RECEIPT);
    const checked = await checkReviewProof(withOffer(receipt, anotherPurchasesOffer), review(T + 60), { trust });
    expect(checked).toMatchObject({ valid: true, reasons: [] });
    expect(checked.offerBinding).toEqual({ bound: false, status: "unknown" });
    // Its own offer fares no better: nothing signed ties the two.
    const own = await checkReviewProof(withOffer(receipt, await issuer.signOffer(OFFER)), review(T + 60), { trust });
    expect(own.offerBinding).toEqual({ bound: false, status: "unknown" });
    // A contradiction still makes it unbound.
    const elsewhere = await issuer.signReceipt({ ...RECEIPT, network: "eip155:8453" });
    expect((await checkReviewProof(withOffer(elsewhere, anotherPurchasesOffer), review(T + 60), { trust })).offerBinding)
      .toEqual({ bound: false, status: "unbound" });
  });

  test("terms that contradict the offer, an offer from another key, a forged offer: each refused with its reason", async () => {
    const { jwsIssuer, jwsTrust } = await jwsSetup();
    const offer = await jwsIssuer.signOffer(OFFER);
    const hash = offerHashOf(offer);
    const elsewhere = await jwsIssuer.signReceipt({ ...RECEIPT, network: "eip155:8453", offerHash: hash });
    expect((await checkReviewProof(withOffer(elsewhere, offer), review(T + 60), { trust: jwsTrust })).reasons)
      .toEqual(["the receipt's network is not the offer's"]);
    const eip712Offer = await issuer.signOffer(OFFER);
    const plain = await issuer.signReceipt(RECEIPT);
    expect((await checkReviewProof(withOffer(plain, eip712Offer), review(T + 60), { trust })).reasons).toEqual([]);
    const strangersOffer = await jwsSetup().then((s) => s.jwsIssuer.signOffer(OFFER));
    const bound = await jwsIssuer.signReceipt({ ...RECEIPT, offerHash: offerHashOf(strangersOffer) });
    expect((await checkReviewProof(withOffer(bound, strangersOffer), review(T + 60), { trust: jwsTrust })).reasons)
      .toEqual(["the offer and the receipt are signed by different keys"]);
    const forged = { format: "jws", signature: `${(offer as { signature: string }).signature.slice(0, -4)}AAAA` };
    expect((await checkReviewProof(withOffer(plain, forged), review(T + 60), { trust })).reasons[0]).toMatch(/^the offer it settles: /);
  });
});

describe("checkReviewProof() with transaction proofs (decisions §18)", () => {
  const SERVICE = "0x2222222222222222222222222222222222222222";
  const OTHER = "0x3333333333333333333333333333333333333333";
  const HASH = `0x${"cd".repeat(32)}` as const;
  const txWrap = (proofType: string, chainId: unknown = "eip155:31337") => wrap(proofType, { chainId, txHash: HASH });
  const chainWith = (tx: { from: string; to: string | undefined; success?: boolean; blockTime?: bigint } | undefined) => {
    const reads: string[] = [];
    return {
      reads,
      transactions: {
        chainId: 31337,
        read: (hash: `0x${string}`) => {
          reads.push(hash);
          return Promise.resolve(tx === undefined ? undefined : { success: true, blockTime: BigInt(T), ...tx } as never);
        },
      },
    };
  };
  const subjectAddresses = () => Promise.resolve([SERVICE]);

  test("tx-interaction and tx-encoded-value from the reviewer to an endpoint-named address count", async () => {
    for (const proofType of ["tx-interaction", "tx-encoded-value"]) {
      const { transactions, reads } = chainWith({ from: reviewer.address, to: SERVICE });
      const checked = await checkReviewProof(txWrap(proofType), review(T + 60), { transactions, subjectAddresses });
      expect(checked).toMatchObject({ proofType, valid: true, reasons: [], transaction: { chainId: 31337, txHash: HASH, from: reviewer.address, to: SERVICE, senderRelation: "attester" } });
      expect(reads).toEqual([HASH]);
    }
  });

  test("a transaction from someone else, or to another contract, is refused with its reason; a linked sender counts", async () => {
    const fromStranger = chainWith({ from: OTHER, to: SERVICE });
    expect((await checkReviewProof(txWrap("tx-interaction"), review(T + 60), { transactions: fromStranger.transactions, subjectAddresses })).reasons)
      .toEqual(["the transaction was sent by someone other than the reviewer or a wallet it linked"]);
    const linked = await checkReviewProof(txWrap("tx-interaction"), review(T + 60), {
      transactions: fromStranger.transactions,
      subjectAddresses,
      payerRelation: (payer) => Promise.resolve(payer === OTHER ? "linked" : "unrelated"),
    });
    expect(linked).toMatchObject({ valid: true, transaction: { senderRelation: "linked" } });
    const elsewhere = chainWith({ from: reviewer.address, to: OTHER });
    expect((await checkReviewProof(txWrap("tx-interaction"), review(T + 60), { transactions: elsewhere.transactions, subjectAddresses })).reasons)
      .toEqual(["the transaction went to an address that is neither the subject's contract nor named by its endpoint evidence"]);
  });

  test("a contract subject (did:pkh): the transaction must go to that contract", async () => {
    const subject = `did:pkh:eip155:31337:${SERVICE}`;
    const toContract = chainWith({ from: reviewer.address, to: SERVICE });
    expect(await checkReviewProof(txWrap("tx-interaction"), { ...review(T + 60), subject }, { transactions: toContract.transactions }))
      .toMatchObject({ valid: true });
    const toOther = chainWith({ from: reviewer.address, to: OTHER });
    expect((await checkReviewProof(txWrap("tx-interaction"), { ...review(T + 60), subject }, { transactions: toOther.transactions })).valid).toBe(false);
  });

  test("the chain rule (issue 33): a transaction on another chain than a did:pkh subject's is invalid with its reason, unread", async () => {
    // did:pkh:eip155:1:<C> reviewed with a transaction to C on the verifier's own chain: C there is another account.
    const toC = chainWith({ from: reviewer.address, to: SERVICE });
    const mainnetSubject = `did:pkh:eip155:1:${SERVICE}`;
    expect(await checkReviewProof(txWrap("tx-interaction"), { ...review(T + 60), subject: mainnetSubject }, { transactions: toC.transactions }))
      .toEqual({
        proofType: "tx-interaction",
        valid: false,
        reasons: [`the transaction is on eip155:31337, not on ${mainnetSubject}'s chain eip155:1`],
        signatureValid: false,
        transaction: { chainId: 31337, txHash: HASH },
      });
    expect(toC.reads).toEqual([]);
    // A did:web's endpoint evidence names did:pkh: only those of the transaction's chain are where it may go.
    const endpointNames = (ids: string[]) => ({ trust: { endpointKeys: () => Promise.resolve(ids) }, transactions: toC.transactions });
    expect((await checkReviewProof(txWrap("tx-interaction"), review(T + 60), endpointNames([`did:pkh:eip155:1:${SERVICE}`]))).reasons)
      .toEqual(["the transaction went to an address that is neither the subject's contract nor named by its endpoint evidence"]);
    expect(await checkReviewProof(txWrap("tx-interaction"), review(T + 60), endpointNames([`did:pkh:eip155:31337:${SERVICE}`])))
      .toMatchObject({ valid: true, reasons: [] });
    // A caller's own address source is asked for the transaction's chain.
    const asked: [string, number][] = [];
    await checkReviewProof(txWrap("tx-interaction"), review(T + 60), {
      transactions: toC.transactions,
      subjectAddresses: (subject, chainId) => (asked.push([subject, chainId]), Promise.resolve([SERVICE])),
    });
    expect(asked).toEqual([[SUBJECT, 31337]]);
  });

  test("a missing transaction, another chain, a bad proof object: reported without a read where none is needed", async () => {
    const missing = chainWith(undefined);
    expect((await checkReviewProof(txWrap("tx-interaction"), review(T + 60), { transactions: missing.transactions, subjectAddresses })).reasons)
      .toEqual([`the transaction ${HASH} is not on eip155:31337`]);
    const other = chainWith({ from: reviewer.address, to: SERVICE });
    expect((await checkReviewProof(txWrap("tx-interaction", "eip155:1"), review(T + 60), { transactions: other.transactions, subjectAddresses })).reasons)
      .toEqual(["eip155:1 is not the chain this verifier reads"]);
    expect((await checkReviewProof(wrap("tx-interaction", { chainId: 31337 }), review(T + 60), { transactions: other.transactions })).reasons)
      .toEqual(["proofObject.txHash must be 32 bytes of hex"]);
    expect(other.reads).toEqual([]);
  });
});
