/** Every public-read helper takes `chain` and sends it as the `chain` query parameter (decisions §30), against a local server. */
import { afterAll, describe, expect, test } from "bun:test";
import { countAttestations, discoverControllers, fetchArtifactTrust, getAttestation, listAttestations } from "./api.ts";
import { checkArtifactTrust } from "./artifact_trust.ts";
import { chainQueryValue } from "./chain.ts";
import { fetchControllerAuthorization, resolveDidUrl } from "./controller_authorization.ts";
import { isAtsClientError } from "./errors.ts";
import { fetchKeyStatus } from "./keys.ts";

const EAS = "0x00000000000000000000000000000000000000ea";
const chainOf = (id: number) => ({ chainId: id, caip2: `eip155:${id}`, easContract: EAS });

// The local service: records each request's path and query, answers with the chain the request named (default 31337).
const seen: string[] = [];
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(request) {
    const url = new URL(request.url);
    seen.push(`${url.pathname}${url.search}`);
    const named = url.searchParams.get("chain");
    const chain = chainOf(named === null ? 31337 : Number(named.replace("eip155:", "")));
    const body = {
      chain,
      asOf: { blockNumber: 1, blockHash: "0x", timestamp: null, checkedAt: 0 },
      items: [],
      nextCursor: null,
      count: 0,
      responsibilityClaims: [],
      securityAssessments: [],
      certifications: [],
      otherAttestations: [],
      artifactDid: url.searchParams.get("artifactDid"),
      summary: { totalQueried: 0, totalVerified: 0, totalExcluded: 0, complete: true },
    };
    // Key status answers the record asked for (the helper refuses one about another subject, key or time).
    const keyStatus = url.pathname !== "/v1/key-status" ? {} : {
      subjectDid: url.searchParams.get("subjectDid"),
      keyDid: url.searchParams.get("keyDid"),
      at: 1,
      status: "registered",
      trustLevel: "none",
      endpointEvidence: { found: false, sources: [], checkedAt: 1 },
      controllerWitness: null,
      keyBinding: null,
    };
    return Response.json({ ...body, ...keyStatus });
  },
});
afterAll(() => server.stop(true));
const baseUrl = `http://127.0.0.1:${server.port}`;
const SUBJECT = "did:web:shop.example";
const KEY = "did:pkh:eip155:1:0x00000000000000000000000000000000000000aa";
const ARTIFACT = `did:artifact:sha256:${"ab".repeat(32)}`;

/** Each helper once, with `chain` as given (or none). */
async function readAll(chain: string | number | undefined) {
  const options = { baseUrl, ...(chain === undefined ? {} : { chain }) };
  return [
    await listAttestations({ subject: SUBJECT }, options),
    await countAttestations({ attester: "0xab" }, options),
    await getAttestation(`0x${"1".repeat(64)}`, options),
    await discoverControllers(SUBJECT, options),
    await discoverControllers(SUBJECT, { ...options, walletDid: KEY }),
    await fetchArtifactTrust(ARTIFACT, options),
    await fetchControllerAuthorization({ subjectDid: SUBJECT, controllerDid: KEY }, options),
    await resolveDidUrl(`${SUBJECT}#key-1`, options),
    await fetchKeyStatus({ subjectDid: SUBJECT, keyDid: KEY }, options),
  ];
}

describe("chain on every public read (decisions §30)", () => {
  test("a CAIP-2 chain is sent as chain=eip155:<id> by every helper, and each answer's chain is typed and read back", async () => {
    seen.length = 0;
    const answers = await readAll("eip155:31338");
    expect(seen).toHaveLength(9);
    for (const line of seen) expect(new URLSearchParams(line.split("?")[1]).get("chain")).toBe("eip155:31338");
    expect(seen[2]).toBe(`/v1/attestations/0x${"1".repeat(64)}?chain=eip155%3A31338`);
    for (const answer of answers) expect(answer.chain).toEqual(chainOf(31338));
  });

  test("a decimal chain id, as a number or a string, is sent as given", async () => {
    seen.length = 0;
    await readAll(8453);
    await readAll("8453");
    expect(seen).toHaveLength(18);
    for (const line of seen) expect(new URLSearchParams(line.split("?")[1]).get("chain")).toBe("8453");
  });

  test("no chain: no chain parameter is sent (today's requests, the default chain answers)", async () => {
    seen.length = 0;
    const answers = await readAll(undefined);
    expect(seen.filter((line) => line.includes("chain="))).toEqual([]);
    expect(seen).toContain("/v1/attestations/count?attester=0xab");
    expect(seen).toContain(`/v1/attestations/0x${"1".repeat(64)}`);
    for (const answer of answers) expect(answer.chain?.chainId).toBe(31337);
  });

  test("a chain the service would refuse as malformed throws INVALID_INPUT before any request", async () => {
    seen.length = 0;
    for (const bad of ["base", "eip155:0", "cosmos:1", "-1", 1.5, ""]) {
      expect(() => chainQueryValue(bad)).toThrow();
      const error = await listAttestations({ subject: SUBJECT }, { baseUrl, chain: bad }).then(() => undefined, (e: unknown) => e);
      expect(isAtsClientError(error, "INVALID_INPUT")).toBe(true);
      const keyError = await fetchKeyStatus({ subjectDid: SUBJECT, keyDid: KEY }, { baseUrl, chain: bad }).then(() => undefined, (e: unknown) => e);
      expect(isAtsClientError(keyError, "INVALID_INPUT")).toBe(true);
    }
    expect(seen).toEqual([]);
  });
});

describe("checkArtifactTrust() with chain", () => {
  const url = `${baseUrl}/v1/artifact-trust`;

  test("sends chain and accepts the answer for that chain; a malformed chain is a failure verdict, with no request", async () => {
    seen.length = 0;
    const verdict = await checkArtifactTrust(ARTIFACT, { url, chain: "eip155:31338" });
    expect(verdict.failure).toBeUndefined();
    expect(seen).toEqual([`/v1/artifact-trust?artifactDid=${encodeURIComponent(ARTIFACT)}&chain=eip155%3A31338`]);
    expect((await checkArtifactTrust(ARTIFACT, { url, chain: "nope" })).failure).toEqual({ code: "INVALID_INPUT" });
    expect(seen).toHaveLength(1);
  });

  test("an answer for another chain than the one asked is CHAIN_MISMATCH", async () => {
    const lying = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Response.json({ chain: chainOf(1), responsibilityClaims: [], securityAssessments: [], certifications: [], otherAttestations: [] }) });
    try {
      const verdict = await checkArtifactTrust(ARTIFACT, { url: `http://127.0.0.1:${lying.port}/v1/artifact-trust`, chain: 31338 });
      expect(verdict.failure?.code).toBe("CHAIN_MISMATCH");
    } finally {
      lying.stop(true);
    }
  });
});
