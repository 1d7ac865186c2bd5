/**
 * Wiring of the service's signers (decisions §27): each role's URI opened at start (a wrong one stops the process with
 * one line naming the role), the raw-key rule (a raw key only on a devnet unless `ALLOW_RAW_KEYS=true`), and what
 * `/readyz`, `/metrics` and `npm run ops -- signers` show of them.
 */
import { ANVIL_DEV_ADDRESSES } from "../adapters/devnet/mod.ts";
import { jwkAddress, type OpenSignerDeps, openEthereumSigner, openJwsSigner, SignerStartError } from "../adapters/signers/mod.ts";
import type { Keccak256 } from "../ports/keccak.ts";
import type { Logger } from "../ports/logger.ts";
import type { Metrics } from "../ports/metrics.ts";
import type { Secp256k1 } from "../ports/secp256k1.ts";
import type { EthereumSigner, JwsSigner, SignerRole, SignerState } from "../ports/signer.ts";
import type { Config } from "./config.ts";
import { DEVNET_JWS_KEY_FILE } from "./payments.ts";

/** The roles' signers; a role without a key is absent. */
export type ServiceSigners = {
  readonly delegate?: EthereumSigner | undefined;
  readonly witness?: EthereumSigner | undefined;
  /** An Ethereum signer (eip712 offers) or a JWS signer (jws offers). */
  readonly x402?: EthereumSigner | JwsSigner | undefined;
  readonly oauth?: JwsSigner | undefined;
  /** `DELEGATE_SIGNER_<chainId>` (decisions §30): the delegate's signer on that chain; another chain uses `delegate`. */
  readonly delegateByChain?: ReadonlyMap<number, EthereumSigner> | undefined;
};

/** Chains on which a raw key is allowed without `ALLOW_RAW_KEYS` (Anvil's and Hardhat's, Ganache's). */
export const DEVNET_CHAIN_IDS: ReadonlySet<number> = new Set([31337, 1337]);

/** What opening the signers needs. */
export type SignerWiringDeps = {
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly secp256k1: Secp256k1;
  readonly keccak256: Keccak256;
};

/** The variable under which the embedded devnet's own keys are handed to `env:` signers (never read from the process). */
const DEVNET_DELEGATE = "ATS_DEVNET_DELEGATE_KEY";
const DEVNET_WITNESS = "ATS_DEVNET_WITNESS_KEY";

/**
 * Opens every configured role's signer; `devnetKeys`, the embedded devnet's, stand in for a delegate and a witness
 * the config does not name. Throws SignerStartError (one line naming the role) when one cannot be opened.
 */
export async function openServiceSigners(
  config: Pick<Config, "signers" | "x402">,
  deps: SignerWiringDeps,
  devnetKeys?: { readonly delegate: string; readonly witness: string } | undefined,
): Promise<ServiceSigners> {
  const s = config.signers;
  const env = { ...s.env, ...(devnetKeys === undefined ? {} : { [DEVNET_DELEGATE]: devnetKeys.delegate, [DEVNET_WITNESS]: devnetKeys.witness }) };
  const open: OpenSignerDeps = { audit: { log: deps.log, metrics: deps.metrics, timeoutMs: s.timeoutMs }, env, secp256k1: deps.secp256k1, keccak: deps.keccak256 };
  const opened: { close: () => Promise<void> }[] = [];
  const track = <T extends { close: () => Promise<void> }>(signer: T): T => {
    opened.push(signer);
    return signer;
  };
  try {
    const delegateUri = s.delegate ?? (devnetKeys === undefined ? undefined : `env:${DEVNET_DELEGATE}`);
    const witnessUri = s.witness ?? (devnetKeys === undefined ? undefined : devnetKeys.witness === devnetKeys.delegate ? delegateUri : `env:${DEVNET_WITNESS}`);
    const delegate = delegateUri === undefined ? undefined : track(await openEthereumSigner("delegate", delegateUri, open, s.addresses.delegate));
    // One key, one signer: the witness that is the delegate's key shares its session (and its wallet's nonces).
    const witness = witnessUri === undefined
      ? undefined
      : witnessUri === delegateUri && s.addresses.witness === undefined
      ? delegate
      : track(await openEthereumSigner("witness", witnessUri, open, s.addresses.witness));
    let x402: EthereumSigner | JwsSigner | undefined;
    if (s.x402 !== undefined) {
      if (config.x402.signingFormat === "jws") x402 = track(await openJwsSigner("x402", s.x402, open, s.addresses.x402));
      else x402 = s.x402 === witnessUri && s.addresses.x402 === undefined ? witness : track(await openEthereumSigner("x402", s.x402, open, s.addresses.x402));
    } else if (config.x402.signingFormat === "eip712") {
      x402 = witness;
    }
    const oauth = s.oauth === undefined ? undefined : track(await openJwsSigner("oauth", s.oauth, open));
    if (oauth !== undefined && oauth.alg !== "ES256") throw new SignerStartError("OAUTH_SIGNER: access tokens are ES256, so the key must be P-256 (this one is secp256k1)");
    const delegateByChain = new Map<number, EthereumSigner>();
    for (const [chainId, uri] of s.delegateByChain ?? []) {
      delegateByChain.set(chainId, track(await openChainDelegate(chainId, uri, open, chainDelegatePin(s, chainId))));
    }
    return { delegate, witness, x402, oauth, delegateByChain };
  } catch (error) {
    await Promise.all(opened.map((signer) => signer.close().catch(() => undefined)));
    throw error;
  }
}

/** The address a chain's delegate must answer for: `DELEGATE_ADDRESS_<chainId>`, else the role's `DELEGATE_ADDRESS`. */
function chainDelegatePin(s: Pick<Config["signers"], "addresses" | "delegateAddressByChain">, chainId: number): { readonly address: string; readonly variable: string } | undefined {
  const own = s.delegateAddressByChain?.get(chainId);
  if (own !== undefined) return { address: own, variable: `DELEGATE_ADDRESS_${chainId}` };
  return s.addresses.delegate === undefined ? undefined : { address: s.addresses.delegate, variable: "DELEGATE_ADDRESS" };
}

/**
 * A chain's delegate signer; a wrong URI, or a key answering for another address than its pin ({@link chainDelegatePin}),
 * stops the start with one line naming `DELEGATE_SIGNER_<chainId>` and the pin's variable. Before, `DELEGATE_ADDRESS`
 * pinned the role's signer only: a chain's own delegate could be any key.
 */
async function openChainDelegate(chainId: number, uri: string, open: OpenSignerDeps, pin: ReturnType<typeof chainDelegatePin>): Promise<EthereumSigner> {
  try {
    return await openEthereumSigner("delegate", uri, open, pin?.address);
  } catch (error) {
    if (!(error instanceof SignerStartError)) throw error;
    const named = error.message.replace(/^DELEGATE_SIGNER\b/, `DELEGATE_SIGNER_${chainId}`).replace(/\bDELEGATE_ADDRESS\b/, pin?.variable ?? "DELEGATE_ADDRESS");
    const hint = pin?.variable === "DELEGATE_ADDRESS" ? ` (DELEGATE_ADDRESS pins every chain's delegate; DELEGATE_ADDRESS_${chainId} pins this chain's own)` : "";
    throw new SignerStartError(`${named}${hint}`);
  }
}

/**
 * Every `DELEGATE_SIGNER_<chainId>` and `DELEGATE_ADDRESS_<chainId>` names an attestation chain the deployment serves,
 * and a chain pinned by `DELEGATE_ADDRESS_<chainId>` without a signer of its own has the role's signer answering for
 * that address. Throws SignerStartError naming the variable. Before, a typo in the chain id (`DELEGATE_SIGNER_31383`
 * for 31338) started the service, and the chain meant was paid for by the role's wallet.
 */
export function checkChainDelegates(s: Pick<Config["signers"], "delegateByChain" | "delegateAddressByChain">, signers: ServiceSigners, chains: SigningChains): void {
  const served = chains.chainIds.map((id) => `eip155:${id}`).join(", ");
  for (const [prefix, named] of [["DELEGATE_SIGNER", s.delegateByChain], ["DELEGATE_ADDRESS", s.delegateAddressByChain]] as const) {
    for (const chainId of named?.keys() ?? []) {
      if (!chains.chainIds.includes(chainId)) {
        throw new SignerStartError(`${prefix}_${chainId}: chain ${chainId} is not an attestation chain this deployment serves (it serves ${served})`);
      }
    }
  }
  for (const [chainId, address] of s.delegateAddressByChain ?? []) {
    if (s.delegateByChain?.has(chainId)) continue;
    const signer = delegateOn(signers, chainId);
    if (signer !== undefined && signer.address.toLowerCase() !== address.toLowerCase()) {
      throw new SignerStartError(`DELEGATE_ADDRESS_${chainId}: the delegate signing on chain ${chainId} (DELEGATE_SIGNER) answers for ${signer.address}, not ${address}`);
    }
  }
}

/** The delegate's signer on a chain (decisions §30): `DELEGATE_SIGNER_<chainId>` when set, else the role's. */
export function delegateOn(signers: ServiceSigners, chainId: number): EthereumSigner | undefined {
  return signers.delegateByChain?.get(chainId) ?? signers.delegate;
}

/** Each distinct signer once, with the roles it serves. */
export function distinctSigners(signers: ServiceSigners): { readonly roles: readonly SignerRole[]; readonly signer: EthereumSigner | JwsSigner }[] {
  const found = new Map<EthereumSigner | JwsSigner, SignerRole[]>();
  for (const role of ["delegate", "witness", "x402", "oauth"] as const) {
    const signer = signers[role];
    if (signer !== undefined) found.set(signer, [...(found.get(signer) ?? []), role]);
  }
  for (const signer of signers.delegateByChain?.values() ?? []) if (!found.has(signer)) found.set(signer, ["delegate"]);
  return [...found].map(([signer, roles]) => ({ signer, roles }));
}

/** A signer's Ethereum address: an Ethereum role's, or a secp256k1 JWS key's (ES256K); a P-256 key has none. */
const addressOf = (signer: EthereumSigner | JwsSigner): string | undefined =>
  "address" in signer ? String(signer.address) : signer.publicJwk.crv === "secp256k1" ? jwkAddress(signer.publicJwk) : undefined;

/**
 * Whether a signer answers for one of Anvil's dev accounts: its key is public (compose's devnet keystore is one), so
 * on a chain that is not a devnet it is a raw key whatever holds it; a keystore with its password in a file otherwise
 * counts as kept, and a production start that fell back to the devnet's secrets began with it. A JWS x402 issuer's
 * secp256k1 key (ES256K) is judged by its address too: it has no `address`, and Anvil's key #0 there was not caught.
 */
const wellKnown = (signer: EthereumSigner | JwsSigner) => ANVIL_DEV_ADDRESSES.has(addressOf(signer)?.toLowerCase() ?? "");

/** The attestation chains a deployment signs on, and whether they are the embedded devnet's. */
export type SigningChains = { readonly chainIds: readonly number[]; readonly embeddedDevnet: boolean };

/** 31337 and 1337 anywhere; with the embedded devnet, its chains (X402_NETWORK naming another chain is not one). */
const onDevnet = (chains: SigningChains, chainId: number) => DEVNET_CHAIN_IDS.has(chainId) || (chains.embeddedDevnet && chains.chainIds.includes(chainId));

/** The chain of `X402_NETWORK` (`eip155:<chain id>`), when it names one; unset, payments are on the default chain. */
const x402Chain = (x402: Pick<Config["x402"], "network">) => x402.network === undefined ? undefined : Number(x402.network.slice("eip155:".length));

/**
 * The variable that names a signer, and the chains it signs on: a role's signer on every attestation chain (the
 * delegate's where no `DELEGATE_SIGNER_<chainId>` serves instead), a chain's own delegate on its chain only, and the
 * x402 issuer also on `X402_NETWORK`'s chain: its offers and receipts are for payments there (a raw key signing for
 * payments on 8453 started beside a 31337 attestation chain).
 */
function signingPlaces(
  config: Pick<Config, "x402">,
  signers: ServiceSigners,
  entry: { readonly signer: EthereumSigner | JwsSigner; readonly roles: readonly SignerRole[] },
  chains: SigningChains,
): { variable: string; chainIds: number[]; x402ChainId: number | undefined } {
  const { signer, roles } = entry;
  const own = [...signers.delegateByChain ?? []].filter(([, s]) => s === signer).map(([id]) => id);
  const asRole = roles.some((role) => signers[role] === signer);
  if (!asRole) return { variable: `DELEGATE_SIGNER_${own[0]}`, chainIds: own, x402ChainId: undefined };
  const paidOn = signers.x402 === signer ? x402Chain(config.x402) : undefined;
  const x402ChainId = paidOn === undefined || chains.chainIds.includes(paidOn) ? undefined : paidOn;
  return { variable: `${roles[0]!.toUpperCase()}_SIGNER`, chainIds: [...chains.chainIds, ...(x402ChainId === undefined ? [] : [x402ChainId])], x402ChainId };
}

/** What makes a raw signer raw, as the line the start stops with says it. */
function rawWhat(signer: EthereumSigner | JwsSigner): string {
  if (wellKnown(signer)) return `the key of Anvil's dev account ${addressOf(signer)}, published with every Anvil`;
  const reason = signer.rawReason ?? (signer.backend === "env" ? "env" : "password-env");
  if (reason === "env") return "a private key in the environment";
  return reason === "empty-password" ? "a keystore whose password is empty" : "a keystore whose password is in the environment";
}

/**
 * The raw-key rule (decisions §27): a raw key (env:, or a keystore whose password is in the environment or empty)
 * starts the service only on a devnet (chain 31337 or 1337, or the embedded one) unless `ALLOW_RAW_KEYS=true`; then
 * each is logged as a warning and counted in `ats_raw_signing_keys`. Throws SignerStartError naming the role otherwise.
 * Each signer is judged by every chain it signs on (decisions §30): a raw `DELEGATE_SIGNER_8453` stops the start as
 * a raw delegate on 8453 does, whatever the default chain (it was judged by the default chain alone); the x402 issuer
 * by `X402_NETWORK`'s chain as well. A raw-key variable that no signer reads ({@link unusedRawKeysOffChain}) is judged
 * too: whoever reads the environment holds it, whether or not it signs.
 */
export function checkRawKeys(
  config: Pick<Config, "signers" | "x402">,
  signers: ServiceSigners,
  chains: SigningChains,
  deps: { readonly log: Logger; readonly metrics: { gauge: (name: string, help: string, read: () => Promise<{ value: number }[]>) => void } },
): void {
  // What the rule judges, and the gauge counts: keys held raw, and any signer answering for a published key, wherever
  // it is held (the gauge counted only the first, so an alert on it missed Anvil's key in a keystore on a real chain).
  const raw = distinctSigners(signers).filter(({ signer }) => signer.raw || wellKnown(signer));
  const unused = unusedRawKeysOffChain(config, chains);
  const generated = devnetGeneratesJwsKey(config, signers, chains);
  const paidOn = x402Chain(config.x402);
  const generatedOffChain = generated && paidOn !== undefined && !onDevnet(chains, paidOn) ? paidOn : undefined;
  deps.metrics.gauge(
    "ats_raw_signing_keys",
    "Signing keys held raw in this process (env:, or a keystore whose password is in the environment or empty) or answering for a published dev key, " +
      "and raw-key variables no signer reads left in the environment of a deployment on a chain that is not a devnet",
    () => Promise.resolve([{ value: raw.length + unused.length + (generated ? 1 : 0) }]),
  );
  const offending = raw.flatMap((entry) => {
    const places = signingPlaces(config, signers, entry, chains);
    const { chainIds, x402ChainId } = places;
    // A role the config names no signer for signs with the embedded devnet's key: the line says so, not only the variable.
    const role = entry.roles[0]!;
    const unset = places.variable === `${role.toUpperCase()}_SIGNER` && config.signers[role] === undefined;
    const variable = unset ? `${places.variable} (unset: the embedded devnet's own key)` : places.variable;
    const chainId = chainIds.find((id) => !onDevnet(chains, id));
    return chainId === undefined ? [] : [{ ...entry, variable, chainId, where: chainId === x402ChainId ? `${chainId} (X402_NETWORK)` : String(chainId) }];
  });
  if (!config.signers.allowRawKeys) {
    const first = offending[0];
    if (first !== undefined) {
      throw new SignerStartError(
        `${first.variable}: a raw key (${rawWhat(first.signer)}) ` +
          `signs for ${first.roles.join(", ")} on chain ${first.where}, which is not a devnet; use a signer (docs/signing.md) or set ALLOW_RAW_KEYS=true`,
      );
    }
    if (generatedOffChain !== undefined) {
      throw new SignerStartError(
        `X402_SIGNER: unset (and no X402_JWS_KEY), so the embedded devnet generates the x402 issuer's JWS key into DATA_DIR ` +
          `(${DEVNET_JWS_KEY_FILE}, a raw key in a file with no password), which would sign offers and receipts for payments on chain ` +
          `${generatedOffChain} (X402_NETWORK), which is not a devnet; use a signer (docs/signing.md) or set ALLOW_RAW_KEYS=true`,
      );
    }
    const left = unused[0];
    if (left !== undefined) {
      throw new SignerStartError(
        `${left.variable}: a raw key set but unused (${left.instead} serves the ${ROLE_NAMES[left.role]}); on chain ${left.where}, which is not a devnet, ` +
          "it must be removed from the environment, whose readers hold it whether or not it signs (or set ALLOW_RAW_KEYS=true)",
      );
    }
    return;
  }
  for (const { signer, roles, chainId } of offending) {
    deps.log.warn("raw_signing_key", { roles: roles.join(","), backend: signer.backend, chainId, why: "ALLOW_RAW_KEYS=true" });
  }
  if (generatedOffChain !== undefined) {
    deps.log.warn("raw_signing_key", { roles: "x402", backend: "devnet-file", chainId: generatedOffChain, why: "ALLOW_RAW_KEYS=true" });
  }
  for (const { variable, role, instead, chainId } of unused) {
    deps.log.warn("raw_signing_key", { variable, roles: role, backend: "env", unused: true, instead, chainId, why: "ALLOW_RAW_KEYS=true" });
  }
}

const ROLE_NAMES = { delegate: "delegate", witness: "witness", x402: "x402 issuer" } as const;

/**
 * Whether the embedded devnet generates the x402 issuer's JWS key into `DATA_DIR` (app/payments.ts `x402Issuer`): jws
 * offers priced, and neither `X402_SIGNER` nor `X402_JWS_KEY` names a key. That key is raw (a file with no password)
 * and signs outside the signer set, so it is judged here by `X402_NETWORK`'s chain like any x402 key: before, a devnet
 * start taking payments on Base signed its offers with it, said nothing, and `ats_raw_signing_keys` did not count it.
 */
function devnetGeneratesJwsKey(config: Pick<Config, "x402">, signers: ServiceSigners, chains: SigningChains): boolean {
  const x = config.x402;
  const priced = x.witnessPrice !== undefined || x.relayPrice !== undefined || x.paidPlanPrice !== undefined;
  return chains.embeddedDevnet && x.signingFormat === "jws" && signers.x402 === undefined && priced;
}

/**
 * The raw-key variables set but read by no signer (app/config/signers.ts), each with the first chain of the deployment
 * that is not a devnet: any attestation chain, and for an x402 key `X402_NETWORK`'s chain too. On a devnet none.
 */
function unusedRawKeysOffChain(config: Pick<Config, "signers" | "x402">, chains: SigningChains) {
  const paidOn = x402Chain(config.x402);
  return (config.signers.unusedRawKeys ?? []).flatMap((left) => {
    const attestation = chains.chainIds.find((id) => !onDevnet(chains, id));
    const paid = left.role === "x402" && paidOn !== undefined && !onDevnet(chains, paidOn) ? paidOn : undefined;
    const chainId = attestation ?? paid;
    if (chainId === undefined) return [];
    return [{ ...left, chainId, where: attestation === undefined ? `${chainId} (X402_NETWORK)` : String(chainId) }];
  });
}

/**
 * A deployment on a chain that is not a devnet must name the delegate's signer there (decisions §28, §30): the relays
 * send with it, and a start without one would look healthy while every write failed. Throws SignerStartError naming it.
 */
export function checkDelegatePresent(signers: ServiceSigners, chains: SigningChains): void {
  for (const chainId of chains.chainIds) {
    if (delegateOn(signers, chainId) !== undefined || onDevnet(chains, chainId)) continue;
    throw new SignerStartError(
      `DELEGATE_SIGNER: required on chain ${chainId}, which is not a devnet (a pkcs11:, awskms:, jsonrpc: or keystore: URI; docs/signing.md)`,
    );
  }
}

/** Each role's signer state, for `/readyz`. */
export function signerStates(signers: ServiceSigners): Record<string, SignerState> {
  const states: Record<string, SignerState> = {};
  for (const role of ["delegate", "witness", "x402", "oauth"] as const) {
    const signer = signers[role];
    if (signer !== undefined) states[role] = signer.state();
  }
  for (const [chainId, signer] of signers.delegateByChain ?? []) states[`delegate:eip155:${chainId}`] = signer.state();
  return states;
}

/** Closes each distinct signer (HSM sessions, SDK clients). */
export async function closeSigners(signers: ServiceSigners): Promise<void> {
  await Promise.all(distinctSigners(signers).map(({ signer }) => signer.close().catch(() => undefined)));
}
