import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { silentLogger } from "../adapters/observability/mod.ts";
import { type ArtifactTrust, createArtifactTrust } from "../domain/artifact_trust/mod.ts";

/** What the app's reads over the index add to an answer: the head it was computed at (decisions §21). */
const withAsOf = (trust: ArtifactTrust): ArtifactTrust => async (did) => {
  const result = await trust(did);
  return result.ok ? { ok: true, value: { ...result.value, asOf: { blockNumber: 1000, blockHash: `0x${"ab".repeat(32)}`, timestamp: 1_700_000_000, checkedAt: 1_700_000_001 } } } : result;
};
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
import { createApp } from "./app.ts";
import { fail } from "../domain/result.ts";
import { artifactTrustRoutes } from "./routes/artifact_trust.ts";
import { ArtifactTrustRecordModel } from "./models.ts";

const ARTIFACT = artifactDidFromDigest(`0x${"ab".repeat(32)}`);
const AUDITOR = "0xA000000000000000000000000000000000000001" as HexString;
const NAMES = ["responsibility-claim", "security-assessment", "certification", "linked-identifier", "controller-witness", "key-binding"];
const uidOf = (name: string) => computeSchemaUid(findSchemaByName(name)!).toLowerCase() as HexString;
const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: {
    "eip155:31337": {
      name: "ATS Devnet",
      easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
      schemas: Object.fromEntries(NAMES.map((n) => [n, uidOf(n)])),
    },
  },
  registries: [{ type: "approved-issuers", issuers: [{ address: AUDITOR, label: "Audit Co", schemas: ["security-assessment"] }] }],
};

function setup(override?: ArtifactTrust) {
  const clock = fakeClock(1_800_000_000_000);
  const index = fakeAttestationIndex();
  for (const name of NAMES) index.register(uidOf(name), findSchemaByName(name)!.schema);
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
      payload: "{}",
      payloadVersion: "1",
      payloadSpecURI: "",
      payloadSpecDigest: "",
      issuedAt: 1_799_999_000n,
      effectiveAt: 0,
      expiresAt: 0,
    }) as { value: HexString }).value,
  });
  const eas = fakeEasReader();
  const app = createApp({
    eas: {
      readNonce: createReadNonce(eas),
      delegatedAttest: createDelegatedAttest({
        clock,
        eas,
        delegate: fakeDelegate(),
        replay: fakeReplayStore(),
        mainnet: false,
        subsidized: new Map(),
      }),
      chainName: "ATS Devnet",
      chainId: eas.chainId,
      easAddress: eas.easAddress,
    },
    trustAnchors: anchors,
    log: silentLogger,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    artifactTrust: override ?? withAsOf(createArtifactTrust({ index, trustAnchors: anchors, clock, jws: fakeJwsVerifier() })),
  });
  const call = async (path: string, method = "GET") => {
    const response = await app.handle(new Request(`http://localhost${path}`, { method }));
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
  return { call, index };
}

describe("artifact-trust routes", () => {
  test("both paths answer the same record, which matches the response model", async () => {
    const env = setup();
    const gateway = await env.call(`/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    const backend = await env.call(`/api/public/artifact-trust?artifactDid=${encodeURIComponent(ARTIFACT)}`);
    expect(gateway.status).toBe(200);
    expect(backend).toEqual({ ...gateway, headers: backend.headers });
    expect(gateway.headers.get("access-control-allow-origin")).toBe("*");
    expect(Value.Check(ArtifactTrustRecordModel, gateway.body)).toBe(true);
    expect(gateway.body.securityAssessments[0].attestation).toMatchObject({
      attesterLabel: "Audit Co",
      time: "1799999000",
      data: { issuedAt: "1799999000", effectiveAt: "0" },
    });
  });

  test("only artifactDid and chain are read: rpc, schemas, block range and bypass flags change nothing", async () => {
    const env = setup();
    const plain = await env.call(`/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    for (const chain of ["", "&chain=31337", "&chain=eip155:31337"]) {
      const loaded = await env.call(
        `/v1/artifact-trust?artifactDid=${ARTIFACT}${chain}&rpcUrl=http://evil&schemas=user-review&fromBlock=0&includeInvalid=true&limit=1`,
      );
      expect(loaded.body).toEqual(plain.body);
    }
  });

  test("a chain not served is 400 UNSUPPORTED_CHAIN, a malformed or repeated one 400 INVALID_INPUT, with no index read (decisions §30)", async () => {
    const env = setup();
    for (const [chain, code] of [["eip155:1", "UNSUPPORTED_CHAIN"], ["8453", "UNSUPPORTED_CHAIN"], ["base", "INVALID_INPUT"], ["0", "INVALID_INPUT"], ["31337&chain=31337", "INVALID_INPUT"]]) {
      const res = await env.call(`/v1/artifact-trust?artifactDid=${ARTIFACT}&chain=${chain}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code });
    }
    expect(env.index.calls.latestBlock).toBe(0);
  });

  test("missing, empty, repeated or malformed artifactDid is 400 INVALID_DID with no chain read", async () => {
    const env = setup();
    for (const query of ["", "?artifactDid=", `?artifactDid=${ARTIFACT}&artifactDid=${ARTIFACT}`, "?artifactDid=did:web:example.com", "?artifactDid=did:artifact:bogus"]) {
      const res = await env.call(`/v1/artifact-trust${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: "INVALID_DID", error: "artifactDid must be a valid did:artifact DID" });
    }
    expect(env.index.calls.latestBlock).toBe(0);
  });

  test("an index not kept up is 503 INDEX_STALE with Retry-After; never an old answer", async () => {
    const env = setup(() => Promise.resolve({ ok: false, code: "INDEX_STALE", message: "The attestation index is not keeping up with the chain; try again shortly" }));
    const res = await env.call(`/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(res.body).toEqual({ code: "INDEX_STALE", error: "The attestation index is not keeping up with the chain; try again shortly" });
  });

  test("a failed lookup is 502 NETWORK_ERROR without upstream text; never a 200", async () => {
    const env = setup();
    env.index.failWhen = (method) => method === "attestations";
    const res = await env.call(`/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: "NETWORK_ERROR", error: "Artifact trust chain query is temporarily unavailable" });
  });

  test("the live check looks endpoints up as the client: its share of each domain's lookup budget (none known: no client)", async () => {
    const clients: unknown[] = [];
    const artifactTrust: ArtifactTrust = (_did, options) => (clients.push(options?.client), Promise.resolve(fail("NETWORK_ERROR", "down")));
    const url = `http://localhost/v1/artifact-trust?artifactDid=${ARTIFACT}`;
    await artifactTrustRoutes({ artifactTrust, log: silentLogger, clientAddress: () => "203.0.113.7" }).handle(new Request(url));
    await artifactTrustRoutes({ artifactTrust, log: silentLogger }).handle(new Request(url));
    expect(clients).toEqual(["203.0.113.7", undefined]);
  });

  test("a bug is 500 INTERNAL_ERROR with no detail of its own", async () => {
    const env = setup(() => Promise.reject(new Error("secret http://rpc.internal/key")));
    const res = await env.call(`/v1/artifact-trust?artifactDid=${ARTIFACT}`);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ code: "INTERNAL_ERROR", error: "Internal error", details: "Artifact trust lookup failed" });
  });

  test("OPTIONS is 204 with CORS; POST is 405 with Allow", async () => {
    const env = setup();
    const options = await env.call("/v1/artifact-trust", "OPTIONS");
    expect(options.status).toBe(204);
    const post = await env.call("/api/public/artifact-trust", "POST");
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toContain("GET");
  });
});
