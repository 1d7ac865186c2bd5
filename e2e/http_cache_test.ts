import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sha256, stringToBytes } from "viem";
import { artifactDidFromDigest } from "../domain/did/mod.ts";
import { startStack, type Stack } from "./harness.ts";

// Decisions §21, issue 34 item 3, over the real server: a client (or a CDN) that holds an artifact-trust answer asks
// again with its ETag and gets 304 with no body while the answer is the same.

let stack: Stack;

const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("ats e2e http cache")));
const OTHER = artifactDidFromDigest(sha256(stringToBytes("ats e2e http cache, another artifact")));
const trustUrl = (did: string) => `${stack.baseUrl}/v1/artifact-trust?artifactDid=${encodeURIComponent(did)}`;

beforeAll(async () => {
  // Ages unlike the defaults, so that the header shows where its number came from: the poll (3 s) is the shorter.
  // No follower loop: the index is polled once, here (e2e/revalidation_test.ts shows 304 across polls).
  stack = await startStack({ env: { INDEX_POLL_MS: "2500", DISCOVERY_CACHE_SECONDS: "30", INDEX_FOLLOW: "false" } });
  await stack.sync();
});

afterAll(async () => {
  await stack?.stop();
});

describe("conditional GET over the real server", () => {
  test("artifact trust: 200 with a weak ETag, then 304 with no body for If-None-Match, 200 again for another ETag", async () => {
    const first = await fetch(trustUrl(ARTIFACT));
    expect(first.status).toBe(200);
    const body = await first.json() as { artifactDid?: string };
    expect(body.artifactDid).toBe(ARTIFACT);
    const etag = first.headers.get("etag")!;
    // Weak, over the answer without asOf (decisions §21 amended, issue 43).
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]{43}"$/);
    expect(first.headers.get("cache-control")).toBe("public, max-age=3, stale-while-revalidate=3");

    const conditional = await fetch(trustUrl(ARTIFACT), { headers: { "if-none-match": etag } });
    expect(conditional.status).toBe(304);
    expect(await conditional.text()).toBe("");
    expect(conditional.headers.get("etag")).toBe(etag);
    expect(conditional.headers.get("cache-control")).toBe("public, max-age=3, stale-while-revalidate=3");
    expect(conditional.headers.get("access-control-allow-origin")).toBe("*");
    expect(conditional.headers.get("x-request-id")).not.toBeNull();

    // The strong form of the same tag matches too (RFC 9110: If-None-Match compares weakly).
    expect((await fetch(trustUrl(ARTIFACT), { headers: { "if-none-match": etag.slice(2) } })).status).toBe(304);
    // Another artifact's answer is another: the tag held for the first does not match it.
    const other = await fetch(trustUrl(OTHER), { headers: { "if-none-match": etag } });
    expect(other.status).toBe(200);
    expect(other.headers.get("etag")).not.toBe(etag);
    expect(((await other.json()) as { artifactDid?: string }).artifactDid).toBe(OTHER);
  });

  test("trust anchors, answered at the server's edge: ETag, 304; a bad request is kept briefly, a nonce never", async () => {
    const first = await fetch(`${stack.baseUrl}/v1/trust-anchors`);
    expect([first.status, first.headers.get("cache-control")]).toEqual([200, "public, max-age=300, stale-while-revalidate=300"]);
    await first.arrayBuffer();
    const conditional = await fetch(`${stack.baseUrl}/v1/trust-anchors`, { headers: { "if-none-match": first.headers.get("etag")! } });
    expect([conditional.status, await conditional.text()]).toEqual([304, ""]);
    const invalid = await fetch(`${stack.baseUrl}/v1/artifact-trust`);
    expect([invalid.status, invalid.headers.get("cache-control")]).toEqual([400, "public, max-age=3"]);
    expect(await invalid.json()).toMatchObject({ code: "INVALID_DID" });
    const nonce = await fetch(`${stack.baseUrl}/v1/nonce?attester=0x70997970C51812dc3A010C7d01b50e0d17dc79C8`);
    expect([nonce.status, nonce.headers.get("cache-control"), nonce.headers.get("etag")]).toEqual([200, "no-store", null]);
    await nonce.arrayBuffer();
  });
});
