/**
 * In-process test doubles for x402: a `test` payment scheme (server and client sides) and a facilitator
 * that checks the payer's signature for real and "settles" with a deterministic transaction hash, so
 * tests and benches run the full 402 → pay → 200 loop on loopback without any chain or network.
 */
import type { FacilitatorClient } from "@x402/core/server";
import type {
  AssetAmount,
  Network,
  PaymentPayload,
  PaymentPayloadResult,
  PaymentRequirements,
  Price,
  SchemeNetworkClient,
  SchemeNetworkServer,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import type { Hex, LocalAccount } from "viem";
import { keccak256, recoverMessageAddress, toHex } from "viem/utils";

/** The scheme name the doubles speak. */
export const TEST_SCHEME = "exact";
/** The token the `test` scheme prices in (six decimals). */
export const TEST_ASSET = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

/** The server side of the test scheme: `$0.01` becomes 10000 atomic units of {@link TEST_ASSET}. */
export function testSchemeServer(): SchemeNetworkServer {
  return {
    scheme: TEST_SCHEME,
    defaultAssetTransferMethod: "default",
    paymentFlows: { default: { supported: ["authorization"], default: "authorization" } },
    parsePrice(price: Price): Promise<AssetAmount> {
      if (typeof price === "object") return Promise.resolve(price);
      const dollars = Number(String(price).replace(/^\$/, ""));
      return Promise.resolve({ amount: String(Math.round(dollars * 1_000_000)), asset: TEST_ASSET });
    },
    getAssetDecimals: () => 6,
    enhancePaymentRequirements(requirements: PaymentRequirements) {
      return Promise.resolve({ ...requirements, extra: { name: "USDC", version: "2", ...requirements.extra } });
    },
  };
}

/** The message a payer signs: the terms it agrees to. */
function authorizationMessage(a: { from: string; to: string; value: string; asset: string; network: string; nonce: string }) {
  return `x402 test payment\nfrom:${a.from.toLowerCase()}\nto:${a.to.toLowerCase()}\nvalue:${a.value}\nasset:${a.asset.toLowerCase()}\nnetwork:${a.network}\nnonce:${a.nonce}`;
}

/** The client side: signs the terms with the payer's key (personal_sign). */
export function testSchemeClient(payer: LocalAccount): SchemeNetworkClient {
  let counter = 0;
  return {
    scheme: TEST_SCHEME,
    async createPaymentPayload(x402Version: number, requirements: PaymentRequirements): Promise<PaymentPayloadResult> {
      const value = requirements.amount ?? (requirements as unknown as { maxAmountRequired: string }).maxAmountRequired;
      const authorization = {
        from: payer.address,
        to: requirements.payTo,
        value,
        asset: requirements.asset,
        network: requirements.network,
        nonce: `${Date.now()}-${counter++}`,
      };
      const signature = await payer.signMessage({ message: authorizationMessage(authorization) });
      return { x402Version, payload: { authorization, signature } };
    },
  };
}

/** A v1 `X-PAYMENT` header value for requirements taken from a v1 402 body. */
export async function testV1PaymentHeader(payer: LocalAccount, requirements: { scheme: string; network: string; maxAmountRequired: string; payTo: string; asset: string }): Promise<string> {
  const created = await testSchemeClient(payer).createPaymentPayload(1, { ...requirements, amount: requirements.maxAmountRequired } as unknown as PaymentRequirements);
  const body = { x402Version: 1, scheme: requirements.scheme, network: requirements.network, payload: created.payload };
  return btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(body))));
}

/** Options of {@link createTestFacilitator}. */
export type TestFacilitatorOptions = {
  readonly networks: readonly Network[];
  /** The v1 network names to announce too. */
  readonly v1Networks?: readonly string[] | undefined;
};

/** The test facilitator, with switches and a record of its calls. */
export type TestFacilitator = FacilitatorClient & {
  readonly calls: { verify: number; settle: number };
  /** Make the next settlements fail with this reason (undefined: succeed). */
  failSettlementWith: string | undefined;
  /** Return settlements without a payer (the receipt must then be left out). */
  omitPayer: boolean;
};

/** A facilitator that verifies the payer's signature and the terms, and settles with a deterministic hash. */
export function createTestFacilitator(options: TestFacilitatorOptions): TestFacilitator {
  const used = new Set<string>();
  const check = async (paymentPayload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> => {
    const payload = paymentPayload.payload as { authorization?: Record<string, string>; signature?: Hex };
    const a = payload.authorization;
    if (a === undefined || typeof payload.signature !== "string") return { isValid: false, invalidReason: "invalid_payload" };
    const amount = requirements.amount ?? (requirements as unknown as { maxAmountRequired: string }).maxAmountRequired;
    if (a.to?.toLowerCase() !== requirements.payTo.toLowerCase() || a.value !== amount) {
      return { isValid: false, invalidReason: "invalid_exact_evm_payload_recipient_mismatch" };
    }
    let signer: string;
    try {
      signer = await recoverMessageAddress({ message: authorizationMessage(a as never), signature: payload.signature });
    } catch {
      return { isValid: false, invalidReason: "invalid_signature" };
    }
    if (signer.toLowerCase() !== a.from?.toLowerCase()) return { isValid: false, invalidReason: "invalid_signature" };
    return { isValid: true, payer: signer };
  };
  const facilitator: TestFacilitator = {
    calls: { verify: 0, settle: 0 },
    failSettlementWith: undefined,
    omitPayer: false,
    async verify(paymentPayload, requirements) {
      facilitator.calls.verify++;
      return await check(paymentPayload, requirements);
    },
    async settle(paymentPayload, requirements): Promise<SettleResponse> {
      facilitator.calls.settle++;
      const verified = await check(paymentPayload, requirements);
      const signature = (paymentPayload.payload as { signature?: string }).signature ?? "";
      if (!verified.isValid) {
        return { success: false, errorReason: verified.invalidReason, transaction: "", network: requirements.network };
      }
      if (facilitator.failSettlementWith !== undefined || used.has(signature)) {
        return {
          success: false,
          errorReason: facilitator.failSettlementWith ?? "duplicate_settlement",
          transaction: "",
          network: requirements.network,
          payer: verified.payer,
        };
      }
      used.add(signature);
      const transaction = keccak256(toHex(signature));
      return {
        success: true,
        transaction,
        network: requirements.network,
        ...(facilitator.omitPayer ? {} : { payer: verified.payer }),
      };
    },
    getSupported(): Promise<SupportedResponse> {
      return Promise.resolve({
        kinds: [
          ...options.networks.map((network) => ({ x402Version: 2, scheme: TEST_SCHEME, network })),
          ...(options.v1Networks ?? []).map((network) => ({ x402Version: 1, scheme: TEST_SCHEME, network: network as Network })),
        ],
        extensions: [],
        signers: {},
      });
    },
  };
  return facilitator;
}
