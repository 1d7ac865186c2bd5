import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import { fakeAttestationIndex, fakeClock, fakeDidDocumentFetcher, fakeDnsResolver, fakeJwsVerifier } from "../../ports/fakes/mod.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { type ArtifactTrustRecord, createArtifactTrust, type ExclusionReason, LIVE_DISCOVERY_CONCURRENCY, type VerificationBasis } from "./artifact_trust.ts";
import { createControllerAuthorization } from "../controller_authorization/mod.ts";
import { createCachedDiscovery, createDiscoverControllers } from "../discovery/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { artifactDidFromDigest, base64UrlEncode, didToAddress, jwkToDidJwk } from "../did/mod.ts";
import { OMA_TRUST_PROOF_DOMAIN, OMA_TRUST_PROOF_TYPES } from "./proofs.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../schemas.ts";

const NOW = 1_800_000_000n;
const CHAIN_ID = 31337;
const ARTIFACT = artifactDidFromDigest(`0x${"ab".repeat(32)}`);
const OTHER_ARTIFACT = artifactDidFromDigest(`0x${"cd".repeat(32)}`);
const RECIPIENT = (didToAddress(ARTIFACT) as { value: HexString }).value;

const AUDITOR = "0xA000000000000000000000000000000000000001" as HexString;
const CERTIFIER = "0xA000000000000000000000000000000000000002" as HexString;
const WITNESS = "0xA000000000000000000000000000000000000003" as HexString;
const RETIRED = "0xA000000000000000000000000000000000000004" as HexString;
const COMPROMISED = "0xA000000000000000000000000000000000000005" as HexString;
const STRANGER = "0xB000000000000000000000000000000000000001" as HexString;
const CONTROLLER = "0xC000000000000000000000000000000000000001" as HexString;
const NEW_KEY = "0xC000000000000000000000000000000000000002" as HexString;
/** A second witnessed controller of the publisher: the one that binds and cuts the others. */
const OWNER = "0xC000000000000000000000000000000000000003" as HexString;
const PUBLISHER = "did:web:publisher.example";
const pkh = (address: string) => `did:pkh:eip155:${CHAIN_ID}:${address.toLowerCase()}`;

const uidOf = (name: string) => computeSchemaUid(findSchemaByName(name)!).toLowerCase() as HexString;
const SCHEMA_NAMES = [
  "responsibility-claim",
  "security-assessment",
  "certification",
  "linked-identifier",
  "controller-witness",
  "key-binding",
  "user-review",
];

function anchors(overrides: { schemas?: Record<string, string>; easContract?: string } = {}): TrustAnchors {
  return {
    version: 3,
    updatedAt: "2026-01-01T00:00:00Z",
    widgetOrigins: [],
    chains: {
      [`eip155:${CHAIN_ID}`]: {
        name: "ATS Devnet",
        easContract: overrides.easContract ?? "0x5FbDB2315678afecb367f032d93F642f64180aa3",
        schemas: overrides.schemas ?? Object.fromEntries(SCHEMA_NAMES.map((n) => [n, uidOf(n)])),
      },
    },
    registries: [{
      type: "approved-issuers",
      issuers: [
        { address: AUDITOR, label: "Audit Co", schemas: ["security-assessment"], status: "active", validFrom: "2020-01-01T00:00:00Z" },
        { address: CERTIFIER.toLowerCase(), label: "Cert Lab", schemas: ["certification"] },
        { address: WITNESS, label: "Witness", schemas: ["controller-witness"], status: "active" },
        // Retired in good standing at NOW - 90 seconds: its earlier attestations still count.
        { address: RETIRED, label: "Retired", schemas: ["security-assessment"], status: "active", revokedAt: "2027-01-15T07:58:30Z" },
        // Marked revoked (a compromised key), with the same later revokedAt: none of its attestations count.
        { address: COMPROMISED, label: "Compromised", schemas: ["security-assessment"], status: "revoked", revokedAt: "2027-01-15T07:58:30Z" },
      ],
    }],
  };
}

let counter = 0;
const nextUid = () => `0x${(++counter).toString(16).padStart(64, "0")}` as HexString;

type AttestInput = {
  schema: string;
  attester: HexString;
  data?: Record<string, unknown>;
  raw?: HexString;
  recipient?: HexString;
  time?: bigint;
  revocationTime?: bigint;
  expirationTime?: bigint;
  uid?: HexString;
};

function attestation(input: AttestInput): IndexedAttestation {
  const schema = findSchemaByName(input.schema)!.schema;
  const encoded = input.raw ?? (encodeSchemaData(schema, input.data ?? {}) as { value: HexString }).value;
  if (encoded === undefined) throw new Error(`bad test data for ${input.schema}`);
  return {
    uid: input.uid ?? nextUid(),
    schema: uidOf(input.schema),
    time: input.time ?? NOW - 100n,
    expirationTime: input.expirationTime ?? 0n,
    revocationTime: input.revocationTime ?? 0n,
    refUID: `0x${"0".repeat(64)}`,
    recipient: input.recipient ?? RECIPIENT,
    attester: input.attester,
    revocable: true,
    data: encoded,
  };
}

const times = { issuedAt: NOW - 200n, effectiveAt: 0n, expiresAt: 0n };
const assessment = (extra: Record<string, unknown> = {}) => ({
  subject: ARTIFACT,
  organization: "Audit Co",
  version: "1.0.0",
  versionHW: "",
  payload: "{}",
  payloadVersion: "1",
  payloadSpecURI: "",
  payloadSpecDigest: "",
  ...times,
  ...extra,
});
const certification = (extra: Record<string, unknown> = {}) => ({
  subject: ARTIFACT,
  organization: "Cert Lab",
  version: "1",
  versionHW: "",
  subjectURI: "",
  programID: "p",
  programURI: "",
  assessor: "",
  assessorURI: "",
  certificationLevel: "L1",
  outcome: "pass",
  reportURI: "",
  reportDigest: "",
  payload: "",
  payloadVersion: "",
  payloadSpecURI: "",
  payloadSpecDigest: "",
  ...times,
  ...extra,
});
const claim = (party: string, extra: Record<string, unknown> = {}) => ({
  responsibleParty: party,
  subject: ARTIFACT,
  subjectLabel: "my-plugin",
  responsibilityType: ["creator"],
  proofs: [],
  ...times,
  ...extra,
});
const witness = (subject: string, controller: string, time = NOW - 1000n, attester = WITNESS) =>
  attestation({
    schema: "controller-witness",
    attester,
    data: { subject, controller, method: "dns-txt", observedAt: time },
    recipient: (didToAddress(subject) as { value: HexString }).value,
    time,
  });
const binding = (subject: string, keyId: string, attester: HexString, extra: Partial<AttestInput> & { data?: Record<string, unknown> } = {}) =>
  attestation({
    schema: "key-binding",
    attester,
    recipient: (didToAddress(subject) as { value: HexString }).value,
    time: extra.time ?? NOW - 500n,
    revocationTime: extra.revocationTime,
    expirationTime: extra.expirationTime,
    data: {
      subject,
      keyId,
      publicKeyJwk: "",
      keyPurpose: ["assertionMethod"],
      proofs: [],
      issuedAt: 0n,
      effectiveAt: 0n,
      expiresAt: 0n,
      ...extra.data,
    },
  });

function setup(options: {
  anchors?: TrustAnchors;
  discover?: boolean;
  dns?: Parameters<typeof fakeDnsResolver>[0];
  jwsValid?: boolean;
  contracts?: OwnershipChain;
} = {}) {
  const index = fakeAttestationIndex({ chainId: CHAIN_ID });
  for (const name of SCHEMA_NAMES) index.register(uidOf(name), findSchemaByName(name)!.schema);
  const excluded: [string, ExclusionReason][] = [];
  const dns = fakeDnsResolver(options.dns ?? {});
  const jws = fakeJwsVerifier(() => options.jwsValid ?? true);
  const trust = createArtifactTrust({
    index,
    trustAnchors: options.anchors ?? anchors(),
    clock: fakeClock(Number(NOW) * 1000),
    jws,
    discover: options.discover === false
      ? undefined
      : createDiscoverControllers({ dns, didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" }),
    onExcluded: (uid, reason) => excluded.push([uid, reason]),
    // The route's computation over the same index (decisions §25), with a contract party's reads when the test has any.
    controllerAuthorization: options.contracts === undefined ? undefined : createControllerAuthorization({
      index,
      trustAnchors: options.anchors ?? anchors(),
      clock: fakeClock(Number(NOW) * 1000),
      discover: createDiscoverControllers({ dns, didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" }),
      contracts: options.contracts,
      discoveryCacheSeconds: 600,
    }),
  });
  const run = async (...args: [] | [string | undefined]) => await trust(args.length === 0 ? ARTIFACT : args[0]);
  const record = async (did: string = ARTIFACT) => {
    const result = await run(did);
    if (!result.ok) throw new Error(`${result.code}: ${result.message}`);
    return result.value;
  };
  return { index, excluded, run, record, jws, dns };
}

const uidsOf = (items: ArtifactTrustRecord["securityAssessments"]) => items.map((i) => i.attestation.uid);

describe("createArtifactTrust() input and anchors", () => {
  test("a missing, malformed or non-artifact DID is INVALID_DID before any chain read", async () => {
    const env = setup();
    for (const did of [undefined, "", "did:web:example.com", "did:artifact:bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi", `${ARTIFACT} `]) {
      const result = await env.run(did);
      expect(result).toMatchObject({ ok: false, code: "INVALID_DID", message: "artifactDid must be a valid did:artifact DID" });
    }
    expect(env.index.calls).toEqual({ latestBlock: 0, schemaRecords: 0, attestedUids: 0, attestations: 0 });
  });

  test("anchors without the chain, another EAS contract or a missing policy schema are UNSUPPORTED_CHAIN, with no RPC", async () => {
    const noChain = { ...anchors(), chains: {} };
    const schemas = Object.fromEntries(SCHEMA_NAMES.filter((n) => n !== "certification").map((n) => [n, uidOf(n)]));
    for (const [a, message] of [
      [noChain, "The active chain does not have usable artifact trust anchors"],
      [anchors({ easContract: "0x0000000000000000000000000000000000000001" }), "The active chain does not have usable artifact trust anchors"],
      [anchors({ schemas }), "The active chain is missing the certification artifact trust schema"],
    ] as const) {
      const env = setup({ anchors: a });
      expect(await env.run()).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN", message });
      expect(env.index.calls.latestBlock).toBe(0);
    }
  });

  test("a policy schema the registry does not know is UNSUPPORTED_CHAIN", async () => {
    const env = setup();
    env.index.schemas.delete(uidOf("linked-identifier"));
    expect(await env.run()).toMatchObject({
      ok: false,
      code: "UNSUPPORTED_CHAIN",
      message: "The active chain does not support artifact trust lookup",
    });
  });

  test("no evidence: four empty groups, zero counts, the chain and anchors version", async () => {
    const env = setup();
    expect(await env.record()).toEqual({
      artifactDid: ARTIFACT,
      chain: { chainId: CHAIN_ID, caip2: "eip155:31337", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" },
      trustAnchorsVersion: 3,
      responsibilityClaims: [],
      securityAssessments: [],
      certifications: [],
      otherAttestations: [],
      summary: { totalQueried: 0, totalVerified: 0, totalExcluded: 0, complete: true },
    });
  });

  test("candidates come from one OR-list query over the four policy schemas, pinned with every read to the head", async () => {
    const env = setup();
    env.index.add(attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() }));
    env.index.add(attestation({ schema: "user-review", attester: STRANGER, data: { subject: ARTIFACT, version: "1", ratingValue: 5, reviewBody: "", screenshotUrls: [], proofs: [] } }));
    const record = await env.record();
    expect(record.summary).toEqual({ totalQueried: 1, totalVerified: 1, totalExcluded: 0, complete: true });
    expect(env.index.queries).toHaveLength(1);
    expect(env.index.queries[0]!.recipients).toEqual([RECIPIENT]);
    expect([...env.index.queries[0]!.schemaUids].sort()).toEqual(
      ["responsibility-claim", "security-assessment", "certification", "linked-identifier"].map(uidOf).sort(),
    );
    expect(new Set(env.index.pinned)).toEqual(new Set([env.index.head]));
  });

  test("schema strings are read once per process", async () => {
    const env = setup();
    await env.record();
    await env.record();
    expect(env.index.calls.schemaRecords).toBe(1);
    expect(env.index.calls.latestBlock).toBe(2);
  });
});

describe("createArtifactTrust() exclusion rules", () => {
  test("revoked, expired, payload-expired, not yet effective, wrong subject, undecodable and wrong recipient are excluded and counted", async () => {
    const env = setup();
    const good = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() });
    const cases: [IndexedAttestation, ExclusionReason][] = [
      [attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment(), revocationTime: NOW - 5n }), "revoked"],
      [attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment(), expirationTime: NOW }), "expired"],
      [attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment({ expiresAt: NOW - 1n }) }), "payload-expired"],
      [attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment({ effectiveAt: NOW + 60n }) }), "not-yet-effective"],
      [attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment({ subject: OTHER_ARTIFACT }) }), "wrong-subject"],
      [attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment({ subject: ARTIFACT.toUpperCase() }) }), "wrong-subject"],
      [attestation({ schema: "security-assessment", attester: AUDITOR, raw: "0x1234" }), "undecodable"],
    ];
    env.index.add(good);
    for (const [a] of cases) env.index.add(a);
    const record = await env.record();
    expect(uidsOf(record.securityAssessments)).toEqual([good.uid]);
    expect(record.summary).toEqual({ totalQueried: 8, totalVerified: 1, totalExcluded: 7, complete: true });
    expect(env.excluded).toEqual(cases.map(([a, reason]) => [a.uid, reason]));
  });

  test("future payload expiry and zero effectiveAt/expiresAt are fine", async () => {
    const env = setup();
    env.index.add(attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment({ expiresAt: NOW + 1n, effectiveAt: NOW }) }));
    expect((await env.record()).securityAssessments).toHaveLength(1);
  });
});

describe("createArtifactTrust() approved issuers", () => {
  test("security assessments and certifications need an issuer approved for that schema at the attestation time", async () => {
    const env = setup();
    const approved = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() });
    const stranger = attestation({ schema: "security-assessment", attester: STRANGER, data: assessment() });
    const wrongSchema = attestation({ schema: "security-assessment", attester: CERTIFIER, data: assessment() });
    const beforeRevocation = attestation({ schema: "security-assessment", attester: RETIRED, data: assessment(), time: NOW - 200n });
    const afterRevocation = attestation({ schema: "security-assessment", attester: RETIRED, data: assessment(), time: NOW - 50n });
    const beforeValidFrom = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment(), time: 1_500_000_000n });
    // Before, verified: a revokedAt still ahead let an issuer marked revoked count.
    const compromised = attestation({ schema: "security-assessment", attester: COMPROMISED, data: assessment(), time: NOW - 200n });
    const cert = attestation({ schema: "certification", attester: CERTIFIER, data: certification() });
    for (const a of [approved, stranger, wrongSchema, beforeRevocation, afterRevocation, beforeValidFrom, compromised, cert]) env.index.add(a);
    const record = await env.record();
    expect(uidsOf(record.securityAssessments).sort()).toEqual([approved.uid, beforeRevocation.uid].sort());
    expect(uidsOf(record.certifications)).toEqual([cert.uid]);
    expect(record.securityAssessments.find((i) => i.attestation.uid === approved.uid)).toEqual({
      attestation: {
        uid: approved.uid,
        schema: uidOf("security-assessment"),
        schemaName: "security-assessment",
        attester: AUDITOR,
        attesterLabel: "Audit Co",
        recipient: RECIPIENT,
        time: String(NOW - 100n),
        expirationTime: "0",
        revocationTime: "0",
        data: { ...assessment(), issuedAt: String(NOW - 200n), effectiveAt: "0", expiresAt: "0" },
      },
      verification: { valid: true, basis: ["approved-issuer"] },
    });
    expect(record.certifications[0]!.attestation.attesterLabel).toBe("Cert Lab");
    expect(env.excluded.map(([, r]) => r)).toEqual(Array(5).fill("issuer-not-approved"));
    expect(env.excluded.map(([uid]) => uid)).toContain(compromised.uid);
  });

  test("an issuer listed as a did:pkh is approved on the chain it names only (decisions §30)", async () => {
    const base = anchors();
    const issuersOn = (chainId: number): TrustAnchors => ({
      ...base,
      registries: [{
        type: "approved-issuers",
        issuers: [{ address: `did:pkh:eip155:${chainId}:${AUDITOR}`, label: "Audit Co", schemas: ["security-assessment"], status: "active" }],
      }],
    });
    const here = setup({ anchors: issuersOn(CHAIN_ID) });
    const onThisChain = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() });
    here.index.add(onThisChain);
    expect(uidsOf((await here.record()).securityAssessments)).toEqual([onThisChain.uid]);
    // Listed for chain 10: the same address attesting here may be another party's contract.
    const elsewhere = setup({ anchors: issuersOn(10) });
    const claimed = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() });
    elsewhere.index.add(claimed);
    expect((await elsewhere.record()).securityAssessments).toEqual([]);
    expect(elsewhere.excluded).toEqual([[claimed.uid, "issuer-not-approved"]]);
  });

  test("groups are sorted by time descending, then uid", async () => {
    const env = setup();
    const a = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment(), time: NOW - 300n, uid: `0x${"0".repeat(63)}9` });
    const b = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment(), time: NOW - 10n, uid: `0x${"0".repeat(63)}8` });
    const c = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment(), time: NOW - 300n, uid: `0x${"0".repeat(63)}7` });
    for (const x of [a, b, c]) env.index.add(x);
    expect(uidsOf((await env.record()).securityAssessments)).toEqual([b.uid, c.uid, a.uid]);
  });
});

describe("createArtifactTrust() responsibility claims", () => {
  test("a controller witnessed by the approved witness issuer qualifies; a stranger's witness does not", async () => {
    const env = setup({ discover: false });
    const good = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) });
    const forged = attestation({ schema: "responsibility-claim", attester: STRANGER, data: claim("did:web:victim.example") });
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER)));
    env.index.add(witness("did:web:victim.example", pkh(STRANGER), NOW - 1000n, STRANGER));
    env.index.add(good);
    env.index.add(forged);
    const record = await env.record();
    expect(uidsOf(record.responsibilityClaims)).toEqual([good.uid]);
    expect(record.responsibilityClaims[0]!.verification).toEqual({ valid: true, basis: ["controller-authorization", "authorization-window"] });
    expect(record.responsibilityClaims[0]!.attestation.attesterLabel).toBeUndefined();
    expect(env.excluded).toEqual([[forged.uid, "not-authorized"]]);
    // Both parties' evidence came from one more query, at the same block.
    expect(env.index.queries).toHaveLength(2);
    expect(env.index.queries[1]!.recipients).toHaveLength(2);
    expect(new Set(env.index.pinned)).toEqual(new Set([env.index.head]));
  });

  test("a witness with the controller as any eip155 did:pkh counts; the party DID is compared normalized", async () => {
    const env = setup({ discover: false });
    env.index.add(witness(PUBLISHER, `did:pkh:eip155:1:${CONTROLLER}`));
    const a = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim("did:web:WWW.Publisher.example") });
    env.index.add(a);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([a.uid]);
  });

  test("a contract party's owner() authorizes its owner's claim, as /v1/controller-authorization does (decisions §25)", async () => {
    const CONTRACT = "0xD000000000000000000000000000000000000001" as HexString;
    const party = pkh(CONTRACT);
    let ownerReads = 0;
    let owner: HexString | null = CONTROLLER;
    let failing = false;
    const contracts: OwnershipChain = {
      chainId: CHAIN_ID,
      hasCode: () => Promise.resolve({ ok: true, value: true }),
      owner: () => (ownerReads++, Promise.resolve(failing ? { ok: false, code: "RPC_ERROR", message: "down" } as never : { ok: true, value: owner })),
      transaction: () => Promise.resolve({ ok: true, value: null }),
    };
    const byOwner = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(party) });
    const byStranger = attestation({ schema: "responsibility-claim", attester: STRANGER, data: claim(party) });
    const env = setup({ discover: false, contracts });
    env.index.add(byOwner);
    env.index.add(byStranger);
    const record = await env.record();
    expect(uidsOf(record.responsibilityClaims)).toEqual([byOwner.uid]);
    expect(record.responsibilityClaims[0]!.verification).toEqual({ valid: true, basis: ["controller-authorization", "authorization-window"] });
    expect(env.excluded).toEqual([[byStranger.uid, "not-authorized"]]);
    expect(ownerReads).toBe(2);
    // Ownership moved on: the former owner's claim no longer counts.
    owner = STRANGER;
    const later = await env.record();
    expect(uidsOf(later.responsibilityClaims)).toEqual([byStranger.uid]);
    // The owner could not be read: an outage, never an exclusion.
    failing = true;
    const down = await env.run();
    expect(down.ok ? "ok" : `${down.code}: ${down.message}`).toBe("NETWORK_ERROR: Required controller authorization lookup failed");
    // Without the route's computation wired, a did:pkh party needs a witness (as before).
    const bare = setup({ discover: false });
    bare.index.add(byOwner);
    expect((await bare.record()).responsibilityClaims).toEqual([]);
  });

  test("a claim issued before the first witness is outside the authorization window", async () => {
    const env = setup({ discover: false });
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 150n));
    const early = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 200n }) });
    env.index.add(early);
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded).toEqual([[early.uid, "outside-authorization-window"]]);
  });

  test("payload rules: a party DID, a non-empty responsibilityType and a non-zero issuedAt", async () => {
    const env = setup({ discover: false });
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER)));
    for (const data of [claim("publisher.example"), claim(PUBLISHER, { responsibilityType: [] }), claim(PUBLISHER, { issuedAt: 0n })]) {
      env.index.add(attestation({ schema: "responsibility-claim", attester: CONTROLLER, data }));
    }
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded.map(([, r]) => r)).toEqual(["invalid-payload", "invalid-payload", "invalid-payload"]);
  });

  test("an account's claim for its own did:pkh is not authorized by itself, on this chain or another (decisions §25)", async () => {
    // Before, any wallet's claim for itself was verified, where /v1/controller-authorization said not: one transaction
    // made a malicious artifact look vetted for a publisher the attacker declared.
    const env = setup({ discover: false });
    const here = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(pkh(CONTROLLER)) });
    const elsewhere = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(`did:pkh:eip155:1:${CONTROLLER}`) });
    env.index.add(here);
    env.index.add(elsewhere);
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded.map(([, r]) => r)).toEqual(["not-authorized", "not-authorized"]);
  });

  test("a key binding alone authorizes no key: the bound key needs a witness window or live evidence of its own (decisions §25)", async () => {
    // Before, a witnessed controller's binding authorized the new key from the binding on, where the route said not.
    const env = setup({ discover: false });
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(NEW_KEY), CONTROLLER, { time: NOW - 500n }));
    const bound = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 400n }) });
    env.index.add(bound);
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded).toEqual([[bound.uid, "not-authorized"]]);
    // Witnessed too, it is authorized from its witness on.
    env.index.add(witness(PUBLISHER, pkh(NEW_KEY), NOW - 450n));
    const before = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 460n }) });
    env.index.add(before);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([bound.uid]);
  });

  test("a key binding written by a stranger authorizes nothing", async () => {
    const env = setup({ discover: false });
    env.index.add(binding(PUBLISHER, pkh(NEW_KEY), STRANGER));
    const a = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER) });
    env.index.add(a);
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded).toEqual([[a.uid, "not-authorized"]]);
  });

  test("a revoked key binding ends the window: claims before it stay, claims after it go", async () => {
    const env = setup();
    env.index.add(witness(PUBLISHER, pkh(OWNER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), OWNER, { time: NOW - 900n, revocationTime: NOW - 300n }));
    const before = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 400n }), time: NOW - 400n });
    const after = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 200n }), time: NOW - 200n });
    env.index.add(before);
    env.index.add(after);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([before.uid]);
    expect(env.excluded).toEqual([[after.uid, "outside-authorization-window"]]);
  });

  test("a claim in the second of the revocation is outside the window (anchoredFrom ≤ at < until, as controller authorization reads it)", async () => {
    // Found by attack: read as at ≤ until, a claim mined in the revocation's block stayed verified for good, while
    // controller authorization at its time said not authorized.
    const env = setup();
    env.index.add(witness(PUBLISHER, pkh(OWNER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), OWNER, { time: NOW - 900n, revocationTime: NOW - 300n }));
    const same = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 400n }), time: NOW - 300n });
    env.index.add(same);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([]);
    expect(env.excluded).toEqual([[same.uid, "outside-authorization-window"]]);
  });

  test("a controller cut off by a revoked binding cannot reopen its window by binding itself, nor bind another key", async () => {
    // The owner bound the controller and revoked the binding; the controller's key (stolen) then wrote a
    // binding naming itself and one naming a new key. Before domain/bindings, the self-binding was the newest and its
    // open window made the claims after the cut "verified" again, the one written while cut off included.
    const env = setup();
    env.index.add(witness(PUBLISHER, pkh(OWNER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), OWNER, { time: NOW - 900n, revocationTime: NOW - 300n }));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), CONTROLLER, { time: NOW - 250n }));
    env.index.add(binding(PUBLISHER, pkh(NEW_KEY), CONTROLLER, { time: NOW - 240n }));
    const before = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 400n }), time: NOW - 400n });
    const cutOff = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 280n }), time: NOW - 280n });
    const reopened = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 200n }), time: NOW - 200n });
    const newKey = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 100n }), time: NOW - 100n });
    for (const a of [before, cutOff, reopened, newKey]) env.index.add(a);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([before.uid]);
    expect(env.excluded.sort()).toEqual(([
      [cutOff.uid, "outside-authorization-window"],
      [reopened.uid, "outside-authorization-window"],
      [newKey.uid, "not-authorized"],
    ] as [string, ExclusionReason][]).sort());
  });

  test("a controller's binding of itself written before the cut does not keep its window open after it", async () => {
    // The stolen key's first move: a binding naming itself (NOW-600), written while it still had authority; the
    // owner's revocation (NOW-300) then left that binding the newest, with no end, and later claims "verified".
    const env = setup();
    env.index.add(witness(PUBLISHER, pkh(OWNER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), OWNER, { time: NOW - 900n, revocationTime: NOW - 300n }));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), CONTROLLER, { time: NOW - 600n }));
    const before = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 400n }), time: NOW - 400n });
    const after = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 200n }), time: NOW - 200n });
    env.index.add(before);
    env.index.add(after);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([before.uid]);
    expect(env.excluded).toEqual([[after.uid, "outside-authorization-window"]]);
  });

  test("a key binding's registry expiry ends the window like a revocation: claims made before it keep their authorization", async () => {
    const env = setup({ discover: false });
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(NEW_KEY), NOW - 950n));
    env.index.add(binding(PUBLISHER, pkh(NEW_KEY), CONTROLLER, { time: NOW - 900n, expirationTime: NOW - 300n }));
    const before = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 400n }), time: NOW - 400n });
    const after = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 200n }), time: NOW - 200n });
    env.index.add(before);
    env.index.add(after);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([before.uid]);
    expect(env.excluded).toEqual([[after.uid, "outside-authorization-window"]]);
  });

  test("a key binding whose purposes exclude assertionMethod refuses the key", async () => {
    const env = setup();
    env.index.add(witness(PUBLISHER, pkh(OWNER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER)));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), OWNER, { data: { keyPurpose: ["keyAgreement"] } }));
    env.index.add(attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) }));
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded.map(([, r]) => r)).toEqual(["not-authorized"]);
  });

  /** The route's verdict (decisions §25) on the same index and endpoints, at `at`. */
  const routeSays = async (env: ReturnType<typeof setup>, controller: string, at: bigint) => {
    const route = createControllerAuthorization({
      index: env.index,
      trustAnchors: anchors(),
      clock: fakeClock(Number(NOW) * 1000),
      discover: createDiscoverControllers({ dns: env.dns, didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" }),
      discoveryCacheSeconds: 600,
    });
    const answer = await route({ subjectDid: PUBLISHER, controllerDid: controller, purpose: "assertionMethod", at: String(at) });
    return answer.ok ? answer.value.authorized : answer.code;
  };
  /**
   * The owner (witnessed, and named by the publisher's DNS now) was bound by another controller whose binding was then
   * revoked: a stale binding "cut" the owner. The owner bound a key (witnessed too), and revoked that binding at NOW-300.
   */
  const ownerRevokesKey = (env: ReturnType<typeof setup>) => {
    for (const address of [OWNER, CONTROLLER, NEW_KEY]) env.index.add(witness(PUBLISHER, pkh(address), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(OWNER), CONTROLLER, { time: NOW - 900n, revocationTime: NOW - 800n }));
    env.index.add(binding(PUBLISHER, pkh(NEW_KEY), OWNER, { time: NOW - 700n, revocationTime: NOW - 300n }));
    const before = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 400n }), time: NOW - 400n });
    const after = attestation({ schema: "responsibility-claim", attester: NEW_KEY, data: claim(PUBLISHER, { issuedAt: NOW - 200n }), time: NOW - 200n });
    env.index.add(before);
    env.index.add(after);
    return { before, after };
  };

  test("an owner the endpoints name is never cut off: its revocation of a key's binding ends the key's window, as the route says (decisions §25)", async () => {
    // Before, artifact trust had its own rule on who is never cut off (an approved issuer, the party itself): the owner
    // read as cut, its binding of the key and that binding's revocation went unseen, and the key's claim after the
    // revocation stayed "verified" where /v1/controller-authorization at its time said not authorized.
    const env = setup({ dns: { "_controllers.publisher.example": { status: "found", records: [`v=1;controller=${pkh(OWNER)}`] } } });
    const { before, after } = ownerRevokesKey(env);
    expect(await routeSays(env, pkh(NEW_KEY), NOW - 400n)).toBe(true);
    expect(await routeSays(env, pkh(NEW_KEY), NOW - 200n)).toBe(false);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([before.uid]);
    expect(env.excluded).toEqual([[after.uid, "outside-authorization-window"]]);
  });

  test("when the endpoints that could make such a binding count do not answer, NETWORK_ERROR, as the route answers: never a guess", async () => {
    const env = setup({ dns: { "_controllers.publisher.example": { status: "timeout" } } });
    ownerRevokesKey(env);
    expect(await routeSays(env, pkh(NEW_KEY), NOW - 200n)).toBe("NETWORK_ERROR");
    expect(await env.run()).toMatchObject({ ok: false, code: "NETWORK_ERROR", message: "Required controller authorization lookup failed" });
    // Without discovery nothing can be read: such a claim is not verified.
    const bare = setup({ discover: false });
    ownerRevokesKey(bare);
    expect((await bare.record()).responsibilityClaims).toEqual([]);
  });

  test("an approved witness issuer's binding counts no more than the route counts it: it does not reopen a revoked key's window", async () => {
    // The owner bound the controller and revoked it (NOW-300); the witness issuer's wallet then bound it again. Before,
    // that binding counted here (never cut off, newest, no end) and the controller's later claim was "verified", where
    // the route (§17's rule: the issuer is no controller of the publisher) said not authorized.
    const env = setup();
    env.index.add(witness(PUBLISHER, pkh(OWNER), NOW - 1000n));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER), NOW - 1000n));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), OWNER, { time: NOW - 900n, revocationTime: NOW - 300n }));
    env.index.add(binding(PUBLISHER, pkh(CONTROLLER), WITNESS, { time: NOW - 250n }));
    const after = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER, { issuedAt: NOW - 200n }), time: NOW - 200n });
    env.index.add(after);
    expect(await routeSays(env, pkh(CONTROLLER), NOW - 200n)).toBe(false);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([]);
    expect(env.excluded).toEqual([[after.uid, "outside-authorization-window"]]);
  });

  test("live DNS evidence authorizes a did:web party with no witness", async () => {
    const env = setup({
      dns: { "_controllers.publisher.example": { status: "found", records: [`v=1;controller=did:pkh:eip155:1:${CONTROLLER}`] } },
    });
    const a = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) });
    const other = attestation({ schema: "responsibility-claim", attester: STRANGER, data: claim(PUBLISHER) });
    env.index.add(a);
    env.index.add(other);
    expect(uidsOf((await env.record()).responsibilityClaims)).toEqual([a.uid]);
    expect(env.excluded).toEqual([[other.uid, "not-authorized"]]);
    // One discovery per party, not per claim.
    expect(env.dns.lookups.filter((l) => l === "TXT _controllers.publisher.example")).toHaveLength(1);
  });

  test("claims naming many domains are looked up live at most LIVE_DISCOVERY_CONCURRENCY at a time, each once", async () => {
    const index = fakeAttestationIndex({ chainId: CHAIN_ID });
    for (const name of SCHEMA_NAMES) index.register(uidOf(name), findSchemaByName(name)!.schema);
    const parties = Array.from({ length: 20 }, (_, i) => `did:web:party${i}.example`);
    for (const party of parties) index.add(attestation({ schema: "responsibility-claim", attester: STRANGER, data: claim(party) }));
    const discover = createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" });
    let running = 0;
    let most = 0;
    const asked: string[] = [];
    const trust = createArtifactTrust({
      index,
      trustAnchors: anchors(),
      clock: fakeClock(Number(NOW) * 1000),
      jws: fakeJwsVerifier(() => true),
      discover: async (subject, options) => {
        asked.push(String(subject));
        most = Math.max(most, ++running);
        await Bun.sleep(1);
        try {
          return await discover(subject, options);
        } finally {
          running--;
        }
      },
    });
    const result = await trust(ARTIFACT);
    expect(result).toMatchObject({ ok: true, value: { summary: { totalQueried: 20, totalVerified: 0, totalExcluded: 20 } } });
    expect(asked.sort()).toEqual([...parties].sort());
    expect(most).toBe(LIVE_DISCOVERY_CONCURRENCY);
  });

  test("live evidence is not consulted when a witness decides", async () => {
    const env = setup({ dns: { "_controllers.publisher.example": { status: "servfail" } } });
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER)));
    env.index.add(attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) }));
    expect((await env.record()).responsibilityClaims).toHaveLength(1);
    expect(env.dns.lookups).toEqual([]);
  });

  test("live evidence that is unavailable when it must decide is NETWORK_ERROR, never a partial answer", async () => {
    const env = setup({ dns: { "_controllers.publisher.example": { status: "timeout" } } });
    env.index.add(attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() }));
    env.index.add(attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) }));
    expect(await env.run()).toMatchObject({
      ok: false,
      code: "NETWORK_ERROR",
      message: "Required controller authorization lookup failed",
    });
  });

  test("live evidence that is reachable and silent excludes the claim", async () => {
    const env = setup();
    const a = attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) });
    env.index.add(a);
    expect((await env.record()).responsibilityClaims).toEqual([]);
    expect(env.excluded).toEqual([[a.uid, "not-authorized"]]);
  });
  test("live evidence is asked fresh: a controller removed from DNS is not kept verified by a spent domain budget", async () => {
    const index = fakeAttestationIndex({ chainId: CHAIN_ID });
    for (const name of SCHEMA_NAMES) index.register(uidOf(name), findSchemaByName(name)!.schema);
    const clock = fakeClock(Number(NOW) * 1000);
    const dns = fakeDnsResolver({ "_controllers.publisher.example": { status: "found", records: [`v=1;controller=${pkh(CONTROLLER)}`] } });
    const discover = createCachedDiscovery(
      createDiscoverControllers({
        dns,
        didDocuments: fakeDidDocumentFetcher(),
        serviceDnsLabel: "omatrust",
        domainRate: createRateLimiter(clock, { capacity: 1, perMinute: 1 }),
      }),
      { clock },
    );
    const trust = createArtifactTrust({ index, trustAnchors: anchors(), clock, jws: fakeJwsVerifier(() => true), discover });
    index.add(attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) }));
    expect(await trust(ARTIFACT)).toMatchObject({ ok: true, value: { summary: { totalVerified: 1 } } });
    // The owner takes the controller out; a minute on, someone spends the domain's one lookup on another name.
    dns.txt["_controllers.publisher.example"] = { status: "found", records: ["v=1"] };
    clock.set(Number(NOW) * 1000 + 61_000);
    await discover("did:web:other.publisher.example");
    // The minute-old answer stood in for the refused lookup: the claim stayed verified for up to ten minutes.
    expect(await trust(ARTIFACT)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    clock.set(Number(NOW) * 1000 + 122_000);
    expect(await trust(ARTIFACT)).toMatchObject({ ok: true, value: { summary: { totalVerified: 0, totalExcluded: 1 } } });
  });
});

describe("createArtifactTrust() linked identifiers", () => {
  const linkedKey = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
  const linkedDid = `did:pkh:eip155:1:${linkedKey.address.toLowerCase()}`;
  /** A controller of linkedId (witnessed in the tests that need it) who attests the link. */
  const attesterKey = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");

  async function eip712Proof(
    overrides: { authorizedEntity?: string; signingPurpose?: string; expirationTimestamp?: bigint; account?: typeof linkedKey } = {},
  ) {
    const account = overrides.account ?? linkedKey;
    const message = {
      signer: account.address,
      authorizedEntity: overrides.authorizedEntity ?? ARTIFACT,
      signingPurpose: overrides.signingPurpose ?? "shared-control",
      creationTimestamp: NOW - 10n,
      expirationTimestamp: overrides.expirationTimestamp ?? NOW + 3600n,
      randomValue: `0x${"11".repeat(32)}` as HexString,
      statement: "I link this artifact",
    };
    const signature = await account.signTypedData({
      domain: { ...OMA_TRUST_PROOF_DOMAIN, chainId: 1 },
      types: OMA_TRUST_PROOF_TYPES,
      primaryType: "OmaTrustProof",
      message,
    });
    const wire = { ...message, creationTimestamp: Number(message.creationTimestamp), expirationTimestamp: Number(message.expirationTimestamp) };
    return JSON.stringify({
      proofType: "pop-eip712",
      proofPurpose: "shared-control",
      proofObject: { domain: { ...OMA_TRUST_PROOF_DOMAIN, chainId: 1 }, message: wire, signature },
    });
  }
  const pointer = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ proofType: "evidence-pointer", proofPurpose: "shared-control", proofObject: { url: "https://publisher.example/links.json" }, ...extra });
  const linked = (proofs: string[], linkedId = linkedDid) => ({ subject: ARTIFACT, linkedId, proofs, ...times });
  /**
   * The attester's authority over the linkedId (decisions §25, the route's computation): a witness window. An account
   * linking its own did:pkh is not authorized by itself.
   */
  const witnessedLinkedKey = (env: { index: { add: (a: never) => void } }) => env.index.add(witness(linkedDid, pkh(linkedKey.address), NOW - 5_000n) as never);
  const BASIS: VerificationBasis[] = ["proof", "controller-authorization", "authorization-window"];

  test("an account linking its own did:pkh is not authorized by its proofs alone (decisions §25)", async () => {
    const env = setup({ discover: false });
    const a = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([await eip712Proof(), pointer()]) });
    env.index.add(a);
    expect((await env.record()).otherAttestations).toEqual([]);
    expect(env.excluded).toEqual([[a.uid, "not-authorized"]]);
  });

  test("a pop-eip712 from linkedId naming the artifact plus an evidence pointer for the artifact side qualifies", async () => {
    const env = setup({ discover: false });
    witnessedLinkedKey(env);
    const a = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([await eip712Proof(), pointer()]) });
    env.index.add(a);
    const record = await env.record();
    expect(uidsOf(record.otherAttestations)).toEqual([a.uid]);
    expect(record.otherAttestations[0]!.verification.basis).toEqual(BASIS);
    // Proofs stay strings in the output.
    expect(typeof (record.otherAttestations[0]!.attestation.data.proofs as unknown[])[0]).toBe("string");
  });

  test("one proof written twice is one entry: it does not stand for both sides; only the first 16 distinct entries are read", async () => {
    const env = setup({ discover: false });
    witnessedLinkedKey(env);
    const proof = await eip712Proof();
    const twice = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([proof, proof]) });
    // The pointer the link needs comes after 16 other entries (each a proof naming another artifact): not read.
    const others = await Promise.all(Array.from({ length: 16 }, (_, i) => eip712Proof({ authorizedEntity: `did:web:other-${i}.example` })));
    const late = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([...others.slice(0, 15), proof, pointer()]) });
    const inTime = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([...others.slice(0, 14), proof, pointer()]) });
    for (const a of [twice, late, inTime]) env.index.add(a);
    expect(uidsOf((await env.record()).otherAttestations)).toEqual([inTime.uid]);
    expect(env.excluded.sort()).toEqual(([[twice.uid, "invalid-proofs"], [late.uid, "invalid-proofs"]] as [string, ExclusionReason][]).sort());
  });

  test("one side is not enough: linkedId's proof alone (even attested by linkedId) or an evidence pointer alone is excluded", async () => {
    const env = setup({ discover: false });
    const linkedOnly = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([await eip712Proof()]) });
    const artifactOnly = attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([pointer(), pointer()]) });
    env.index.add(linkedOnly);
    env.index.add(artifactOnly);
    expect((await env.record()).otherAttestations).toEqual([]);
    expect(env.excluded).toEqual([[linkedOnly.uid, "invalid-proofs"], [artifactOnly.uid, "invalid-proofs"]]);
  });

  test("the attester's signature does not stand for linkedId, even when the attester controls linkedId", async () => {
    const env = setup({ discover: false });
    env.index.add(witness(linkedDid, pkh(attesterKey.address)));
    const a = attestation({
      schema: "linked-identifier",
      attester: attesterKey.address,
      data: linked([await eip712Proof({ account: attesterKey }), pointer()]),
    });
    env.index.add(a);
    expect((await env.record()).otherAttestations).toEqual([]);
    expect(env.excluded).toEqual([[a.uid, "invalid-proofs"]]);
  });

  test("the artifact side may be the attester's own proof naming the artifact; one naming another artifact does not count", async () => {
    const env = setup({ discover: false });
    env.index.add(witness(linkedDid, pkh(attesterKey.address)));
    const good = attestation({
      schema: "linked-identifier",
      attester: attesterKey.address,
      data: linked([await eip712Proof(), await eip712Proof({ account: attesterKey })]),
    });
    const other = attestation({
      schema: "linked-identifier",
      attester: attesterKey.address,
      data: linked([await eip712Proof(), await eip712Proof({ account: attesterKey, authorizedEntity: OTHER_ARTIFACT })]),
    });
    env.index.add(good);
    env.index.add(other);
    const record = await env.record();
    expect(uidsOf(record.otherAttestations)).toEqual([good.uid]);
    expect(record.otherAttestations[0]!.verification.basis).toEqual(BASIS);
    expect(env.excluded).toEqual([[other.uid, "invalid-proofs"]]);
  });

  test("an evidence pointer needs the shared-control purpose, a URL and an expiry not yet passed", async () => {
    const env = setup({ discover: false });
    witnessedLinkedKey(env);
    const linkedProof = await eip712Proof();
    const variants = [
      pointer({ proofPurpose: "commercial-tx" }),
      pointer({ proofObject: {} }),
      pointer({ proofObject: { url: "not a url" } }),
      pointer({ expiresAt: Number(NOW) }),
      pointer({ proofType: "dns-txt" }),
    ];
    for (const p of variants) {
      env.index.add(attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([linkedProof, p]) }));
    }
    // A URL given as a JSON string and a future expiry are fine.
    const fine = attestation({
      schema: "linked-identifier",
      attester: linkedKey.address,
      data: linked([linkedProof, pointer({ proofObject: JSON.stringify({ url: "ipfs://bafy" }), expiresAt: Number(NOW + 60n) })]),
    });
    env.index.add(fine);
    expect(uidsOf((await env.record()).otherAttestations)).toEqual([fine.uid]);
    expect(env.excluded.map(([, r]) => r)).toEqual(Array(variants.length).fill("invalid-proofs"));
  });

  test("no proofs, garbage, another audience, another purpose, an expired or a forged linkedId proof are excluded", async () => {
    const env = setup({ discover: false });
    const good = await eip712Proof();
    const forged = good.replace(/"statement":"I link this artifact"/, '"statement":"Something else"');
    const variants = [
      [],
      ["not json", "{}"],
      [await eip712Proof({ authorizedEntity: OTHER_ARTIFACT })],
      [await eip712Proof({ signingPurpose: "commercial-tx" })],
      [await eip712Proof({ expirationTimestamp: NOW - 1n })],
      [forged],
    ];
    for (const proofs of variants) {
      env.index.add(attestation({ schema: "linked-identifier", attester: linkedKey.address, data: linked([...proofs, pointer()]) }));
    }
    expect((await env.record()).otherAttestations).toEqual([]);
    expect(env.excluded.map(([, r]) => r)).toEqual(Array(variants.length).fill("invalid-proofs"));
  });

  test("valid proofs from both sides still need the attester to control linkedId", async () => {
    const env = setup({ discover: false });
    const a = attestation({ schema: "linked-identifier", attester: STRANGER, data: linked([await eip712Proof(), pointer()]) });
    env.index.add(a);
    expect((await env.record()).otherAttestations).toEqual([]);
    expect(env.excluded).toEqual([[a.uid, "not-authorized"]]);
  });

  test("a pop-jws from a did:jwk linkedId, verified through the port, with a witnessed attester", async () => {
    const jwk = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
    const keyDid = (jwkToDidJwk(jwk) as { value: string }).value;
    const part = (v: unknown) => base64UrlEncode(new TextEncoder().encode(JSON.stringify(v)));
    const jws = `${part({ alg: "ES256", jwk })}.${part({ oma3_proof_purpose: "shared-control", iss: keyDid, aud: ARTIFACT, iat: Number(NOW - 5n), exp: Number(NOW + 60n) })}.${base64UrlEncode(new Uint8Array(64))}`;
    const proof = JSON.stringify({ proofType: "pop-jws", proofPurpose: "shared-control", proofObject: jws });
    for (const valid of [true, false]) {
      const env = setup({ discover: false, jwsValid: valid });
      env.index.add(witness(keyDid, pkh(CONTROLLER)));
      env.index.add(attestation({ schema: "linked-identifier", attester: CONTROLLER, data: linked([proof, pointer()], keyDid) }));
      expect((await env.record()).otherAttestations).toHaveLength(valid ? 1 : 0);
      expect(env.jws.checks).toHaveLength(1);
      expect(env.jws.checks[0]).toMatchObject({ alg: "ES256", jwk: { kty: "EC", crv: "P-256" } });
    }
  });
});

describe("createArtifactTrust() dependency failures", () => {
  const seed = (env: ReturnType<typeof setup>) => {
    env.index.add(attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() }));
    env.index.add(witness(PUBLISHER, pkh(CONTROLLER)));
    env.index.add(attestation({ schema: "responsibility-claim", attester: CONTROLLER, data: claim(PUBLISHER) }));
  };

  for (const [method, n, message] of [
    ["latestBlock", 1, "Artifact trust chain query is temporarily unavailable"],
    ["schemaRecords", 1, "Artifact trust schema lookup is temporarily unavailable"],
    ["attestedUids", 1, "Artifact trust chain query is temporarily unavailable"],
    ["attestations", 1, "Artifact trust chain query is temporarily unavailable"],
    ["attestedUids", 2, "Required controller authorization lookup failed"],
    ["attestations", 2, "Required controller authorization lookup failed"],
  ] as const) {
    test(`a failed ${method} (call ${n}) is NETWORK_ERROR: ${message}`, async () => {
      const env = setup({ discover: false });
      seed(env);
      env.index.failWhen = (m, i) => m === method && i === n;
      expect(await env.run()).toMatchObject({ ok: false, code: "NETWORK_ERROR", message });
    });
  }

  test("a logged uid the index cannot read back is NETWORK_ERROR, never an exclusion", async () => {
    const env = setup({ discover: false });
    const a = attestation({ schema: "security-assessment", attester: AUDITOR, data: assessment() });
    env.index.add(a);
    env.index.attestations = () => Promise.resolve({ ok: true, value: [] });
    expect(await env.run()).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
  });

  test("the seeded request succeeds when nothing fails, with a fixed number of index calls", async () => {
    const env = setup({ discover: false });
    seed(env);
    const record = await env.record();
    expect(record.summary).toEqual({ totalQueried: 2, totalVerified: 2, totalExcluded: 0, complete: true });
    expect(env.index.calls).toEqual({ latestBlock: 1, schemaRecords: 1, attestedUids: 2, attestations: 2 });
  });
});
