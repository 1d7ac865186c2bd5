/**
 * x402 offer/receipt signing benchmark, on loopback with the in-process test facilitator:
 *
 * 1. offers signed per second per format (eip712, ES256, EdDSA, ES256K), each also as a cost ratio
 *    to a baseline measured in the same run: a SHA-256 of the same offer's JCS bytes;
 * 2. the latency the extension adds to a paid request (402 → pay → 200): the same Elysia app,
 *    official core server and facilitator, with and without the extension, p50 of each and the
 *    difference, also as a ratio to the run's own no-extension p50.
 *
 *   bun run bench/x402_signing.ts [seconds per format] [paid requests]
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import { Elysia } from "elysia";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { sha256 } from "viem/utils";
import { canonicalJson, type OfferPayload } from "../domain/payments/mod.ts";
import { withX402 } from "../x402/elysia_adapter.ts";
import { createOfferReceiptExtension, declareOfferReceiptExtension } from "../x402/extension.ts";
import { createEip712Issuer, createJwsIssuerFromJwk, generateSigningJwk, type OfferReceiptIssuer } from "../x402/signers.ts";
import { createTestFacilitator, testSchemeClient, testSchemeServer } from "../x402/testing.ts";

const SECONDS = Number(process.argv[2] ?? 1);
const PAID = Number(process.argv[3] ?? 200);
const NETWORK = "eip155:84532";

const offer = (i: number): OfferPayload => ({
  version: 1,
  resourceUrl: "https://api.example.com/premium-data",
  scheme: "exact",
  network: NETWORK,
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: String(10_000 + i),
  validUntil: 1_800_000_000 + i,
});

/** Operations per second of `op` over about SECONDS, after a short warm-up. */
async function opsPerSecond(op: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 50; i++) await op(i);
  let n = 0;
  const start = performance.now();
  const until = start + SECONDS * 1000;
  while (performance.now() < until) {
    for (let k = 0; k < 20; k++) await op(n++);
  }
  return n / ((performance.now() - start) / 1000);
}

const issuers: [string, OfferReceiptIssuer][] = [
  ["eip712", createEip712Issuer({ privateKey: generatePrivateKey() })],
  ["ES256", await createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "ES256", privateJwk: await generateSigningJwk("ES256") })],
  ["EdDSA", await createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "EdDSA", privateJwk: await generateSigningJwk("EdDSA") })],
  ["ES256K", await createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "ES256K", privateJwk: await generateSigningJwk("ES256K") })],
];

const encoder = new TextEncoder();
const baseline = await opsPerSecond((i) => sha256(encoder.encode(canonicalJson(offer(i)))));
console.log(`baseline: SHA-256 of the offer's JCS bytes, ${baseline.toFixed(0)} ops/s`);
console.log("offers signed per second (cost as a multiple of the baseline):");
for (const [name, issuer] of issuers) {
  const rate = await opsPerSecond((i) => issuer.signOffer(offer(i)));
  console.log(`  ${name.padEnd(7)} ${rate.toFixed(0).padStart(7)} offers/s  ${(baseline / rate).toFixed(1).padStart(6)}x baseline`);
}

/** A resource server with or without the extension; returns its URL and a stop function. */
function resourceServer(issuer: OfferReceiptIssuer | undefined) {
  const facilitator = createTestFacilitator({ networks: [NETWORK] });
  const core = new x402ResourceServer(facilitator).register(NETWORK, testSchemeServer());
  if (issuer !== undefined) core.registerExtension(createOfferReceiptExtension({ issuer }));
  const httpServer = new x402HTTPResourceServer(core, {
    "GET /paid": {
      accepts: { scheme: "exact", network: NETWORK, payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", price: "$0.001" },
      ...(issuer === undefined ? {} : { extensions: declareOfferReceiptExtension({ includeTxHash: true }) }),
    },
  });
  const fetchHandler = withX402(new Elysia().get("/paid", () => ({ ok: true })), { httpServer });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: fetchHandler });
  return { url: `http://127.0.0.1:${server.port}/paid`, stop: () => server.stop(true) };
}

/** p50 of PAID full paid requests (402, then the paid request) by the official client, in ms. */
async function paidLatency(issuer: OfferReceiptIssuer | undefined): Promise<number> {
  const server = resourceServer(issuer);
  const payer = privateKeyToAccount(generatePrivateKey());
  const client = new x402HTTPClient(new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false));
  const once = async () => {
    const unpaid = await fetch(server.url);
    const required = client.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.json());
    const payload = await client.createPaymentPayload(required);
    const paid = await fetch(server.url, { headers: client.encodePaymentSignatureHeader(payload) });
    await paid.arrayBuffer();
    if (paid.status !== 200) throw new Error(`paid request answered ${paid.status}`);
  };
  for (let i = 0; i < 20; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < PAID; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  server.stop();
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const without = await paidLatency(undefined);
console.log(`paid request (402 + paid 200), p50 over ${PAID}:`);
console.log(`  without the extension ${without.toFixed(3)} ms (baseline)`);
for (const [name, issuer] of issuers) {
  const withExt = await paidLatency(issuer);
  const added = withExt - without;
  console.log(`  with ${name.padEnd(7)} ${withExt.toFixed(3)} ms, added ${added.toFixed(3)} ms (${(withExt / without).toFixed(2)}x baseline)`);
}
