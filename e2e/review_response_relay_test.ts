/**
 * Issue 23, finding 4, on the devnet with real DNS: a `user-review-response` written through the private relay is
 * authorised against the subject of the review its refUID names (the reviewed did:web, its owner proven by a TXT
 * record), not against the response's own `subject` (the reviewer's did:pkh). A stranger and the reviewer are
 * refused before any gas; the proven owner is accepted and the response read back on chain; a refUID naming
 * nothing or another schema, or a response whose own subject is not the reviewer's did:pkh, is 400. The public relay
 * refuses to subsidise the schema at start.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { buildReviewData, buildReviewResponseData } from "../domain/reviews/mod.ts";
import { decodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { startStack, type Stack } from "./harness.ts";
import { isSend } from "./support/rpc_proxy.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
const REVIEW = findSchemaByName("user-review")!;
const RESPONSE = findSchemaByName("user-review-response")!;
let stack: Stack;
let dns: DnsServer;
const owner = generatePrivateKey();
const reviewer = generatePrivateKey();
const stranger = generatePrivateKey();
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.shop.test", [[`v=1;controller=${pkh(owner)}`]]);
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "5",
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const delegateNonce = () => chain().getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.delegate).address });
const RELAY = "/api/private/relay/eas/delegated-attest";

async function post(path: string, cookie: string, body: unknown) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method: "POST",
    headers: { origin: APP, cookie, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

/** `data` under the schema `name`, with `refUID`, signed by `key` at its current EAS nonce. */
async function signed(key: Hex, name: "user-review" | "user-review-response", data: Record<string, unknown>, refUID?: Hex) {
  const definition = name === "user-review" ? REVIEW : RESPONSE;
  const account = privateKeyToAccount(key);
  const nonce = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids[name] as Hex, schema: definition.schema, revocable: definition.revocable },
    data,
    attester: account.address,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
    refUID,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

/** A response to `reviewUid` signed by `key`; its own subject is `subject` (the reference: the reviewer's did:pkh). */
function responseBy(key: Hex, reviewUid: Hex, subject = pkh(reviewer)) {
  const data = buildReviewResponseData({ reviewerDid: subject, reviewUid, responseBody: "Sorry, we fixed it" });
  if (!data.ok) throw new Error(data.message);
  return signed(key, "user-review-response", data.value, reviewUid);
}

describe("private relay: a review's response is the reviewed service's owner's (issue 23, finding 4)", () => {
  test("a stranger and the reviewer are refused before any gas; the owner proven by DNS TXT is accepted; a refUID naming nothing or another schema is 400", async () => {
    // The reviewer reviews did:web:shop.test through the relay (user-review is not subject-scoped).
    const r = await signInCookie(stack.baseUrl, reviewer, { origin: APP });
    const review = buildReviewData({ subject: "shop.test", ratingValue: 2, reviewBody: "Slow answers" });
    if (!review.ok) throw new Error(review.message);
    const reviewed = await post(RELAY, r, await signed(reviewer, "user-review", review.value));
    expect(reviewed.status).toBe(200);
    const reviewUid = reviewed.body.uid as Hex;

    // The owner proves shop.test by its TXT record.
    const o = await signInCookie(stack.baseUrl, owner, { origin: APP });
    expect((await post("/api/private/subjects", o, { did: "shop.test" })).status).toBe(201);

    // A stranger names their own did:pkh as the response's subject (what was authorised before); the reviewer answers
    // their own review. Neither owns shop.test: refused after the signature, before anything is sent.
    const s = await signInCookie(stack.baseUrl, stranger, { origin: APP });
    const before = await delegateNonce();
    stack.rpc.reset();
    const strangers = await post(RELAY, s, await responseBy(stranger, reviewUid));
    expect([strangers.status, strangers.body.code]).toEqual([403, "SUBJECT_OWNERSHIP_REQUIRED"]);
    expect(strangers.body.error).toContain("did:web:shop.test");
    // A response about anyone but the reviewer (reference §3.1) is 400, before any ownership look-up.
    const strangerAsSubject = await post(RELAY, s, await responseBy(stranger, reviewUid, pkh(stranger)));
    expect([strangerAsSubject.status, strangerAsSubject.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(strangerAsSubject.body.error).toContain(pkh(reviewer));
    const reviewers = await post(RELAY, r, await responseBy(reviewer, reviewUid));
    expect([reviewers.status, reviewers.body.code]).toEqual([403, "SUBJECT_OWNERSHIP_REQUIRED"]);
    // Found by attack: the proven owner answering with a third party's did:web as subject and recipient was written,
    // paid, and listed under that subject. It is 400 naming the reviewer's did:pkh, before any gas.
    const thirdParty = await post(RELAY, o, await signed(owner, "user-review-response", { subject: "did:web:victim.test", refUID: reviewUid, responseBody: "victim.test is a scam" }, reviewUid));
    expect([thirdParty.status, thirdParty.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(thirdParty.body.error).toContain(pkh(reviewer));
    // A refUID naming nothing.
    const nothing = await post(RELAY, o, await responseBy(owner, `0x${"ab".repeat(32)}`));
    expect([nothing.status, nothing.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(nothing.body.error).toContain("refUID");
    expect(stack.rpc.methods()).toContain("eth_call");
    expect(stack.rpc.methods().filter(isSend)).toEqual([]);
    expect(stack.rpc.methods()).not.toContain("eth_estimateGas");
    expect(await delegateNonce()).toBe(before);

    // The proven owner answers, naming the reviewed service as subjectDid; on chain under the response schema,
    // pointing at the review, to the reviewer's DID address, attested by the owner.
    const answered = await post(RELAY, o, { ...await responseBy(owner, reviewUid), subjectDid: "did:web:shop.test" });
    expect(answered.status).toBe(200);
    const onChain = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [answered.body.uid] });
    expect([onChain.schema, onChain.attester, onChain.refUID, onChain.recipient.toLowerCase()]).toEqual([
      stack.devnet.schemaUids["user-review-response"] as Hex,
      privateKeyToAccount(owner).address,
      reviewUid,
      (didToAddress(pkh(reviewer)) as { value: string }).value.toLowerCase(),
    ]);
    expect(decodeSchemaData(RESPONSE.schema, onChain.data)).toMatchObject({ ok: true, value: { subject: pkh(reviewer), refUID: reviewUid } });
    expect(await delegateNonce()).toBe(before + 1);

    // A refUID naming an attestation of another schema (the response itself), and a subjectDid naming the reviewer.
    const another = await post(RELAY, o, await responseBy(owner, answered.body.uid));
    expect([another.status, another.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(another.body.error).toContain("refUID");
    const reviewerAsSubject = await post(RELAY, o, { ...await responseBy(owner, reviewUid), subjectDid: pkh(reviewer) });
    expect([reviewerAsSubject.status, reviewerAsSubject.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(await delegateNonce()).toBe(before + 1);
  });

  test("the public relay does not start with user-review-response subsidised (no identity to check the responder against)", async () => {
    await expect(stack.restartService({ SUBSIDIZED_SCHEMAS: "user-review,user-review-response" })).rejects.toThrow(/SUBSIDIZED_SCHEMAS: user-review-response/);
  });
});
