import { describe, expect, test } from "bun:test";
import { silentLogger } from "../adapters/observability/mod.ts";
import { type ArtifactTrustItem, type ArtifactTrustRecord, createArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { createDelegatedAttest } from "../domain/delegation/mod.ts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { createReadNonce } from "../domain/delegation/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";
import type { HexString } from "../ports/eas.ts";
import {
  fakeAttestationIndex,
  fakeClock,
  fakeDelegate,
  fakeEasReader,
  fakeJwsVerifier,
  fakeReplayStore,
} from "../ports/fakes/mod.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { createApp } from "../http/app.ts";
import { checkArtifactTrust, COULD_NOT_LOAD, evaluateArtifactTrust, NO_QUALIFYING_EVIDENCE } from "./artifact_trust.ts";

const ARTIFACT = artifactDidFromDigest(`0x${"ab".repeat(32)}`);
const CHAIN = { chainId: 31337, caip2: "eip155:31337", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" };

const item = (schemaName: ArtifactTrustItem["attestation"]["schemaName"], data: Record<string, unknown>, basis: string[]) =>
  ({
    attestation: {
      uid: `0x${"01".repeat(32)}`,
      schema: `0x${"02".repeat(32)}`,
      schemaName,
      attester: "0x0000000000000000000000000000000000000001",
      recipient: "0x0000000000000000000000000000000000000002",
      time: "1",
      expirationTime: "0",
      revocationTime: "0",
      data,
    },
    verification: { valid: true, basis },
  }) as ArtifactTrustItem;

const record = (groups: Partial<Pick<ArtifactTrustRecord, "responsibilityClaims" | "securityAssessments" | "certifications" | "otherAttestations">> = {}) =>
  ({
    artifactDid: ARTIFACT,
    chain: CHAIN,
    trustAnchorsVersion: 1,
    responsibilityClaims: [],
    securityAssessments: [],
    certifications: [],
    otherAttestations: [],
    summary: { totalQueried: 0, totalVerified: 0, totalExcluded: 0, complete: true },
    ...groups,
  }) as ArtifactTrustRecord;

const claimBy = (party: string) => item("responsibility-claim", { responsibleParty: party }, ["controller-authorization", "authorization-window"]);

describe("evaluateArtifactTrust()", () => {
  test("a responsibility claim by the declared publisher (compared normalized) suppresses the warning", () => {
    const verdict = evaluateArtifactTrust(record({ responsibilityClaims: [claimBy("did:web:WWW.Publisher.example"), claimBy("did:web:other.example")] }), {
      publisherDid: "did:web:publisher.example",
    });
    expect(verdict.warn).toBe(false);
    expect(verdict.reasons).toEqual([]);
    expect(verdict.qualifyingClaims.responsibilityClaims).toHaveLength(1);
    expect(verdict.unqualifiedResponsibilityClaims).toBe(1);
  });

  test("with a declared publisher, a claim by anybody else does not; a declared publisher that is no DID matches nobody", () => {
    const r = record({ responsibilityClaims: [claimBy("did:web:other.example")] });
    expect(evaluateArtifactTrust(r, { publisherDid: "did:web:publisher.example" })).toMatchObject({
      warn: true,
      reasons: [NO_QUALIFYING_EVIDENCE],
      unqualifiedResponsibilityClaims: 1,
    });
    expect(evaluateArtifactTrust(r, { publisherDid: "did:" }).warn).toBe(true);
  });

  test("with no declared publisher (absent or blank), any returned responsibility claim suppresses the warning", () => {
    const r = record({ responsibilityClaims: [claimBy("did:web:other.example"), claimBy("did:pkh:eip155:1:0x0000000000000000000000000000000000000003")] });
    for (const options of [{}, { publisherDid: undefined }, { publisherDid: "  " }]) {
      const verdict = evaluateArtifactTrust(r, options);
      expect(verdict).toMatchObject({ warn: false, reasons: [], unqualifiedResponsibilityClaims: 0 });
      expect(verdict.qualifyingClaims.responsibilityClaims).toHaveLength(2);
    }
    expect(evaluateArtifactTrust(record()).warn).toBe(true);
  });

  test("a security assessment with basis approved-issuer suppresses it; certifications and linked identifiers never do", () => {
    expect(evaluateArtifactTrust(record({ securityAssessments: [item("security-assessment", {}, ["approved-issuer"])] })).warn).toBe(false);
    const informational = evaluateArtifactTrust(record({
      certifications: [item("certification", {}, ["approved-issuer"])],
      otherAttestations: [item("linked-identifier", { linkedId: "did:web:x" }, ["proof"])],
      securityAssessments: [item("security-assessment", {}, ["proof"])],
    }));
    expect(informational.warn).toBe(true);
    expect(informational.informational.certifications).toHaveLength(1);
    expect(informational.informational.linkedIdentifiers).toHaveLength(1);
  });

  test("a record for another chain or of the wrong shape warns", () => {
    const r = record({ securityAssessments: [item("security-assessment", {}, ["approved-issuer"])] });
    expect(evaluateArtifactTrust(r, { pinnedChain: { ...CHAIN, chainId: 6623 } })).toMatchObject({ warn: true, failure: { code: "CHAIN_MISMATCH" } });
    expect(evaluateArtifactTrust(r, { pinnedChain: { chainId: 31337, easContract: "0x0000000000000000000000000000000000000001" } }).warn).toBe(true);
    expect(evaluateArtifactTrust(r, { pinnedChain: { ...CHAIN, easContract: CHAIN.easContract.toLowerCase() } }).warn).toBe(false);
    expect(evaluateArtifactTrust({ nope: true })).toMatchObject({ warn: true, failure: { code: "INVALID_RESPONSE" } });
  });

  test("an answer the service never gives warns: about another artifact, not complete, an item not a returned record", () => {
    const assessment = item("security-assessment", {}, ["approved-issuer"]);
    const good = record({ securityAssessments: [assessment] });
    expect(evaluateArtifactTrust(good, { artifactDid: ARTIFACT }).warn).toBe(false);
    const invalid = { warn: true, failure: { code: "INVALID_RESPONSE" } };
    // A cache that ignores the query string answers another artifact's record.
    const other = `did:artifact:${"b".repeat(ARTIFACT.length - "did:artifact:".length)}`;
    expect(evaluateArtifactTrust({ ...good, artifactDid: other }, { artifactDid: ARTIFACT })).toMatchObject(invalid);
    expect(evaluateArtifactTrust({ ...good, artifactDid: undefined }, { artifactDid: ARTIFACT })).toMatchObject(invalid);
    expect(evaluateArtifactTrust({ ...good, summary: { ...good.summary, complete: false } })).toMatchObject(invalid);
    expect(evaluateArtifactTrust({ ...good, summary: undefined })).toMatchObject(invalid);
    for (const bad of [{}, null, { ...assessment, verification: { ...assessment.verification, valid: false } }, { ...assessment, attestation: { ...assessment.attestation, revocationTime: "5" } }]) {
      expect({ bad, verdict: evaluateArtifactTrust(record({ securityAssessments: [bad as ArtifactTrustItem] })) }).toMatchObject({ bad, verdict: invalid });
    }
    expect(evaluateArtifactTrust(record({ responsibilityClaims: [{} as ArtifactTrustItem] }))).toMatchObject(invalid);
  });
});

describe("checkArtifactTrust() against the service", () => {
  const AUDITOR = "0xA000000000000000000000000000000000000001" as HexString;
  const names = ["responsibility-claim", "security-assessment", "certification", "linked-identifier"];
  const uidOf = (name: string) => computeSchemaUid(findSchemaByName(name)!).toLowerCase() as HexString;
  const anchors: TrustAnchors = {
    version: 1,
    updatedAt: "2026-01-01T00:00:00Z",
    widgetOrigins: [],
    chains: { [CHAIN.caip2]: { name: "ATS Devnet", easContract: CHAIN.easContract, schemas: Object.fromEntries(names.map((n) => [n, uidOf(n)])) } },
    registries: [{ type: "approved-issuers", issuers: [{ address: AUDITOR, label: "Audit Co", schemas: ["security-assessment"] }] }],
  };

  function service(withAssessment: boolean) {
    const clock = fakeClock(1_800_000_000_000);
    const index = fakeAttestationIndex();
    for (const name of names) index.register(uidOf(name), findSchemaByName(name)!.schema);
    if (withAssessment) {
      index.add({
        uid: `0x${"01".repeat(32)}`,
        schema: uidOf("security-assessment"),
        time: 1_799_999_000n,
        expirationTime: 0n,
        revocationTime: 0n,
        refUID: `0x${"0".repeat(64)}`,
        recipient: (didToAddress(ARTIFACT) as { value: HexString }).value,
        attester: AUDITOR,
        revocable: false,
        data: (encodeSchemaData(findSchemaByName("security-assessment")!.schema, {
          subject: ARTIFACT,
          organization: "Audit Co",
          version: "1",
          versionHW: "",
          payload: "",
          payloadVersion: "",
          payloadSpecURI: "",
          payloadSpecDigest: "",
          issuedAt: 1,
          effectiveAt: 0,
          expiresAt: 0,
        }) as { value: HexString }).value,
      });
    }
    const eas = fakeEasReader();
    const app = createApp({
      eas: {
        readNonce: createReadNonce(eas),
        delegatedAttest: createDelegatedAttest({ clock, eas, delegate: fakeDelegate(), replay: fakeReplayStore(), mainnet: false, subsidized: new Map() }),
        chainName: "ATS Devnet",
        chainId: eas.chainId,
        easAddress: eas.easAddress,
      },
      trustAnchors: anchors,
      log: silentLogger,
      ready: () => Promise.resolve({ ready: true, checks: {} }),
      artifactTrust: createArtifactTrust({ index, trustAnchors: anchors, clock, jws: fakeJwsVerifier() }),
    });
    return { index, fetch: (url: string, init?: RequestInit) => app.handle(new Request(url, init)) };
  }

  test("an approved security assessment: no warning, with the assessment to show", async () => {
    const svc = service(true);
    const verdict = await checkArtifactTrust(ARTIFACT, { url: "http://localhost/v1/artifact-trust", fetch: svc.fetch, pinnedChain: CHAIN });
    expect(verdict.warn).toBe(false);
    expect(verdict.qualifyingClaims.securityAssessments[0]!.attestation.attesterLabel).toBe("Audit Co");
  });

  test("no evidence warns with the policy reason", async () => {
    const verdict = await checkArtifactTrust(ARTIFACT, { url: "http://localhost/v1/artifact-trust", fetch: service(false).fetch });
    expect(verdict).toMatchObject({ warn: true, reasons: [NO_QUALIFYING_EVIDENCE] });
  });

  test("a 502, a 400, a network failure or a timeout warns that trust could not be loaded", async () => {
    const svc = service(true);
    svc.index.failWhen = () => true;
    expect(await checkArtifactTrust(ARTIFACT, { url: "http://localhost/v1/artifact-trust", fetch: svc.fetch })).toMatchObject({
      warn: true,
      reasons: [COULD_NOT_LOAD],
      failure: { code: "NETWORK_ERROR", status: 502 },
    });
    expect(await checkArtifactTrust("did:web:x", { url: "http://localhost/v1/artifact-trust", fetch: svc.fetch })).toMatchObject({
      warn: true,
      failure: { code: "INVALID_DID", status: 400 },
    });
    expect(await checkArtifactTrust(ARTIFACT, { fetch: () => Promise.reject(new TypeError("connection refused")) })).toMatchObject({
      warn: true,
      failure: { code: "NETWORK_ERROR" },
    });
    const slow = (_url: string, init?: RequestInit) =>
      new Promise<Response>((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
    expect(await checkArtifactTrust(ARTIFACT, { fetch: slow, timeoutMs: 20 })).toMatchObject({ warn: true, reasons: [COULD_NOT_LOAD] });
  });
});
