/**
 * Wiring of x402 payments (decisions §13): the facilitator (the devnet's own, started here, unless
 * `X402_FACILITATOR_URL` names one), the offer/receipt signer (eip712, or jws with the service's did:web, its
 * DID document served at `/.well-known/did.json`: decisions §18) and the payment gate of the paid routes.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { Hex, PublicClient } from "viem";
import type { Config } from "./config.ts";
import { type Devnet, type Facilitator, startFacilitator } from "../adapters/devnet/mod.ts";
import { createPaidCall, createPaidResume, createSettledOnChain, owesForWork } from "../domain/payments/mod.ts";
import { createPaymentGate, type PaymentGate } from "../http/x402_gate.ts";
import type { Clock } from "../ports/clock.ts";
import type { Logger } from "../ports/logger.ts";
import type { Metrics } from "../ports/metrics.ts";
import type { PaymentLedger } from "../ports/payments.ts";
import { buildDidDocument, type DidDocument } from "../x402/did_document.ts";
import {
  createEip712Issuer,
  createJwsIssuer,
  createJwsIssuerFromJwk,
  didWebKid,
  generateSigningJwk,
  type OfferReceiptIssuer,
  type PrivateJwk,
} from "../x402/signers.ts";
import { type EthereumSigner, type JwsSigner, SignerUnavailableError } from "../ports/signer.ts";
import { createViemAuthorizationUses, createViemPayerBalances } from "../adapters/chain/mod.ts";

/** What the service announces about its x402 terms (printed by `npm start`). */
export type X402Terms = {
  readonly network: string;
  readonly asset: string;
  readonly payTo: string;
  readonly facilitatorUrl: string;
  readonly prices: { readonly witness: string | null; readonly relay: string | null; readonly paidPlan: string | null };
};

/** The wired payments: the gate, the terms, the DID document naming the signing key, and what to stop. */
export type WiredX402 = {
  readonly gate: PaymentGate;
  readonly terms: X402Terms;
  /** The service's did:web document (`/.well-known/did.json`) publishing the offer/receipt signing key. */
  readonly didDocument: DidDocument;
  readonly stop: () => Promise<void>;
};

/** The file a devnet keeps its generated ES256 offer/receipt key in. */
export const DEVNET_JWS_KEY_FILE = "x402_jws_key.json";

/**
 * The offer/receipt issuer the config names: eip712 with `X402_SIGNING_KEY` (or the witness key), or jws (ES256)
 * with `X402_JWS_KEY`, else on the devnet a key generated once and kept in `DATA_DIR`; undefined when no key.
 */
export async function x402Issuer(
  config: Pick<Config, "server" | "storage" | "x402">,
  options: { readonly chainId: number; readonly witnessKey: Hex | EthereumSigner | JwsSigner | undefined; readonly devnet: boolean },
): Promise<OfferReceiptIssuer | undefined> {
  const x = config.x402;
  const signer = options.witnessKey;
  // The X402_SIGNER role's key (decisions §27): offers and receipts signed where the key lives.
  if (typeof signer === "object") return issuerOverSigner(signer, { chainId: options.chainId, kid: didWebKid(config.server.publicBaseUrl) });
  if (x.signingFormat === "eip712") {
    const key = x.signingKey ?? (typeof signer === "string" ? signer : undefined);
    return key === undefined ? undefined : createEip712Issuer({ privateKey: key, chainId: options.chainId });
  }
  let jwk: PrivateJwk | undefined = x.jwsKey === undefined ? undefined : JSON.parse(x.jwsKey) as PrivateJwk;
  if (jwk === undefined && options.devnet) {
    const file = join(config.storage.dataDir, DEVNET_JWS_KEY_FILE);
    if (existsSync(file)) {
      jwk = JSON.parse(readFileSync(file, "utf8")) as PrivateJwk;
    } else {
      jwk = await generateSigningJwk("ES256");
      mkdirSync(config.storage.dataDir, { recursive: true });
      writeFileSync(file, JSON.stringify(jwk), { mode: 0o600 });
    }
  }
  if (jwk === undefined) return undefined;
  return await createJwsIssuerFromJwk({ kid: didWebKid(config.server.publicBaseUrl), alg: "ES256", privateJwk: jwk });
}

/** A signer gave no signature for an offer or a receipt (decisions §27). */
export class X402SignerUnavailable extends Error {}

/** An issuer over the x402 role's signer: eip712 with an Ethereum key, jws (ES256 or ES256K) with a JWS key. */
function issuerOverSigner(signer: EthereumSigner | JwsSigner, options: { readonly chainId: number; readonly kid: string }): OfferReceiptIssuer {
  if ("signTypedData" in signer) {
    return createEip712Issuer({
      address: signer.address,
      chainId: options.chainId,
      signTypedData: async (typedData) => {
        const purpose = /receipt/i.test(String(typedData.primaryType)) ? "receipt" : "offer";
        const signed = await signer.signTypedData(typedData as never, { purpose });
        if (!signed.ok) throw new SignerUnavailableError();
        return signed.signature;
      },
    });
  }
  return createJwsIssuer({
    kid: options.kid,
    alg: signer.alg,
    publicJwk: { ...signer.publicJwk, alg: signer.alg },
    sign: async (input) => {
      // A receipt names its payer; an offer does not.
      const payload = new TextDecoder().decode(input).split(".")[1] ?? "";
      const purpose = Buffer.from(payload, "base64url").toString("utf8").includes('"payer"') ? "receipt" : "offer";
      const signed = await signer.sign(input, { purpose });
      if (!signed.ok) throw new SignerUnavailableError();
      return signed.signature;
    },
  });
}

/**
 * Whether the x402 signer can sign now. A key in the process (env:, keystore:) always can; a remote one (an HSM, a
 * KMS, a JSON-RPC signer) is asked for one test signature per paid request, before the payment is verified: its
 * receipt is signed only after the settlement, when a failure could no longer give the payment back.
 */
export function x402SignerReady(signer: EthereumSigner | JwsSigner, nowMs: () => number = Date.now): () => Promise<boolean> {
  // One probe at a time, and a signer that answered is taken as ready for PROBE_KEPT_MS: paid requests at any rate cost
  // the remote key at most one test signature a second (a KMS Sign is billed and shares the account's quota with the
  // service's transactions). A failed probe is not kept: the next paid request asks again.
  let running: Promise<boolean> | undefined;
  let readyAt: number | undefined;
  return async () => {
    if (signer.backend === "env" || signer.backend === "keystore") return true;
    // Unless a signature of it failed since (its state turns down): then it is asked again at once.
    if (readyAt !== undefined && nowMs() - readyAt < PROBE_KEPT_MS && signer.state() !== "down") return true;
    running ??= (async () => {
      const probe = "signTypedData" in signer
        ? await signer.signTypedData({ domain: { name: "ats" }, types: { Ping: [{ name: "at", type: "uint256" }] }, primaryType: "Ping", message: { at: 0n } }, { purpose: "test" })
        : await signer.sign(new TextEncoder().encode("ats.ping"), { purpose: "test" });
      readyAt = probe.ok ? nowMs() : undefined;
      return probe.ok;
    })().finally(() => (running = undefined));
    return await running;
  };
}

/** How long a remote x402 signer that answered its probe is taken as ready. */
export const PROBE_KEPT_MS = 1_000;

/** Builds the gate from the config; undefined when nothing is for sale (or no key can sign offers). */
export async function wireX402(
  config: Pick<Config, "server" | "storage" | "x402">,
  shared: {
    readonly devnet: Devnet | undefined;
    readonly chainId: number;
    /** The x402 role's signer (decisions §27), or a raw key (tests). */
    readonly witnessKey: Hex | EthereumSigner | JwsSigner | undefined;
    readonly payments: PaymentLedger;
    readonly clock: Clock;
    readonly metrics: Metrics;
    readonly log: Logger;
    /**
     * Each served attestation chain's client, by chain id: payers' balances and their authorizations' use are read with
     * the one of the chain payments settle on (`X402_NETWORK`'s), when the deployment serves it (issue 23, decisions
     * §30). Before, the default chain's was asked whatever the network, so payments on another served chain (or, on the
     * devnet with `DEFAULT_CHAIN` naming its second chain, on its first) were held one at a time per payer and a
     * front-run payment was left unsettled.
     */
    readonly chainClients?: ReadonlyMap<number, PublicClient> | undefined;
  },
): Promise<WiredX402 | undefined> {
  const { devnet, log } = shared;
  const x = config.x402;
  const prices = { witness: x.witnessPrice, relay: x.relayPrice, plan: x.paidPlanPrice };
  if (prices.witness === undefined && prices.relay === undefined && prices.plan === undefined) return undefined;
  const asset = x.asset ?? devnet?.x402.token;
  const payTo = x.payTo ?? devnet?.x402.payTo;
  const issuer = await x402Issuer(config, { chainId: shared.chainId, witnessKey: shared.witnessKey, devnet: devnet !== undefined });
  if (asset === undefined || payTo === undefined || issuer === undefined) {
    log.warn("x402_not_offered", { reason: issuer === undefined ? "no key signs offers (X402_SIGNING_KEY or WITNESS_PRIVATE_KEY; X402_JWS_KEY for jws)" : "no asset or payTo" });
    return undefined;
  }
  // The devnet's test token and facilitator are on its first chain, also when DEFAULT_CHAIN names its second.
  const paidOn = devnet?.chainId ?? shared.chainId;
  let facilitator: Facilitator | undefined;
  let facilitatorUrl = x.facilitatorUrl;
  if (facilitatorUrl === undefined && devnet !== undefined) {
    // The devnet's state is saved before a settlement is answered, as before a send of the service's own is.
    facilitator = startFacilitator({ rpcUrl: devnet.rpcUrl, chainId: paidOn, privateKey: devnet.keys.facilitator, onSettled: devnet.checkpoint });
    facilitatorUrl = facilitator.url;
  }
  if (facilitatorUrl === undefined) return undefined;
  const network = x.network ?? `eip155:${paidOn}`;
  // The client of the chain payments settle on, when the deployment serves it (otherwise balances are unknown).
  const networkClient = shared.chainClients?.get(Number(network.slice("eip155:".length)));
  const gate = createPaymentGate({
    facilitator: new HTTPFacilitatorClient({ url: facilitatorUrl }),
    network,
    asset,
    assetName: x.assetName ?? devnet?.x402.name ?? "USD Coin",
    assetVersion: x.assetVersion ?? devnet?.x402.version ?? "2",
    payTo,
    prices,
    signing: { issuer, publicBaseUrl: config.server.publicBaseUrl },
    signerReady: typeof shared.witnessKey === "object" ? x402SignerReady(shared.witnessKey) : undefined,
    paidCall: createPaidCall({
      payments: shared.payments,
      clock: shared.clock,
      metrics: shared.metrics,
      // Always held against balances: without a client (or on another network) the balance is unknown, and each
      // payer then has one open payment at a time.
      balances: networkClient === undefined
        ? { balanceOf: () => Promise.resolve(undefined) }
        : createViemPayerBalances({ client: networkClient, network }),
    }),
    paidResume: createPaidResume({ payments: shared.payments, clock: shared.clock, metrics: shared.metrics }),
    // Read where the payer balances are: a nonce found used at settlement may be the payment itself (decisions §13).
    settledOnChain: createSettledOnChain({
      uses: networkClient === undefined
        ? { useOf: () => Promise.resolve(undefined) }
        : createViemAuthorizationUses({ client: networkClient, network }),
    }),
    known: async (key) => (await shared.payments.find(key)) !== undefined,
    owes: (payer) => owesForWork(shared.payments, payer),
    log,
  });
  const did = didWebKid(config.server.publicBaseUrl).split("#")[0]!;
  return {
    gate,
    didDocument: buildDidDocument({ did, issuers: [issuer], chainId: shared.chainId }),
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
