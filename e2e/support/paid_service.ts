/**
 * An x402 resource server for e2e: `GET /premium` costs $0.01 (test scheme, in-process facilitator),
 * offers and receipts signed with an ES256 key published in the server's own did.json. Reachable
 * publicly as `https://svc.test:<port>` (real DNS server, test CA) and internally over plain HTTP.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import { Elysia } from "elysia";
import type { LocalAccount } from "viem";
import { createDnsPacketResolver } from "../../adapters/dns/mod.ts";
import { createHttpsDidDocumentFetcher } from "../../adapters/https/mod.ts";
import type { SignedReceipt } from "../../domain/payments/mod.ts";
import { extractReceipt } from "../../client/x402.ts";
import { buildDidDocument } from "../../x402/did_document.ts";
import { withX402 } from "../../x402/elysia_adapter.ts";
import { createOfferReceiptExtension, declareOfferReceiptExtension } from "../../x402/extension.ts";
import { createJwsIssuerFromJwk, didWebKid, generateSigningJwk, type OfferReceiptIssuer } from "../../x402/signers.ts";
import { createTestFacilitator, testSchemeClient, testSchemeServer } from "../../x402/testing.ts";
import type { DnsServer } from "./dns_server.ts";
import { type HttpsServer, startHttpsServer } from "./https_server.ts";
import { issueLeaf } from "./test_ca.ts";

export const PAID_NETWORK = "eip155:84532";
const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

/** A running paid service. */
export type PaidService = {
  readonly publicBase: string;
  /** `did:web:svc.test%3A<port>` */
  readonly subjectDid: string;
  /** Plain-HTTP URL of the paid route, for clients in tests. */
  readonly url: string;
  readonly issuer: OfferReceiptIssuer;
  /** Fetches did.json documents through the test DNS and CA (for verifying offers and receipts). */
  readonly didDocuments: ReturnType<typeof createHttpsDidDocumentFetcher>;
  /**
   * Pays for one request as `payer` and returns the response and its receipt. `secondsEarlier`: the offers and the
   * receipt are signed as of that many seconds ago (two payments within one second share one offer, x402/extension.ts;
   * a test that needs two offers for the same terms signs the second as of another second).
   */
  readonly pay: (payer: LocalAccount, secondsEarlier?: number) => Promise<{ unpaid: Response; paid: Response; receipt: SignedReceipt }>;
  readonly stop: () => Promise<void>;
};

/** Starts the paid service; `dns` gets the A record of svc.test. */
export async function startPaidService(options: { dns: DnsServer; caCert: string; includeTxHash?: boolean }): Promise<PaidService> {
  const leaf = await issueLeaf(["svc.test"]);
  let handler: (request: Request) => Promise<Response> = () => Promise.resolve(new Response(null, { status: 503 }));
  // The public HTTPS front (what a reverse proxy would be) and the internal listener serve the same app.
  const front: HttpsServer = await startHttpsServer({ ...leaf, routes: (request) => handler(request) });
  const internal = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => handler(request) });
  const publicBase = `https://svc.test:${front.port}`;
  const subjectDid = `did:web:svc.test%3A${front.port}`;
  options.dns.setA("svc.test", ["127.0.0.1"]);

  const issuer = await createJwsIssuerFromJwk({ kid: didWebKid(publicBase), alg: "ES256", privateJwk: await generateSigningJwk("ES256") });
  const facilitator = createTestFacilitator({ networks: [PAID_NETWORK] });
  let earlier = 0;
  const signing = { issuer, publicBaseUrl: publicBase, nowSeconds: () => Math.floor(Date.now() / 1000) - earlier };
  const resourceServer = new x402ResourceServer(facilitator)
    .register(PAID_NETWORK, testSchemeServer())
    .registerExtension(createOfferReceiptExtension(signing));
  const httpServer = new x402HTTPResourceServer(resourceServer, {
    "GET /premium": {
      accepts: { scheme: "exact", network: PAID_NETWORK, payTo: PAY_TO, price: "$0.01", maxTimeoutSeconds: 120 },
      description: "Premium data",
      mimeType: "application/json",
      extensions: declareOfferReceiptExtension({ includeTxHash: options.includeTxHash ?? true }),
    },
  });
  const app = new Elysia().get("/premium", () => ({ weather: "sunny" }));
  handler = withX402(app, { httpServer, didDocument: buildDidDocument({ did: subjectDid, issuers: [issuer] }), v1: { facilitator, signing } });
  const url = `http://127.0.0.1:${internal.port}/premium`;

  return {
    publicBase,
    subjectDid,
    url,
    issuer,
    didDocuments: createHttpsDidDocumentFetcher({
      resolver: createDnsPacketResolver({ servers: [options.dns.address] }),
      allowPrivateNetwork: true,
      ca: options.caCert,
    }),
    async pay(payer, secondsEarlier = 0) {
      earlier = secondsEarlier;
      const unpaid = await fetch(url);
      const client = new x402HTTPClient(new x402Client().register(PAID_NETWORK, testSchemeClient(payer)).setSpendControls(false));
      const required = client.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.clone().json());
      const payload = await client.createPaymentPayload(required);
      const paid = await fetch(url, { headers: client.encodePaymentSignatureHeader(payload) });
      earlier = 0;
      const receipt = extractReceipt(paid);
      if (receipt === undefined) throw new Error(`no receipt (status ${paid.status})`);
      return { unpaid, paid, receipt };
    },
    async stop() {
      internal.stop(true);
      await front.stop();
    },
  };
}
