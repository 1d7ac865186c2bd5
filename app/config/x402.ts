/** Paying with x402 (decisions §13, §18): the `x402` section. */
import { type Static, Type } from "@sinclair/typebox";
import { choice, ConfigError, declare, matching, optionalText, privateKey, raw, readSection, type ReadContext } from "./_declare.ts";

/** The devnet's prices, in units of its six-decimal test token: 0.01 a witness, 0.005 a relay write, 1 a plan year. */
export const DEVNET_X402_PRICES = { witness: "10000", relay: "5000", paidPlan: "1000000" } as const;

const address = (env: string, doc: string, description: string) =>
  declare(Type.Union([Type.TemplateLiteral("0x${string}"), Type.Undefined()], { description }), env, doc, (value) => {
    if (value === undefined) return undefined;
    if (!/^0x[0-9a-fA-F]{40}$/.test(value)) throw new ConfigError(env, "expected a 20-byte hex address");
    return value as `0x${string}`;
  });
const price = (env: string, devnetPrice: string, description: string) =>
  declare(Type.Union([Type.String(), Type.Undefined()], { description }), env, `devnet ${devnetPrice}; else unset`, (value, ctx) => {
    if (value === undefined) return ctx.devnet ? devnetPrice : undefined;
    if (!/^[0-9]{1,30}$/.test(value) || BigInt(value) === 0n) throw new ConfigError(env, "expected a positive whole number of the token's smallest unit");
    return value;
  });

/** The `x402` section's variables. */
export const X402Section = Type.Object({
  facilitatorUrl: optionalText("X402_FACILITATOR_URL", {
    doc: "devnet: the embedded facilitator",
    description: "the facilitator (/supported, /verify, /settle)",
    check: matching("X402_FACILITATOR_URL", /^https?:\/\/[^\s]+$/, "expected an http(s) URL"),
  }),
  asset: address("X402_ASSET", "devnet: the test token", "the EIP-3009 token payments are made in"),
  assetName: optionalText("X402_ASSET_NAME", { doc: "devnet: ATS Test USD; else USD Coin", description: "the token's EIP-712 domain name" }),
  assetVersion: optionalText("X402_ASSET_VERSION", { doc: "2", description: "the token's EIP-712 domain version" }),
  network: optionalText("X402_NETWORK", {
    doc: "eip155:<chain id>",
    description: "CAIP-2 network of the payments",
    check: matching("X402_NETWORK", /^eip155:[1-9][0-9]{0,18}$/, "expected a CAIP-2 EVM network such as eip155:8453"),
  }),
  payTo: address("X402_PAY_TO", "devnet: Anvil dev account #0", "who is paid"),
  witnessPrice: price("X402_WITNESS_PRICE", DEVNET_X402_PRICES.witness, "one controller witness"),
  relayPrice: price("X402_RELAY_PRICE", DEVNET_X402_PRICES.relay, "one private-relay write"),
  paidPlanPrice: price("X402_PAID_PLAN_PRICE", DEVNET_X402_PRICES.paidPlan, "one year of the paid plan"),
  signingKey: privateKey("X402_SIGNING_KEY", { doc: "the witness key", description: "signs offers and receipts (eip712)" }),
  signingFormat: choice("X402_SIGNING_FORMAT", ["eip712", "jws"], { default: "eip712", description: "eip712 or jws", reason: () => "expected eip712 or jws" }),
  jwsKey: optionalText("X402_JWS_KEY", {
    doc: "devnet: generated once, kept in DATA_DIR/x402_jws_key.json",
    description: "the private P-256 JWK that signs with jws",
    check: (value) => {
      let jwk: Record<string, unknown> | undefined;
      try {
        jwk = JSON.parse(value) as Record<string, unknown>;
      } catch {
        jwk = undefined;
      }
      if (jwk?.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string" || typeof jwk.x !== "string" || typeof jwk.y !== "string") {
        throw new ConfigError("X402_JWS_KEY", "expected a private P-256 JWK (JSON with kty EC, crv P-256, x, y, d)");
      }
    },
  }),
}, { title: "x402" });

/** What x402 payments the service offers and how it signs its offers and receipts. */
export type X402Config = Static<typeof X402Section>;

/** Reads the `x402` section: against a real chain a price needs the facilitator, the asset and payTo. */
export function readX402(ctx: Omit<ReadContext, "values">): X402Config {
  const settings = readSection(X402Section, ctx);
  // A JWS issuer's key: X402_SIGNER (an HSM, a KMS key, a keystore; decisions §27) or, as before it, X402_JWS_KEY.
  if (settings.signingFormat === "jws" && settings.jwsKey === undefined && raw(ctx.env, "X402_SIGNER") === undefined && !ctx.devnet) {
    throw new ConfigError("X402_JWS_KEY", "required when X402_SIGNING_FORMAT is jws and X402_SIGNER is not set");
  }
  const offered = settings.witnessPrice ?? settings.relayPrice ?? settings.paidPlanPrice;
  if (!ctx.devnet && offered !== undefined) {
    for (const [name, value] of [["X402_FACILITATOR_URL", settings.facilitatorUrl], ["X402_ASSET", settings.asset], ["X402_PAY_TO", settings.payTo]] as const) {
      if (value === undefined) throw new ConfigError(name, "required when an x402 price is set");
    }
  }
  return settings;
}
