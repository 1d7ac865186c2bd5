/**
 * A key-status answer is checked against the question (as checkArtifactTrust checks its answers) before anything is
 * decided on it: fetchKeyStatus, isKeyAuthorized, checkControllerTrust with keyStatus and verifyReceiptAuthorization,
 * over a loopback server answering what a broken service, a cache or a server in between could.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { generatePrivateKey } from "viem/accounts";
import { createEip712Issuer } from "../x402/signers.ts";
import { isAtsClientError } from "./errors.ts";
import { fetchKeyStatus, isKeyAuthorized } from "./keys.ts";
import { checkControllerTrust, verifyReceiptAuthorization } from "./x402.ts";

const SUBJECT = "did:web:api.example.com";
const ADDRESS = "0x209693bc6afc0c5328ba36faf03c514ef312287c";
const KEY = `did:pkh:eip155:1:${ADDRESS}`;
const AT = 1_700_000_000;
const CHAIN = { chainId: 31337, caip2: "eip155:31337", easContract: "0x0000000000000000000000000000000000000001" };

/** The record the service gives for the query, as domain/keys/key_status.ts builds it: an active key binding. */
const recordFor = (query: URLSearchParams) => ({
  subjectDid: query.get("subjectDid"),
  keyDid: query.get("keyDid"),
  at: query.has("at") ? Number(query.get("at")) : AT,
  status: "active",
  trustLevel: "advanced",
  endpointEvidence: { found: true, sources: ["dns-txt"], checkedAt: AT },
  controllerWitness: { uid: `0x${"2".repeat(64)}`, attester: "0x0000000000000000000000000000000000000002", observedAt: AT - 100 },
  keyBinding: { uid: `0x${"1".repeat(64)}`, attester: ADDRESS, keyPurpose: ["assertionMethod"], effectiveAt: 0, expiresAt: 0, revocationTime: 0 },
  chain: CHAIN,
});

/** What the server answers next: a body (a string as is, anything else as JSON) made from the query. */
let answer: (query: URLSearchParams) => unknown = recordFor;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(request) {
    const body = answer(new URL(request.url).searchParams);
    return new Response(typeof body === "string" ? body : JSON.stringify(body), { headers: { "content-type": "application/json" } });
  },
});
afterAll(() => server.stop(true));
const baseUrl = `http://127.0.0.1:${server.port}`;

const codeOf = async (run: () => Promise<unknown>) => {
  const error = await run().then(() => "answered", (e: unknown) => e);
  return isAtsClientError(error) ? error.code : error;
};
const signer = { format: "eip712" as const, controllerDid: KEY };
/** Every helper that reads key status, once. */
const helpers = (options: { chain?: string } = {}) => [
  () => fetchKeyStatus({ subjectDid: SUBJECT, keyDid: KEY, at: AT }, { baseUrl, ...options }),
  () => isKeyAuthorized({ subjectDid: SUBJECT, keyDid: KEY, at: AT }, { baseUrl, ...options }),
  () => isKeyAuthorized({ subjectDid: SUBJECT, keyDid: KEY, minimumTrust: "basic" }, { baseUrl, ...options }),
];
const trustHelpers = [
  () => checkControllerTrust({ subjectDid: SUBJECT, signer, at: AT }, { baseUrl, keyStatus: true }),
];

describe("a key-status answer that is not a key-status record", () => {
  test("an empty body, null, {}, an array, a string or a record missing its evidence is INVALID_RESPONSE, never a TypeError or a verdict", async () => {
    const broken = [
      "",
      "null",
      "{}",
      "[]",
      '"ok"',
      (q: URLSearchParams) => ({ ...recordFor(q), endpointEvidence: undefined }),
      (q: URLSearchParams) => ({ ...recordFor(q), status: "fine" }),
      (q: URLSearchParams) => ({ ...recordFor(q), trustLevel: 3 }),
      (q: URLSearchParams) => ({ ...recordFor(q), keyBinding: "yes" }),
    ];
    for (const body of broken) {
      answer = typeof body === "function" ? body : () => body;
      // Before: null and "" threw a TypeError (record.status), {} answered authorized: false as a verdict.
      for (const run of [...helpers(), ...trustHelpers]) expect(await codeOf(run)).toBe("INVALID_RESPONSE");
    }
  });
});

describe("a key-status record about something else than the question", () => {
  test("another subject, key or time is INVALID_RESPONSE; another chain than the one named is CHAIN_MISMATCH", async () => {
    const other = [
      (q: URLSearchParams) => ({ ...recordFor(q), subjectDid: "did:web:other.example" }),
      (q: URLSearchParams) => ({ ...recordFor(q), keyDid: "did:pkh:eip155:1:0x1111111111111111111111111111111111111111" }),
      (q: URLSearchParams) => ({ ...recordFor(q), subjectDid: undefined }),
    ];
    for (const body of other) {
      answer = body;
      // Before: authorized: true for a record about other.example and another key.
      for (const run of [...helpers(), ...trustHelpers]) expect(await codeOf(run)).toBe("INVALID_RESPONSE");
    }
    // A time other than the one sent (a lookup without `at` is about the service's now, whatever it says).
    answer = (q) => ({ ...recordFor(q), at: AT + 1 });
    for (const run of [...helpers().slice(0, 2), ...trustHelpers]) expect(await codeOf(run)).toBe("INVALID_RESPONSE");
    answer = (q) => ({ ...recordFor(q), chain: { chainId: 1, caip2: "eip155:1", easContract: null } });
    for (const run of helpers({ chain: "eip155:31337" })) expect(await codeOf(run)).toBe("CHAIN_MISMATCH");
    // A server that names no chain cannot show it read the one asked for.
    answer = (q) => ({ ...recordFor(q), chain: undefined });
    for (const run of helpers({ chain: "31337" })) expect(await codeOf(run)).toBe("CHAIN_MISMATCH");
    answer = (q) => ({ ...recordFor(q), chain: "eip155:31337" });
    for (const run of helpers()) expect(await codeOf(run)).toBe("INVALID_RESPONSE");
  });

  test("the record asked for is accepted, its DIDs compared as the service normalizes them", async () => {
    answer = recordFor;
    expect((await isKeyAuthorized({ subjectDid: SUBJECT, keyDid: KEY, at: AT }, { baseUrl, chain: "eip155:31337" })).authorized).toBe(true);
    // The service answers its canonical forms: the subject without www., the did:pkh address lowercased.
    answer = (q) => ({ ...recordFor(q), subjectDid: SUBJECT, keyDid: KEY });
    const asked = { subjectDid: "did:web:WWW.API.example.com", keyDid: `did:pkh:eip155:1:0x209693Bc6afc0C5328bA36FaF03C514EF312287C`, at: AT };
    expect((await isKeyAuthorized(asked, { baseUrl })).authorized).toBe(true);
    expect(await checkControllerTrust({ subjectDid: SUBJECT, signer, at: AT }, { baseUrl, keyStatus: true })).toMatchObject({ tier: 3, basis: "key-binding" });
  });
});

describe("verifyReceiptAuthorization() over such answers", () => {
  test("a record naming another key, or no record at all, throws; the record about the receipt's key authorizes", async () => {
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const issuedAt = Math.floor(Date.now() / 1000) - 60;
    const receipt = await issuer.signReceipt({ version: 1, network: "eip155:8453", resourceUrl: "https://api.example.com/x", payer: ADDRESS, issuedAt, transaction: "" });
    // Before: authorized: true with trust.keyStatus.keyDid naming another key.
    answer = (q) => ({ ...recordFor(q), keyDid: KEY });
    expect(await codeOf(() => verifyReceiptAuthorization(receipt, { baseUrl }))).toBe("INVALID_RESPONSE");
    answer = () => "null";
    expect(await codeOf(() => verifyReceiptAuthorization(receipt, { baseUrl }))).toBe("INVALID_RESPONSE");
    answer = recordFor;
    const result = await verifyReceiptAuthorization(receipt, { baseUrl });
    expect(result.ok && [result.value.authorized, result.value.trust.keyStatus?.keyDid]).toEqual([true, `did:pkh:eip155:1:${issuer.address!.toLowerCase()}`]);
  });
});
