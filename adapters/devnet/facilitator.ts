/**
 * An x402 facilitator for the devnet (decisions §13), built on the official packages: `x402Facilitator` from
 * `@x402/core` with the `exact` EVM scheme of `@x402/evm`, settling EIP-3009 authorizations with a viem wallet.
 * It serves the facilitator HTTP protocol that `@x402/core`'s `HTTPFacilitatorClient` speaks (`GET /supported`,
 * `POST /verify`, `POST /settle`) on a loopback port. Errors answer a fixed body; no upstream text leaves it.
 */
import { x402Facilitator } from "@x402/core/facilitator";
import type { Network, PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { createWalletClient, defineChain, type Hex, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";

/** A running facilitator. */
export type Facilitator = {
  /** What `X402_FACILITATOR_URL` is set to. */
  readonly url: string;
  /** The wallet that sends settlements (pays their gas). */
  readonly address: Hex;
  readonly network: Network;
  readonly stop: () => Promise<void>;
};

/** Options of {@link startFacilitator}. */
export type FacilitatorOptions = {
  readonly rpcUrl: string;
  readonly chainId: number;
  /** The settling wallet; it needs gas money on the chain. */
  readonly privateKey: Hex;
  /** Default 127.0.0.1. */
  readonly hostname?: string | undefined;
  /** Default: any free port. */
  readonly port?: number | undefined;
  /**
   * Runs after a settlement's transaction is mined and before the service hears of it (the devnet saves its state
   * here, as after the service's own sends): a payment the service records as settled must survive a `kill -9` of
   * it and its Anvil. When it throws, the settlement is answered as the facilitator's error.
   */
  readonly onSettled?: (() => Promise<void>) | undefined;
};

/** Starts the facilitator on loopback. */
export function startFacilitator(options: FacilitatorOptions): Facilitator {
  const network = `eip155:${options.chainId}` as Network;
  const chain = defineChain({
    id: options.chainId,
    name: "x402 devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  const account = privateKeyToAccount(options.privateKey);
  const client = createWalletClient({ account, chain, transport: http(options.rpcUrl), pollingInterval: 50 }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    readContract: (args) => client.readContract(args as never),
    verifyTypedData: (args) => client.verifyTypedData(args as never),
    writeContract: (args) => client.writeContract({ ...args, account, chain } as never),
    sendTransaction: (args) => client.sendTransaction({ ...args, account, chain }),
    waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
    getCode: (args) => client.getCode(args),
  }, { confirmationTimeoutMs: 60_000 });
  const facilitator = new x402Facilitator().register(network, new ExactEvmScheme(signer));
  // One settlement at a time: the wallet's nonces stay in order without a nonce manager.
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(run: () => Promise<T>): Promise<T> => {
    const next = queue.then(run, run);
    queue = next.catch(() => undefined);
    return next;
  };

  const fail = (status: number, error: string) => Response.json({ error, code: status === 400 ? "INVALID_INPUT" : "FACILITATOR_ERROR" }, { status });
  const server = Bun.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      try {
        if (request.method === "GET" && path === "/supported") return Response.json(facilitator.getSupported());
        if (request.method !== "POST" || (path !== "/verify" && path !== "/settle")) return fail(404, "Not found");
        let body: { paymentPayload?: PaymentPayload; paymentRequirements?: PaymentRequirements };
        try {
          body = await request.json() as typeof body;
        } catch {
          return fail(400, "Invalid JSON body");
        }
        if (typeof body?.paymentPayload !== "object" || typeof body?.paymentRequirements !== "object") return fail(400, "paymentPayload and paymentRequirements are required");
        if (path === "/verify") {
          const verified = await facilitator.verify(body.paymentPayload, body.paymentRequirements);
          return Response.json({ isValid: verified.isValid, invalidReason: verified.invalidReason, payer: verified.payer });
        }
        const settled = await serially(() => facilitator.settle(body.paymentPayload!, body.paymentRequirements!));
        if (settled.success) await options.onSettled?.();
        // The scheme's errorMessage may carry node text: only the protocol fields go out.
        return Response.json({
          success: settled.success,
          ...(settled.errorReason === undefined ? {} : { errorReason: settled.errorReason }),
          transaction: settled.transaction,
          network: settled.network,
          ...(settled.payer === undefined ? {} : { payer: settled.payer }),
        });
      } catch {
        return fail(500, "Facilitator error");
      }
    },
  });
  return {
    url: `http://${server.hostname}:${server.port}`,
    address: account.address,
    network,
    stop: async () => {
      await server.stop(true);
    },
  };
}
