import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { generateSigningJwk } from "../x402/signers.ts";
import { readConfig } from "./config.ts";
import { DEVNET_JWS_KEY_FILE, PROBE_KEPT_MS, x402Issuer, x402SignerReady } from "./payments.ts";

describe("x402Issuer() (decisions §18)", () => {
  test("eip712 by default, with X402_SIGNING_KEY or else the witness key", async () => {
    const witness = generatePrivateKey();
    const issuer = await x402Issuer(readConfig({}), { chainId: 31337, witnessKey: witness, devnet: true });
    expect(issuer).toMatchObject({ format: "eip712", kid: `did:pkh:eip155:31337:${privateKeyToAccount(witness).address}#key-1` });
    expect(await x402Issuer(readConfig({}), { chainId: 31337, witnessKey: undefined, devnet: true })).toBeUndefined();
  });

  test("jws on the devnet: an ES256 key generated once into DATA_DIR (owner-only), the same key after a restart; kid the did:web of PUBLIC_BASE_URL", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ats-x402-jws-"));
    try {
      const config = readConfig({ X402_SIGNING_FORMAT: "jws", DATA_DIR: dir, PUBLIC_BASE_URL: "https://ats.example:8443" });
      const first = await x402Issuer(config, { chainId: 31337, witnessKey: undefined, devnet: true });
      const second = await x402Issuer(config, { chainId: 31337, witnessKey: undefined, devnet: true });
      expect(first).toMatchObject({ format: "jws", kid: "did:web:ats.example%3A8443#key-1", publicJwk: { kty: "EC", crv: "P-256", alg: "ES256" } });
      expect(second!.publicJwk).toEqual(first!.publicJwk!);
      const file = join(dir, DEVNET_JWS_KEY_FILE);
      expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ kty: "EC", crv: "P-256", x: first!.publicJwk!.x });
      expect(statSync(file).mode & 0o777).toBe(0o600);
      // The header carries the published key beside the kid.
      const offer = await first!.signOffer({ version: 1, resourceUrl: "https://ats.example:8443/x", scheme: "exact", network: "eip155:31337", asset: "0x0", payTo: "0x1", amount: "1", validUntil: 1 });
      const header = JSON.parse(atob((offer as { signature: string }).signature.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")));
      expect(header).toEqual({ alg: "ES256", kid: "did:web:ats.example%3A8443#key-1", jwk: first!.publicJwk });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("jws with X402_JWS_KEY uses that key; a bad format or key, or jws against a real chain without a key, is refused naming the variable", async () => {
    const jwk = await generateSigningJwk("ES256");
    const issuer = await x402Issuer(readConfig({ X402_SIGNING_FORMAT: "jws", X402_JWS_KEY: JSON.stringify(jwk) }), { chainId: 1, witnessKey: undefined, devnet: false });
    expect(issuer!.publicJwk).toMatchObject({ x: jwk.x, y: jwk.y });
    expect(() => readConfig({ X402_SIGNING_FORMAT: "jwt" })).toThrow(/X402_SIGNING_FORMAT/);
    expect(() => readConfig({ X402_JWS_KEY: "{}" })).toThrow(/X402_JWS_KEY/);
    expect(() => readConfig({ X402_JWS_KEY: JSON.stringify({ ...jwk, crv: "P-384" }) })).toThrow(/X402_JWS_KEY/);
    expect(() => readConfig({ X402_SIGNING_FORMAT: "jws", RPC_URL: "http://127.0.0.1:8545", TRUST_ANCHORS_PATH: "x.json" })).toThrow(/X402_JWS_KEY/);
  });

  test("jws against a real chain with X402_SIGNER (an HSM key) needs no raw X402_JWS_KEY (decisions §27)", () => {
    const uri = "pkcs11:token=ats;object=x402?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-env=HSM_PIN";
    const config = readConfig({ X402_SIGNING_FORMAT: "jws", RPC_URL: "http://127.0.0.1:8545", TRUST_ANCHORS_PATH: "x.json", X402_SIGNER: uri });
    expect([config.x402.signingFormat, config.x402.jwsKey, config.signers.x402]).toEqual(["jws", undefined, uri]);
  });
});

describe("x402SignerReady(): a remote receipt signer's probe (decisions §27)", () => {
  /** A remote signer whose test signatures are counted and answer as `answers` says. */
  function remote() {
    const state = { signed: 0, ok: true, state: "up" as "up" | "down" | "unknown", release: undefined as (() => void) | undefined };
    const signer = {
      backend: "jsonrpc",
      state: () => state.state,
      async signTypedData() {
        state.signed++;
        if (state.release === undefined) await new Promise<void>((resolve) => (state.release = resolve));
        return state.ok ? { ok: true, value: "0x" } : { ok: false, reason: "unavailable" };
      },
    };
    return { state, signer: signer as never };
  }

  test("one probe at a time; a signer that answered is ready for PROBE_KEPT_MS, unless a signature of it failed since; a failed probe is not kept", async () => {
    let now = 0;
    const { state, signer } = remote();
    const ready = x402SignerReady(signer, () => now);
    // Ten paid requests at once: one test signature.
    const asked = Array.from({ length: 10 }, () => ready());
    state.release!();
    expect(await Promise.all(asked)).toEqual(new Array(10).fill(true));
    expect(state.signed).toBe(1);
    now += PROBE_KEPT_MS - 1;
    expect([await ready(), state.signed]).toEqual([true, 1]);
    // A signature of the key failed meanwhile (its state down): asked again at once.
    state.state = "down";
    state.ok = false;
    expect([await ready(), state.signed]).toEqual([false, 2]);
    expect([await ready(), state.signed]).toEqual([false, 3]);
    state.state = "up";
    state.ok = true;
    expect([await ready(), state.signed]).toEqual([true, 4]);
    now += PROBE_KEPT_MS;
    expect([await ready(), state.signed]).toEqual([true, 5]);
  });

  test("a key held in the process (env:, keystore:) is never probed", async () => {
    const signer = { backend: "env", state: () => "up", signTypedData: () => Promise.reject(new Error("not asked")) } as never;
    expect(await x402SignerReady(signer)()).toBe(true);
  });
});
