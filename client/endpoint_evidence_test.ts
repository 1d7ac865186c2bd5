/**
 * The endpoint evidence behind checkControllerTrust() and readEndpointControllerIds(), over a loopback server: only a
 * 2xx endpoint-evidence record or a 400 INVALID_DID is the service's answer; a 404 (the route's only one is "no such
 * route": a wrong path prefix in baseUrl), a proxy's page, or a 2xx of something else is never "no evidence".
 */
import { afterAll, describe, expect, test } from "bun:test";
import { isAtsClientError } from "./errors.ts";
import { checkControllerTrust, readEndpointControllerIds } from "./x402.ts";

const SUBJECT = "did:web:api.example.com";
const KEY = "did:pkh:eip155:1:0x209693bc6afc0c5328ba36faf03c514ef312287c";
const EVIDENCE = {
  subject: { input: SUBJECT, canonical: SUBJECT, label: "api.example.com", type: "did:web", source: "input" },
  domain: "api.example.com",
  controllerKeys: [{ id: KEY, canonicalId: KEY, label: KEY, sources: ["dns-txt"], basic: true }],
  evidence: [{ kind: "dns-txt", status: "found", location: "_controllers.api.example.com", keys: [KEY] }],
  warnings: [],
};

/** What the route answers next; the service answers 404 NOT_FOUND (JSON, as http/instrument.ts does) off its routes. */
let next: () => Response = () => Response.json(EVIDENCE);
const paths: string[] = [];
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(request) {
    const path = new URL(request.url).pathname;
    paths.push(path);
    return path === "/v1/controller-endpoint-confirm" ? next() : Response.json({ error: "Not found", code: "NOT_FOUND" }, { status: 404 });
  },
});
afterAll(() => server.stop(true));
const baseUrl = `http://127.0.0.1:${server.port}`;
const signer = { format: "eip712" as const, controllerDid: KEY };

const trust = (options: { baseUrl: string }) => checkControllerTrust({ subjectDid: SUBJECT, signer, at: 1_800_000_000 }, options);
const failureOf = async (run: () => Promise<unknown>) => {
  const error = await run().then(() => undefined, (e: unknown) => e);
  return isAtsClientError(error) ? [error.code, error.status] : error;
};
const answering = (response: () => Response) => {
  next = response;
};

describe("endpoint evidence: what counts as the service's answer", () => {
  test("a baseUrl with a wrong path prefix (the service's 404) throws NETWORK_ERROR, never tier 0", async () => {
    answering(() => Response.json(EVIDENCE));
    paths.length = 0;
    // Before: tier 0, basis none, endpointKeys undefined: the key read as one nobody names.
    expect(await failureOf(() => trust({ baseUrl: `${baseUrl}/api` }))).toEqual(["NETWORK_ERROR", 404]);
    expect(await failureOf(() => readEndpointControllerIds(SUBJECT, { baseUrl: `${baseUrl}/api` }))).toEqual(["NETWORK_ERROR", 404]);
    expect(paths).toEqual(["/api/v1/controller-endpoint-confirm", "/api/v1/controller-endpoint-confirm"]);
    // The right baseUrl reads the evidence.
    expect(await trust({ baseUrl })).toMatchObject({ tier: 1, basis: "endpoint-evidence", endpointKeys: [KEY] });
    expect(await readEndpointControllerIds(SUBJECT, { baseUrl })).toEqual([KEY]);
  });

  test("a 404 of any shape, a proxy's HTML 400, or a 400 with another code is no answer: NETWORK_ERROR", async () => {
    for (const response of [
      () => new Response("Not Found", { status: 404 }),
      () => Response.json({ error: "no route" }, { status: 404 }),
      () => new Response("<html>bad request</html>", { status: 400, headers: { "content-type": "text/html" } }),
      () => Response.json({ error: "subjectDid must be given once", code: "INVALID_INPUT" }, { status: 400 }),
      () => Response.json({ error: "x" }, { status: 400 }),
    ]) {
      answering(response);
      const status = response().status;
      expect(await failureOf(() => trust({ baseUrl }))).toEqual(["NETWORK_ERROR", status]);
      expect(await failureOf(() => readEndpointControllerIds(SUBJECT, { baseUrl }))).toEqual(["NETWORK_ERROR", status]);
    }
  });

  test("a 400 INVALID_DID (a did:web the service does not look up) is its answer: no endpoint evidence", async () => {
    answering(() => Response.json({ error: "subjectDid names an IP address", code: "INVALID_DID" }, { status: 400 }));
    expect(await trust({ baseUrl })).toMatchObject({ tier: 0, basis: "none", endpointKeys: undefined });
    expect(await readEndpointControllerIds(SUBJECT, { baseUrl })).toBeUndefined();
  });

  test("a 2xx that is not endpoint evidence (not JSON, null, {}, an array) is INVALID_RESPONSE", async () => {
    for (const body of ["<html>welcome</html>", "", "null", "{}", "[]", JSON.stringify({ controllerKeys: [] })]) {
      answering(() => new Response(body, { status: 200 }));
      expect(await failureOf(() => trust({ baseUrl }))).toEqual(["INVALID_RESPONSE", 200]);
      expect(await failureOf(() => readEndpointControllerIds(SUBJECT, { baseUrl }))).toEqual(["INVALID_RESPONSE", 200]);
    }
  });

  test("evidence about another subject (a cache or a man in the middle), or naming none, is INVALID_RESPONSE: its keys are never this subject's", async () => {
    const other = { ...EVIDENCE.subject, input: "did:web:evil.example", canonical: "did:web:evil.example" };
    for (const subject of [other, undefined, { canonical: 7 }]) {
      answering(() => Response.json({ ...EVIDENCE, subject }));
      expect(await failureOf(() => trust({ baseUrl }))).toEqual(["INVALID_RESPONSE", 200]);
      expect(await failureOf(() => readEndpointControllerIds(SUBJECT, { baseUrl }))).toEqual(["INVALID_RESPONSE", 200]);
    }
    // The same subject written otherwise (case, a trailing dot) is the same subject: one rule on both sides.
    answering(() => Response.json({ ...EVIDENCE, subject: { ...EVIDENCE.subject, canonical: "did:web:API.example.com" } }));
    expect(await readEndpointControllerIds(SUBJECT, { baseUrl })).toEqual([KEY]);
  });
});
