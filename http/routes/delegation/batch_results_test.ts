// What a batch's 200 says of each request (decisions §23: "as the single route would answer that request"): a request
// the guard refuses 429 carries the wait the single route's Retry-After names.
import { expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { buildAttestTypedData, createDelegatedAttest, createRelayGuard, ZERO_UID } from "../../../domain/delegation/mod.ts";
import { createRateLimiter } from "../../../domain/rate_limit.ts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeGasBudget, fakeReplayStore } from "../../../ports/fakes/mod.ts";
import { createApp } from "../../app.ts";
import { minimalAppDeps } from "../../testing.ts";
import { encodeSchemaData } from "../../../domain/schema_data.ts";
import { findSchemaByName } from "../../../domain/schemas.ts";

const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const alice = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const bob = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");

const reviewData = (body: string) =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;

async function signedRequest(eas: ReturnType<typeof fakeEasReader>, nowMs: number, signer: typeof alice, body: string) {
  const message = {
    attester: signer.address, schema: SCHEMA as `0x${string}`, recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n, revocable: false, refUID: ZERO_UID, data: reviewData(body), value: 0n, nonce: 0n, deadline: BigInt(Math.floor(nowMs / 1000) + 600),
  };
  const typedData = buildAttestTypedData(eas, message);
  const signature = await signer.signTypedData(typedData);
  const strings = JSON.parse(JSON.stringify(message, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
  return { attester: signer.address, signature, prepared: { delegatedRequest: { ...strings, easContractAddress: eas.easAddress, chainId: eas.chainId } } };
}

/** The public relay over the real use case, whose hour's gas budget (100,000) holds no attestation (200,000 each). */
function setup() {
  const clock = fakeClock(1_800_000_000_000 + 600_000);
  const eas = fakeEasReader();
  const guard = createRelayGuard({
    enabled: true,
    clientRate: createRateLimiter(clock, { capacity: 100, perMinute: 100 }),
    attesterRate: createRateLimiter(clock, { capacity: 100, perMinute: 100 }),
    gasBudget: fakeGasBudget(),
    gasPerHour: 100_000n,
    typicalGas: 1n,
    clock,
  });
  const delegatedAttest = createDelegatedAttest({
    clock,
    eas,
    delegate: fakeDelegate(),
    replay: fakeReplayStore(),
    mainnet: false,
    subsidized: new Map([[SCHEMA, { name: "user-review", revocable: false }]]),
    guard,
  });
  const base = minimalAppDeps();
  const app = createApp({ ...base, eas: { ...base.eas, delegatedAttest, chainId: eas.chainId, easAddress: eas.easAddress } });
  const post = (path: string, body: unknown) =>
    app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
  return { eas, clock, post };
}

test("a batch's request refused 429 carries retryAfter: the seconds the single route's Retry-After says", async () => {
  // Found by review: the item's wait was dropped, so a client of the batch route was told 429 with nothing saying how long.
  const env = setup();
  const single = await env.post("/v1/delegated-attest", await signedRequest(env.eas, env.clock.nowMs(), alice, "0x01"));
  const body = await single.json() as { code: string };
  expect([single.status, body.code]).toEqual([429, "RATE_LIMITED"]);
  const wait = Number(single.headers.get("retry-after"));
  expect(wait).toBe(3_000);
  const batch = await env.post("/v1/delegated-attest/batch", { requests: [await signedRequest(env.eas, env.clock.nowMs(), bob, "0x02"), { attester: bob.address }] });
  const answer = await batch.json() as { results: Record<string, unknown>[] };
  expect(batch.status).toBe(200);
  expect(answer.results[0]).toMatchObject({ status: 429, code: "RATE_LIMITED", retryAfter: wait });
  // Only a 429 says how long to wait.
  expect(answer.results[1]).toMatchObject({ status: 400, code: "INVALID_INPUT" });
  expect(answer.results[1]).not.toHaveProperty("retryAfter");
});
