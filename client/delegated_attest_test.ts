import { afterAll, describe, expect, test } from "bun:test";
import { decodeAbiParameters, keccak256, parseAbiParameters, recoverTypedDataAddress, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { buildAttestTypedData } from "../domain/delegation/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { AtsClientError } from "./errors.ts";
import {
  attestDelegated,
  pendingSubmissionOf,
  prepareDelegatedAttestation,
  PRIVATE_RELAY_BATCH_PATH,
  signableTypedData,
  submitDelegatedAttestation,
  submitDelegatedAttestBatch,
} from "./delegated_attest.ts";

const review = findSchemaByName("user-review")!;
const SCHEMA = { uid: "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47", schema: review.schema, revocable: false } as const;
const EAS = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" as const;
const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const reviewData = { subject: "did:web:Example.com", version: "1", ratingValue: 4, reviewBody: "ok", screenshotUrls: ["https://x.example/a.png"], proofs: [] };

function prepare(over: Partial<Parameters<typeof prepareDelegatedAttestation>[0]> = {}) {
  return prepareDelegatedAttestation({
    schema: SCHEMA,
    data: reviewData,
    attester: account.address,
    nonce: 7n,
    chainId: 31337,
    easAddress: EAS,
    nowSeconds: 1_800_000_000,
    ...over,
  });
}

describe("prepareDelegatedAttestation()", () => {
  test("ABI-encodes the data from the schema string", () => {
    const prepared = prepare();
    const decoded = decodeAbiParameters(parseAbiParameters(review.schema), prepared.typedData.message.data as `0x${string}`);
    expect(decoded).toEqual(["did:web:Example.com", "1", 4n, "ok", ["https://x.example/a.png"], []]);
    expect(prepared.delegatedRequest.data).toBe(prepared.typedData.message.data);
  });

  test("derives the recipient from the normalized subject DID, then subjectDidHash, then recipient, else zero", () => {
    const didAddress = (did: string) => `0x${keccak256(toHex(did)).slice(-40)}`;
    expect(prepare().typedData.message.recipient).toBe(didAddress("did:web:example.com"));
    const hash = keccak256(toHex("anything"));
    const linkedSchema = { ...SCHEMA, schema: "string subjectDidHash, string note" };
    expect(prepare({ schema: linkedSchema, data: { subjectDidHash: hash, note: "" } }).typedData.message.recipient).toBe(`0x${hash.slice(-40)}`);
    const plain = { ...SCHEMA, schema: "string note" };
    expect(prepare({ schema: plain, data: { note: "", recipient: account.address } }).typedData.message.recipient).toBe(account.address);
    expect(prepare({ schema: plain, data: { note: "" } }).typedData.message.recipient).toBe(`0x${"0".repeat(40)}`);
  });

  test("sets the deadline ten minutes ahead and carries every big integer as a base-10 string", () => {
    const prepared = prepare();
    expect(prepared.typedData.message).toMatchObject({ deadline: "1800000600", nonce: "7", value: "0", expirationTime: "0" });
    expect(prepared.delegatedRequest).toMatchObject({ deadline: "1800000600", nonce: "7", schema: SCHEMA.uid, chainId: 31337, easContractAddress: EAS });
    const before = Math.floor(Date.now() / 1000);
    const deadline = Number(prepare({ nowSeconds: undefined }).typedData.message.deadline);
    expect(deadline - before).toBeGreaterThanOrEqual(600);
    expect(deadline - before).toBeLessThanOrEqual(602);
    expect(JSON.parse(JSON.stringify(prepared))).toEqual(prepared);
  });

  test("what the client signs is what the server rebuilds", async () => {
    const prepared = prepare();
    const signature = await account.signTypedData(signableTypedData(prepared));
    const m = prepared.typedData.message;
    const rebuilt = buildAttestTypedData({ chainId: 31337, easAddress: EAS }, {
      attester: account.address,
      schema: SCHEMA.uid,
      recipient: m.recipient as `0x${string}`,
      expirationTime: 0n,
      revocable: false,
      refUID: m.refUID as `0x${string}`,
      data: m.data as `0x${string}`,
      value: 0n,
      nonce: 7n,
      deadline: 1_800_000_600n,
    });
    expect(await recoverTypedDataAddress({ ...rebuilt, signature: signature as `0x${string}` })).toBe(account.address);
  });

  test("data that does not fit the schema, or a subject that is not a valid DID, throws INVALID_INPUT", () => {
    expect(() => prepare({ data: { ...reviewData, ratingValue: "four" } })).toThrow(AtsClientError);
    try {
      prepare({ data: { ...reviewData, subject: "did:jwk:not-base64" } });
      throw new Error("no error");
    } catch (error) {
      expect(error).toBeInstanceOf(AtsClientError);
      expect((error as AtsClientError).code).toBe("INVALID_INPUT");
    }
  });
});

describe("submitDelegatedAttestation()", () => {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => Response.json({ error: "Schema not eligible for gas subsidy", code: "SCHEMA_NOT_SUBSIDIZED", elapsed: "0ms" }, { status: 403 }),
  });
  afterAll(() => server.stop(true));

  test("a refusal throws AtsClientError with the server's code, status and body", async () => {
    const prepared = prepare();
    const error = await submitDelegatedAttestation({ prepared, signature: "0x", attester: account.address }, { baseUrl: `http://127.0.0.1:${server.port}` })
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(AtsClientError);
    expect(error).toMatchObject({ code: "SCHEMA_NOT_SUBSIDIZED", status: 403 });
  });
});

describe("attestDelegated() and the chain asked for", () => {
  const OTHER_EAS = "0xA1207F3BBa224E2c9c3c6D5aF63D0eb1582Ce587";
  const anchors = {
    version: 1,
    updatedAt: "",
    widgetOrigins: [],
    chains: {
      "eip155:31337": { name: "devnet", easContract: EAS, schemas: { "user-review": SCHEMA.uid } },
      "eip155:1": { name: "mainnet", easContract: OTHER_EAS, schemas: { "user-review": SCHEMA.uid } },
    },
    registries: [],
  };
  // A service that answers every nonce for chain 1, whatever chain it is asked for.
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/v1/trust-anchors") return Response.json(anchors);
      if (path === "/v1/nonce") return Response.json({ nonce: "0", chainId: 1, easAddress: OTHER_EAS });
      return Response.json({ error: "unexpected", code: "NOT_FOUND" }, { status: 404 });
    },
  });
  afterAll(() => server.stop(true));

  test("a nonce answered for another chain than the one asked for is refused before anything is signed", async () => {
    let signed = 0;
    const error = await attestDelegated({
      schemaName: "user-review",
      data: reviewData,
      attester: account.address,
      chainId: 31337,
      sign: (typedData) => (signed++, account.signTypedData(typedData as never)),
    }, { baseUrl: `http://127.0.0.1:${server.port}` }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: "UNSUPPORTED_CHAIN" });
    expect(signed).toBe(0);
  });
});

describe("submitDelegatedAttestBatch()", () => {
  const seen: { path: string; key: string | null; body: unknown }[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      const body = (await request.json()) as { requests: unknown[] };
      seen.push({ path: new URL(request.url).pathname, key: request.headers.get("idempotency-key"), body });
      if (body.requests.length > 2) return Response.json({ error: "requests must hold 1 to 50 bodies", code: "INVALID_INPUT" }, { status: 400 });
      return Response.json({
        submissionId: "s1",
        txHash: `0x${"a".repeat(64)}`,
        results: [{ uid: `0x${"b".repeat(64)}` }, { status: 400, code: "ATTESTER_MISMATCH", error: "Invalid signature: attester mismatch" }],
        chain: "x",
      });
    },
  });
  afterAll(() => server.stop(true));
  const baseUrl = () => `http://127.0.0.1:${server.port}`;

  test("posts {requests} with the key to the public route or the private one; a refused request is a result, not a throw", async () => {
    const one = { prepared: prepare(), signature: "0x01", attester: account.address };
    const answer = await submitDelegatedAttestBatch([one, one], { baseUrl: baseUrl(), idempotencyKey: "k1" });
    expect(answer.results.map((r) => ("uid" in r ? "uid" : r.code))).toEqual(["uid", "ATTESTER_MISMATCH"]);
    await submitDelegatedAttestBatch([{ ...one, subjectDid: "did:web:a.example" }], { baseUrl: baseUrl(), path: PRIVATE_RELAY_BATCH_PATH });
    expect(seen.map((s) => [s.path, s.key])).toEqual([["/v1/delegated-attest/batch", "k1"], [PRIVATE_RELAY_BATCH_PATH, null]]);
    expect((seen[0]!.body as { requests: unknown[] }).requests).toHaveLength(2);
  });

  test("a batch refused as a whole throws AtsClientError with the server's code", async () => {
    const one = { prepared: prepare(), signature: "0x01", attester: account.address };
    const error = await submitDelegatedAttestBatch([one, one, one], { baseUrl: baseUrl() }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: "INVALID_INPUT", status: 400 });
  });
});

describe("submitDelegatedAttestation() and an answer that is not the relay's success", () => {
  // As the relay answers the retry of a request that died after handing its transaction to the chain, while that
  // transaction is on its way (http/routes/delegation/_tracking.ts submissionAnswer): 202, Location, no uid, no txHash.
  const answers: Response[] = [];
  const keys: (string | null)[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      keys.push(request.headers.get("idempotency-key"));
      return answers.shift() ?? Response.json({ error: "none left", code: "INTERNAL_ERROR" }, { status: 500 });
    },
  });
  afterAll(() => server.stop(true));
  const id = "khFvxbyajZsaWUYk5v5LWA";
  const onItsWay = (body: Record<string, unknown>) =>
    Response.json(body, { status: 202, headers: { location: `/v1/submissions/${id}`, "preference-applied": "respond-async" } });
  const send = () => submitDelegatedAttestation({ prepared: prepare(), signature: "0x01", attester: account.address }, { baseUrl: `http://127.0.0.1:${server.port}`, idempotencyKey: "k202" })
    .then((result) => ({ result }), (error: unknown) => ({ error }));

  test("a 202 is no attestation: it throws SUBMISSION_NOT_SETTLED naming the submission to wait for", async () => {
    answers.push(onItsWay({ submissionId: id, state: "replaced", chain: "ATS Devnet", elapsed: "6ms" }));
    const sent = await send();
    expect("result" in sent).toBe(false);
    const error = (sent as { error: unknown }).error;
    expect(error).toBeInstanceOf(AtsClientError);
    expect(error).toMatchObject({ code: "SUBMISSION_NOT_SETTLED", status: 202, body: { submissionId: id, state: "replaced" } });
    expect(pendingSubmissionOf(error)).toEqual({ submissionId: id, state: "replaced", location: `/v1/submissions/${id}` });
    expect(keys.at(-1)).toBe("k202");
  });

  test("a 202 whose body names no submission is named by its Location", async () => {
    answers.push(onItsWay({ state: "sent" }));
    const { error } = (await send()) as { error: unknown };
    expect(pendingSubmissionOf(error)).toEqual({ submissionId: id, state: "sent", location: `/v1/submissions/${id}` });
  });

  test("a 2xx that is not {success: true, txHash} is INVALID_RESPONSE; the relay's success is the result", async () => {
    answers.push(Response.json({ uid: null }), Response.json({ success: false, txHash: "0x01" }));
    for (let i = 0; i < 2; i++) expect((await send() as { error: unknown }).error).toMatchObject({ code: "INVALID_RESPONSE", status: 200 });
    const success = { success: true as const, txHash: `0x${"a".repeat(64)}` as const, uid: `0x${"b".repeat(64)}` as const, blockNumber: 9, chain: "ATS Devnet", submissionId: id, elapsed: "1ms" };
    answers.push(Response.json(success));
    expect(await send()).toEqual({ result: success });
    expect(pendingSubmissionOf(new AtsClientError("OUTCOME_UNKNOWN", "x", { status: 503, body: { submissionId: id } }))).toBeUndefined();
  });
});
