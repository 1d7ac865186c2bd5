/**
 * The one request every helper makes (client/http.ts), as a new user met it (found by trying the packed packages):
 * a base URL that answers 200 with an HTML page had that page returned as the "record"; a base URL ending in `/`
 * sent every request to `//v1/…` (404); `fetchTrustAnchors` took `url` only and silently read the local service for
 * a `baseUrl`; a 429's `Retry-After` was not given to the caller.
 */
import { describe, expect, test } from "bun:test";
import { getAttestation } from "./api.ts";
import { checkArtifactTrust } from "./artifact_trust.ts";
import { fetchNonce } from "./delegated_attest.ts";
import { AtsClientError, isAtsClientError } from "./errors.ts";
import { fetchKeyStatus } from "./keys.ts";
import { signInWithWallet } from "./session.ts";
import { clearTrustAnchorsCache, fetchTrustAnchors } from "./trust_anchors.ts";

/** A fetch answering `answer` to everything, remembering the URLs asked. */
function answering(answer: () => Response) {
  const urls: string[] = [];
  const fetch = ((url: string) => (urls.push(url), Promise.resolve(answer()))) as unknown as typeof globalThis.fetch;
  return { urls, fetch };
}

const thrown = async (run: () => Promise<unknown>) => await run().then(() => undefined, (e: unknown) => e);

describe("requestJson() through the helpers", () => {
  test("a 200 that is not JSON (another server, a proxy's page) is INVALID_RESPONSE, never returned as the record", async () => {
    const { fetch } = answering(() => new Response("<!doctype html><title>Welcome</title>", { headers: { "content-type": "text/html" } }));
    const options = { baseUrl: "http://elsewhere.test", fetch };
    for (const run of [() => fetchNonce("0x1111111111111111111111111111111111111111", options), () => getAttestation(`0x${"ab".repeat(32)}`, options),
      () => fetchKeyStatus({ subjectDid: "did:web:a.example", keyDid: "did:pkh:eip155:1:0x1111111111111111111111111111111111111111" }, options)]) {
      const error = await thrown(run);
      expect(isAtsClientError(error) ? [error.code, error.status] : error).toEqual(["INVALID_RESPONSE", 200]);
    }
  });

  test("a base URL with a trailing slash reaches the same paths; one with a query is INVALID_INPUT with no request", async () => {
    const json = () => Response.json({ nonce: "0", chainId: 31337, chain: "ATS Devnet", easAddress: `0x${"ee".repeat(20)}` });
    const slashed = answering(json);
    await fetchNonce("0x1111111111111111111111111111111111111111", { baseUrl: "http://ats.test//", fetch: slashed.fetch });
    expect(slashed.urls).toEqual(["http://ats.test/v1/nonce?attester=0x1111111111111111111111111111111111111111"]);
    const queried = answering(json);
    const error = await thrown(() => fetchNonce("0x1111111111111111111111111111111111111111", { baseUrl: "http://ats.test?token=abc", fetch: queried.fetch }));
    expect(isAtsClientError(error) ? error.code : error).toBe("INVALID_INPUT");
    expect(queried.urls).toEqual([]);
  });

  test("a refusal carries its Retry-After", async () => {
    const { fetch } = answering(() => Response.json({ error: "Too many requests", code: "RATE_LIMITED" }, { status: 429, headers: { "retry-after": "17" } }));
    const error = await thrown(() => fetchNonce("0x1111111111111111111111111111111111111111", { baseUrl: "http://ats.test", fetch }));
    expect(error instanceof AtsClientError ? [error.code, error.status, error.retryAfterSeconds] : error).toEqual(["RATE_LIMITED", 429, 17]);
  });

  test("fetchTrustAnchors and checkArtifactTrust take baseUrl as every other helper does", async () => {
    clearTrustAnchorsCache();
    const anchors = answering(() => Response.json({ version: 1, updatedAt: "2026-01-01T00:00:00Z", chains: {}, registries: [] }));
    await fetchTrustAnchors({ baseUrl: "http://ats.test/", fetch: anchors.fetch }).catch(() => undefined);
    expect(anchors.urls).toEqual(["http://ats.test/v1/trust-anchors"]);
    const trust = answering(() => Response.json({ error: "down", code: "NETWORK_ERROR" }, { status: 502 }));
    await checkArtifactTrust(`did:artifact:${"a".repeat(59)}`, { baseUrl: "http://ats.test", fetch: trust.fetch });
    expect(trust.urls.map((u) => u.split("?")[0])).toEqual(["http://ats.test/v1/artifact-trust"]);
    clearTrustAnchorsCache();
  });

  test("signInWithWallet with a walletDid that is no did:pkh:eip155 is INVALID_DID before any request", async () => {
    // Before: sent with a null chainId and refused as "chainId is invalid: expected integer".
    const { urls, fetch } = answering(() => Response.json({}));
    const error = await thrown(() => signInWithWallet({ walletDid: "0x1234", domain: "app.test", uri: "https://app.test", sign: () => Promise.resolve("0x") }, { baseUrl: "http://ats.test", fetch }));
    expect([isAtsClientError(error) ? error.code : error, urls]).toEqual(["INVALID_DID", []]);
  });
});
