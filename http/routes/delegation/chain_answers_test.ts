// The answers a relay gives before its relay names the chain (decisions §23, §30; issue 48 item 3): the 202 of an
// asynchronous batch and the answer of a retry whose first request died name the chain the write went to, not the
// default chain.
import { expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { buildAttestTypedData, type DelegatedAttest, type WriteChainNames, ZERO_UID } from "../../../domain/delegation/mod.ts";
import { IDEMPOTENCY_LEASE_MS } from "../../../domain/idempotency/mod.ts";
import { fakeClock, fakeEasReader, fakeReplayStore, fakeSubmissionRecords } from "../../../ports/fakes/mod.ts";
import { createApp } from "../../app.ts";
import { minimalAppDeps, trackedRelayDeps } from "../../testing.ts";
import { encodeSchemaData } from "../../../domain/schema_data.ts";
import { findSchemaByName } from "../../../domain/schemas.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const SCHEMA = `0x${"7a".repeat(32)}` as const;
const TX = `0x${"ab".repeat(32)}`;
const UID = `0x${"cd".repeat(32)}`;
const DEADLINE = 4_000_000_000n;
/** Every write here goes to chain B, whatever the default chain is called. */
const chainNames: WriteChainNames = { write: () => "Chain B", batch: () => "Chain B" };

async function signedRequest() {
  const message = {
    attester: account.address, schema: SCHEMA, recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n, revocable: false, refUID: ZERO_UID, data: REVIEW_DATA, value: 0n, nonce: 0n, deadline: DEADLINE,
  };
  const typedData = buildAttestTypedData(fakeEasReader(), message);
  const signature = await account.signTypedData(typedData);
  const strings = JSON.parse(JSON.stringify(message, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
  return { attester: account.address, signature, prepared: { delegatedRequest: strings, typedData: { ...typedData, message: strings } } };
}

/** The public relay over a use case that opens its submission, finishes it mined on the chain, and never answers (it died). */
function setup(options: { mined?: boolean } = {}) {
  const replay = fakeReplayStore();
  const records = fakeSubmissionRecords();
  const clock = fakeClock();
  let submitted = 0;
  const opened = async (onSubmitting: ((chainId: number, key: string) => Promise<void>) | undefined) => {
    const key = `0x${"11".repeat(65)}`;
    await replay.claim({ key, chainId: 31338, attester: "0xa", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 1 });
    await onSubmitting?.(31338, key);
    submitted++;
    if (options.mined ?? true) await replay.finish(31338, key, { state: "mined", txHash: TX, uid: UID, blockNumber: 5n });
    return await new Promise<never>(() => {});
  };
  const single = ((_body: unknown, caller?: { onSubmitting?: (chainId: number, key: string) => Promise<void> }) => opened(caller?.onSubmitting)) as unknown as DelegatedAttest;
  const batch: NonNullable<DelegatedAttest["batch"]> = (_bodies, caller) => opened(caller?.onSubmitting ? (chainId, key) => caller.onSubmitting!(chainId, key, [{ ref: key }]) : undefined);
  const delegatedAttest = Object.assign(single, { batch, chainNames });
  const app = createApp(trackedRelayDeps(delegatedAttest, { records, replay, clock }));
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) }));
  return { post, clock, submitted: () => submitted };
}

test("a batch answered 202 (Prefer: respond-async) names the chain its requests are signed for", async () => {
  const env = setup();
  expect(minimalAppDeps().eas.chainName).not.toBe("Chain B");
  const accepted = await env.post("/v1/delegated-attest/batch", { requests: [await signedRequest()] }, { prefer: "respond-async" });
  const body = await accepted.json() as { chain: string; state: string };
  expect([accepted.status, body.state, body.chain]).toEqual([202, "pending", "Chain B"]);
});

test("a retry of a write that died after opening its submission, mined since, names the chain it went to", async () => {
  const env = setup();
  const request = await signedRequest();
  void env.post("/v1/delegated-attest", request, { "idempotency-key": "dead-on-b" });
  while (env.submitted() === 0) await Bun.sleep(1);
  env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS);
  const resumed = await env.post("/v1/delegated-attest", request, { "idempotency-key": "dead-on-b" });
  const body = await resumed.json() as { chain: string; uid: string };
  expect([resumed.status, body.uid, body.chain]).toEqual([200, UID, "Chain B"]);
  expect(env.submitted()).toBe(1);
});

test("a single write answered 202 (Prefer: respond-async) names its chain, and so does a retry's 202 while it is pending", async () => {
  const env = setup({ mined: false });
  const request = await signedRequest();
  const accepted = await env.post("/v1/delegated-attest", request, { prefer: "respond-async", "idempotency-key": "pending-on-b" });
  const body = await accepted.json() as { chain: string; state: string; submissionId: string };
  expect([accepted.status, body.state, body.chain]).toEqual([202, "pending", "Chain B"]);
  // The first request never answers its key (it died): past the key's lease, a retry reads the open submission.
  env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS);
  const retry = await env.post("/v1/delegated-attest", request, { "idempotency-key": "pending-on-b" });
  const again = await retry.json() as { chain: string; submissionId: string };
  expect([retry.status, again.chain, again.submissionId]).toEqual([202, "Chain B", body.submissionId]);
  expect(env.submitted()).toBe(1);
});
