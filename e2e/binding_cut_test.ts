/**
 * A controller cut off by a key binding's revocation stays cut off (domain/bindings), on the real chain through every
 * route that judges it: artifact trust, key status and controller authorization. A controller witness cannot be
 * revoked, so revoking a binding that names a controller is how a subject cuts off a stolen controller key. That key
 * then wrote a binding naming itself, and one naming a key of the thief's: its claims were "verified" again, including
 * the one it wrote while cut off, and key status answered `active`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Hex, keccak256, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { afterChainSecond } from "./support/chain_clock.ts";
import { easWriter } from "./support/eas_writer.ts";
import { startStack, type Stack } from "./harness.ts";

const PARTY = "did:web:cut-off.test";
const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("ats e2e binding cut")));
const THIEF_KEY = keccak256(stringToBytes("ats e2e binding cut thief"));

let stack: Stack;
let writer: ReturnType<typeof easWriter>;

const addressOf = (did: string) => (didToAddress(did) as { value: Hex }).value;
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;
const encode = (name: string, data: Record<string, unknown>) => (encodeSchemaData(findSchemaByName(name)!.schema, data) as { value: Hex }).value;
const schemaUid = (name: string) => stack.devnet.schemaUids[name]! as Hex;

async function write(key: Hex, name: string, data: Record<string, unknown>, recipient: Hex) {
  const written = await writer.attest(key, schemaUid(name), { recipient, data: encode(name, data), revocable: findSchemaByName(name)!.revocable });
  const time = (await writer.client.getBlock({ blockNumber: written.blockNumber })).timestamp;
  return { uid: written.uid, time };
}
/** A claim issued as the block it lands in is stamped (issuedAt must fall in the authorization window too). */
const claim = async (key: Hex, party = PARTY, artifact = ARTIFACT) =>
  await write(key, "responsibility-claim", {
    responsibleParty: party,
    subject: artifact,
    subjectLabel: "plugin",
    responsibilityType: ["creator"],
    proofs: [],
    issuedAt: (await writer.client.getBlock({ blockTag: "pending" })).timestamp,
    effectiveAt: 0n,
    expiresAt: 0n,
  }, addressOf(artifact));
const bind = (key: Hex, keyId: string, party = PARTY, expiresAt = 0n) =>
  write(key, "key-binding", { subject: party, keyId, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0n, effectiveAt: 0n, expiresAt }, addressOf(party));

/** The approved witness issuer witnesses each key as a controller of `party`; then the chain's clock moves past it. */
async function witnessed(party: string, keys: readonly Hex[]) {
  for (const key of keys) {
    await write(stack.devnet.keys.witness as Hex, "controller-witness", { subject: party, controller: pkh(key), method: "dns-txt", observedAt: 1n }, addressOf(party));
  }
  await afterChainSecond(writer.client, (await writer.client.getBlock({ blockTag: "latest" })).timestamp);
}

async function get(path: string) {
  const res = await fetch(`${stack.baseUrl}${path}`);
  return { status: res.status, body: await res.json() as Record<string, any> };
}

beforeAll(async () => {
  stack = await startStack({ env: { KEY_STATUS_RATE_PER_MINUTE: "100000" } });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress as Hex });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe("a controller cut off by a revoked key binding", () => {
  test("cannot bind itself or another key back in: its later claims stay out, key status says revoked, authorization stays closed", async () => {
    const controller = stack.devnet.keys.users[4] as Hex;
    const owner = stack.devnet.keys.users[5] as Hex;
    // The approved witness issuer witnessed both; the owner bound the controller; a claim while it was bound.
    await witnessed(PARTY, [owner, controller]);
    const bound = await bind(owner, pkh(controller));
    await afterChainSecond(writer.client, bound.time);
    const before = await claim(controller);
    await afterChainSecond(writer.client, before.time);
    // The owner cuts it off.
    const revoked = await writer.revoke(owner, schemaUid("key-binding"), bound.uid);
    const cutAt = (await writer.client.getBlock({ blockNumber: revoked.blockNumber })).timestamp;
    await afterChainSecond(writer.client, cutAt);
    const whileCut = await claim(controller);
    await afterChainSecond(writer.client, whileCut.time);
    // The stolen key binds itself and the thief's key, then both claim.
    const self = await bind(controller, pkh(controller));
    await bind(controller, pkh(THIEF_KEY));
    await afterChainSecond(writer.client, self.time);
    const reopened = await claim(controller);
    await stack.sync();

    const trust = await get(`/v1/artifact-trust?artifactDid=${encodeURIComponent(ARTIFACT)}`);
    expect(trust.status).toBe(200);
    expect(trust.body.responsibilityClaims.map((c: { attestation: { uid: string } }) => c.attestation.uid)).toEqual([before.uid]);
    expect([whileCut.uid, reopened.uid].some((uid) => JSON.stringify(trust.body).includes(uid))).toBe(false);

    const status = await get(`/v1/key-status?subjectDid=${encodeURIComponent(PARTY)}&keyDid=${encodeURIComponent(pkh(controller))}`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ status: "revoked", trustLevel: "intermediate", keyBinding: { uid: bound.uid } });
    const thief = await get(`/v1/key-status?subjectDid=${encodeURIComponent(PARTY)}&keyDid=${encodeURIComponent(pkh(THIEF_KEY))}`);
    expect(thief.body).toMatchObject({ status: "registered", trustLevel: "none", keyBinding: null });

    const authorization = await get(`/v1/controller-authorization?subjectDid=${encodeURIComponent(PARTY)}&controllerDid=${encodeURIComponent(pkh(controller))}`);
    expect(authorization.status).toBe(200);
    expect(authorization.body).toMatchObject({ authorized: false, until: String(cutAt), keyBindingUid: bound.uid, keyBindingUids: [bound.uid] });
  }, 120_000);

  test("nor keep itself in by a binding of itself written before the cut (a stolen key's first move)", async () => {
    const party = "did:web:self-bound.test";
    const artifact = artifactDidFromDigest(sha256(stringToBytes("ats e2e binding cut, self-bound")));
    const controller = stack.devnet.keys.users[2] as Hex;
    const owner = stack.devnet.keys.users[3] as Hex;
    await witnessed(party, [owner, controller]);
    const bound = await bind(owner, pkh(controller), party);
    await afterChainSecond(writer.client, bound.time);
    // The key is stolen; before anyone notices, it binds itself, while it still may.
    const self = await bind(controller, pkh(controller), party);
    await afterChainSecond(writer.client, self.time);
    const before = await claim(controller, party, artifact);
    await afterChainSecond(writer.client, before.time);
    const revoked = await writer.revoke(owner, schemaUid("key-binding"), bound.uid);
    const cutAt = (await writer.client.getBlock({ blockNumber: revoked.blockNumber })).timestamp;
    await afterChainSecond(writer.client, cutAt);
    const after = await claim(controller, party, artifact);
    await stack.sync();

    const trust = await get(`/v1/artifact-trust?artifactDid=${encodeURIComponent(artifact)}`);
    expect(trust.status).toBe(200);
    expect(trust.body.responsibilityClaims.map((c: { attestation: { uid: string } }) => c.attestation.uid)).toEqual([before.uid]);
    expect(JSON.stringify(trust.body.responsibilityClaims)).not.toContain(after.uid);
    // Its own binding stays the newest, read as ended by the owner's revocation.
    const status = await get(`/v1/key-status?subjectDid=${encodeURIComponent(party)}&keyDid=${encodeURIComponent(pkh(controller))}`);
    expect(status.body).toMatchObject({ status: "revoked", keyBinding: { uid: self.uid } });
    const authorization = await get(`/v1/controller-authorization?subjectDid=${encodeURIComponent(party)}&controllerDid=${encodeURIComponent(pkh(controller))}`);
    expect(authorization.body).toMatchObject({ authorized: false, until: String(cutAt), keyBindingUid: self.uid, keyBindingUids: [self.uid, bound.uid] });
  }, 120_000);

  test("a renewal written before the old binding expired keeps it in: its expiry is no cut", async () => {
    const party = "did:web:renewed.test";
    const artifact = artifactDidFromDigest(sha256(stringToBytes("ats e2e binding cut, renewed")));
    const other = keccak256(stringToBytes("ats e2e binding cut, renewed, second key"));
    const controller = stack.devnet.keys.users[0] as Hex;
    const owner = stack.devnet.keys.users[1] as Hex;
    await witnessed(party, [owner, controller]);
    // The owner binds the controller for a few seconds (room for three writes on a loaded machine), and renews it
    // (with no end) before that runs out.
    const expiresAt = (await writer.client.getBlock({ blockTag: "pending" })).timestamp + 8n;
    const first = await bind(owner, pkh(controller), party, expiresAt);
    const renewal = await bind(owner, pkh(controller), party);
    await afterChainSecond(writer.client, renewal.time);
    // The controller's own binding of itself, written after the renewal and before the old binding expired.
    const self = await bind(controller, pkh(controller), party);
    expect(self.time).toBeLessThan(expiresAt);
    await afterChainSecond(writer.client, expiresAt);
    // After the old binding expired: a claim, and a binding of a second key.
    const after = await claim(controller, party, artifact);
    const second = await bind(controller, pkh(other), party);
    await stack.sync();

    const trust = await get(`/v1/artifact-trust?artifactDid=${encodeURIComponent(artifact)}`);
    expect(trust.status).toBe(200);
    expect(trust.body.responsibilityClaims.map((c: { attestation: { uid: string } }) => c.attestation.uid)).toEqual([after.uid]);
    const status = await get(`/v1/key-status?subjectDid=${encodeURIComponent(party)}&keyDid=${encodeURIComponent(pkh(controller))}`);
    expect(status.body).toMatchObject({ status: "active", keyBinding: { uid: self.uid } });
    const authorization = await get(
      `/v1/controller-authorization?subjectDid=${encodeURIComponent(party)}&controllerDid=${encodeURIComponent(pkh(controller))}&purpose=assertionMethod`,
    );
    expect(authorization.body).toMatchObject({ authorized: true, until: null, keyBindingUid: self.uid });
    expect([...authorization.body.keyBindingUids].sort()).toEqual([self.uid, renewal.uid, first.uid].sort());
    const secondStatus = await get(`/v1/key-status?subjectDid=${encodeURIComponent(party)}&keyDid=${encodeURIComponent(pkh(other))}`);
    expect(secondStatus.body).toMatchObject({ status: "active", keyBinding: { uid: second.uid } });
  }, 120_000);
});
