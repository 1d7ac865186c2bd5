import { describe, expect, test } from "bun:test";
import { type BindingEvidence, evaluateKeyTrust, type KeyTrustInput, nextStep, type WitnessEvidence } from "./key_rules.ts";

const CHAIN = 31337;
const SUBJECT = "did:web:shop.test";
const KEY = "did:pkh:eip155:31337:0x00000000000000000000000000000000000000aa";
const OWNER = "0x00000000000000000000000000000000000000bb";
const STRANGER = "0x00000000000000000000000000000000000000cc";
const ISSUER = "0x00000000000000000000000000000000000000dd";
const pkh = (address: string) => `did:pkh:eip155:${CHAIN}:${address}`;

const witness = (controller: string, time: bigint, extra: Partial<WitnessEvidence> = {}): WitnessEvidence => ({
  uid: `0xw${time}${controller.slice(-2)}`,
  attester: ISSUER,
  controller,
  observedAt: time,
  time,
  revocationTime: 0n,
  expirationTime: 0n,
  ...extra,
});
const binding = (time: bigint, extra: Partial<BindingEvidence> = {}): BindingEvidence => ({
  uid: `0xb${time}`,
  attester: OWNER,
  keyId: KEY,
  keyPurpose: ["assertionMethod"],
  effectiveAt: 0n,
  expiresAt: 0n,
  time,
  revocationTime: 0n,
  expirationTime: 0n,
  ...extra,
});
const judge = (input: Partial<KeyTrustInput>) =>
  evaluateKeyTrust({ subjectDid: SUBJECT, keyDid: KEY, at: 1_000n, chainId: CHAIN, witnesses: [], bindings: [], endpointKeys: [], ...input });

describe("evaluateKeyTrust()", () => {
  test("a witnessed key whose binding was revoked cannot bind itself again: revoked, not active (domain/bindings)", () => {
    // The key is a witnessed controller; its owner bound it and revoked the binding at 500; the key (stolen) then
    // wrote a binding naming itself. Before the rule it was "active, advanced" again.
    const witnesses = [witness(KEY, 100n), witness(pkh(OWNER), 100n)];
    const revoked = binding(300n, { revocationTime: 500n });
    const self = binding(600n, { attester: KEY.split(":")[4]! });
    const t = judge({ witnesses, bindings: [revoked, self] });
    expect([t.status, t.trustLevel, t.keyBinding?.uid]).toEqual(["revoked", "intermediate", "0xb300"]);
    // The owner binding it again gives it back.
    const again = judge({ witnesses, bindings: [revoked, self, binding(700n)] });
    expect([again.status, again.keyBinding?.uid]).toEqual(["active", "0xb700"]);
  });

  test("a binding the key wrote of itself before the cut does not outlast it: revoked, not active (domain/bindings)", () => {
    // The stolen key's first move is a binding of itself, written while it still had authority (at 400); the owner
    // revokes its own binding at 500. Before, the key's binding stood as an active one and the key stayed "active".
    const witnesses = [witness(KEY, 100n), witness(pkh(OWNER), 100n)];
    const revoked = binding(300n, { revocationTime: 500n });
    const self = binding(400n, { attester: KEY.split(":")[4]! });
    const t = judge({ witnesses, bindings: [revoked, self] });
    // Its own binding, ended by the owner's revocation: the newest, and revoked.
    expect([t.status, t.trustLevel, t.keyBinding?.uid]).toEqual(["revoked", "intermediate", "0xb400"]);
    // Before the cut the key's own binding counts as any other; one it writes after the owner bound it again stands.
    expect(judge({ witnesses, bindings: [revoked, self], at: 450n }).status).toBe("active");
    const again = binding(700n);
    const later = binding(800n, { attester: KEY.split(":")[4]!, keyPurpose: ["authentication"] });
    expect(judge({ witnesses, bindings: [revoked, self, again, later] }).keyBinding?.uid).toBe("0xb800");
    // A key bound by nobody else narrows and ends its own authority: its revoked binding is its status.
    const alone = judge({ witnesses, bindings: [binding(300n, { attester: KEY.split(":")[4]!, revocationTime: 500n })] });
    expect(alone.status).toBe("revoked");
  });

  test("nothing at all: registered, no trust; the next step is the TXT record", () => {
    const t = judge({});
    expect([t.status, t.trustLevel, t.endpointFound, t.controllerWitness, t.keyBinding]).toEqual(["registered", "none", false, null, null]);
    expect(nextStep(t)).toBe("publish-txt");
  });

  test("the endpoints name the key now: basic (any form of the same key counts); next, a witness", () => {
    const t = judge({ endpointKeys: ["did:pkh:eip155:1:0x00000000000000000000000000000000000000AA"] });
    expect([t.status, t.trustLevel, t.endpointFound]).toEqual(["registered", "basic", true]);
    expect(nextStep(t)).toBe("request-witness");
  });

  test("a witness of the key: intermediate, the earliest one shown; next, the key binding", () => {
    const t = judge({ witnesses: [witness(KEY, 500n), witness(KEY, 300n), witness(pkh(OWNER), 100n)] });
    expect([t.status, t.trustLevel, t.controllerWitness?.time]).toEqual(["registered", "intermediate", 300n]);
    expect(nextStep(t)).toBe("write-key-binding");
  });

  test("a witness and an active binding by a witnessed controller: active, advanced; nothing more to do", () => {
    const t = judge({ witnesses: [witness(KEY, 200n), witness(pkh(OWNER), 100n)], bindings: [binding(400n)] });
    expect([t.status, t.trustLevel, t.keyBinding?.uid]).toEqual(["active", "advanced", "0xb400"]);
    expect(nextStep(t)).toBeNull();
  });

  test("a binding without a witness of the key: active, but the trust stays at what the other evidence gives", () => {
    const viaEndpoint = judge({ endpointKeys: [KEY, pkh(OWNER)], bindings: [binding(400n)] });
    expect([viaEndpoint.status, viaEndpoint.trustLevel]).toEqual(["active", "basic"]);
    // A did:pkh subject controls itself: its own binding counts.
    const self = judge({ subjectDid: pkh(OWNER), bindings: [binding(400n)] });
    expect([self.status, self.trustLevel]).toEqual(["active", "none"]);
  });

  test("a binding naming a did:jwk key by its publicKeyJwk (keyId a DID URL) is that key's, as controller authorization reads it", () => {
    // Key status matched by keyId only: a revoked binding naming the key by its JWK left it "registered".
    const jwk = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
    const didJwk = `did:jwk:${Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(jwk).sort()))).toString("base64url")}`;
    const byJwk = binding(400n, { keyId: `${SUBJECT}#key-1`, publicKeyJwk: JSON.stringify(jwk), revocationTime: 600n });
    const t = judge({ keyDid: didJwk, endpointKeys: [pkh(OWNER)], bindings: [byJwk] });
    expect([t.status, t.keyBinding?.uid]).toEqual(["revoked", "0xb400"]);
    // Another key's JWK does not name it.
    const other = judge({ keyDid: didJwk, endpointKeys: [pkh(OWNER)], bindings: [{ ...byJwk, publicKeyJwk: JSON.stringify({ ...jwk, x: jwk.y }) }] });
    expect([other.status, other.keyBinding]).toEqual(["registered", null]);
  });

  test("a stranger's binding never counts, nor one by a controller witnessed only after it", () => {
    expect(judge({ witnesses: [witness(KEY, 200n)], bindings: [binding(400n, { attester: STRANGER })] })).toMatchObject({
      status: "registered",
      trustLevel: "intermediate",
      keyBinding: null,
    });
    expect(judge({ witnesses: [witness(pkh(OWNER), 500n)], bindings: [binding(400n)] }).status).toBe("registered");
    // A binding of another key is not this key's.
    expect(judge({ endpointKeys: [pkh(OWNER)], bindings: [binding(400n, { keyId: pkh(STRANGER) })] }).status).toBe("registered");
  });

  test("revoked, expired (payload or EAS expiry) and not yet effective, each as it stood at `at`", () => {
    const base = { witnesses: [witness(KEY, 100n), witness(pkh(OWNER), 100n)] };
    expect(judge({ ...base, bindings: [binding(400n, { revocationTime: 900n })] })).toMatchObject({ status: "revoked", trustLevel: "intermediate" });
    // Revoked after `at`: still active at `at`.
    expect(judge({ ...base, at: 800n, bindings: [binding(400n, { revocationTime: 900n })] })).toMatchObject({ status: "active", trustLevel: "advanced" });
    expect(judge({ ...base, bindings: [binding(400n, { expiresAt: 1_000n })] }).status).toBe("expired");
    expect(judge({ ...base, bindings: [binding(400n, { expirationTime: 999n, expiresAt: 5_000n })] }).status).toBe("expired");
    expect(judge({ ...base, bindings: [binding(400n, { expiresAt: 1_001n })] }).status).toBe("active");
    expect(judge({ ...base, bindings: [binding(400n, { effectiveAt: 1_500n })] })).toMatchObject({ status: "registered", trustLevel: "intermediate" });
  });

  test("`at` before the binding (or the witness) was written: as things stood then", () => {
    const input = { witnesses: [witness(KEY, 100n), witness(pkh(OWNER), 100n)], bindings: [binding(400n)] };
    expect(judge({ ...input, at: 399n })).toMatchObject({ status: "registered", trustLevel: "intermediate", keyBinding: null });
    expect(judge({ ...input, at: 99n })).toMatchObject({ status: "registered", trustLevel: "none", controllerWitness: null });
    expect(judge({ ...input, at: 400n }).status).toBe("active");
  });

  test("with several bindings an active one wins, else the newest", () => {
    const base = { witnesses: [witness(KEY, 100n), witness(pkh(OWNER), 100n)] };
    const rotated = judge({ ...base, bindings: [binding(300n), binding(600n, { revocationTime: 700n })] });
    expect([rotated.status, rotated.keyBinding?.uid]).toEqual(["active", "0xb300"]);
    const ended = judge({ ...base, bindings: [binding(300n, { revocationTime: 350n }), binding(600n, { expiresAt: 650n })] });
    expect([ended.status, ended.keyBinding?.uid]).toEqual(["expired", "0xb600"]);
  });

  test("endpointsCouldChange: a binding that does not count, naming the key or an attester up the chain it rests on, by then", () => {
    // OWNER (witnessed) bound the key; STRANGER (named by no one that answered) bound OWNER and revoked it: a cut if the
    // endpoints that did not answer name STRANGER. Only with an endpoint unanswered, and only a cut written no later
    // than the binding resting on OWNER.
    const base = { witnesses: [witness(pkh(OWNER), 100n)], bindings: [binding(500n)] };
    const cut = (time: bigint) => binding(time, { uid: `0xc${time}`, attester: STRANGER, keyId: pkh(OWNER), revocationTime: time + 1n });
    expect(judge({ ...base, endpointUnavailable: true }).endpointsCouldChange).toBe(false);
    expect(judge({ ...base, bindings: [...base.bindings, cut(300n)] }).endpointsCouldChange).toBe(false);
    expect(judge({ ...base, bindings: [...base.bindings, cut(300n)], endpointUnavailable: true }).endpointsCouldChange).toBe(true);
    expect(judge({ ...base, bindings: [...base.bindings, cut(600n)], endpointUnavailable: true }).endpointsCouldChange).toBe(false);
    // OWNER named by an endpoint that answered is never cut off: the chain stops there.
    expect(judge({ ...base, bindings: [...base.bindings, cut(300n)], endpointUnavailable: true, endpointKeys: [pkh(OWNER)] }).endpointsCouldChange).toBe(false);
  });

  test("a witness revoked or expired by `at` no longer counts", () => {
    expect(judge({ witnesses: [witness(KEY, 100n, { expirationTime: 900n })] }).trustLevel).toBe("none");
    expect(judge({ witnesses: [witness(KEY, 100n, { revocationTime: 900n })] }).trustLevel).toBe("none");
    expect(judge({ at: 899n, witnesses: [witness(KEY, 100n, { expirationTime: 900n })] }).trustLevel).toBe("intermediate");
  });
});
