/**
 * Reviews end to end on the devnet: a paid request through the x402 resource server, a review with the
 * receipt as proof (through delegated-attest), a reply from the service's controller (published in its
 * DNS TXT), a reply from an unrelated wallet, a second review by the same attester, all read back and
 * judged through `verifyReview`.
 */
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { OMA_TRUST_PROOF_DOMAIN, OMA_TRUST_PROOF_TYPES } from "../domain/artifact_trust/mod.ts";
import { readOfferPayload } from "../domain/payments/mod.ts";
import { attestDelegated, fetchNonce, prepareDelegatedAttestation, signableTypedData, submitDelegatedAttestation } from "../client/delegated_attest.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { isAtsClientError } from "../client/errors.ts";
import { respondToReview, submitServiceReview, verifyReview } from "../client/reviews.ts";
import { clearTrustAnchorsCache } from "../client/trust_anchors.ts";
import { extractOffers, extractReceiptOffer, verifyReceiptAuthorization } from "../client/x402.ts";
import { compactVerify, decodeProtectedHeader, EmbeddedJWK, importJWK } from "jose";
import { createWalletClient, defineChain, encodeFunctionData, parseAbi } from "viem";
import { buildReviewData } from "../domain/reviews/mod.ts";
import { offerHashOf } from "../domain/payments/mod.ts";
import { createJwsIssuerFromJwk, generateSigningJwk } from "../x402/signers.ts";
import { ownedContract } from "./support/owned_contract.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type PaidService, startPaidService } from "./support/paid_service.ts";
import { getTestCa } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

let dns: DnsServer;
let shop: PaidService;
let stack: Stack;

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  shop = await startPaidService({ dns, caCert: ca.cert });
  stack = await startStack({ env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true" }, didJsonCa: ca.cert });
  clearTrustAnchorsCache();
});
afterAll(async () => {
  await stack?.stop();
  await shop?.stop();
  await dns?.stop();
});

const chainOptions = () => ({ baseUrl: stack.baseUrl, rpc: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, x402: { didDocuments: shop.didDocuments } });

async function codeOf(promise: Promise<unknown>) {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (isAtsClientError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
}

describe("reviews with receipt proofs, and the service's replies", () => {
  test("review, reply by the controller, reply by a stranger, a second review: verified through the helper", async () => {
    // The service's controller key: funded on the devnet and published in the service's DNS TXT.
    const controller = privateKeyToAccount(stack.devnet.keys.users[2] as Hex);
    const stranger = privateKeyToAccount(stack.devnet.keys.users[3] as Hex);
    dns.setTxt("_controllers.svc.test", [[`v=1;controller=did:pkh:eip155:${stack.devnet.chainId}:${controller.address}`]]);
    const payer = privateKeyToAccount(generatePrivateKey());

    const first = await shop.pay(payer);
    expect(first.paid.status).toBe(200);
    const review = await submitServiceReview(
      { receipt: first.receipt, ratingValue: 2, reviewBody: "Slow answer", attester: payer.address, sign: (td) => payer.signTypedData(td) },
      { baseUrl: stack.baseUrl },
    );
    expect(review.success).toBe(true);
    expect(review.data.subject).toBe(shop.subjectDid.toLowerCase());

    const reply = await respondToReview({ reviewUid: review.uid!, responseBody: "Fixed, thank you", account: controller }, chainOptions());
    const strangerReply = await respondToReview({ reviewUid: review.uid!, responseBody: "Buy from us instead", account: stranger }, chainOptions());

    const firstCheck = await verifyReview(review.uid!, chainOptions());
    expect(firstCheck.review).toMatchObject({ attester: payer.address, subject: shop.subjectDid.toLowerCase(), ratingValue: 2, reviewBody: "Slow answer" });
    expect(firstCheck.counts).toBe(true);
    expect(firstCheck.proofs).toHaveLength(1);
    expect(firstCheck.proofs[0]).toMatchObject({
      proofType: "x402-receipt",
      valid: true,
      reasons: [],
      signatureValid: true,
      resourceMatchesSubject: true,
      payer: { address: payer.address, relation: "attester" },
      signerTrust: { tier: 1, basis: "endpoint-evidence" },
      provesPayment: true,
    });
    expect(firstCheck.responses.map((r) => [r.uid, r.kept])).toEqual([[reply.uid, true], [strangerReply.uid, false]]);
    expect(firstCheck.responses[0]!.reason).toContain("authorized controller");
    expect(firstCheck.responses[0]!.responseBody).toBe("Fixed, thank you");
    expect(firstCheck.responses[1]!.reason).toContain("neither the service nor an authorized controller");

    // The same attester reviews again after a second purchase: the newer review replaces the first.
    const second = await shop.pay(payer);
    const again = await submitServiceReview(
      { receipt: second.receipt, ratingValue: 5, reviewBody: "Much better now", attester: payer.address, sign: (td) => payer.signTypedData(td) },
      { baseUrl: stack.baseUrl },
    );
    const superseded = await verifyReview(review.uid!, chainOptions());
    expect(superseded).toMatchObject({ counts: false, supersededBy: again.uid });
    const current = await verifyReview(again.uid!, chainOptions());
    expect(current).toMatchObject({ counts: true, recipientMatchesSubject: true, responses: [] });
    expect(current.review.ratingValue).toBe(5);

    // A third review by the same attester sent to another recipient (a hand-built request: the client helpers
    // always derive it from the subject) would escape the newest-review rule; it never counts and leaves the
    // properly addressed one counting.
    const { nonce, chainId, easAddress } = await fetchNonce(payer.address, { baseUrl: stack.baseUrl });
    const anchors = await (await fetch(`${stack.baseUrl}/v1/trust-anchors`)).json() as Record<string, any>;
    const prepared = prepareDelegatedAttestation({
      schema: { uid: anchors.chains[`eip155:${chainId}`].schemas["user-review"], schema: findSchemaByName("user-review")!.schema, revocable: findSchemaByName("user-review")!.revocable },
      data: again.data,
      attester: payer.address,
      nonce,
      chainId,
      easAddress,
    });
    const elsewhere = "0x000000000000000000000000000000000000dEaD";
    (prepared.typedData.message as Record<string, unknown>).recipient = elsewhere;
    (prepared.delegatedRequest as Record<string, unknown>).recipient = elsewhere;
    const misaddressed = await submitDelegatedAttestation(
      { prepared, signature: await payer.signTypedData(signableTypedData(prepared)), attester: payer.address },
      { baseUrl: stack.baseUrl },
    );
    const stray = await verifyReview(misaddressed.uid!, chainOptions());
    expect(stray).toMatchObject({ counts: false, recipientMatchesSubject: false });
    expect(stray.supersededBy).toBeUndefined();
    expect(await verifyReview(again.uid!, chainOptions())).toMatchObject({ counts: true, recipientMatchesSubject: true });
  });

  test("an offer can back a review; a receipt paid by someone else cannot be used by the reviewer", async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const other = privateKeyToAccount(generatePrivateKey());
    const { unpaid, receipt } = await shop.pay(payer);
    const [offer] = await extractOffers(unpaid);
    const viaOffer = await submitServiceReview(
      { offer, ratingValue: 3, attester: other.address, sign: (td) => other.signTypedData(td) },
      { baseUrl: stack.baseUrl },
    );
    const checked = await verifyReview(viaOffer.uid!, chainOptions());
    expect(checked.proofs[0]).toMatchObject({ proofType: "x402-offer", valid: true, resourceMatchesSubject: true, signerTrust: { tier: 1 }, provesPayment: false });
    expect(checked.proofs[0]!.payer).toBeUndefined();
    // Read again once the offer's validUntil has passed: it is judged as of the review, so it still counts.
    const terms = readOfferPayload(offer);
    if (!terms.ok) throw new Error(terms.message);
    setSystemTime(new Date((terms.value.validUntil + 600) * 1000));
    try {
      const later = await verifyReview(viaOffer.uid!, chainOptions());
      expect(later.proofs[0]).toMatchObject({ proofType: "x402-offer", valid: true, signatureValid: true, reasons: [] });
    } finally {
      setSystemTime();
    }

    let signed = false;
    const sign = (td: Parameters<typeof other.signTypedData>[0]) => {
      signed = true;
      return other.signTypedData(td);
    };
    expect(await codeOf(submitServiceReview({ receipt, ratingValue: 4, attester: other.address, sign }, { baseUrl: stack.baseUrl })))
      .toBe("INVALID_INPUT: attester must be the receipt's payer (or set linkedPayer)");
    expect(signed).toBe(false);
  });

  test("a receipt paid by a wallet the reviewer linked to itself counts; an unlinked one is reported", async () => {
    const reviewer = privateKeyToAccount(generatePrivateKey());
    const wallet = privateKeyToAccount(generatePrivateKey());
    const reviewerDid = `did:pkh:eip155:${stack.devnet.chainId}:${reviewer.address.toLowerCase()}`;
    const now = BigInt(Math.floor(Date.now() / 1000));
    // The paying wallet proves it lets the reviewer speak for it (pop-eip712, purpose shared-control).
    const message = {
      signer: wallet.address,
      authorizedEntity: reviewerDid,
      signingPurpose: "shared-control",
      creationTimestamp: now - 10n,
      expirationTimestamp: now + 3600n,
      randomValue: `0x${"22".repeat(32)}` as Hex,
      statement: "This wallet belongs to the reviewer",
    };
    const domain = { ...OMA_TRUST_PROOF_DOMAIN, chainId: 1 };
    const signature = await wallet.signTypedData({ domain, types: OMA_TRUST_PROOF_TYPES, primaryType: "OmaTrustProof", message });
    const proof = JSON.stringify({
      proofType: "pop-eip712",
      proofPurpose: "shared-control",
      proofObject: { domain, message: { ...message, creationTimestamp: Number(message.creationTimestamp), expirationTimestamp: Number(message.expirationTimestamp) }, signature },
    });
    await attestDelegated({
      schemaName: "linked-identifier",
      data: { subject: reviewerDid, linkedId: `did:pkh:eip155:1:${wallet.address}`, proofs: [proof], issuedAt: now, effectiveAt: now - 60n, expiresAt: 0n },
      attester: reviewer.address,
      sign: (td) => reviewer.signTypedData(td),
    }, { baseUrl: stack.baseUrl });

    const { receipt } = await shop.pay(wallet);
    const linked = await submitServiceReview(
      { receipt, ratingValue: 4, attester: reviewer.address, sign: (td) => reviewer.signTypedData(td), linkedPayer: true },
      { baseUrl: stack.baseUrl },
    );
    expect((await verifyReview(linked.uid!, chainOptions())).proofs[0]).toMatchObject({ valid: true, payer: { relation: "linked" } });

    const unlinked = privateKeyToAccount(generatePrivateKey());
    const other = await shop.pay(privateKeyToAccount(generatePrivateKey()));
    const orphan = await submitServiceReview(
      { receipt: other.receipt, ratingValue: 1, attester: unlinked.address, sign: (td) => unlinked.signTypedData(td), linkedPayer: true },
      { baseUrl: stack.baseUrl },
    );
    expect((await verifyReview(orphan.uid!, chainOptions())).proofs[0]).toMatchObject({
      valid: false,
      payer: { relation: "unrelated" },
      reasons: ["the payer is neither the reviewer nor linked to it"],
    });
  });

  test("bad input is refused with the field named before anything is signed or sent", async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const { receipt } = await shop.pay(payer);
    let signed = false;
    const sign = (td: Parameters<typeof payer.signTypedData>[0]) => {
      signed = true;
      return payer.signTypedData(td);
    };
    const base = { receipt, attester: payer.address, sign };
    const cases: [Parameters<typeof submitServiceReview>[0], string][] = [
      [{ ...base, ratingValue: 6 }, "INVALID_INPUT: ratingValue must be an integer from 1 to 5"],
      [{ ...base, ratingValue: 4, reviewBody: "x".repeat(501) }, "INVALID_INPUT: reviewBody must be text of at most 500 characters"],
      [{ ...base, ratingValue: 4, screenshotUrls: Array(11).fill("https://img.test/a.png") }, "INVALID_INPUT: screenshotUrls must hold at most 10 URLs"],
      [{ ...base, ratingValue: 4, screenshotUrls: ["file:///etc/passwd"] }, "INVALID_INPUT: screenshotUrls must be http(s) URLs"],
      // Decisions §18 adds transactions as proofs: the message names all three.
      [{ ...base, receipt: undefined, ratingValue: 4 }, "INVALID_INPUT: receipt, offer or transaction is required"],
      [{ ...base, receipt: { format: "eip712", payload: {} } as never, ratingValue: 4 }, "INVALID_INPUT: receipt: Unsupported receipt version"],
    ];
    for (const [input, expected] of cases) {
      expect(await codeOf(submitServiceReview(input, { baseUrl: stack.baseUrl }))).toBe(expected);
    }
    expect(signed).toBe(false);

    const controller = privateKeyToAccount(stack.devnet.keys.users[2] as Hex);
    const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
    const nonce = await client.getTransactionCount({ address: controller.address });
    const uid = `0x${"ab".repeat(32)}`;
    expect(await codeOf(respondToReview({ reviewUid: uid, responseBody: " ", account: controller }, chainOptions())))
      .toBe("INVALID_INPUT: responseBody must be 1 to 500 characters");
    expect(await codeOf(respondToReview({ reviewUid: "0x1234", responseBody: "hi", account: controller }, chainOptions())))
      .toBe("INVALID_INPUT: reviewUid must be the review's attestation uid (32 bytes of hex)");
    expect(await codeOf(respondToReview({ reviewUid: uid, responseBody: "hi", account: controller }, chainOptions())))
      .toBe("INVALID_INPUT: reviewUid is not a user review on this chain");
    expect(await client.getTransactionCount({ address: controller.address })).toBe(nonce);
    expect(await codeOf(verifyReview(uid, chainOptions()))).toBe("INVALID_INPUT: uid is not a user review on this chain");
  });
});

describe("receipts that prove more, and transaction proofs (issue 25, decisions §18)", () => {
  /** Submits review data as built (no client-side checks), as another tool could. */
  const submitRaw = async (data: Parameters<typeof buildReviewData>[0], attester: ReturnType<typeof privateKeyToAccount>) => {
    const built = buildReviewData(data);
    if (!built.ok) throw new Error(built.message);
    return await attestDelegated({ schemaName: "user-review", data: built.value, attester: attester.address, sign: (td) => attester.signTypedData(td) }, { baseUrl: stack.baseUrl });
  };
  const wallet = (key: Hex) => {
    const account = privateKeyToAccount(key);
    const chain = defineChain({ id: stack.devnet.chainId, name: "devnet", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [stack.devnet.rpcUrl] } } });
    return { account, client: createWalletClient({ account, chain, transport: http(stack.devnet.rpcUrl) }) };
  };
  const mined = async (hash: Hex) => {
    const receipt = await createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(receipt.status).toBe("success");
    return receipt;
  };

  test("the paid receipt carries jwk beside kid (jose verifies it, the jwk is the did.json key) and names its offer; the review with both is bound", async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    dns.setTxt("_controllers.svc.test", [[`v=1;controller=did:pkh:eip155:${stack.devnet.chainId}:${privateKeyToAccount(stack.devnet.keys.users[2] as Hex).address}`]]);
    const { unpaid, paid, receipt } = await shop.pay(payer);
    const offer = extractReceiptOffer(paid)!;
    // The offer the receipt settles is the one the 402 showed (the official client echoed it back).
    expect((await extractOffers(unpaid))[0]).toEqual(offer);
    const compact = (receipt as { signature: string }).signature;
    const header = decodeProtectedHeader(compact);
    expect(header.kid).toBe(`${shop.subjectDid}#key-1`);
    const doc = await (await fetch(`${shop.url.replace("/premium", "")}/.well-known/did.json`)).json() as { verificationMethod: { publicKeyJwk: Record<string, string> }[] };
    expect(header.jwk).toEqual(doc.verificationMethod[0]!.publicKeyJwk);
    const viaJwk = await compactVerify(compact, EmbeddedJWK);
    await compactVerify(compact, await importJWK(doc.verificationMethod[0]!.publicKeyJwk, "ES256"));
    const payload = JSON.parse(new TextDecoder().decode(viaJwk.payload)) as Record<string, unknown>;
    expect(payload).toMatchObject({ payer: payer.address, offerHash: offerHashOf(offer) });

    // Was the signing key authorised for the shop at the receipt's issuedAt? The service's key status answers (§18).
    const authorization = await verifyReceiptAuthorization(receipt, { baseUrl: stack.baseUrl, didDocuments: shop.didDocuments });
    if (!authorization.ok) throw new Error(authorization.message);
    expect(authorization.value).toMatchObject({ authorized: true, subjectDid: shop.subjectDid.toLowerCase(), trust: { tier: 1, keyStatus: { at: payload.issuedAt, trustLevel: "basic" } } });

    const review = await submitServiceReview(
      { receipt, offer, ratingValue: 4, attester: payer.address, sign: (td) => payer.signTypedData(td) },
      { baseUrl: stack.baseUrl },
    );
    const checked = await verifyReview(review.uid!, chainOptions());
    expect(checked.proofs[0]).toMatchObject({ proofType: "x402-receipt", valid: true, reasons: [], offerBinding: { bound: true, status: "bound", offerHash: offerHashOf(offer) } });
  });

  test("a receipt bound to another offer, and a forged jwk, are each refused with the reason", async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const first = await shop.pay(payer);
    // Signed as of a second earlier: two payments for one resource within a second share one offer (x402/extension.ts).
    const second = await shop.pay(payer, 1);
    // The client helper refuses to build it; a review written by another tool is judged on the chain.
    let signed = false;
    expect(await codeOf(submitServiceReview(
      { receipt: second.receipt, offer: extractReceiptOffer(first.paid)!, ratingValue: 5, attester: payer.address, sign: (td) => { signed = true; return payer.signTypedData(td); } },
      { baseUrl: stack.baseUrl },
    ))).toBe("INVALID_INPUT: offer: the receipt is bound to another offer (offerHash differs)");
    expect(signed).toBe(false);
    const mismatched = await submitRaw({
      subject: shop.subjectDid,
      ratingValue: 5,
      proofs: [{ proofType: "x402-receipt", proofPurpose: "commercial-tx", proofObject: second.receipt, offer: extractReceiptOffer(first.paid) }],
    }, payer);
    expect((await verifyReview(mismatched.uid!, chainOptions())).proofs[0]).toMatchObject({
      valid: false,
      signatureValid: true,
      reasons: ["the receipt is bound to another offer (offerHash differs)"],
      offerBinding: { bound: false, status: "unbound" },
    });

    // An attacker key carried as jwk under the shop's kid: the signature is good under the jwk, not under the kid's key.
    const attacker = await createJwsIssuerFromJwk({ kid: shop.issuer.kid, alg: "ES256", privateJwk: await generateSigningJwk("ES256") });
    const payload = JSON.parse(new TextDecoder().decode((await compactVerify((first.receipt as { signature: string }).signature, EmbeddedJWK)).payload));
    const forged = await attacker.signReceipt(payload);
    expect((await compactVerify((forged as { signature: string }).signature, EmbeddedJWK)).protectedHeader.kid).toBe(shop.issuer.kid);
    const withForged = await submitRaw({ subject: shop.subjectDid, ratingValue: 1, proofs: [{ proofType: "x402-receipt", proofPurpose: "commercial-tx", proofObject: forged }] }, payer);
    expect((await verifyReview(withForged.uid!, chainOptions())).proofs[0]).toMatchObject({
      valid: false,
      signatureValid: false,
      reasons: ["signature: Embedded jwk and kid name different keys"],
    });
  });

  test("tx-interaction: the reviewer's transaction to an address the service's DNS names counts; one from someone else, or to another contract, is refused with its reason", async () => {
    const service = privateKeyToAccount(stack.devnet.keys.users[2] as Hex);
    dns.setTxt("_controllers.svc.test", [[`v=1;controller=did:pkh:eip155:${stack.devnet.chainId}:${service.address}`]]);
    const reviewer = wallet(stack.devnet.keys.users[4] as Hex);
    const stranger = wallet(stack.devnet.keys.users[5] as Hex);
    const toService = await reviewer.client.sendTransaction({ to: service.address, value: 1n });
    const fromStranger = await stranger.client.sendTransaction({ to: service.address, value: 1n });
    const { abi, bytecode } = await ownedContract();
    const deployed = await mined(await reviewer.client.deployContract({ abi, bytecode }));
    const contract = deployed.contractAddress!;
    const toContract = await reviewer.client.sendTransaction({ to: contract, data: encodeFunctionData({ abi: parseAbi(["function owner() view returns (address)"]), functionName: "owner" }) });
    await Promise.all([toService, fromStranger, toContract].map(mined));

    const review = (txHash: Hex, subject = shop.subjectDid) =>
      submitServiceReview(
        { transaction: { chainId: stack.devnet.chainId, txHash }, subject, ratingValue: 4, attester: reviewer.account.address, sign: (td) => reviewer.account.signTypedData(td) },
        { baseUrl: stack.baseUrl },
      );
    const good = await verifyReview((await review(toService)).uid!, chainOptions());
    expect(good.proofs[0]).toMatchObject({
      proofType: "tx-interaction",
      valid: true,
      reasons: [],
      transaction: { chainId: stack.devnet.chainId, txHash: toService, from: reviewer.account.address, to: service.address, senderRelation: "attester" },
    });
    const notTheirs = await verifyReview((await review(fromStranger)).uid!, chainOptions());
    expect(notTheirs.proofs[0]).toMatchObject({ valid: false, reasons: ["the transaction was sent by someone other than the reviewer or a wallet it linked"] });
    const elsewhere = await verifyReview((await review(toContract)).uid!, chainOptions());
    expect(elsewhere.proofs[0]).toMatchObject({
      valid: false,
      reasons: ["the transaction went to an address that is neither the subject's contract nor named by its endpoint evidence"],
    });
    // The same transaction backs a review of the contract itself (did:pkh subject).
    const ofContract = await verifyReview((await review(toContract, `did:pkh:eip155:${stack.devnet.chainId}:${contract}`)).uid!, chainOptions());
    expect(ofContract).toMatchObject({ counts: true, proofs: [{ proofType: "tx-interaction", valid: true }] });
    // Not a review of that address on another chain (issue 33): the helpers refuse it before anything is signed, and
    // one written anyway still counts as a review, but its proof is invalid with the chain rule's reason.
    const onMainnet = `did:pkh:eip155:1:${contract.toLowerCase()}`;
    const chainReason = `the transaction is on eip155:${stack.devnet.chainId}, not on ${onMainnet}'s chain eip155:1`;
    expect(await codeOf(review(toContract, onMainnet))).toBe(`INVALID_INPUT: proofs: ${chainReason}`);
    const proof = { proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: `eip155:${stack.devnet.chainId}`, txHash: toContract } };
    const written = await attestDelegated({
      schemaName: "user-review",
      data: { subject: onMainnet, version: "1.0.0", ratingValue: 5, reviewBody: "", screenshotUrls: [], proofs: [JSON.stringify(proof)] },
      attester: reviewer.account.address,
      sign: (td) => reviewer.account.signTypedData(td),
    }, { baseUrl: stack.baseUrl });
    expect(await verifyReview(written.uid!, chainOptions())).toMatchObject({
      counts: true,
      proofs: [{ proofType: "tx-interaction", valid: false, reasons: [chainReason], transaction: { chainId: stack.devnet.chainId, txHash: toContract } }],
    });
    // A review stuffed with transaction proofs: ten are read, the rest reported unchecked.
    const stuffed = await submitRaw({
      subject: shop.subjectDid,
      ratingValue: 5,
      proofs: Array.from({ length: 11 }, () => ({ proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: `eip155:${stack.devnet.chainId}`, txHash: toService } })),
    }, reviewer.account);
    const stuffedCheck = await verifyReview(stuffed.uid!, chainOptions());
    expect(stuffedCheck.proofs.map((p) => p.valid)).toEqual([...Array(10).fill(true), false]);
    expect(stuffedCheck.proofs[10]!.reasons).toEqual(["more than 10 transaction proofs in one review: this one was not checked"]);
    const missing = `0x${"0f".repeat(32)}` as Hex;
    expect((await verifyReview((await review(missing)).uid!, chainOptions())).proofs[0]!.reasons)
      .toEqual([`the transaction ${missing} is not on eip155:${stack.devnet.chainId}`]);
  });
});
