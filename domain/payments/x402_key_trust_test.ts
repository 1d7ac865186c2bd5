import { describe, expect, test } from "bun:test";
import { type BindingEvidence, evaluateKeyTrust as keyStatusRules, type WitnessEvidence as KeyWitness } from "../keys/mod.ts";
import { evaluateKeyTrust, type KeyBindingEvidence, type WitnessEvidence } from "./x402_key_trust.ts";
import type { VerifiedSigner } from "./x402_verify.ts";
import { jwkToDidKey } from "./did_key.ts";
import { jwkToDidJwk } from "../did/mod.ts";

// The x402 tiers and key status (decisions §17, §25: one computation) read the same hand-written evidence: who may bind
// a key and who is cut off is key status's rule (domain/bindings `countingBindings`).
const NOW = 1_800_000_000;
const CHAIN_ID = 31337;
const SUBJECT = "did:web:api.example.com";
const OWNER = "0x00000000000000000000000000000000000000a1";
const OTHER = "0x00000000000000000000000000000000000000a2";
const KEY = "0x00000000000000000000000000000000000000a3";
const pkh = (address: string) => `did:pkh:eip155:${CHAIN_ID}:${address}`;
const signer: VerifiedSigner = { format: "eip712", controllerDid: pkh(KEY), address: KEY as `0x${string}` };

const witness = (controller: string, time = NOW - 1000): WitnessEvidence => ({
  controller: pkh(controller),
  observedAt: BigInt(time),
  time: BigInt(time),
  approvedIssuer: true,
  revoked: false,
});
const binding = (uid: string, named: string, attester: string, time: number, revocationTime = 0): KeyBindingEvidence => ({
  uid,
  keyId: pkh(named),
  keyPurpose: ["assertionMethod"],
  attester,
  time: BigInt(time),
  effectiveAt: 0n,
  expiresAt: 0n,
  revocationTime: BigInt(revocationTime),
});

/** Key status's verdict on the same evidence. */
function keyStatus(evidence: { witnesses: WitnessEvidence[]; keyBindings: KeyBindingEvidence[]; endpointKeys: string[]; endpointUnavailable?: boolean }) {
  return keyStatusRules({
    subjectDid: SUBJECT,
    keyDid: signer.controllerDid,
    at: BigInt(NOW),
    chainId: CHAIN_ID,
    witnesses: evidence.witnesses.map((w, i): KeyWitness => ({ uid: `w${i}`, attester: "", controller: w.controller, observedAt: w.observedAt, time: w.time, revocationTime: 0n, expirationTime: 0n })),
    bindings: evidence.keyBindings.map((b): BindingEvidence => ({ ...b, expirationTime: 0n })),
    endpointKeys: evidence.endpointKeys,
    endpointUnavailable: evidence.endpointUnavailable,
  });
}

describe("evaluateKeyTrust() (x402 tiers) counts bindings by key status's rule", () => {
  test("an owner the endpoints name is never cut off: its revocation of the key's binding leaves no tier, as key status says revoked", () => {
    // The owner (witnessed, and named by DNS TXT) was bound by another controller, whose binding was revoked: a stale
    // binding "cut" the owner. The owner then bound the signing key and, the key leaked, revoked that binding. Before,
    // the x402 tiers read the owner as cut off, ignored its binding and its revocation, and rated the leaked key
    // "high" (its witness) where key status answered `revoked`.
    const evidence = {
      witnesses: [witness(OWNER), witness(OTHER), witness(KEY)],
      keyBindings: [binding("0xb1", OWNER, OTHER, NOW - 900, NOW - 800), binding("0xb2", KEY, OWNER, NOW - 700, NOW - 300)],
      endpointKeys: [pkh(OWNER)],
    };
    expect(keyStatus(evidence)).toMatchObject({ status: "revoked", keyBinding: { uid: "0xb2" } });
    expect(evaluateKeyTrust({ subjectDid: SUBJECT, signer, at: NOW, evidence: { ...evidence, chainId: CHAIN_ID } }))
      .toEqual({ tier: 0, level: "low", basis: "none" });
  });

  test("a binding by a controller only the endpoints name counts: its revocation leaves no tier, as key status says revoked", () => {
    // Before, only a witnessed controller's binding counted here: the owner named by DNS revoking the key went unseen.
    const evidence = {
      witnesses: [witness(KEY)],
      keyBindings: [binding("0xb2", KEY, OWNER, NOW - 700, NOW - 300)],
      endpointKeys: [pkh(OWNER)],
    };
    expect(keyStatus(evidence)).toMatchObject({ status: "revoked" });
    expect(evaluateKeyTrust({ subjectDid: SUBJECT, signer, at: NOW, evidence: { ...evidence, chainId: CHAIN_ID } }))
      .toEqual({ tier: 0, level: "low", basis: "none" });
    // Tier 3 still asks for a witnessed writer (interface "Trust tiers"): the owner's standing binding is the key's
    // witness's tier 2, not tier 3.
    const standing = { ...evidence, keyBindings: [binding("0xb2", KEY, OWNER, NOW - 700)] };
    expect(evaluateKeyTrust({ subjectDid: SUBJECT, signer, at: NOW, evidence: { ...standing, chainId: CHAIN_ID } })).toMatchObject({ tier: 2 });
  });

  test("with an endpoint source unanswered, a binding its word could make count is flagged, never a guess (key status: endpointsCouldChange)", () => {
    // DNS names the key (tier 1) but did.json did not answer; the owner it names revoked the key's binding.
    const evidence = {
      witnesses: [],
      keyBindings: [binding("0xb2", KEY, OWNER, NOW - 700, NOW - 300)],
      endpointKeys: [signer.controllerDid],
      endpointUnavailable: true,
    };
    expect(keyStatus(evidence).endpointsCouldChange).toBe(true);
    expect(evaluateKeyTrust({ subjectDid: SUBJECT, signer, at: NOW, evidence: { ...evidence, chainId: CHAIN_ID } }))
      .toMatchObject({ endpointsCouldChange: true });
    // Every source answered: nothing to flag.
    expect(evaluateKeyTrust({ subjectDid: SUBJECT, signer, at: NOW, evidence: { ...evidence, endpointUnavailable: false, chainId: CHAIN_ID } }))
      .toEqual({ tier: 1, level: "moderate", basis: "endpoint-evidence" });
  });
  test("a binding naming a JWS signer by its did:key is the signer's for the outage check too: a source unread is flagged, never tier 3", async () => {
    // Found in review: the tiers matched did:key and did:jwk as one key, the outage check did not, so the did:key spelling
    // of the same binding left tier 3 "highest" standing while the did:jwk spelling was flagged (key status: NETWORK_ERROR).
    const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
    const jwk = await crypto.subtle.exportKey("jwk", pair.publicKey) as Record<string, unknown>;
    const pub = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y };
    const didJwk = jwkToDidJwk(pub, { publicOnly: true });
    const didKey = jwkToDidKey(pub);
    if (!didJwk.ok || !didKey.ok) throw new Error("setup");
    const jws = { format: "jws" as const, controllerDid: didJwk.value };
    const named = (keyId: string, uid: string, attester: string, time: number, rev = 0): KeyBindingEvidence => ({
      ...binding(uid, KEY, attester, time, rev),
      keyId,
    });
    const evidence = (keyId: string, endpointKeys: string[], endpointUnavailable: boolean) => ({
      chainId: CHAIN_ID,
      endpointKeys,
      endpointUnavailable,
      witnesses: [witness(OTHER, NOW - 2000)],
      // The owner bound OTHER and revoked it (OTHER cut off from NOW-1200); OTHER then bound the signing key.
      keyBindings: [named(pkh(OTHER), "0xb0", OWNER, NOW - 1500, NOW - 1200), named(keyId, "0xb1", OTHER, NOW - 1000)],
    });
    const at = NOW;
    expect(evaluateKeyTrust({ subjectDid: SUBJECT, signer: jws, at, evidence: evidence(didKey.value, [didJwk.value, pkh(OWNER)], false) }).tier).toBe(1);
    for (const keyId of [didJwk.value, didKey.value]) {
      expect({ keyId, trust: evaluateKeyTrust({ subjectDid: SUBJECT, signer: jws, at, evidence: evidence(keyId, [didJwk.value], true) }) })
        .toMatchObject({ keyId, trust: { endpointsCouldChange: true } });
    }
  });
});
