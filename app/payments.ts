/**
 * Wiring of x402 payments (decisions §13): the facilitator (the devnet's own, started here, unless
 * `X402_FACILITATOR_URL` names one), the offer/receipt signer and the payment gate of the paid routes.
 */
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { Hex, PublicClient } from "viem";
import type { Config } from "./config.ts";
import { type Devnet, type Facilitator, startFacilitator } from "../adapters/devnet/mod.ts";
import { createPaidCall } from "../domain/payments/mod.ts";
import { createPaymentGate, type PaymentGate } from "../http/x402_gate.ts";
import type { Clock } from "../ports/clock.ts";
import type { Logger } from "../ports/logger.ts";
import type { Metrics } from "../ports/metrics.ts";
import type { PaymentLedger } from "../ports/payments.ts";
import { createEip712Issuer } from "../x402/signers.ts";
import { createViemPayerBalances } from "../adapters/chain/mod.ts";

/** What the service announces about its x402 terms (printed by `npm start`). */
export type X402Terms = {
  readonly network: string;
  readonly asset: string;
  readonly payTo: string;
  readonly facilitatorUrl: string;
  readonly prices: { readonly witness: string | null; readonly relay: string | null; readonly paidPlan: string | null };
};

/** The wired payments: the gate, the terms, and what to stop. */
export type WiredX402 = { readonly gate: PaymentGate; readonly terms: X402Terms; readonly stop: () => Promise<void> };

/** Builds the gate from the config; undefined when nothing is for sale (or no key can sign offers). */
export async function wireX402(
  config: Config,
  shared: {
    readonly devnet: Devnet | undefined;
    readonly chainId: number;
    readonly witnessKey: Hex | undefined;
    readonly payments: PaymentLedger;
    readonly clock: Clock;
    readonly metrics: Metrics;
    readonly log: Logger;
    /** The service's chain client: payers' balances are read with it when payments settle on its chain (issue 23). */
    readonly chainClient?: PublicClient | undefined;
  },
): Promise<WiredX402 | undefined> {
  const { devnet, log } = shared;
  const x = config.x402;
  const prices = { witness: x.witnessPrice, relay: x.relayPrice, plan: x.paidPlanPrice };
  if (prices.witness === undefined && prices.relay === undefined && prices.plan === undefined) return undefined;
  const asset = x.asset ?? devnet?.x402.token;
  const payTo = x.payTo ?? devnet?.x402.payTo;
  const signingKey = x.signingKey ?? shared.witnessKey;
  if (asset === undefined || payTo === undefined || signingKey === undefined) {
    log.warn("x402_not_offered", { reason: signingKey === undefined ? "no key signs offers (X402_SIGNING_KEY or WITNESS_PRIVATE_KEY)" : "no asset or payTo" });
    return undefined;
  }
  let facilitator: Facilitator | undefined;
  let facilitatorUrl = x.facilitatorUrl;
  if (facilitatorUrl === undefined && devnet !== undefined) {
    facilitator = startFacilitator({ rpcUrl: devnet.rpcUrl, chainId: shared.chainId, privateKey: devnet.keys.facilitator });
    facilitatorUrl = facilitator.url;
  }
  if (facilitatorUrl === undefined) return undefined;
  const network = x.network ?? `eip155:${shared.chainId}`;
  const gate = createPaymentGate({
    facilitator: new HTTPFacilitatorClient({ url: facilitatorUrl }),
    network,
    asset,
    assetName: x.assetName ?? devnet?.x402.name ?? "USD Coin",
    assetVersion: x.assetVersion ?? devnet?.x402.version ?? "2",
    payTo,
    prices,
    signing: { issuer: createEip712Issuer({ privateKey: signingKey, chainId: shared.chainId }), publicBaseUrl: config.publicBaseUrl },
    paidCall: createPaidCall({
      payments: shared.payments,
      clock: shared.clock,
      metrics: shared.metrics,
      // Always held against balances: without a client (or on another network) the balance is unknown, and each
      // payer then has one open payment at a time.
      balances: shared.chainClient === undefined
        ? { balanceOf: () => Promise.resolve(undefined) }
        : createViemPayerBalances({ client: shared.chainClient, network: `eip155:${shared.chainId}` }),
    }),
    known: async (key) => (await shared.payments.find(key)) !== undefined,
    log,
  });
  return {
    gate,
    terms: {
      network,
      asset,
      payTo,
      facilitatorUrl,
      prices: { witness: prices.witness ?? null, relay: prices.relay ?? null, paidPlan: prices.plan ?? null },
    },
    stop: async () => {
      await facilitator?.stop();
    },
  };
}
