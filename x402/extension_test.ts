/**
 * The offer-receipt extension through the official `@x402/core` resource server and our Elysia
 * adapter, on loopback, paid by the official `x402Client`, with the in-process test facilitator.
 * Each defect of x402_offer_receipt.md §2.6 has a test here.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { type FacilitatorClient, type RouteConfig, x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import type { PaymentRequired } from "@x402/core/types";
import { verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt";
import { secp256k1 } from "@noble/curves/secp256k1";
import { Elysia } from "elysia";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import { base64UrlEncode } from "../domain/did/mod.ts";
import { OFFER_INFO_SCHEMA, readOfferPayload, readReceiptPayload, receiptOfferContradictions, type SignedOffer, type SignedReceipt } from "../domain/payments/mod.ts";
import { verifySignedOffer, verifySignedReceipt } from "../domain/payments/mod.ts";
import type { Logger } from "../ports/logger.ts";
import { buildDidDocument } from "./did_document.ts";
import { withX402, type X402FetchOptions } from "./elysia_adapter.ts";
import { createOfferReceiptExtension, declareOfferReceiptExtension, type OfferReceiptSigning } from "./extension.ts";
import { createEip712Issuer, createJwsIssuerFromJwk, didWebKid, generateSigningJwk, type OfferReceiptIssuer } from "./signers.ts";
import { createTestFacilitator, type TestFacilitator, testSchemeClient, testSchemeServer, testV1PaymentHeader } from "./testing.ts";

const NETWORK = "eip155:84532";
const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const PAY_TO_2 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const PAYER_OTHER = "0x00000000000000000000000000000000000000AA";
const NOW = Math.floor(Date.now() / 1000);
const payer = privateKeyToAccount(generatePrivateKey());
const jws = createWebCryptoJwsVerifier();

type Server = {
  url: string;
  port: number;
  facilitator: TestFacilitator;
  logs: { event: string; fields?: Record<string, unknown> }[];
  stop: () => void;
};
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop();
});

type Setup = {
  issuer?: (port: number) => Promise<OfferReceiptIssuer> | OfferReceiptIssuer;
  route?: Partial<RouteConfig>;
  publicBaseUrl?: (port: number) => string;
  facilitator?: FacilitatorClient;
  cors?: X402FetchOptions["cors"];
  nowSeconds?: () => number;
};

/** A resource server: Elysia app, official core resource server, our extension and adapter, on 127.0.0.1. */
async function start(setup: Setup = {}): Promise<Server> {
  const logs: Server["logs"] = [];
  const record = (event: string, fields?: Record<string, unknown>) => void logs.push({ event, fields });
  const log: Logger = { debug: record, info: record, warn: record, error: record };
  const facilitator = createTestFacilitator({ networks: [NETWORK], v1Networks: ["base-sepolia"] });
  let handler: (request: Request) => Promise<Response> = () => Promise.resolve(new Response(null, { status: 503 }));
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => handler(request) });
  const port = server.port!;
  const issuer = await (setup.issuer ?? (() => createEip712Issuer({ privateKey: generatePrivateKey() })))(port);
  const signing: OfferReceiptSigning = { issuer, publicBaseUrl: setup.publicBaseUrl?.(port), nowSeconds: setup.nowSeconds ?? (() => NOW), log };
  const resourceServer = new x402ResourceServer(setup.facilitator ?? facilitator)
    .register(NETWORK, testSchemeServer())
    .registerExtension(createOfferReceiptExtension(signing));
  const route: RouteConfig = {
    accepts: [
      { scheme: "exact", network: NETWORK, payTo: PAY_TO, price: "$0.001", maxTimeoutSeconds: 120 },
      { scheme: "exact", network: NETWORK, payTo: PAY_TO_2, price: "$0.002" },
    ],
    description: "demo",
    mimeType: "application/json",
    extensions: declareOfferReceiptExtension(),
    ...setup.route,
  };
  const httpServer = new x402HTTPResourceServer(resourceServer, { "GET /paid": route, "GET /broken": route });
  const app = new Elysia()
    .get("/paid", () => ({ data: "premium" }))
    .get("/broken", ({ status }) => status(500, { error: "boom" }))
    .get("/free", () => "free");
  const didDocument = issuer.format === "jws" && setup.publicBaseUrl !== undefined
    ? buildDidDocument({ did: issuer.kid.split("#")[0]!, issuers: [issuer] })
    : undefined;
  handler = withX402(app, { httpServer, didDocument, v1: { facilitator, signing }, log, cors: setup.cors });
  const s = { url: `http://127.0.0.1:${port}`, port, facilitator, logs, stop: () => void server.stop(true) };
  servers.push(s);
  return s;
}

const paymentRequiredOf = (response: Response) => decodePaymentRequiredHeader(response.headers.get("payment-required")!);
const offersOf = (pr: PaymentRequired) => (pr.extensions?.["offer-receipt"] as { info: { offers: unknown[] } }).info.offers;

/** The official client pays: 402 → payload (echoing the extensions) → paid request. */
async function pay(url: string, init: RequestInit = {}, tamper?: (paymentRequired: PaymentRequired) => void) {
  const client = new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false);
  const http = new x402HTTPClient(client);
  const unpaid = await fetch(url, init);
  const paymentRequired = http.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.json());
  tamper?.(paymentRequired);
  const payload = await http.createPaymentPayload(paymentRequired);
  const paid = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), ...http.encodePaymentSignatureHeader(payload) } });
  const settlement = paid.headers.get("payment-response") ? decodePaymentResponseHeader(paid.headers.get("payment-response")!) : undefined;
  const receipt = (settlement?.extensions?.["offer-receipt"] as { info?: { receipt?: SignedReceipt } } | undefined)?.info?.receipt;
  return { unpaid, paymentRequired, paid, settlement, receipt };
}

describe("offers on a 402", () => {
  test("every accepts[] entry gets a signed offer, in order, with acceptIndex and the entry's terms", async () => {
    const s = await start();
    const response = await fetch(`${s.url}/paid`);
    expect(response.status).toBe(402);
    expect(response.headers.get("access-control-expose-headers")).toContain("PAYMENT-REQUIRED");
    const pr = paymentRequiredOf(response);
    const offers = offersOf(pr) as { acceptIndex: number }[];
    expect(offers.map((o) => o.acceptIndex)).toEqual([0, 1]);
    for (const [i, offer] of offers.entries()) {
      const verified = await verifySignedOffer(offer, { jws }, { nowSeconds: NOW });
      if (!verified.ok) throw new Error(verified.message);
      const accept = pr.accepts[i]!;
      expect(verified.value.payload).toMatchObject({ scheme: accept.scheme, network: accept.network, asset: accept.asset, payTo: accept.payTo, amount: accept.amount });
    }
  });

  test("offers are signed at most once a second per resource and terms: a flood of 402s is not a flood of signatures", async () => {
    let now = NOW;
    let signed = 0;
    const server = await start({
      nowSeconds: () => now,
      issuer: () => {
        const inner = createEip712Issuer({ privateKey: generatePrivateKey() });
        return { ...inner, signOffer: (payload: Parameters<typeof inner.signOffer>[0]) => (signed++, inner.signOffer(payload)) };
      },
    });
    const first = await Promise.all(Array.from({ length: 10 }, () => fetch(`${server.url}/paid`)));
    expect(first.map((r) => r.status)).toEqual(new Array(10).fill(402));
    // Two accept entries, one signature each, for all ten answers of the second; each answer carries both offers.
    expect(signed).toBe(2);
    expect(new Set(first.map((r) => JSON.stringify(offersOf(paymentRequiredOf(r))))).size).toBe(1);
    now += 1;
    const next = await fetch(`${server.url}/paid`);
    expect(signed).toBe(4);
    const offer = await verifySignedOffer(offersOf(paymentRequiredOf(next))[0] as never, { jws }, { nowSeconds: now });
    expect(offer).toMatchObject({ ok: true });
  });

  test("validity: each accept's maxTimeoutSeconds (core's 300 when unset) unless the route declares offerValiditySeconds", async () => {
    const fallback = await start();
    const offers = offersOf(paymentRequiredOf(await fetch(`${fallback.url}/paid`)));
    expect(offers.map((o) => readOfferPayload(o).ok && (readOfferPayload(o) as { value: { validUntil: number } }).value.validUntil - NOW)).toEqual([120, 300]);
    const declared = await start({ route: { extensions: declareOfferReceiptExtension({ offerValiditySeconds: 60 }) } });
    const offers60 = offersOf(paymentRequiredOf(await fetch(`${declared.url}/paid`)));
    expect(offers60.map((o) => (readOfferPayload(o) as { value: { validUntil: number } }).value.validUntil - NOW)).toEqual([60, 60]);
  });

  test("the declare call validates and defaults includeTxHash to false", () => {
    expect(declareOfferReceiptExtension()).toEqual({ "offer-receipt": { includeTxHash: false } });
    expect(declareOfferReceiptExtension({ includeTxHash: true, offerValiditySeconds: 30 })).toEqual({
      "offer-receipt": { includeTxHash: true, offerValiditySeconds: 30 },
    });
    expect(() => declareOfferReceiptExtension({ offerValiditySeconds: 0 })).toThrow("offerValiditySeconds must be a positive integer");
  });

  test("an accept paying the signing key's own address gets no offer (the key is never the payTo wallet)", async () => {
    const key = generatePrivateKey();
    const own = privateKeyToAccount(key).address;
    const s = await start({
      issuer: () => createEip712Issuer({ privateKey: key }),
      route: { accepts: [{ scheme: "exact", network: NETWORK, payTo: own, price: "$0.001" }, { scheme: "exact", network: NETWORK, payTo: PAY_TO, price: "$0.001" }] },
    });
    const offers = offersOf(paymentRequiredOf(await fetch(`${s.url}/paid`))) as { acceptIndex: number }[];
    expect(offers.map((o) => o.acceptIndex)).toEqual([1]);
    expect(s.logs.some((l) => l.event === "x402.offer.refused")).toBe(true);
  });

  test("a payment to the signing key's own address gets no receipt either", async () => {
    const key = generatePrivateKey();
    const own = privateKeyToAccount(key).address;
    const s = await start({
      issuer: () => createEip712Issuer({ privateKey: key }),
      route: { accepts: [{ scheme: "exact", network: NETWORK, payTo: own, price: "$0.001" }] },
    });
    const { paid, receipt } = await pay(`${s.url}/paid`);
    expect(paid.status).toBe(200);
    expect(receipt).toBeUndefined();
    expect(s.logs.find((l) => l.event === "x402.receipt.refused")?.fields).toEqual({ reason: "signing key is the payTo wallet" });
  });

  test("an ES256K signing key is a wallet too: an accept paying its address (any case) gets no offer", async () => {
    const key = generatePrivateKey();
    const own = privateKeyToAccount(key).address;
    const d = base64UrlEncode(Uint8Array.from(Buffer.from(key.slice(2), "hex")));
    const point = secp256k1.getPublicKey(Uint8Array.from(Buffer.from(key.slice(2), "hex")), false);
    const privateJwk = { kty: "EC", crv: "secp256k1", x: base64UrlEncode(point.slice(1, 33)), y: base64UrlEncode(point.slice(33)), d };
    const issuer = await createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "ES256K", privateJwk });
    expect(issuer.address).toBe(own);
    const s = await start({
      issuer: () => issuer,
      route: {
        accepts: [
          { scheme: "exact", network: NETWORK, payTo: own.toLowerCase(), price: "$0.001" },
          { scheme: "exact", network: NETWORK, payTo: PAY_TO, price: "$0.001" },
        ],
      },
    });
    const offers = offersOf(paymentRequiredOf(await fetch(`${s.url}/paid`))) as { acceptIndex: number }[];
    expect(offers.map((o) => o.acceptIndex)).toEqual([1]);
    expect(s.logs.find((l) => l.event === "x402.offer.refused")?.fields).toEqual({ acceptIndex: 0, reason: "signing key is the payTo wallet" });
  });

  test("an ES256K private JWK whose x/y are not the key of its d is refused", async () => {
    const privateJwk = { ...(await generateSigningJwk("ES256K")), d: (await generateSigningJwk("ES256K")).d };
    await expect(createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "ES256K", privateJwk })).rejects.toThrow(
      "An ES256K key's x and y must be the public key of its d",
    );
  });
});

describe("receipts on a paid 2xx", () => {
  test("v2: the official client pays; PAYMENT-RESPONSE carries a receipt without the transaction by default", async () => {
    const s = await start();
    const { paid, settlement, receipt } = await pay(`${s.url}/paid`);
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ data: "premium" });
    expect(paid.headers.get("cache-control")).toContain("private");
    expect(settlement?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const verified = await verifySignedReceipt(receipt, { jws }, { nowSeconds: NOW });
    if (!verified.ok) throw new Error(verified.message);
    expect(verified.value.payload).toEqual({ version: 1, network: NETWORK, resourceUrl: `${s.url}/paid`, payer: payer.address, issuedAt: NOW, transaction: "" });
  });

  test("includeTxHash: true puts the settlement hash in the receipt (eip712 and jws)", async () => {
    for (const issuer of [() => createEip712Issuer({ privateKey: generatePrivateKey() }), async (port: number) =>
      createJwsIssuerFromJwk({ kid: didWebKid(`http://localhost:${port}`), alg: "EdDSA", privateJwk: await generateSigningJwk("EdDSA") })]) {
      const s = await start({ issuer, route: { extensions: declareOfferReceiptExtension({ includeTxHash: true }) } });
      const { settlement, receipt } = await pay(`${s.url}/paid`);
      const payload = readReceiptPayload(receipt);
      expect(payload.ok && payload.value.transaction).toBe(settlement!.transaction);
    }
  });

  test("offers are dynamic info: a payment echoing the (randomized ES256) offers of an earlier 402 is accepted", async () => {
    const s = await start({
      issuer: async (port) => createJwsIssuerFromJwk({ kid: didWebKid(`http://localhost:${port}`), alg: "ES256", privateJwk: await generateSigningJwk("ES256") }),
    });
    const { paid, paymentRequired } = await pay(`${s.url}/paid`);
    expect(offersOf(paymentRequired)).toHaveLength(2);
    expect(paid.status).toBe(200);
    expect(paid.headers.get("payment-response")).not.toBeNull();
  });

  test("one canonical public URL: offers and receipt sign the public base URL plus path, never the query", async () => {
    const s = await start({ publicBaseUrl: () => "https://api.example.com" });
    const { paymentRequired, receipt } = await pay(`${s.url}/paid?utm=1`);
    const urls = offersOf(paymentRequired).map((o) => (readOfferPayload(o) as { value: { resourceUrl: string } }).value.resourceUrl);
    expect(urls).toEqual(["https://api.example.com/paid", "https://api.example.com/paid"]);
    expect((readReceiptPayload(receipt) as { value: { resourceUrl: string } }).value.resourceUrl).toBe("https://api.example.com/paid");
  });

  test("one canonical public URL: a route's explicit resource is signed by offers and receipt alike", async () => {
    const s = await start({ route: { resource: "https://shop.example.com/item/7" } });
    const { paymentRequired, receipt } = await pay(`${s.url}/paid`);
    expect((readOfferPayload(offersOf(paymentRequired)[0]) as { value: { resourceUrl: string } }).value.resourceUrl).toBe("https://shop.example.com/item/7");
    expect((readReceiptPayload(receipt) as { value: { resourceUrl: string } }).value.resourceUrl).toBe("https://shop.example.com/item/7");
  });

  test("a handler failure cancels the payment: no settlement, no receipt", async () => {
    const s = await start();
    const { paid } = await pay(`${s.url}/broken`);
    expect(paid.status).toBe(500);
    expect(paid.headers.get("payment-response")).toBeNull();
    expect(s.facilitator.calls.settle).toBe(0);
  });

  test("no payer from the facilitator: the 200 is served without a receipt", async () => {
    const s = await start();
    s.facilitator.omitPayer = true;
    const { paid, settlement } = await pay(`${s.url}/paid`);
    expect(paid.status).toBe(200);
    expect(settlement?.extensions?.["offer-receipt"]).toBeUndefined();
  });
});

describe("nothing leaks when signing fails", () => {
  const broken: OfferReceiptIssuer = {
    format: "eip712",
    kid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001#key-1",
    signOffer: () => Promise.reject(new Error("KMS https://kms.internal/key/42 denied")),
    signReceipt: () => Promise.reject(new Error("KMS https://kms.internal/key/42 denied")),
  };

  test("the 402 carries an empty offers entry, never the declaration or the error", async () => {
    const s = await start({ issuer: () => broken, route: { extensions: declareOfferReceiptExtension({ includeTxHash: true, offerValiditySeconds: 77 }) } });
    const response = await fetch(`${s.url}/paid`);
    const raw = atob(response.headers.get("payment-required")!);
    expect(paymentRequiredOf(response).extensions?.["offer-receipt"]).toEqual({ info: { offers: [] }, schema: OFFER_INFO_SCHEMA });
    for (const leak of ["includeTxHash", "offerValiditySeconds", "kms.internal"]) expect(raw).not.toContain(leak);
    expect(await response.text()).not.toContain("kms");
  });

  test("the paid 200 is served, its PAYMENT-RESPONSE has no receipt, and logs carry no error text", async () => {
    const s = await start({ issuer: () => broken, route: { extensions: declareOfferReceiptExtension({ includeTxHash: true }) } });
    const { paid, settlement } = await pay(`${s.url}/paid`);
    expect(paid.status).toBe(200);
    expect(settlement?.success).toBe(true);
    expect(settlement?.extensions?.["offer-receipt"]).toBeUndefined();
    expect(atob(paid.headers.get("payment-response")!)).not.toContain("includeTxHash");
    expect(s.logs.map((l) => l.event)).toContain("x402.receipt.sign_failed");
    expect(JSON.stringify(s.logs)).not.toContain("kms.internal");
  });

  test("a facilitator that cannot be reached answers 502 with a fixed body", async () => {
    const down: FacilitatorClient = {
      verify: () => Promise.reject(new Error("connect ECONNREFUSED http://10.0.0.9:4022")),
      settle: () => Promise.reject(new Error("connect ECONNREFUSED http://10.0.0.9:4022")),
      getSupported: () => Promise.reject(new Error("connect ECONNREFUSED http://10.0.0.9:4022")),
    };
    const s = await start({ facilitator: down });
    const response = await fetch(`${s.url}/paid`);
    expect(response.status).toBe(502);
    expect(await response.json()).toEqual({ error: "Payment facilitator unavailable", code: "FACILITATOR_ERROR" });
    expect((await fetch(`${s.url}/free`)).status).toBe(200);
  });
});

describe("x402 v1", () => {
  test("the 402 also carries a v1 body: maxAmountRequired, v1 network names, offers in top-level extensions", async () => {
    const s = await start();
    const body = await (await fetch(`${s.url}/paid`)).json() as Record<string, any>;
    expect(body.x402Version).toBe(1);
    expect(body.accepts.map((a: Record<string, unknown>) => [a.network, a.maxAmountRequired, a.payTo, a.resource])).toEqual([
      ["base-sepolia", "1000", PAY_TO, `${s.url}/paid`],
      ["base-sepolia", "2000", PAY_TO_2, `${s.url}/paid`],
    ]);
    const offer = await verifySignedOffer(body.extensions["offer-receipt"].info.offers[0], { jws }, { nowSeconds: NOW });
    expect(offer.ok && offer.value.payload.network).toBe(NETWORK);
  });

  test("X-PAYMENT pays; X-PAYMENT-RESPONSE carries the receipt, includeTxHash honoured, CAIP-2 network", async () => {
    const s = await start({ route: { extensions: declareOfferReceiptExtension({ includeTxHash: true }) } });
    const body = await (await fetch(`${s.url}/paid`)).json() as { accepts: Parameters<typeof testV1PaymentHeader>[1][] };
    const header = await testV1PaymentHeader(payer, body.accepts[0]!);
    const paid = await fetch(`${s.url}/paid`, { headers: { "x-payment": header } });
    expect(paid.status).toBe(200);
    expect(paid.headers.get("payment-response")).toBeNull();
    const settlement = JSON.parse(atob(paid.headers.get("x-payment-response")!));
    expect(settlement).toMatchObject({ success: true, network: "base-sepolia", payer: payer.address });
    const verified = await verifySignedReceipt(settlement.extensions["offer-receipt"].info.receipt, { jws }, { nowSeconds: NOW });
    if (!verified.ok) throw new Error(verified.message);
    expect(verified.value.payload).toMatchObject({ network: NETWORK, payer: payer.address, transaction: settlement.transaction, resourceUrl: `${s.url}/paid` });
  });

  test("a bad X-PAYMENT is refused with a v1 402 and nothing is settled", async () => {
    const s = await start();
    const body = await (await fetch(`${s.url}/paid`)).json() as { accepts: Parameters<typeof testV1PaymentHeader>[1][] };
    const stranger = privateKeyToAccount(generatePrivateKey());
    const header = await testV1PaymentHeader(stranger, { ...body.accepts[0]!, payTo: PAY_TO_2 });
    const refused = await fetch(`${s.url}/paid`, { headers: { "x-payment": header } });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { x402Version: number }).x402Version).toBe(1);
    expect(s.facilitator.calls.settle).toBe(0);
  });
});

describe("x402 v1: several accepts on one network", () => {
  test("a payment for accepts[1] is matched on its payTo and amount, not refused against accepts[0]", async () => {
    const s = await start();
    const body = await (await fetch(`${s.url}/paid`)).json() as { accepts: Parameters<typeof testV1PaymentHeader>[1][] };
    expect(body.accepts.map((a) => [a.network, a.payTo])).toEqual([["base-sepolia", PAY_TO], ["base-sepolia", PAY_TO_2]]);
    const paid = await fetch(`${s.url}/paid`, { headers: { "x-payment": await testV1PaymentHeader(payer, body.accepts[1]!) } });
    expect(paid.status).toBe(200);
    const settlement = JSON.parse(atob(paid.headers.get("x-payment-response")!));
    expect(settlement).toMatchObject({ success: true, network: "base-sepolia", payer: payer.address });
    expect(settlement.extensions["offer-receipt"].info.receipt).toBeDefined();
    expect(s.facilitator.calls).toEqual({ verify: 1, settle: 1 });
  });

  test("a payment whose terms match no accept is refused before the facilitator is asked", async () => {
    const s = await start();
    const body = await (await fetch(`${s.url}/paid`)).json() as { accepts: Parameters<typeof testV1PaymentHeader>[1][] };
    for (const terms of [{ maxAmountRequired: "1" }, { payTo: PAYER_OTHER }, { asset: PAYER_OTHER }]) {
      const header = await testV1PaymentHeader(payer, { ...body.accepts[1]!, ...terms });
      const refused = await fetch(`${s.url}/paid`, { headers: { "x-payment": header } });
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as { error: string }).error).toBe("No matching payment requirements");
    }
    expect(s.facilitator.calls).toEqual({ verify: 0, settle: 0 });
  });
});

describe("CORS (spec §2.5)", () => {
  const ORIGIN = "https://app.example";

  test("a preflight for a protected route allows PAYMENT-SIGNATURE and X-PAYMENT for the origin", async () => {
    const s = await start();
    const response = await fetch(`${s.url}/paid`, {
      method: "OPTIONS",
      headers: { origin: ORIGIN, "access-control-request-method": "GET", "access-control-request-headers": "payment-signature, x-custom" },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-methods")).toBe("GET");
    const allowed = response.headers.get("access-control-allow-headers")!.toLowerCase().split(/,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(["payment-signature", "x-payment", "x-custom"]));
  });

  test("the 402, the paid 2xx and the adapter's error answers carry Allow-Origin and expose the payment headers", async () => {
    const s = await start();
    const { unpaid, paid } = await pay(`${s.url}/paid`, { headers: { origin: ORIGIN } });
    for (const response of [unpaid, paid]) {
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-expose-headers")).toBe("PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE");
    }
    expect(paid.headers.get("payment-response")).not.toBeNull();
    const failing = await start({ facilitator: { ...createTestFacilitator({ networks: [] }), getSupported: () => Promise.reject(new Error("down")) } });
    const down = await fetch(`${failing.url}/paid`, { headers: { origin: ORIGIN } });
    expect(down.status).toBe(502);
    expect(down.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("an origin list echoes an allowed origin with Vary and refuses others (preflight included)", async () => {
    const s = await start({ cors: { origin: [ORIGIN] } });
    const allowed = await fetch(`${s.url}/paid`, { headers: { origin: ORIGIN } });
    expect(allowed.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(allowed.headers.get("vary")).toContain("Origin");
    const other = await fetch(`${s.url}/paid`, { headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await fetch(`${s.url}/paid`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "GET" } });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    expect(preflight.headers.get("access-control-allow-headers")).toBeNull();
  });

  test("free routes and their preflights are left to the app; cors: false leaves Allow-Origin to the app", async () => {
    const s = await start();
    const free = await fetch(`${s.url}/free`, { headers: { origin: ORIGIN } });
    expect(free.headers.get("access-control-allow-origin")).toBeNull();
    const freePreflight = await fetch(`${s.url}/free`, { method: "OPTIONS", headers: { origin: ORIGIN, "access-control-request-method": "GET" } });
    expect(freePreflight.headers.get("access-control-allow-headers")).toBeNull();
    const off = await start({ cors: false });
    const response = await fetch(`${off.url}/paid`, { headers: { origin: ORIGIN } });
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expect(response.headers.get("access-control-expose-headers")).toContain("PAYMENT-REQUIRED");
  });
});

describe("the DID document route", () => {
  test("serves application/did+json with a JsonWebKey2020 (with alg) in assertionMethod, and the official resolver verifies our receipt through it", async () => {
    const s = await start({
      publicBaseUrl: (port) => `http://localhost:${port}`,
      issuer: async (port) => createJwsIssuerFromJwk({ kid: didWebKid(`http://localhost:${port}`), alg: "ES256", privateJwk: await generateSigningJwk("ES256") }),
    });
    const response = await fetch(`${s.url}/.well-known/did.json`);
    expect(response.headers.get("content-type")).toBe("application/did+json");
    // Browser verifiers on other origins resolve the kid too.
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const doc = await response.json() as Record<string, any>;
    const did = `did:web:localhost%3A${s.port}`;
    expect(doc.id).toBe(did);
    expect(doc.verificationMethod[0]).toMatchObject({ id: `${did}#key-1`, type: "JsonWebKey2020", controller: did, publicKeyJwk: { kty: "EC", crv: "P-256", alg: "ES256" } });
    expect(doc.verificationMethod[0].publicKeyJwk.d).toBeUndefined();
    expect(doc.assertionMethod).toEqual([`${did}#key-1`]);
    const { receipt } = await pay(`${s.url}/paid`);
    const payload = await verifyReceiptSignatureJWS(receipt as { format: "jws"; signature: string });
    expect(payload.resourceUrl).toBe(`http://localhost:${s.port}/paid`);
  });
});

describe("receipts bound to their offer (decisions §18)", () => {
  const jwsIssuer = (alg: "ES256" | "EdDSA" = "ES256") => async (port: number) =>
    createJwsIssuerFromJwk({ kid: didWebKid(`http://localhost:${port}`), alg, privateJwk: await generateSigningJwk(alg) });
  const settledOfferOf = (settlement: unknown) =>
    ((settlement as { extensions: Record<string, { info: { offer?: { format: string; signature: string } } }> }).extensions["offer-receipt"]!.info.offer);
  const sha256Hex = (text: string) => `0x${new Bun.CryptoHasher("sha256").update(text).digest("hex")}` as const;
  const headerOf = (compact: string) => JSON.parse(atob(compact.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>;

  test("v2 JWS: the receipt's offerHash is the SHA-256 of the offer the client saw and echoed; info.offer is that offer verbatim; both headers carry jwk beside kid", async () => {
    const s = await start({ issuer: jwsIssuer(), publicBaseUrl: (port) => `http://localhost:${port}` });
    const { paymentRequired, settlement, receipt } = await pay(`${s.url}/paid`);
    const seen = offersOf(paymentRequired) as { format: "jws"; signature: string; acceptIndex: number }[];
    const payload = readReceiptPayload(receipt);
    if (!payload.ok) throw new Error(payload.message);
    // The official client pays accepts[0]: the offer for it, exactly as the 402 carried it.
    expect(payload.value.offerHash).toBe(sha256Hex(seen[0]!.signature));
    expect(settledOfferOf(settlement)).toEqual(seen[0]!);
    const did = `did:web:localhost%3A${s.port}`;
    for (const compact of [seen[0]!.signature, (receipt as { signature: string }).signature]) {
      const header = headerOf(compact);
      expect(Object.keys(header)).toEqual(["alg", "kid", "jwk"]);
      expect(header).toMatchObject({ alg: "ES256", kid: `${did}#key-1`, jwk: { kty: "EC", crv: "P-256" } });
      expect((header.jwk as Record<string, unknown>).d).toBeUndefined();
    }
    // The same key as the did.json the kid resolves to.
    const doc = await (await fetch(`${s.url}/.well-known/did.json`)).json() as { verificationMethod: { publicKeyJwk: Record<string, unknown> }[] };
    expect(headerOf(seen[0]!.signature).jwk).toEqual(doc.verificationMethod[0]!.publicKeyJwk);
  });

  test("an echoed offer that is not ours (our kid and terms, another key's signature) is not bound: the receipt names the offer this request signed", async () => {
    const s = await start({ issuer: jwsIssuer("EdDSA"), publicBaseUrl: (port) => `http://localhost:${port}` });
    const impostor = await createJwsIssuerFromJwk({ kid: didWebKid(`http://localhost:${s.port}`), alg: "EdDSA", privateJwk: await generateSigningJwk("EdDSA") });
    const terms = readOfferPayload(offersOf(paymentRequiredOf(await fetch(`${s.url}/paid`)))[0]);
    if (!terms.ok) throw new Error(terms.message);
    const forged = (await impostor.signOffer(terms.value)).signature;
    const { paid, settlement, receipt } = await pay(`${s.url}/paid`, {}, (pr) => {
      const offers = offersOf(pr) as { format: "jws"; signature: string; acceptIndex: number }[];
      offers[0] = { ...offers[0]!, signature: forged };
    });
    expect(paid.status).toBe(200);
    const bound = settledOfferOf(settlement)!;
    expect(bound.signature).not.toBe(forged);
    const payload = readReceiptPayload(receipt);
    expect(payload.ok && payload.value.offerHash).toBe(sha256Hex(bound.signature));
    expect(headerOf(bound.signature).jwk).not.toEqual(headerOf(forged).jwk);
  });

  test("an echoed offer of ours that has expired is not bound: the receipt names this request's own offer, and its binding holds", async () => {
    let now = NOW;
    const s = await start({ issuer: jwsIssuer(), publicBaseUrl: (port) => `http://localhost:${port}`, nowSeconds: () => now });
    const stale = offersOf(paymentRequiredOf(await fetch(`${s.url}/paid`))) as { format: "jws"; signature: string; acceptIndex: number }[];
    const staleTerms = readOfferPayload(stale[0]);
    if (!staleTerms.ok) throw new Error(staleTerms.message);
    // A day later, the client pays echoing the offers it kept from the old 402.
    now = NOW + 86_400;
    const { paid, settlement, receipt } = await pay(`${s.url}/paid`, {}, (pr) => {
      (pr.extensions!["offer-receipt"] as { info: { offers: unknown[] } }).info.offers = stale;
    });
    expect(paid.status).toBe(200);
    const bound = settledOfferOf(settlement)!;
    expect(bound.signature).not.toBe(stale[0]!.signature);
    const boundTerms = readOfferPayload(bound);
    if (!boundTerms.ok) throw new Error(boundTerms.message);
    expect(boundTerms.value.validUntil).toBeGreaterThanOrEqual(now);
    const payload = readReceiptPayload(receipt);
    if (!payload.ok) throw new Error(payload.message);
    expect(payload.value.offerHash).toBe(sha256Hex(bound.signature));
    expect(receiptOfferContradictions(payload.value, bound as SignedOffer, boundTerms.value)).toEqual([]);
    // Before, the stale offer was bound, and its own check refused the receipt.
    expect(receiptOfferContradictions(payload.value, stale[0]! as SignedOffer, staleTerms.value)).toContain("the receipt was issued after the offer expired");
  });

  test("eip712 receipts keep the upstream struct: no offerHash and no info.offer", async () => {
    const s = await start();
    const { settlement, receipt } = await pay(`${s.url}/paid`);
    expect((receipt as { payload: Record<string, unknown> }).payload.offerHash).toBeUndefined();
    expect(Object.keys((receipt as { payload: Record<string, unknown> }).payload)).toEqual(["version", "network", "resourceUrl", "payer", "issuedAt", "transaction"]);
    expect(settledOfferOf(settlement)).toBeUndefined();
  });

  test("v1 JWS: X-PAYMENT echoes nothing, so the receipt names the offer this request's 402 signed for the paid terms, and carries it", async () => {
    const s = await start({ issuer: jwsIssuer("EdDSA"), publicBaseUrl: (port) => `http://localhost:${port}` });
    const body = await (await fetch(`${s.url}/paid`)).json() as { accepts: Parameters<typeof testV1PaymentHeader>[1][] };
    const header = await testV1PaymentHeader(payer, body.accepts[1]!);
    const paid = await fetch(`${s.url}/paid`, { headers: { "x-payment": header } });
    expect(paid.status).toBe(200);
    const settlement = JSON.parse(atob(paid.headers.get("x-payment-response")!));
    const offer = settledOfferOf(settlement)!;
    const terms = readOfferPayload(offer);
    expect(terms.ok && [terms.value.payTo, terms.value.amount]).toEqual([PAY_TO_2, "2000"]);
    const payload = readReceiptPayload(settlement.extensions["offer-receipt"].info.receipt);
    expect(payload.ok && payload.value.offerHash).toBe(sha256Hex(offer.signature));
  });
});
