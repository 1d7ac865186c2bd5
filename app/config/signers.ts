/** The keys the service signs with (decisions §27, §30) and its wallets' crypto: the `signers` section. */
import { Type } from "@sinclair/typebox";
import { ConfigError, bool, declare, int, type Env, optionalText, privateKey, readSection, type ReadContext } from "./_declare.ts";

const SIGNER_URI = /^(env|keystore|jsonrpc|pkcs11|awskms):/;
const uri = (env: string, description: string) =>
  optionalText(env, {
    doc: env === "OAUTH_SIGNER" ? "(none: keys generated in the store)" : "today's key variable, as env:",
    description,
    check: (value) => {
      if (!SIGNER_URI.test(value)) throw new ConfigError(env, "expected a signer URI: env:, keystore:, jsonrpc:, pkcs11: or awskms: (docs/signing.md)");
    },
  });
const address = (env: string) =>
  optionalText(env, {
    doc: "(none)",
    description: "the address the role's key must answer for",
    check: (value) => {
      if (!/^0x[0-9a-fA-F]{40}$/.test(value)) throw new ConfigError(env, "expected an address (0x and 40 hex digits)");
    },
  });

/** The `signers` section's variables. */
export const SignersSection = Type.Object({
  delegatePrivateKey: privateKey("DELEGATE_PRIVATE_KEY", { doc: "devnet: Anvil account #1", description: "the wallet that pays gas for delegated attestations" }),
  witnessPrivateKey: privateKey("WITNESS_PRIVATE_KEY", { doc: "the delegate key", description: "the wallet that writes controller witnesses" }),
  delegate: uri("DELEGATE_SIGNER", "the delegate's signer URI"),
  witness: uri("WITNESS_SIGNER", "the witness's signer URI"),
  x402: uri("X402_SIGNER", "the x402 issuer's signer URI"),
  oauth: uri("OAUTH_SIGNER", "the OAuth token signer's URI"),
  addresses: Type.Object({ delegate: address("DELEGATE_ADDRESS"), witness: address("WITNESS_ADDRESS"), x402: address("X402_ADDRESS") }),
  timeoutMs: int("SIGNER_TIMEOUT_MS", { default: 5_000, minimum: 100, maximum: 60_000, description: "a signature not given in time is 503 SIGNER_UNAVAILABLE" }),
  allowRawKeys: bool("ALLOW_RAW_KEYS", { default: false, description: "a raw key starts the service on a chain that is not a devnet" }),
  minDelegateBalanceWei: declare(Type.BigInt({ description: "the delegate wallet's reserve: under it the relays refuse writes 503 and /readyz shows delegateBalance false (not counted in ready)" }), "MIN_DELEGATE_BALANCE_WEI", "10000000000000000", (text) => {
    const wei = text ?? "10000000000000000";
    if (!/^[0-9]+$/.test(wei)) throw new ConfigError("MIN_DELEGATE_BALANCE_WEI", "expected a whole number of wei");
    return BigInt(wei);
  }),
  secp256k1Library: optionalText("SECP256K1_LIBRARY", { doc: "(unset: found if installed)", description: "none, a path or a name of libsecp256k1" }),
}, { title: "signers" });

/**
 * Each role's signer URI (`DELEGATE_SIGNER`, `WITNESS_SIGNER`, `X402_SIGNER`, `OAUTH_SIGNER`; decisions §27). A role
 * without one keeps today's variable, as `env:<VARIABLE>`: the delegate `DELEGATE_PRIVATE_KEY`, the witness
 * `WITNESS_PRIVATE_KEY` or else the delegate's signer, the x402 issuer `X402_SIGNING_KEY` (eip712, else the witness's
 * signer) or `X402_JWS_KEY` (jws), OAuth none (keys generated and rotated in the store). Undefined: the role has no key.
 */
export type SignersConfig = {
  readonly delegate: string | undefined;
  readonly witness: string | undefined;
  readonly x402: string | undefined;
  readonly oauth: string | undefined;
  /** `DELEGATE_SIGNER_<chainId>` (decisions §30): the delegate's signer on that chain; a chain without one uses `delegate`. */
  readonly delegateByChain: ReadonlyMap<number, string>;
  /**
   * `DELEGATE_ADDRESS_<chainId>`: the address the delegate's key on that chain must answer for; a chain without one is
   * held to `DELEGATE_ADDRESS` when that is set (the role's pin covers every chain's delegate).
   */
  readonly delegateAddressByChain: ReadonlyMap<number, string>;
  /** `<ROLE>_ADDRESS`: the address a role's key must answer for (Ethereum roles). */
  readonly addresses: { readonly delegate?: string | undefined; readonly witness?: string | undefined; readonly x402?: string | undefined };
  /** `SIGNER_TIMEOUT_MS` (default 5000, from 100 to 60000): a signature not given in time is a 503 SIGNER_UNAVAILABLE. */
  readonly timeoutMs: number;
  /** `ALLOW_RAW_KEYS` (default false): a raw key starts the service on a chain that is not a devnet, with a warning. */
  readonly allowRawKeys: boolean;
  /** The environment `env:` URIs and `password-env=` read (the process's own). */
  readonly env: Env;
  readonly delegatePrivateKey: `0x${string}` | undefined;
  /** The witness's raw key; default the delegate's. */
  readonly witnessPrivateKey: `0x${string}` | undefined;
  /** The delegate wallet's reserve (wei): under it `/readyz` shows `delegateBalance` false and the relays refuse writes 503. */
  readonly minDelegateBalanceWei: bigint;
  /** `SECP256K1_LIBRARY` (issue 28): unset, native if found; `none`, @noble/curves; a path or name, that library. */
  readonly secp256k1Library: string | undefined;
  /**
   * Today's raw-key variables that are set but that no role's signer reads: left over from before a role moved to a
   * `*_SIGNER` (decisions §27). Names only, never values; judged at start by app/signers.ts `checkRawKeys`.
   */
  readonly unusedRawKeys: readonly UnusedRawKey[];
};

/** A raw-key variable set in the environment that no signer reads, the role it was for, and what serves it instead. */
export type UnusedRawKey = { readonly variable: string; readonly role: "delegate" | "witness" | "x402"; readonly instead: string };

/** Today's variables holding a role's raw key (decisions §27: a role with no `*_SIGNER` keeps its variable). */
const RAW_KEY_VARIABLES = [
  { variable: "DELEGATE_PRIVATE_KEY", role: "delegate", signer: "DELEGATE_SIGNER" },
  { variable: "WITNESS_PRIVATE_KEY", role: "witness", signer: "WITNESS_SIGNER" },
  { variable: "X402_SIGNING_KEY", role: "x402", signer: "X402_SIGNER" },
  { variable: "X402_JWS_KEY", role: "x402", signer: "X402_SIGNER" },
] as const;

/** Reads the `signers` section; the x402 section (read before) decides the x402 issuer's fallback. */
export function readSigners(ctx: Omit<ReadContext, "values">, x402Format: "eip712" | "jws"): SignersConfig {
  const v = readSection(SignersSection, ctx);
  const legacy = (name: string) => (ctx.env[name]?.trim() ? `env:${name}` : undefined);
  const delegate = v.delegate ?? legacy("DELEGATE_PRIVATE_KEY");
  const witness = v.witness ?? legacy("WITNESS_PRIVATE_KEY") ?? delegate;
  const x402 = v.x402 ?? (x402Format === "eip712" ? legacy("X402_SIGNING_KEY") ?? witness : legacy("X402_JWS_KEY"));
  const delegateByChain = perChain(ctx.env, "DELEGATE_SIGNER", SIGNER_URI, "a signer URI: env:, keystore:, jsonrpc:, pkcs11: or awskms: (docs/signing.md)");
  return {
    ...v,
    delegate,
    witness,
    x402,
    witnessPrivateKey: v.witnessPrivateKey ?? v.delegatePrivateKey,
    delegateByChain,
    delegateAddressByChain: perChain(ctx.env, "DELEGATE_ADDRESS", /^0x[0-9a-fA-F]{40}$/, "an address (0x and 40 hex digits)"),
    env: ctx.env,
    unusedRawKeys: unusedRawKeys(ctx.env, [delegate, witness, x402, v.oauth, ...delegateByChain.values()], x402Format),
  };
}

/**
 * The raw-key variables set (non-empty) that none of `uris` reads as `env:<VARIABLE>`: a role moved to a `*_SIGNER`
 * whose old `DELEGATE_PRIVATE_KEY` is still in the environment, or an x402 key of the other format. Before, such a key
 * was judged by no rule: only opened signers were, so a production start with one said nothing.
 */
function unusedRawKeys(env: Env, uris: readonly (string | undefined)[], x402Format: "eip712" | "jws"): UnusedRawKey[] {
  const read = new Set(uris.flatMap((uri) => (uri?.startsWith("env:") ? [uri.slice("env:".length).trim()] : [])));
  const unused: UnusedRawKey[] = [];
  for (const { variable, role, signer } of RAW_KEY_VARIABLES) {
    if (!env[variable]?.trim() || read.has(variable)) continue;
    const otherFormat = role === "x402" && !env[signer]?.trim();
    unused.push({ variable, role, instead: otherFormat ? `X402_SIGNING_FORMAT=${x402Format}` : signer });
  }
  return unused;
}

/**
 * `<PREFIX>_<chainId>` (decisions §30): `DELEGATE_SIGNER_<chainId>`, a signer URI per chain, and
 * `DELEGATE_ADDRESS_<chainId>`, its pin. A suffix that is not a decimal chain id, or a value of another form, stops the
 * start naming the variable; whether the chain is served is checked once the chains are known (app/signers.ts).
 */
function perChain(env: Env, prefix: string, form: RegExp, expected: string): ReadonlyMap<number, string> {
  const values = new Map<number, string>();
  const named = new RegExp(`^${prefix}_([0-9]+)$`);
  for (const name of Object.keys(env)) {
    const match = named.exec(name);
    const value = env[name]?.trim();
    if (match === null || value === undefined || value === "") continue;
    if (!/^[1-9][0-9]{0,15}$/.test(match[1]!)) throw new ConfigError(name, `expected ${prefix}_<chainId>, a decimal chain id`);
    if (!form.test(value)) throw new ConfigError(name, `expected ${expected}`);
    values.set(Number(match[1]), value);
  }
  return values;
}
