import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keystore } from "ox";
import type { Hex } from "viem";
import { secp256k1 } from "@noble/curves/secp256k1";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { nobleSecp256k1, openKeccak256 } from "../adapters/crypto/mod.ts";
import { SignerStartError } from "../adapters/signers/mod.ts";
import { readConfig } from "./config.ts";
import { checkChainDelegates, checkDelegatePresent, checkRawKeys, delegateOn, distinctSigners, openServiceSigners, signerStates } from "./signers.ts";
import { generateSigningJwk } from "../x402/signers.ts";

const KEY = `0x${"33".repeat(32)}`;

async function opened(env: Record<string, string>) {
  const warnings: string[] = [];
  const log = { debug() {}, info() {}, warn: (event: string) => void warnings.push(event), error() {} };
  const gauges = new Map<string, () => Promise<{ value: number }[]>>();
  const metrics = { increment() {}, observe() {}, gauge: (name: string, _help: string, read: () => Promise<{ value: number }[]>) => void gauges.set(name, read) };
  const config = readConfig(env);
  const signers = await openServiceSigners(config, { log, metrics, secp256k1: nobleSecp256k1, keccak256: await openKeccak256() });
  return { config, signers, warnings, gauges, log, metrics };
}

/** The keystores' directories, removed when the file's tests end. */
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A keystore: URI for `key` under `password` (PBKDF2 with few rounds: the tests' time goes elsewhere). */
function keystoreUri(key: string, password: string): string {
  const dir = mkdtempSync(join(tmpdir(), "ats-signers-"));
  made.push(dir);
  const [derived, options] = Keystore.pbkdf2({ password, iterations: 1000 });
  writeFileSync(join(dir, "key.json"), JSON.stringify(Keystore.encrypt(key as Hex, derived, options)));
  writeFileSync(join(dir, "password"), password);
  return `keystore:${join(dir, "key.json")}?password-file=${join(dir, "password")}`;
}

describe("signer settings (decisions §27)", () => {
  test("each role's URI, or today's variable as env:; a value that is no signer URI stops the start naming it", () => {
    const config = readConfig({
      DELEGATE_SIGNER: "jsonrpc:http://127.0.0.1:8545#0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      WITNESS_PRIVATE_KEY: KEY,
      X402_SIGNING_KEY: KEY,
      OAUTH_SIGNER: "awskms:///alias/ats-oauth",
      SIGNER_TIMEOUT_MS: "2500",
    });
    expect(config.signers).toMatchObject({
      delegate: "jsonrpc:http://127.0.0.1:8545#0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      witness: "env:WITNESS_PRIVATE_KEY",
      x402: "env:X402_SIGNING_KEY",
      oauth: "awskms:///alias/ats-oauth",
      timeoutMs: 2500,
      allowRawKeys: false,
    });
    expect(readConfig({ X402_SIGNING_FORMAT: "jws", X402_JWS_KEY: '{"kty":"EC","crv":"P-256","x":"a","y":"b","d":"c"}' }).signers.x402).toBe("env:X402_JWS_KEY");
    expect(() => readConfig({ WITNESS_SIGNER: "vault:secret/witness" })).toThrow(/^WITNESS_SIGNER: expected a signer URI/);
    expect(() => readConfig({ DELEGATE_ADDRESS: "0x123" })).toThrow(/^DELEGATE_ADDRESS: /);
    expect(() => readConfig({ SIGNER_TIMEOUT_MS: "5" })).toThrow(/^SIGNER_TIMEOUT_MS: /);
  });
});

describe("raw keys are for development (decisions §27)", () => {
  test("a role without *_SIGNER keeps today's variable as env:, and the witness shares the delegate's signer", async () => {
    const { config, signers } = await opened({ DELEGATE_PRIVATE_KEY: KEY });
    expect(config.signers.delegate).toBe("env:DELEGATE_PRIVATE_KEY");
    expect(signers.witness).toBe(signers.delegate);
  });

  test("on a chain that is not a devnet a raw key stops the start, naming the role", async () => {
    const { config, signers, log, metrics } = await opened({ DELEGATE_PRIVATE_KEY: KEY });
    expect(() => checkRawKeys(config, signers, { chainIds: [84532], embeddedDevnet: false }, { log, metrics })).toThrow(SignerStartError);
    expect(() => checkRawKeys(config, signers, { chainIds: [84532], embeddedDevnet: false }, { log, metrics })).toThrow(/^DELEGATE_SIGNER: a raw key .*ALLOW_RAW_KEYS=true/);
    // 31337, 1337 and the embedded devnet take it.
    for (const chain of [{ chainIds: [31337], embeddedDevnet: false }, { chainIds: [1337], embeddedDevnet: false }, { chainIds: [5], embeddedDevnet: true }]) {
      expect(() => checkRawKeys(config, signers, chain, { log, metrics })).not.toThrow();
    }
  });

  test("on a chain that is not a devnet a start without a delegate signer stops, naming DELEGATE_SIGNER (decisions §28)", async () => {
    const none = await opened({});
    expect(none.signers.delegate).toBeUndefined();
    expect(() => checkDelegatePresent(none.signers, { chainIds: [84532], embeddedDevnet: false })).toThrow(/^DELEGATE_SIGNER: required on chain 84532/);
    for (const chain of [{ chainIds: [31337], embeddedDevnet: false }, { chainIds: [1337], embeddedDevnet: false }, { chainIds: [5], embeddedDevnet: true }]) {
      expect(() => checkDelegatePresent(none.signers, chain)).not.toThrow();
    }
    const some = await opened({ DELEGATE_PRIVATE_KEY: KEY });
    expect(() => checkDelegatePresent(some.signers, { chainIds: [84532], embeddedDevnet: false })).not.toThrow();
  });

  test("a signer answering for one of Anvil's dev accounts counts as raw, whatever holds the key: a keystore or an HSM", async () => {
    // Compose's devnet keystore (Anvil's account 1, its password in a file) was taken on any chain: a production start
    // that fell back to the devnet's secrets signed with a key every Anvil publishes.
    const { config, signers, log, metrics } = await opened({ DELEGATE_PRIVATE_KEY: ANVIL_DEV_KEYS[1]! });
    const held = { ...signers.delegate!, raw: false, backend: "keystore" as const };
    const inKeystore = { delegate: held, witness: held, x402: undefined, oauth: undefined };
    expect(() => checkRawKeys(config, inKeystore, { chainIds: [8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(/^DELEGATE_SIGNER: a raw key \(the key of Anvil's dev account 0x70997970C51812dc3A010C7d01b50e0d17dc79C8, published with every Anvil\) signs for delegate, witness on chain 8453/);
    expect(() => checkRawKeys(config, inKeystore, { chainIds: [31337], embeddedDevnet: false }, { log, metrics })).not.toThrow();
    // Account 10 of the same published mnemonic (Hardhat's default accounts run to 19) was not caught.
    const tenth = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 10 });
    const hardhat = await opened({ DELEGATE_PRIVATE_KEY: `0x${Buffer.from(tenth.getHdKey().privateKey!).toString("hex")}` });
    const kept = { ...hardhat.signers.delegate!, raw: false, backend: "keystore" as const };
    expect(() => checkRawKeys(hardhat.config, { delegate: kept, witness: kept, x402: undefined, oauth: undefined }, { chainIds: [8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(`DELEGATE_SIGNER: a raw key (the key of Anvil's dev account ${tenth.address}, published with every Anvil) signs for delegate, witness on chain 8453`);
  });

  test("with ALLOW_RAW_KEYS=true a published dev key held outside the process is counted in ats_raw_signing_keys too", async () => {
    // The rule judged it raw and logged it, but the gauge counted only keys held raw: an alert on it missed Anvil's key
    // in a keystore signing on a real chain.
    const { config, signers, warnings, gauges, log, metrics } = await opened({ DELEGATE_PRIVATE_KEY: ANVIL_DEV_KEYS[1]!, ALLOW_RAW_KEYS: "true" });
    const held = { ...signers.delegate!, raw: false, backend: "keystore" as const };
    checkRawKeys(config, { delegate: held, witness: held, x402: undefined, oauth: undefined }, { chainIds: [8453], embeddedDevnet: false }, { log, metrics });
    expect(warnings).toEqual(["raw_signing_key"]);
    expect(await gauges.get("ats_raw_signing_keys")!()).toEqual([{ value: 1 }]);
  });

  test("a JWS (ES256K) x402 issuer answering for one of Anvil's dev accounts counts as raw, as an eip712 one does", async () => {
    // Found by attack: the published-key check looked only at signers with an address, so Anvil's key #0 in a keystore
    // as X402_SIGNING_FORMAT=jws's issuer started on 8453 and ats_raw_signing_keys stayed 0.
    const { config, signers, gauges, log, metrics } = await opened({
      X402_SIGNING_FORMAT: "jws",
      DELEGATE_SIGNER: keystoreUri(KEY, "strong"),
      X402_SIGNER: keystoreUri(ANVIL_DEV_KEYS[0]!, "strong"),
    });
    expect(signers.x402 && "alg" in signers.x402 ? signers.x402.alg : undefined).toBe("ES256K");
    expect(() => checkRawKeys(config, signers, { chainIds: [8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(`X402_SIGNER: a raw key (the key of Anvil's dev account ${privateKeyToAccount(ANVIL_DEV_KEYS[0]! as Hex).address}, published with every Anvil) signs for x402 on chain 8453`);
    expect(await gauges.get("ats_raw_signing_keys")!()).toEqual([{ value: 1 }]);
    expect(() => checkRawKeys(config, signers, { chainIds: [31337], embeddedDevnet: false }, { log, metrics })).not.toThrow();
  });

  test("a keystore whose password is empty is a raw key: on a chain that is not a devnet the start stops, saying so", async () => {
    // Found by attack: a keystore under an empty password file (whoever reads the file holds the key) started on 8453
    // with no warning.
    const { config, signers, log, metrics } = await opened({ DELEGATE_SIGNER: keystoreUri(KEY, "") });
    expect(signers.delegate!.raw).toBe(true);
    expect(() => checkRawKeys(config, signers, { chainIds: [8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(/^DELEGATE_SIGNER: a raw key \(a keystore whose password is empty\) signs for delegate, witness, x402 on chain 8453, which is not a devnet; .*ALLOW_RAW_KEYS=true/);
    expect(() => checkRawKeys(config, signers, { chainIds: [31337], embeddedDevnet: false }, { log, metrics })).not.toThrow();
    // A JWS issuer's keystore alike; one under a password in a file is kept.
    const jws = await opened({ X402_SIGNING_FORMAT: "jws", DELEGATE_SIGNER: keystoreUri(KEY, "strong"), X402_SIGNER: keystoreUri(`0x${"55".repeat(32)}`, "") });
    expect([jws.signers.delegate!.raw, jws.signers.x402!.raw]).toEqual([false, true]);
    expect(() => checkRawKeys(jws.config, jws.signers, { chainIds: [8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(/^X402_SIGNER: a raw key \(a keystore whose password is empty\)/);
  });

  test("the x402 issuer is judged by X402_NETWORK's chain too: a raw key for payments on 8453 stops a start on 31337", async () => {
    // Found by attack: X402_SIGNING_KEY signed offers and receipts for payments on eip155:8453 without ALLOW_RAW_KEYS,
    // because only the attestation chains were looked at.
    const devnetChain = { chainIds: [31337], embeddedDevnet: false };
    const paid = { DELEGATE_SIGNER: keystoreUri(KEY, "strong"), X402_SIGNING_KEY: `0x${"55".repeat(32)}`, X402_NETWORK: "eip155:8453" };
    const { config, signers, log, metrics } = await opened(paid);
    expect(() => checkRawKeys(config, signers, devnetChain, { log, metrics }))
      .toThrow(/^X402_SIGNER: a raw key \(a private key in the environment\) signs for x402 on chain 8453 \(X402_NETWORK\), which is not a devnet; .*ALLOW_RAW_KEYS=true/);
    // The embedded devnet does not make another chain's payments a devnet's.
    expect(() => checkRawKeys(config, signers, { chainIds: [31337], embeddedDevnet: true }, { log, metrics })).toThrow(/on chain 8453 \(X402_NETWORK\)/);
    // The witness's key signs the offers when no x402 key is named: it is judged there as well.
    const witness = await opened({ DELEGATE_PRIVATE_KEY: KEY, X402_NETWORK: "eip155:8453" });
    expect(() => checkRawKeys(witness.config, witness.signers, devnetChain, { log, metrics }))
      .toThrow(/^DELEGATE_SIGNER: a raw key .* signs for delegate, witness, x402 on chain 8453 \(X402_NETWORK\)/);
    // Payments on a devnet, or ALLOW_RAW_KEYS=true, start (with the warning).
    const onDevnet = await opened({ ...paid, X402_NETWORK: "eip155:1337" });
    expect(() => checkRawKeys(onDevnet.config, onDevnet.signers, devnetChain, { log, metrics })).not.toThrow();
    const allowed = await opened({ ...paid, ALLOW_RAW_KEYS: "true" });
    checkRawKeys(allowed.config, allowed.signers, devnetChain, allowed);
    expect(allowed.warnings).toEqual(["raw_signing_key"]);
  });

  test("the JWS key the embedded devnet generates for x402 is raw: payments on a chain that is not a devnet stop the start; counted in the gauge", async () => {
    // Found by attack: with X402_SIGNING_FORMAT=jws and X402_NETWORK=eip155:8453 the devnet generated an unencrypted
    // P-256 key into DATA_DIR and signed Base offers with it, without a word, while eip712 stopped the same start.
    const devnet = { chainIds: [31337], embeddedDevnet: true };
    const base = await opened({ X402_SIGNING_FORMAT: "jws", X402_NETWORK: "eip155:8453" });
    expect(base.config.x402.witnessPrice).toBeDefined();
    expect(() => checkRawKeys(base.config, base.signers, devnet, base))
      .toThrow(/^X402_SIGNER: unset \(and no X402_JWS_KEY\), so the embedded devnet generates .* on chain 8453 \(X402_NETWORK\), which is not a devnet; .*ALLOW_RAW_KEYS=true/);
    // On the devnet's own chain it starts, and the gauge counts it beside the devnet's other keys (none opened here).
    const own = await opened({ X402_SIGNING_FORMAT: "jws" });
    checkRawKeys(own.config, own.signers, devnet, own);
    expect(await own.gauges.get("ats_raw_signing_keys")!()).toEqual([{ value: 1 }]);
    // ALLOW_RAW_KEYS=true starts, with the warning; a key named by X402_JWS_KEY is judged as the signer it is (env:).
    const allowed = await opened({ X402_SIGNING_FORMAT: "jws", X402_NETWORK: "eip155:8453", ALLOW_RAW_KEYS: "true" });
    checkRawKeys(allowed.config, allowed.signers, devnet, allowed);
    expect(allowed.warnings).toEqual(["raw_signing_key"]);
    const named = await opened({ X402_SIGNING_FORMAT: "jws", X402_NETWORK: "eip155:8453", X402_JWS_KEY: JSON.stringify(await generateSigningJwk("ES256")) });
    expect(() => checkRawKeys(named.config, named.signers, devnet, named)).toThrow(/^X402_SIGNER: a raw key \(a private key in the environment\)/);
    // eip712 with the devnet's own keys: the line says whose key it is (it named DELEGATE_SIGNER, which nobody had set).
    const config = readConfig({ X402_NETWORK: "eip155:8453" });
    const own712 = await openServiceSigners(config, { ...base, secp256k1: nobleSecp256k1, keccak256: await openKeccak256() }, { delegate: KEY, witness: KEY });
    expect(() => checkRawKeys(config, own712, devnet, base)).toThrow(/^DELEGATE_SIGNER \(unset: the embedded devnet's own key\): a raw key .* on chain 8453 \(X402_NETWORK\)/);
  });

  test("a raw-key variable no signer reads is listed by name: a role moved to a *_SIGNER, or an x402 key of the other format", () => {
    const jwk = '{"kty":"EC","crv":"P-256","x":"a","y":"b","d":"c"}';
    const moved = readConfig({
      DELEGATE_SIGNER: "awskms:///alias/ats-delegate",
      DELEGATE_PRIVATE_KEY: KEY,
      WITNESS_SIGNER: "awskms:///alias/ats-witness",
      WITNESS_PRIVATE_KEY: KEY,
      X402_SIGNER: "awskms:///alias/ats-x402",
      X402_SIGNING_KEY: KEY,
      X402_JWS_KEY: jwk,
    });
    expect(moved.signers.unusedRawKeys).toEqual([
      { variable: "DELEGATE_PRIVATE_KEY", role: "delegate", instead: "DELEGATE_SIGNER" },
      { variable: "WITNESS_PRIVATE_KEY", role: "witness", instead: "WITNESS_SIGNER" },
      { variable: "X402_SIGNING_KEY", role: "x402", instead: "X402_SIGNER" },
      { variable: "X402_JWS_KEY", role: "x402", instead: "X402_SIGNER" },
    ]);
    // The other format's x402 key signs nothing either.
    expect(readConfig({ X402_SIGNING_FORMAT: "jws", X402_JWS_KEY: jwk, X402_SIGNING_KEY: KEY }).signers.unusedRawKeys)
      .toEqual([{ variable: "X402_SIGNING_KEY", role: "x402", instead: "X402_SIGNING_FORMAT=jws" }]);
    // A variable a signer reads (today's, or named by an env: URI, a chain's own included) is not listed: it is judged as that signer.
    expect(readConfig({ DELEGATE_PRIVATE_KEY: KEY, X402_SIGNING_KEY: KEY }).signers.unusedRawKeys).toEqual([]);
    expect(readConfig({ DELEGATE_SIGNER: "env:DELEGATE_PRIVATE_KEY", DELEGATE_PRIVATE_KEY: KEY }).signers.unusedRawKeys).toEqual([]);
    expect(readConfig({ DELEGATE_SIGNER: "awskms:///alias/d", DELEGATE_SIGNER_8453: "env:DELEGATE_PRIVATE_KEY", DELEGATE_PRIVATE_KEY: KEY }).signers.unusedRawKeys).toEqual([]);
  });

  test("a raw key left in the environment beside a *_SIGNER stops a start on a chain that is not a devnet, naming the variable, never its value", async () => {
    // Found by attack: DELEGATE_PRIVATE_KEY left over from before DELEGATE_SIGNER started on 8453 without a word
    // (ats_raw_signing_keys 0): only the signers opened were judged, yet whoever reads the environment holds the key.
    const LEFT = `0x${"66".repeat(32)}`;
    const env = { DELEGATE_SIGNER: keystoreUri(KEY, "strong"), DELEGATE_PRIVATE_KEY: LEFT };
    const { config, signers, warnings, gauges, log, metrics } = await opened(env);
    expect(signers.delegate!.raw).toBe(false);
    let line = "";
    try {
      checkRawKeys(config, signers, { chainIds: [8453], embeddedDevnet: false }, { log, metrics });
    } catch (error) {
      expect(error).toBeInstanceOf(SignerStartError);
      line = (error as Error).message;
    }
    expect(line).toBe(
      "DELEGATE_PRIVATE_KEY: a raw key set but unused (DELEGATE_SIGNER serves the delegate); on chain 8453, which is not a devnet, " +
        "it must be removed from the environment, whose readers hold it whether or not it signs (or set ALLOW_RAW_KEYS=true)",
    );
    expect(line).not.toContain("66".repeat(8));
    // On a devnet nothing changes: no refusal, no warning, not counted.
    for (const chain of [{ chainIds: [31337], embeddedDevnet: false }, { chainIds: [1337], embeddedDevnet: false }, { chainIds: [5], embeddedDevnet: true }]) {
      expect(() => checkRawKeys(config, signers, chain, { log, metrics })).not.toThrow();
      expect(await gauges.get("ats_raw_signing_keys")!()).toEqual([{ value: 0 }]);
    }
    expect(warnings).toEqual([]);
    // An x402 key left beside X402_SIGNER is judged by X402_NETWORK's chain too; the delegate's is not.
    const paid = await opened({ ...env, DELEGATE_PRIVATE_KEY: "", X402_SIGNER: keystoreUri(KEY, "strong"), X402_SIGNING_KEY: LEFT, X402_NETWORK: "eip155:8453" });
    expect(() => checkRawKeys(paid.config, paid.signers, { chainIds: [31337], embeddedDevnet: false }, { log, metrics }))
      .toThrow(/^X402_SIGNING_KEY: a raw key set but unused \(X402_SIGNER serves the x402 issuer\); on chain 8453 \(X402_NETWORK\), which is not a devnet/);
    const delegateOnly = await opened({ ...env, X402_NETWORK: "eip155:8453" });
    expect(() => checkRawKeys(delegateOnly.config, delegateOnly.signers, { chainIds: [31337], embeddedDevnet: false }, { log, metrics })).not.toThrow();
  });

  test("with ALLOW_RAW_KEYS=true a raw key left beside a *_SIGNER starts with a warning naming the variable, counted in ats_raw_signing_keys", async () => {
    const { config, signers, gauges, metrics } = await opened({ DELEGATE_SIGNER: keystoreUri(KEY, "strong"), DELEGATE_PRIVATE_KEY: KEY, ALLOW_RAW_KEYS: "true" });
    const warned: [string, Record<string, unknown> | undefined][] = [];
    const log = { debug() {}, info() {}, warn: (event: string, fields?: Record<string, unknown>) => void warned.push([event, fields]), error() {} };
    checkRawKeys(config, signers, { chainIds: [8453], embeddedDevnet: false }, { log, metrics });
    expect(warned).toEqual([["raw_signing_key", { variable: "DELEGATE_PRIVATE_KEY", roles: "delegate", backend: "env", unused: true, instead: "DELEGATE_SIGNER", chainId: 8453, why: "ALLOW_RAW_KEYS=true" }]]);
    expect(JSON.stringify(warned)).not.toContain(KEY.slice(2));
    expect(await gauges.get("ats_raw_signing_keys")!()).toEqual([{ value: 1 }]);
  });

  test("ALLOW_RAW_KEYS=true starts with a warning and ats_raw_signing_keys", async () => {
    const { config, signers, warnings, gauges, log, metrics } = await opened({ DELEGATE_PRIVATE_KEY: KEY, ALLOW_RAW_KEYS: "true" });
    checkRawKeys(config, signers, { chainIds: [84532], embeddedDevnet: false }, { log, metrics });
    expect(warnings).toEqual(["raw_signing_key"]);
    expect(await gauges.get("ats_raw_signing_keys")!()).toEqual([{ value: 1 }]);
  });
});

describe("a delegate per chain (decisions §30)", () => {
  const OTHER = `0x${"44".repeat(32)}`;

  test("DELEGATE_SIGNER_<chainId> opens that chain's delegate; another chain uses the role's; both are shown and closed", async () => {
    const { signers } = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_31338: "env:CHAIN_B_KEY", CHAIN_B_KEY: OTHER });
    const onB = delegateOn(signers, 31338);
    expect(onB).not.toBe(signers.delegate);
    expect(delegateOn(signers, 31337)).toBe(signers.delegate);
    expect(distinctSigners(signers).map((s) => s.roles)).toEqual([["delegate", "witness", "x402"], ["delegate"]]);
    expect(Object.keys(signerStates(signers))).toEqual(["delegate", "witness", "x402", "delegate:eip155:31338"]);
  });

  test("a raw key is judged by every chain it signs on: a raw DELEGATE_SIGNER_8453 stops a start whose default chain is a devnet, naming it", async () => {
    // It was judged by the default chain alone, so a raw key signed mainnet transactions beside a 31337 default.
    const { config, signers, log, metrics } = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_8453: "env:BASE_KEY", BASE_KEY: OTHER });
    // The roles' signers held in an HSM (not raw), the 8453 delegate raw.
    const hsm = { ...signers.delegate!, raw: false, backend: "pkcs11" as const };
    const mixed = { delegate: hsm, witness: hsm, x402: undefined, oauth: undefined, delegateByChain: signers.delegateByChain };
    expect(() => checkRawKeys(config, mixed, { chainIds: [31337, 8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(/^DELEGATE_SIGNER_8453: a raw key .* on chain 8453, which is not a devnet/);
    // The role's raw delegate signs on 8453 too when that chain has no delegate of its own.
    const role = await opened({ DELEGATE_PRIVATE_KEY: KEY });
    expect(() => checkRawKeys(role.config, role.signers, { chainIds: [31337, 8453], embeddedDevnet: false }, { log, metrics }))
      .toThrow(/^DELEGATE_SIGNER: a raw key .* on chain 8453/);
    // A chain's own delegate on a devnet chain, beside a role signer on devnets only, starts.
    const devnets = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_1337: "env:BASE_KEY", BASE_KEY: OTHER });
    expect(() => checkRawKeys(devnets.config, devnets.signers, { chainIds: [31337, 1337], embeddedDevnet: false }, { log, metrics })).not.toThrow();
  });

  test("every attestation chain that is not a devnet needs a delegate: the role's or its own", async () => {
    const none = await opened({});
    expect(() => checkDelegatePresent(none.signers, { chainIds: [31337, 8453], embeddedDevnet: false })).toThrow(/^DELEGATE_SIGNER: required on chain 8453/);
    const own = await opened({ DELEGATE_SIGNER_8453: "env:BASE_KEY", BASE_KEY: OTHER });
    expect(() => checkDelegatePresent(own.signers, { chainIds: [31337, 8453], embeddedDevnet: false })).not.toThrow();
  });

  test("DELEGATE_ADDRESS pins every chain's delegate, DELEGATE_ADDRESS_<chainId> one chain's own: another key stops the start naming both variables", async () => {
    const [keyAddress, otherAddress] = [privateKeyToAccount(KEY as Hex).address, privateKeyToAccount(OTHER as Hex).address];
    // Before, DELEGATE_ADDRESS held the role's signer only, and a chain's own delegate could be any key.
    const roleWide = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_ADDRESS: keyAddress, DELEGATE_SIGNER_31338: "env:CHAIN_B_KEY", CHAIN_B_KEY: OTHER })
      .catch((error: unknown) => error);
    expect(roleWide).toBeInstanceOf(SignerStartError);
    expect((roleWide as Error).message).toBe(
      `DELEGATE_SIGNER_31338: the key answers for ${otherAddress}, not DELEGATE_ADDRESS ${keyAddress} (DELEGATE_ADDRESS pins every chain's delegate; DELEGATE_ADDRESS_31338 pins this chain's own)`,
    );
    const own = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_ADDRESS: keyAddress, DELEGATE_SIGNER_31338: "env:CHAIN_B_KEY", CHAIN_B_KEY: OTHER, DELEGATE_ADDRESS_31338: otherAddress });
    expect(delegateOn(own.signers, 31338)!.address).toBe(otherAddress);
    const wrongOwn = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_31338: "env:CHAIN_B_KEY", CHAIN_B_KEY: OTHER, DELEGATE_ADDRESS_31338: keyAddress })
      .catch((error: unknown) => error);
    expect((wrongOwn as Error).message).toBe(`DELEGATE_SIGNER_31338: the key answers for ${otherAddress}, not DELEGATE_ADDRESS_31338 ${keyAddress}`);
    // A chain pinned without a delegate of its own is held to the role's signer there.
    const pinnedOnly = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_ADDRESS_31338: otherAddress });
    expect(() => checkChainDelegates(pinnedOnly.config.signers, pinnedOnly.signers, { chainIds: [31337, 31338], embeddedDevnet: false }))
      .toThrow(`DELEGATE_ADDRESS_31338: the delegate signing on chain 31338 (DELEGATE_SIGNER) answers for ${keyAddress}, not ${otherAddress}`);
  });

  test("a DELEGATE_SIGNER_<chainId> or DELEGATE_ADDRESS_<chainId> for a chain the deployment does not serve stops the start naming it", async () => {
    // Before, a typo (31383 for 31338) started, and the role's wallet paid on the chain meant.
    const typo = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_31383: "env:CHAIN_B_KEY", CHAIN_B_KEY: OTHER });
    expect(() => checkChainDelegates(typo.config.signers, typo.signers, { chainIds: [31337, 31338], embeddedDevnet: false }))
      .toThrow("DELEGATE_SIGNER_31383: chain 31383 is not an attestation chain this deployment serves (it serves eip155:31337, eip155:31338)");
    const pin = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_ADDRESS_8453: privateKeyToAccount(KEY as Hex).address });
    expect(() => checkChainDelegates(pin.config.signers, pin.signers, { chainIds: [31337], embeddedDevnet: false })).toThrow(/^DELEGATE_ADDRESS_8453: chain 8453 is not/);
    const served = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_31338: "env:CHAIN_B_KEY", CHAIN_B_KEY: OTHER });
    expect(() => checkChainDelegates(served.config.signers, served.signers, { chainIds: [31337, 31338], embeddedDevnet: false })).not.toThrow();
    expect(() => readConfig({ DELEGATE_ADDRESS_31338: "0x12" })).toThrow(/DELEGATE_ADDRESS_31338.*an address/);
  });

  test("a DELEGATE_SIGNER_<chainId> that cannot be opened stops the start with one line naming that variable", async () => {
    const failed = await opened({ DELEGATE_PRIVATE_KEY: KEY, DELEGATE_SIGNER_31338: "env:MISSING_CHAIN_B_KEY" }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SignerStartError);
    expect((failed as Error).message).toMatch(/^DELEGATE_SIGNER_31338: /);
  });
});

describe("X402_ADDRESS pins a JWS x402 issuer's key too (decisions §27)", () => {
  // A secp256k1 key as a private JWK: ES256K. X402_ADDRESS was ignored with X402_SIGNING_FORMAT=jws.
  const d = `${"55".repeat(32)}`;
  const point = secp256k1.getPublicKey(d, false);
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
  const jwk = JSON.stringify({ kty: "EC", crv: "secp256k1", x: b64(point.slice(1, 33)), y: b64(point.slice(33)), d: b64(Buffer.from(d, "hex")) });
  const address = privateKeyToAccount(`0x${d}`).address;

  test("the key's own address starts; another stops the start naming both", async () => {
    const { signers } = await opened({ X402_SIGNING_FORMAT: "jws", X402_SIGNER: "env:X402_KEY", X402_KEY: jwk, X402_ADDRESS: address });
    expect(signers.x402 && "alg" in signers.x402 ? signers.x402.alg : undefined).toBe("ES256K");
    await expect(opened({ X402_SIGNING_FORMAT: "jws", X402_SIGNER: "env:X402_KEY", X402_KEY: jwk, X402_ADDRESS: "0x000000000000000000000000000000000000dEaD" }))
      .rejects.toThrow(`X402_SIGNER: the key answers for ${address}, not X402_ADDRESS 0x000000000000000000000000000000000000dEaD`);
  });

  test("a P-256 key has no address, so a pin cannot hold: the start stops", async () => {
    await expect(opened({ X402_SIGNING_FORMAT: "jws", X402_SIGNER: "env:X402_KEY", X402_KEY: "11".repeat(32), X402_ADDRESS: address }))
      .rejects.toThrow(/^X402_SIGNER: the key is P-256 \(ES256\), which has no Ethereum address, not X402_ADDRESS/);
  });
});
