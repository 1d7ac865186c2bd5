import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Hex, keccak256, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ConfigError, readConfig } from "../app/config.ts";
import { artifactDidFromDigest, base64UrlEncode, didToAddress, jwkToDidJwk } from "../domain/did/mod.ts";
import { OMA_TRUST_PROOF_DOMAIN, OMA_TRUST_PROOF_TYPES } from "../domain/artifact_trust/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { checkArtifactTrust, COULD_NOT_LOAD } from "../client/artifact_trust.ts";
import type { Service } from "../app/service.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { easWriter } from "./support/eas_writer.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

let stack: Stack;
let service: Service;
let dns: DnsServer;
let https: HttpsServer;
let writer: ReturnType<typeof easWriter>;
let proxy: RpcProxy;
let anchorsPath: string;

const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("ats e2e artifact")));
const OTHER_ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("another artifact")));
const EMPTY_ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("nobody ever attested this")));
const BULK_ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("fifty candidates")));
const AUDITED_ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("audited by a key later compromised")));
const PUBLISHER = "did:web:publisher.test";
const addressOf = (did: string) => (didToAddress(did) as { value: Hex }).value;
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;

// Roles; the devnet funds users[0..6].
let auditor: Hex, certifier: Hex, retired: Hex, controller: Hex, rogueWitness: Hex, rogueController: Hex, liveController: Hex;
let roguePublisher: string;
let livePublisher: string;
// More roles, funded in beforeAll: a wallet linked to the artifact, a key bound to the publisher, an
// assessor approved only from tomorrow on, an assessor marked revoked (compromised) with a revokedAt tomorrow and an
// active assessor retiring tomorrow.
const keyOf = (role: string) => keccak256(stringToBytes(`ats e2e artifact trust ${role}`));
const linkedWallet = keyOf("linked wallet");
const boundKey = keyOf("bound key");
const lateAuditor = keyOf("late auditor");
const compromisedAuditor = keyOf("compromised auditor");
const retiringAuditor = keyOf("retiring auditor");
/** A P-256 key that speaks for itself as a did:jwk linked identifier (pop-jws). */
let jwsKey: CryptoKeyPair;
let jwsDid: string;
/** uid -> what it is, for readable assertions. */
const seeded = new Map<string, string>();

const schemaUid = (name: string) => stack.devnet.schemaUids[name]! as Hex;
const encode = (name: string, data: Record<string, unknown>) =>
  (encodeSchemaData(findSchemaByName(name)!.schema, data) as { value: Hex }).value;

async function attest(label: string, key: Hex, name: string, data: Hex, options: { recipient?: Hex; expirationTime?: bigint } = {}) {
  const { uid } = await writer.attest(key, schemaUid(name), {
    recipient: options.recipient ?? addressOf(ARTIFACT),
    data,
    revocable: findSchemaByName(name)!.revocable,
    expirationTime: options.expirationTime,
  });
  seeded.set(uid.toLowerCase(), label);
  return uid;
}

async function chainNow(): Promise<bigint> {
  return (await writer.client.getBlock({ blockTag: "latest" })).timestamp;
}

const assessment = (subject: string, times: { issuedAt: bigint; effectiveAt?: bigint; expiresAt?: bigint }) =>
  encode("security-assessment", {
    subject,
    organization: "Example Audits",
    version: "1.2.3",
    versionHW: "",
    payload: '{"findings":0}',
    payloadVersion: "1",
    payloadSpecURI: "https://example.test/spec",
    payloadSpecDigest: "",
    issuedAt: times.issuedAt,
    effectiveAt: times.effectiveAt ?? 0n,
    expiresAt: times.expiresAt ?? 0n,
  });
const certification = (subject: string, issuedAt: bigint) =>
  encode("certification", {
    subject,
    organization: "Cert Lab",
    version: "1",
    versionHW: "",
    subjectURI: "",
    programID: "prog-1",
    programURI: "",
    assessor: "",
    assessorURI: "",
    certificationLevel: "L2",
    outcome: "pass",
    reportURI: "",
    reportDigest: "",
    payload: "",
    payloadVersion: "",
    payloadSpecURI: "",
    payloadSpecDigest: "",
    issuedAt,
    effectiveAt: 0n,
    expiresAt: 0n,
  });
const claim = (subject: string, party: string, issuedAt: bigint) =>
  encode("responsibility-claim", {
    responsibleParty: party,
    subject,
    subjectLabel: "example-plugin",
    responsibilityType: ["creator", "maintainer"],
    proofs: [],
    issuedAt,
    effectiveAt: 0n,
    expiresAt: 0n,
  });
const witness = (subject: string, controllerDid: string, observedAt: bigint) =>
  encode("controller-witness", { subject, controller: controllerDid, method: "dns-txt", observedAt });
const linkedIdentifier = (subject: string, linkedId: string, proofs: string[], issuedAt = 0n) =>
  encode("linked-identifier", { subject, linkedId, proofs, issuedAt, effectiveAt: 0n, expiresAt: 0n });
const wallSeconds = () => BigInt(Math.floor(Date.now() / 1000));

/** A pop-eip712 proof wrapper: `key` authorizes `audience` for shared control. */
async function eip712Proof(key: Hex, audience: string): Promise<string> {
  const account = privateKeyToAccount(key);
  const now = wallSeconds();
  const domain = { ...OMA_TRUST_PROOF_DOMAIN, chainId: 31337 };
  const message = {
    signer: account.address,
    authorizedEntity: audience,
    signingPurpose: "shared-control",
    creationTimestamp: now - 5n,
    expirationTimestamp: now + 3600n,
    randomValue: keccak256(stringToBytes(`${key} ${audience}`)),
    statement: "This identifier and the artifact belong together",
  };
  const signature = await account.signTypedData({ domain, types: OMA_TRUST_PROOF_TYPES, primaryType: "OmaTrustProof", message });
  const wire = { ...message, creationTimestamp: Number(message.creationTimestamp), expirationTimestamp: Number(message.expirationTimestamp) };
  return JSON.stringify({ proofType: "pop-eip712", proofPurpose: "shared-control", proofObject: { domain, message: wire, signature } });
}

/** A pop-jws proof wrapper (ES256, compact JWS) from {@link jwsKey} for `audience`. */
async function jwsProof(audience: string): Promise<string> {
  const jwk = await crypto.subtle.exportKey("jwk", jwsKey.publicKey);
  const part = (value: unknown) => base64UrlEncode(new TextEncoder().encode(JSON.stringify(value)));
  const now = Number(wallSeconds());
  const signingInput = `${part({ alg: "ES256", jwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } })}.${
    part({ oma3_proof_purpose: "shared-control", iss: jwsDid, aud: audience, iat: now - 5, exp: now + 3600 })
  }`;
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, jwsKey.privateKey, new TextEncoder().encode(signingInput));
  return JSON.stringify({ proofType: "pop-jws", proofPurpose: "shared-control", proofObject: `${signingInput}.${base64UrlEncode(new Uint8Array(signature))}` });
}
const evidencePointer = JSON.stringify({
  proofType: "evidence-pointer",
  proofPurpose: "shared-control",
  proofObject: { url: "https://publisher.test/.well-known/artifacts.json" },
});

async function lookup(did: string, base = service.url, path = "/v1/artifact-trust") {
  const res = await fetch(`${base}${path}?artifactDid=${encodeURIComponent(did)}`);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
const labels = (items: { attestation: { uid: string } }[]) => items.map((i) => seeded.get(i.attestation.uid.toLowerCase()));
/** An answer without its `asOf` (two indexes at the same head may differ in when they last polled). */
const withoutAsOf = ({ asOf: _, ...rest }: Record<string, any>) => rest;

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  const leaf = await issueLeaf(["other.test", "live.test"]);
  https = await startHttpsServer({ ...leaf, routes: () => new Response("not here", { status: 404 }) });
  for (const host of ["other.test", "live.test"]) dns.setA(host, ["127.0.0.1"]);
  stack = await startStack({ env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true" }, didJsonCa: ca.cert });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  [auditor, certifier, retired, controller, rogueWitness, rogueController, liveController] = stack.devnet.keys.users as [Hex, Hex, Hex, Hex, Hex, Hex, Hex];
  roguePublisher = `did:web:other.test%3A${https.port}`;
  livePublisher = `did:web:live.test%3A${https.port}`;
  dns.setTxt("_controllers.live.test", [[`v=1;controller=${pkh(liveController)}`]]);
  for (const key of [linkedWallet, boundKey, lateAuditor, compromisedAuditor, retiringAuditor]) {
    await writer.client.request({ method: "anvil_setBalance", params: [privateKeyToAccount(key).address, "0x3635c9adc5dea00000"] } as never);
  }
  jwsKey = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]) as CryptoKeyPair;
  jwsDid = (jwkToDidJwk(await crypto.subtle.exportKey("jwk", jwsKey.publicKey) as Record<string, unknown>, { publicOnly: true }) as { value: string }).value;

  // Our own anchors: the devnet's (witness approved for controller-witness) plus assessors.
  const anchors = JSON.parse(readFileSync(stack.devnet.trustAnchorsPath, "utf8")) as TrustAnchors;
  const validFrom = anchors.registries[0]!.issuers[0]!.validFrom!;
  const tomorrow = new Date((Number(await chainNow()) + 86_400) * 1000).toISOString();
  const issuer = (key: Hex, label: string, schemas: string[], extra: Record<string, string> = {}) => ({
    address: privateKeyToAccount(key).address,
    label,
    schemas,
    status: "active" as const,
    validFrom,
    ...extra,
  });
  const path = join(stack.dir, "artifact-anchors.json");
  anchorsPath = path;
  writeFileSync(path, JSON.stringify({
    ...anchors,
    registries: [{
      type: "approved-issuers",
      issuers: [
        ...anchors.registries[0]!.issuers,
        issuer(auditor, "Example Audits", ["security-assessment"]),
        issuer(certifier, "Cert Lab", ["certification"]),
        // Revoked as of the deployment, so before anything it attests here.
        issuer(retired, "Retired Audits", ["security-assessment"], { status: "revoked", revokedAt: validFrom }),
        // Approved only from tomorrow on, so after anything it attests here.
        issuer(lateAuditor, "Late Audits", ["security-assessment"], { validFrom: new Date(Date.now() + 86_400_000).toISOString() }),
        // Marked revoked (its key compromised), with a revokedAt after anything it attests here.
        issuer(compromisedAuditor, "Compromised Audits", ["security-assessment"], { status: "revoked", revokedAt: tomorrow }),
        // Active, retiring tomorrow: what it attests before then counts.
        issuer(retiringAuditor, "Retiring Audits", ["security-assessment"], { revokedAt: tomorrow }),
      ],
    }],
  }));
  service = await stack.restartService({ TRUST_ANCHORS_PATH: path });

  // Seed one artifact with an attestation per inclusion and exclusion rule.
  // The chain's time now (the pending block's), not the last block's, which may be seconds old by here; and the
  // expiring attestation is mined at exactly that time, so that its expiration is after its block however long the
  // write takes (EAS refuses an expiration at or before the block's time; red when the set-up took over 3 s).
  let now = (await writer.client.getBlock({ blockTag: "pending" })).timestamp;
  const expiringAt = now + 3n;
  await writer.client.request({ method: "evm_setNextBlockTimestamp", params: [`0x${now.toString(16)}`] } as never);
  await attest("expired-by-registry", auditor, "security-assessment", assessment(ARTIFACT, { issuedAt: now }), { expirationTime: expiringAt });
  const beforeWitness = now - 1000n;
  await attest("witness", stack.devnet.keys.witness, "controller-witness", witness(PUBLISHER, pkh(controller), now), { recipient: addressOf(PUBLISHER) });
  await attest("rogue-witness", rogueWitness, "controller-witness", witness(roguePublisher, pkh(rogueController), now), { recipient: addressOf(roguePublisher) });
  await attest("jwk-witness", stack.devnet.keys.witness, "controller-witness", witness(jwsDid, pkh(controller), now), { recipient: addressOf(jwsDid) });
  // The approved witness issuer binds a new key to the publisher.
  await attest("key-binding", stack.devnet.keys.witness, "key-binding", encode("key-binding", {
    subject: PUBLISHER,
    keyId: pkh(boundKey),
    publicKeyJwk: "",
    keyPurpose: ["assertionMethod"],
    proofs: [],
    issuedAt: now,
    effectiveAt: 0n,
    expiresAt: 0n,
  }), { recipient: addressOf(PUBLISHER) });
  now = await chainNow();
  await attest("claim", controller, "responsibility-claim", claim(ARTIFACT, PUBLISHER, now));
  await attest("claim-key-binding", boundKey, "responsibility-claim", claim(ARTIFACT, PUBLISHER, now));
  await attest("claim-before-witness", controller, "responsibility-claim", claim(ARTIFACT, PUBLISHER, beforeWitness));
  await attest("claim-empty-type", controller, "responsibility-claim", encode("responsibility-claim", {
    responsibleParty: PUBLISHER,
    subject: ARTIFACT,
    subjectLabel: "example-plugin",
    responsibilityType: [],
    proofs: [],
    issuedAt: now,
    effectiveAt: 0n,
    expiresAt: 0n,
  }));
  await attest("claim-rogue-witness", rogueController, "responsibility-claim", claim(ARTIFACT, roguePublisher, now));
  await attest("claim-live-dns", liveController, "responsibility-claim", claim(ARTIFACT, livePublisher, now));
  const revoked = await attest("claim-revoked", controller, "responsibility-claim", claim(ARTIFACT, PUBLISHER, now));
  await writer.revoke(controller, schemaUid("responsibility-claim"), revoked);
  await attest("assessment", auditor, "security-assessment", assessment(ARTIFACT, { issuedAt: now }));
  await attest("assessment-unapproved", liveController, "security-assessment", assessment(ARTIFACT, { issuedAt: now }));
  await attest("assessment-retired-issuer", retired, "security-assessment", assessment(ARTIFACT, { issuedAt: now }));
  await attest("assessment-before-valid-from", lateAuditor, "security-assessment", assessment(ARTIFACT, { issuedAt: now }));
  await attest("assessment-payload-expired", auditor, "security-assessment", assessment(ARTIFACT, { issuedAt: now - 100n, expiresAt: now - 10n }));
  await attest("assessment-not-yet-effective", auditor, "security-assessment", assessment(ARTIFACT, { issuedAt: now, effectiveAt: now + 3600n }));
  await attest("assessment-wrong-subject", auditor, "security-assessment", assessment(OTHER_ARTIFACT, { issuedAt: now }));
  await attest("assessment-undecodable", auditor, "security-assessment", "0x1234");
  await attest("certification", certifier, "certification", certification(ARTIFACT, now));
  await attest("linked-identifier-no-proofs", controller, "linked-identifier", encode("linked-identifier", {
    subject: ARTIFACT,
    linkedId: PUBLISHER,
    proofs: [],
    issuedAt: now,
    effectiveAt: 0n,
    expiresAt: 0n,
  }));
  // Linked identifiers: both sides proven (pop-eip712 or pop-jws from linkedId; an evidence pointer or the
  // attester's own proof for the keyless artifact), and one with linkedId's side only.
  const linkedDid = pkh(linkedWallet);
  await attest("linked-eip712", linkedWallet, "linked-identifier", linkedIdentifier(ARTIFACT, linkedDid, [await eip712Proof(linkedWallet, ARTIFACT), evidencePointer]));
  await attest("linked-jws", controller, "linked-identifier", linkedIdentifier(ARTIFACT, jwsDid, [await jwsProof(ARTIFACT), await eip712Proof(controller, ARTIFACT)], now));
  await attest("linked-one-side", linkedWallet, "linked-identifier", linkedIdentifier(ARTIFACT, linkedDid, [await eip712Proof(linkedWallet, ARTIFACT)]));
  await attest("user-review", liveController, "user-review", encode("user-review", {
    subject: ARTIFACT,
    version: "1",
    ratingValue: 5,
    reviewBody: "great",
    screenshotUrls: [],
    proofs: [],
  }));
  // Written straight to the chain: the service's follower polls once before the reads (decisions §21).
  await stack.sync();
  // The service judges expiry by its own clock; wait until the registry expiration has passed.
  const wait = Number(expiringAt) * 1000 - Date.now() + 1_100;
  if (wait > 0) await Bun.sleep(wait);
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  await stack?.stop();
  await https?.stop();
  await dns?.stop();
});

describe("artifact trust on a real chain", () => {
  test("returns exactly the verified records, with their bases, and counts every exclusion", async () => {
    const res = await lookup(ARTIFACT);
    expect(res.status).toBe(200);
    const body = res.body;
    expect(body.artifactDid).toBe(ARTIFACT);
    expect(body.chain).toEqual({ chainId: 31337, caip2: "eip155:31337", easContract: stack.devnet.easAddress });
    expect(body.trustAnchorsVersion).toBe(1);
    // A key bound by the approved witness issuer, with no witness of its own, and a wallet linking its own did:pkh are
    // not authorized (decisions §25: the route's computation, which says not for both; before, both were verified).
    expect(labels(body.responsibilityClaims).sort()).toEqual(["claim", "claim-live-dns"]);
    expect(labels(body.securityAssessments)).toEqual(["assessment"]);
    expect(labels(body.certifications)).toEqual(["certification"]);
    expect(labels(body.otherAttestations).sort()).toEqual(["linked-jws"]);
    // 21 candidates: the user review, the witnesses and the key binding are never queried. Excluded: expired by
    // the registry, revoked, a stranger's witness, before the first witness, an empty responsibilityType, an
    // unapproved, a revoked and a not-yet-approved issuer, payload-expired, not yet effective, wrong subject,
    // undecodable, two linked identifiers without both sides' proofs, the key-binding-only claim and the wallet's
    // link to itself.
    expect(body.summary).toEqual({ totalQueried: 21, totalVerified: 5, totalExcluded: 16, complete: true });

    for (const item of body.responsibilityClaims) {
      expect(item.verification).toEqual({ valid: true, basis: ["controller-authorization", "authorization-window"] });
      expect(item.attestation).not.toHaveProperty("attesterLabel");
    }
    for (const item of body.otherAttestations) {
      expect(item.verification).toEqual({ valid: true, basis: ["proof", "controller-authorization", "authorization-window"] });
      expect(item.attestation).toMatchObject({ schemaName: "linked-identifier", data: { subject: ARTIFACT } });
      expect(item.attestation).not.toHaveProperty("attesterLabel");
    }
    const linkedJws = body.otherAttestations.find((i: any) => seeded.get(i.attestation.uid) === "linked-jws");
    expect(linkedJws.attestation.data.linkedId).toBe(jwsDid);
    expect(linkedJws.attestation.data.proofs).toHaveLength(2);
    const assessmentItem = body.securityAssessments[0];
    expect(assessmentItem.verification).toEqual({ valid: true, basis: ["approved-issuer"] });
    expect(assessmentItem.attestation).toMatchObject({
      schemaName: "security-assessment",
      schema: schemaUid("security-assessment").toLowerCase(),
      attester: privateKeyToAccount(auditor).address,
      attesterLabel: "Example Audits",
      recipient: expect.stringMatching(new RegExp(`^${addressOf(ARTIFACT)}$`, "i")),
      expirationTime: "0",
      revocationTime: "0",
      data: { subject: ARTIFACT, organization: "Example Audits", effectiveAt: "0", expiresAt: "0" },
    });
    expect(assessmentItem.attestation.time).toMatch(/^[0-9]+$/);
    expect(body.certifications[0].attestation.attesterLabel).toBe("Cert Lab");
    const claimItem = body.responsibilityClaims.find((i: any) => seeded.get(i.attestation.uid) === "claim");
    expect(claimItem.attestation.data).toMatchObject({ responsibleParty: PUBLISHER, responsibilityType: ["creator", "maintainer"], proofs: [] });
  });

  test("groups are sorted by time descending, then uid", async () => {
    const { body } = await lookup(ARTIFACT);
    const claims = body.responsibilityClaims as { attestation: { time: string; uid: string } }[];
    const sorted = [...claims].sort((a, b) =>
      BigInt(a.attestation.time) === BigInt(b.attestation.time)
        ? a.attestation.uid.localeCompare(b.attestation.uid)
        : BigInt(b.attestation.time) > BigInt(a.attestation.time) ? 1 : -1
    );
    expect(claims).toEqual(sorted);
  });

  test("the backend path answers the same; extra query parameters change nothing", async () => {
    const gateway = await lookup(ARTIFACT);
    const backend = await lookup(ARTIFACT, service.url, "/api/public/artifact-trust");
    // The default chain named (decisions §30) is the same read.
    const withExtras = await fetch(`${service.url}/v1/artifact-trust?artifactDid=${ARTIFACT}&includeInvalid=true&schemas=user-review&chain=eip155:${service.chainId}`);
    expect(backend.body).toEqual(gateway.body);
    expect(await withExtras.json()).toEqual(gateway.body);
    // A chain not served is refused, never read on another chain.
    expect((await (await fetch(`${service.url}/v1/artifact-trust?artifactDid=${ARTIFACT}&chain=eip155:1`)).json()).code).toBe("UNSUPPORTED_CHAIN");
  });

  test("no evidence: 200 with four empty groups and zero counts", async () => {
    const res = await lookup(EMPTY_ARTIFACT);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      responsibilityClaims: [],
      securityAssessments: [],
      certifications: [],
      otherAttestations: [],
      summary: { totalQueried: 0, totalVerified: 0, totalExcluded: 0, complete: true },
    });
  });

  test("an invalid DID is 400 INVALID_DID with no RPC at all", async () => {
    stack.rpc.reset();
    const res = await lookup("did:artifact:bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi");
    expect([res.status, res.body.code]).toEqual([400, "INVALID_DID"]);
    expect(stack.rpc.roundTrips()).toBe(0);
  });

  test("a read costs no JSON-RPC call once the index is warm, for dozens of candidates; the follower reads their records once", async () => {
    await lookup(EMPTY_ARTIFACT); // the schema strings, once per run
    stack.rpc.reset();
    const empty = await lookup(EMPTY_ARTIFACT);
    const full = await lookup(ARTIFACT);
    expect([empty.status, full.status]).toEqual([200, 200]);
    // Before issue 34: [eth_blockNumber], [eth_getLogs] for the empty artifact; five calls for this one.
    expect(stack.rpc.trips()).toEqual([]);
    expect(full.body.asOf).toEqual({
      blockNumber: expect.any(Number),
      blockHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      timestamp: expect.any(Number),
      checkedAt: expect.any(Number),
    });
    const head = await writer.client.getBlock({ blockTag: "latest" });
    expect(full.body.asOf).toMatchObject({ blockNumber: Number(head.number), blockHash: head.hash, timestamp: Number(head.timestamp) });

    // 52 candidates over the same four schemas, written straight to the chain.
    const now = await chainNow();
    const recipient = addressOf(BULK_ARTIFACT);
    const many = (n: number, data: Hex, revocable: boolean) => Array.from({ length: n }, () => ({ recipient, data, revocable }));
    await writer.multiAttest(auditor, schemaUid("security-assessment"), many(13, assessment(BULK_ARTIFACT, { issuedAt: now }), false));
    await writer.multiAttest(certifier, schemaUid("certification"), many(13, certification(BULK_ARTIFACT, now), false));
    await writer.multiAttest(controller, schemaUid("responsibility-claim"), many(13, claim(BULK_ARTIFACT, PUBLISHER, now), true));
    const linked = encode("linked-identifier", { subject: BULK_ARTIFACT, linkedId: PUBLISHER, proofs: [], issuedAt: now, effectiveAt: 0n, expiresAt: 0n });
    await writer.multiAttest(controller, schemaUid("linked-identifier"), many(13, linked, true));
    stack.rpc.reset();
    await stack.sync();
    // The follower's poll: the head and the checkpoint's hash, the four blocks' logs, then the 52 records in one eth_call.
    expect(stack.rpc.followerTrips().filter((methods) => methods.includes("eth_call"))).toEqual([["eth_call"]]);
    stack.rpc.reset();
    for (let i = 0; i < 3; i++) {
      const res = await lookup(BULK_ARTIFACT);
      expect(res.body.summary).toEqual({ totalQueried: 52, totalVerified: 39, totalExcluded: 13, complete: true });
    }
    expect(stack.rpc.trips()).toEqual([]);
    expect(stack.rpc.followerTrips()).toEqual([]);
  });

  test("the consumer helper: an approved assessment or the publisher's claim suppresses the warning; nothing does not", async () => {
    const url = `${service.url}/v1/artifact-trust`;
    const pinnedChain = { chainId: 31337, caip2: "eip155:31337", easContract: stack.devnet.easAddress };
    const verdict = await checkArtifactTrust(ARTIFACT, { url, publisherDid: "did:web:Publisher.test", pinnedChain });
    expect(verdict.warn).toBe(false);
    expect(labels(verdict.qualifyingClaims.responsibilityClaims as any).sort()).toEqual(["claim"]);
    expect(verdict.qualifyingClaims.securityAssessments).toHaveLength(1);
    expect(verdict.unqualifiedResponsibilityClaims).toBe(1);
    expect(labels(verdict.informational.linkedIdentifiers as any).sort()).toEqual(["linked-jws"]);
    // No declared publisher: every returned claim qualifies.
    const undeclared = await checkArtifactTrust(ARTIFACT, { url, pinnedChain });
    expect(undeclared).toMatchObject({ warn: false, unqualifiedResponsibilityClaims: 0 });
    expect(undeclared.qualifyingClaims.responsibilityClaims).toHaveLength(2);
    expect((await checkArtifactTrust(EMPTY_ARTIFACT, { url, pinnedChain })).warn).toBe(true);
  });

  test("an issuer marked revoked counts for none of its attestations, even those before its revokedAt; an active one retiring later still counts", async () => {
    const now = await chainNow();
    const compromised = await attest("assessment-compromised-issuer", compromisedAuditor, "security-assessment", assessment(AUDITED_ARTIFACT, { issuedAt: now }), { recipient: addressOf(AUDITED_ARTIFACT) });
    await attest("assessment-retiring-issuer", retiringAuditor, "security-assessment", assessment(AUDITED_ARTIFACT, { issuedAt: now }), { recipient: addressOf(AUDITED_ARTIFACT) });
    await stack.sync();
    const { status, body } = await lookup(AUDITED_ARTIFACT);
    expect(status).toBe(200);
    // Before, both verified with basis ["approved-issuer"]: the revokedAt still ahead let the revoked issuer count.
    expect(labels(body.securityAssessments)).toEqual(["assessment-retiring-issuer"]);
    expect(body.securityAssessments[0]).toMatchObject({
      attestation: { attester: privateKeyToAccount(retiringAuditor).address, attesterLabel: "Retiring Audits" },
      verification: { valid: true, basis: ["approved-issuer"] },
    });
    expect(JSON.stringify(body).toLowerCase()).not.toContain(compromised.toLowerCase().slice(2));
    expect(body.summary).toEqual({ totalQueried: 2, totalVerified: 1, totalExcluded: 1, complete: true });
  });
});

describe("artifact trust's index through a faulty RPC", () => {
  const width = (params: unknown[]) => {
    const filter = params[0] as { fromBlock: string; toBlock: string };
    return BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n;
  };
  let databases = 0;
  /** An instance with its own, empty index, reading the chain through the proxy. */
  const fresh = (env: Record<string, string> = {}) =>
    stack.restartService({ TRUST_ANCHORS_PATH: anchorsPath, RPC_URL: proxy.url, DATABASE_PATH: join(stack.dir, `faulty-${++databases}.sqlite`), ...env });
  beforeAll(() => {
    proxy = startRpcProxy(stack.devnet.rpcUrl);
  });
  const reset = () => {
    proxy.onCall = undefined;
    proxy.onHttp = undefined;
  };

  test("a provider that refuses wide log ranges builds the same index, in more calls, and the same answer", async () => {
    const direct = await lookup(ARTIFACT);
    proxy.onCall = (call) => (call.method === "eth_getLogs" && width(call.params) > 8n ? { code: -32000, message: "block range too large" } : undefined);
    proxy.calls.length = 0;
    const split = await fresh();
    expect(await split.index.catchUp()).toBe(true);
    reset();
    const answer = await lookup(ARTIFACT, split.url);
    expect(answer.status).toBe(200);
    expect(withoutAsOf(answer.body)).toEqual(withoutAsOf(direct.body));
    expect(proxy.calls.some((c) => c.method === "eth_getLogs" && width(c.params) > 8n)).toBe(true);
  });

  test("5xx from the provider does not reach reads: they answer from the index, at the head it holds", async () => {
    const instance = await fresh();
    const before = await lookup(ARTIFACT, instance.url);
    proxy.onHttp = () => new Response("bad gateway", { status: 502 });
    expect(await instance.index.catchUp()).toBe(false);
    for (const did of [ARTIFACT, EMPTY_ARTIFACT]) {
      const res = await lookup(did, instance.url);
      expect(res.status).toBe(200);
      expect(res.body.asOf).toEqual(before.body.asOf);
    }
    reset();
  });

  test("START_BLOCK is where the follower's first eth_getLogs starts", async () => {
    expect(stack.devnet.deployBlock).toBeGreaterThan(0n);
    const start = stack.devnet.deployBlock + 1n;
    proxy.calls.length = 0;
    const scoped = await fresh({ START_BLOCK: String(start) });
    expect((await lookup(ARTIFACT, scoped.url)).status).toBe(200);
    const first = proxy.calls.find((c) => c.method === "eth_getLogs")!;
    expect((first.params[0] as { fromBlock: string }).fromBlock).toBe(`0x${start.toString(16)}`);
    // Without START_BLOCK (and with RPC_URL set) the index starts at block 0.
    proxy.calls.length = 0;
    await fresh();
    expect((proxy.calls.find((c) => c.method === "eth_getLogs")!.params[0] as { fromBlock: string }).fromBlock).toBe("0x0");
  });

  test("an RPC that hangs fails the follower's poll after ARTIFACT_TRUST_RPC_TIMEOUT_MS and the retries; reads of an index never polled are 503 INDEX_STALE", async () => {
    const held: (() => void)[] = [];
    // The checks at start are answered; the follower's reads of blocks and logs hang.
    const followerMethods = new Set(["eth_blockNumber", "eth_getBlockByNumber", "eth_getLogs"]);
    proxy.onHttp = (calls) =>
      !calls.every((c) => followerMethods.has(c.method))
        ? undefined
        : new Promise<Response>((resolve) => held.push(() => resolve(new Response("too late", { status: 503 }))));
    try {
      // No follower loop of its own: only the polls the test asks for reach the proxy.
      const impatient = await fresh({ ARTIFACT_TRUST_RPC_TIMEOUT_MS: "250", INDEX_FOLLOW: "false" });
      held.length = 0;
      const started = performance.now();
      expect(await impatient.index.catchUp()).toBe(false);
      const elapsed = performance.now() - started;
      // Three attempts of 250 ms with 150 + 300 ms between them (a lower bound a slow machine cannot break); the default
      // 8 s would take over 24 s, far beyond any pause of a loaded machine: the setting was used.
      expect(elapsed).toBeGreaterThan(700);
      expect(elapsed).toBeLessThan(3 * 8_000);
      // Every attempt reached the node and was abandoned: nothing was answered from elsewhere.
      expect(held.length).toBe(3);
      const res = await lookup(ARTIFACT, impatient.url);
      expect(res).toEqual({ status: 503, body: { code: "INDEX_STALE", error: "The attestation index is not keeping up with the chain; try again shortly" } });
      expect(JSON.stringify(res.body)).not.toMatch(/127\.0\.0\.1|timed? ?out|took too long/i);
    } finally {
      reset();
      for (const release of held) release();
    }
  });

  test("ARTIFACT_TRUST_RPC_TIMEOUT_MS defaults to 8000 and must be a whole number of milliseconds from 100 to 60000", () => {
    expect(readConfig({}).chains.artifactTrustRpcTimeoutMs).toBe(8_000);
    expect(readConfig({ ARTIFACT_TRUST_RPC_TIMEOUT_MS: "1500" }).chains.artifactTrustRpcTimeoutMs).toBe(1_500);
    for (const bad of ["soon", "50", "600000", "1.5"]) {
      expect(() => readConfig({ ARTIFACT_TRUST_RPC_TIMEOUT_MS: bad })).toThrow(ConfigError);
      expect(() => readConfig({ ARTIFACT_TRUST_RPC_TIMEOUT_MS: bad })).toThrow(/ARTIFACT_TRUST_RPC_TIMEOUT_MS/);
    }
  });

  test("a poll that fails half way (the new attestations' records) writes nothing: reads stay at the index's head, never a partial answer", async () => {
    const instance = await fresh();
    const before = await lookup(BULK_ARTIFACT, instance.url);
    const now = await chainNow();
    await writer.multiAttest(auditor, schemaUid("security-assessment"), [{ recipient: addressOf(BULK_ARTIFACT), data: assessment(BULK_ARTIFACT, { issuedAt: now }), revocable: false }]);
    // The logs are read; every attempt at the records' eth_call fails.
    proxy.onCall = (call) => (call.method === "eth_call" ? { code: -32603, message: "internal error" } : undefined);
    expect(await instance.index.catchUp()).toBe(false);
    reset();
    const after = await lookup(BULK_ARTIFACT, instance.url);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
    // The next poll reads the range again and the records with it.
    expect(await instance.index.catchUp()).toBe(true);
    expect((await lookup(BULK_ARTIFACT, instance.url)).body.summary.totalQueried).toBe(before.body.summary.totalQueried + 1);
  });
});

describe("artifact trust when the chain is down", () => {
  test("answers from the index, at the head it last read (its asOf), never fresher; the consumer helper reads it", async () => {
    const before = await lookup(ARTIFACT);
    await stack.devnet.stop();
    for (const did of [ARTIFACT, EMPTY_ARTIFACT]) {
      const res = await lookup(did);
      expect(res.status).toBe(200);
      expect(res.body.asOf).toEqual(before.body.asOf);
    }
    expect((await lookup(ARTIFACT)).body).toEqual(before.body);
    const verdict = await checkArtifactTrust(ARTIFACT, { url: `${service.url}/v1/artifact-trust` });
    expect(verdict.warn).toBe(false);
  });
});
