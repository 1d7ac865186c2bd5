import { describe, expect, test } from "bun:test";
import { jwkToDidJwk } from "../did/mod.ts";
import type { BindingEvidence, WitnessEvidence } from "../keys/mod.ts";
import { type ControllerAuthorizationInput, evaluateControllerAuthorization } from "./authorization_rules.ts";

const CHAIN = 31337;
const SUBJECT = "did:web:shop.test";
const OWNER = "0x00000000000000000000000000000000000000b1";
const ISSUER = "0x00000000000000000000000000000000000000d1";
const pkh = (a: string) => `did:pkh:eip155:${CHAIN}:${a}`;
const CONTROLLER = pkh(OWNER);
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK = (jwkToDidJwk(JWK) as { value: string }).value;

let n = 0;
const uid = () => `0x${(++n).toString(16).padStart(64, "0")}`;
const witness = (controller: string, time: bigint, extra: Partial<WitnessEvidence> = {}): WitnessEvidence => ({
  uid: uid(),
  attester: ISSUER,
  controller,
  observedAt: time,
  time,
  revocationTime: 0n,
  expirationTime: 0n,
  subject: SUBJECT,
  method: "dns-txt",
  ...extra,
});
const binding = (keyId: string, time: bigint, extra: Partial<BindingEvidence> = {}): BindingEvidence => ({
  uid: uid(),
  attester: OWNER,
  keyId,
  keyPurpose: ["authentication", "assertionMethod"],
  effectiveAt: 0n,
  expiresAt: 0n,
  time,
  revocationTime: 0n,
  expirationTime: 0n,
  ...extra,
});
const KEY = pkh("0x00000000000000000000000000000000000000a1");
const input = (over: Partial<ControllerAuthorizationInput>): ControllerAuthorizationInput => ({
  subjectDid: SUBJECT,
  controllerDid: CONTROLLER,
  at: 1_000n,
  chainId: CHAIN,
  purposes: ["authentication", "assertionMethod"],
  witnesses: [],
  bindings: [],
  endpointKeys: [],
  liveMethods: [],
  ...over,
});

describe("evaluateControllerAuthorization()", () => {
  test("a controller cut off by a revoked binding stays cut off when it binds itself again (domain/bindings)", () => {
    // Another witnessed controller bound OWNER and revoked it at 400; OWNER's key then wrote a binding naming itself.
    const other = "0x00000000000000000000000000000000000000b2";
    const witnesses = [witness(CONTROLLER, 100n), witness(pkh(other), 100n)];
    const cut = binding(CONTROLLER, 200n, { attester: other, revocationTime: 400n });
    const self = binding(CONTROLLER, 500n);
    const v = evaluateControllerAuthorization(input({ witnesses, bindings: [cut, self] }));
    expect(v).toMatchObject({ authorized: false, until: 400n, keyBindingUid: cut.uid });
    expect(v.keyBindingUids).toEqual([cut.uid]);
    // The other controller binding it again after the cut gives it back.
    const again = binding(CONTROLLER, 600n, { attester: other });
    expect(evaluateControllerAuthorization(input({ witnesses, bindings: [cut, self, again] }))).toMatchObject({ authorized: true, until: null, keyBindingUid: again.uid });
  });

  test("a binding the controller wrote of itself before another's revocation does not outlast it (domain/bindings)", () => {
    // Another witnessed controller bound OWNER (200); OWNER's stolen key bound itself at once (300), while it still
    // could; the other revoked its binding at 400. Before, the newest binding was OWNER's own: no `until`, authorized.
    const other = "0x00000000000000000000000000000000000000b2";
    const witnesses = [witness(CONTROLLER, 100n), witness(pkh(other), 100n)];
    const cut = binding(CONTROLLER, 200n, { attester: other, revocationTime: 400n });
    const self = binding(CONTROLLER, 300n);
    const v = evaluateControllerAuthorization(input({ witnesses, bindings: [cut, self] }));
    // Its own binding stays the newest, ended by the other's revocation.
    expect(v).toMatchObject({ authorized: false, until: 400n, keyBindingUid: self.uid });
    expect(v.keyBindingUids).toEqual([self.uid, cut.uid]);
    // Asked for a time before the cut, its own binding was the newest, and open.
    expect(evaluateControllerAuthorization(input({ witnesses, bindings: [cut, self], at: 350n }))).toMatchObject({ authorized: true, until: null, keyBindingUid: self.uid });
  });

  test("a controller's binding of itself that narrows its purposes still narrows them after another's binding of it ends", () => {
    // The other bound OWNER for every purpose until 400; OWNER narrowed itself to keyAgreement at 300 ("stop taking my
    // assertions"). Leaving its own binding out after 400 handed the status back to the wider one: matched.
    const other = "0x00000000000000000000000000000000000000b2";
    const witnesses = [witness(CONTROLLER, 100n), witness(pkh(other), 100n)];
    const wide = binding(CONTROLLER, 200n, { attester: other, keyPurpose: ["authentication", "assertionMethod"], expiresAt: 400n });
    const narrow = binding(CONTROLLER, 300n, { keyPurpose: ["keyAgreement"] });
    for (const at of [350n, 1_000n]) {
      expect(evaluateControllerAuthorization(input({ witnesses, bindings: [wide, narrow], at }))).toMatchObject({ authorized: false, keyPurposeStatus: "mismatch", keyBindingUid: narrow.uid });
    }
  });

  test("a witness opens the window at its EAS time; witnesses oldest first; no binding is unknown", () => {
    const late = witness(CONTROLLER, 500n);
    const early = witness(CONTROLLER, 100n, { method: "did-json" });
    const other = witness(KEY, 50n);
    const v = evaluateControllerAuthorization(input({ witnesses: [late, early, other] }));
    expect(v).toMatchObject({ authorized: true, keyPurposeStatus: "unknown", anchoredFrom: 100n, until: null, currentlyVerified: false, liveMethod: null });
    expect(v.controllerWitnesses).toEqual([
      { uid: early.uid, issuedAt: 100n, attester: ISSUER, method: "did-json" },
      { uid: late.uid, issuedAt: 500n, attester: ISSUER, method: "dns-txt" },
    ]);
    expect(v.keyBindingUid).toBeNull();
    expect(v.keyBindingUids).toEqual([]);
  });

  test("until is set only by a revocation made by `at`; the window is anchoredFrom ≤ at < until", () => {
    // The controller binds a key it names itself: the binding is the controller's (keyId = the controller).
    const w = witness(CONTROLLER, 100n);
    const b = binding(CONTROLLER, 200n, { revocationTime: 700n });
    const before = evaluateControllerAuthorization(input({ witnesses: [w], bindings: [b], at: 699n }));
    expect(before).toMatchObject({ authorized: true, until: null, keyPurposeStatus: "matched", keyBindingUid: b.uid });
    const at = evaluateControllerAuthorization(input({ witnesses: [w], bindings: [b], at: 700n }));
    expect(at).toMatchObject({ authorized: false, until: 700n, anchoredFrom: 100n });
    // Expiry is not a revocation: it sets no until.
    const expired = binding(CONTROLLER, 200n, { expiresAt: 300n, expirationTime: 300n });
    expect(evaluateControllerAuthorization(input({ witnesses: [w], bindings: [expired] }))).toMatchObject({ authorized: true, until: null });
  });

  test("keyPurposeStatus comes from the newest binding by `at`, revoked or not", () => {
    const w = witness(CONTROLLER, 100n);
    const old = binding(CONTROLLER, 200n, { keyPurpose: ["authentication", "assertionMethod"] });
    const newer = binding(CONTROLLER, 600n, { keyPurpose: ["keyAgreement"], revocationTime: 650n });
    const now = evaluateControllerAuthorization(input({ witnesses: [w], bindings: [old, newer] }));
    expect(now).toMatchObject({ keyPurposeStatus: "mismatch", authorized: false, keyBindingUid: newer.uid, until: 650n });
    expect(now.keyBindingUids).toEqual([newer.uid, old.uid]);
    const then = evaluateControllerAuthorization(input({ witnesses: [w], bindings: [old, newer], at: 599n }));
    expect(then).toMatchObject({ keyPurposeStatus: "matched", authorized: true, keyBindingUid: old.uid, until: null });
    expect(then.keyBindingUids).toEqual([old.uid]);
    // The purposes asked for decide: keyAgreement alone is matched by the newer one.
    expect(evaluateControllerAuthorization(input({ witnesses: [w], bindings: [old, newer], purposes: ["keyAgreement"], at: 640n })))
      .toMatchObject({ keyPurposeStatus: "matched", authorized: true });
    // A binding listing no purpose says nothing about them, as the reference reads it.
    expect(evaluateControllerAuthorization(input({ witnesses: [w], bindings: [binding(CONTROLLER, 300n, { keyPurpose: [] })] })))
      .toMatchObject({ keyPurposeStatus: "unknown", authorized: true });
  });

  test("evidence written after `at` does not count", () => {
    const w = witness(CONTROLLER, 800n);
    const b = binding(CONTROLLER, 900n, { keyPurpose: ["keyAgreement"] });
    const v = evaluateControllerAuthorization(input({ witnesses: [w], bindings: [b], at: 700n }));
    expect(v).toMatchObject({ authorized: false, anchoredFrom: null, keyPurposeStatus: "unknown", keyBindingUid: null, controllerWitnesses: [] });
  });

  test("live evidence authorizes without a witness, but not past a revocation; a mismatch refuses whatever else", () => {
    expect(evaluateControllerAuthorization(input({ liveMethods: ["dns", "jwks"] })))
      .toMatchObject({ authorized: true, currentlyVerified: true, liveMethod: "dns", anchoredFrom: null });
    const revoked = binding(CONTROLLER, 200n, { revocationTime: 300n });
    expect(evaluateControllerAuthorization(input({ liveMethods: ["did-document"], bindings: [revoked], endpointKeys: [CONTROLLER] })))
      .toMatchObject({ authorized: false, currentlyVerified: true, until: 300n });
    const mismatch = binding(CONTROLLER, 200n, { keyPurpose: ["keyAgreement"] });
    expect(evaluateControllerAuthorization(input({ liveMethods: ["dns"], witnesses: [witness(CONTROLLER, 100n)], bindings: [mismatch] })))
      .toMatchObject({ authorized: false, keyPurposeStatus: "mismatch" });
  });

  test("bindings count only under §17's rule: a stranger's binding is ignored", () => {
    const stranger = binding(CONTROLLER, 200n, { attester: "0x00000000000000000000000000000000000000c1", keyPurpose: ["keyAgreement"] });
    expect(evaluateControllerAuthorization(input({ witnesses: [witness(CONTROLLER, 100n)], bindings: [stranger] })))
      .toMatchObject({ authorized: true, keyPurposeStatus: "unknown", keyBindingUid: null });
  });

  test("a did:jwk controller: bindings by publicKeyJwk (member order, kid and alg ignored), and a pinning witness", () => {
    const owner = witness(CONTROLLER, 50n);
    const pin = witness(DID_JWK, 100n, { subject: `${SUBJECT}#key-1` });
    const b = binding("did:web:shop.test#key-1", 200n, { publicKeyJwk: JSON.stringify({ y: JWK.y, x: JWK.x, kid: "key-1", alg: "ES256", crv: "P-256", kty: "EC" }) });
    const v = evaluateControllerAuthorization(input({ controllerDid: DID_JWK, witnesses: [owner, pin], bindings: [b] }));
    expect(v).toMatchObject({ authorized: true, keyPurposeStatus: "matched", keyBindingUid: b.uid, anchoredFrom: 100n });
    expect(v.controllerWitnesses).toEqual([{ uid: pin.uid, issuedAt: 100n, attester: ISSUER, method: "dns-txt", pinned: `${SUBJECT}#key-1` }]);
    // A JWK with a private member names nobody.
    const leaked = binding("did:web:shop.test#key-2", 300n, { publicKeyJwk: JSON.stringify({ ...JWK, d: "c2VjcmV0" }), keyPurpose: ["keyAgreement"] });
    expect(evaluateControllerAuthorization(input({ controllerDid: DID_JWK, witnesses: [owner, pin], bindings: [b, leaked] })).keyBindingUid).toBe(b.uid);
  });

  test("a did:pkh contract subject: a binding whose transfer proof verified anchors the window, and counts", () => {
    const contract = pkh("0x00000000000000000000000000000000000000ee");
    const b = binding(CONTROLLER, 400n);
    const failed = binding(CONTROLLER, 300n);
    const v = evaluateControllerAuthorization(input({
      subjectDid: contract,
      bindings: [b, failed],
      transferProofs: new Map([[b.uid, true], [failed.uid, false]]),
    }));
    expect(v).toMatchObject({ authorized: true, anchoredFrom: 400n, transferProofVerified: true, keyBindingUid: b.uid });
    const none = evaluateControllerAuthorization(input({ subjectDid: contract, bindings: [failed], transferProofs: new Map([[failed.uid, false]]) }));
    expect(none).toMatchObject({ authorized: false, anchoredFrom: null, transferProofVerified: false, keyBindingUid: null });
    const revoked = binding(CONTROLLER, 400n, { revocationTime: 500n });
    expect(evaluateControllerAuthorization(input({ subjectDid: contract, bindings: [revoked], transferProofs: new Map([[revoked.uid, true]]) })))
      .toMatchObject({ authorized: false, until: 500n, transferProofVerified: true });
  });
});
