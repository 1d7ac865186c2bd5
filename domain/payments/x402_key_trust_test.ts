import { describe, expect, test } from "bun:test";
import { type BindingEvidence, evaluateKeyTrust as keyStatusRules, type WitnessEvidence as KeyWitness } from "../keys/mod.ts";
import { evaluateKeyTrust, type KeyBindingEvidence, type WitnessEvidence } from "./x402_key_trust.ts";
import type { VerifiedSigner } from "./x402_verify.ts";

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
});
