/**
 * Signing keys and key trust on a real chain (issue 24, decisions §17): Anvil with the real EAS contracts, a long
 * history behind a JSON-RPC proxy whose provider window is 20 blocks, the attestation index followed, a real DNS
 * server. Each trust level and status is reached by writing the real attestations (the TXT record, the service's
 * witness, a key binding through the private relay, a revocation), `at` before the binding is answered as the
 * chain stood then, a stranger's binding is ignored, and every lookup costs at most 6 JSON-RPC calls.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Service } from "../app/service.ts";
import { fetchKeyStatus, isKeyAuthorized, listSigningKeys, registerSigningKey } from "../client/mod.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { afterChainSecond } from "./support/chain_clock.ts";
import { easWriter } from "./support/eas_writer.ts";
import { shapeErrors } from "./support/frontend_shapes.ts";
import { type RpcCall, inFrontOf, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { signInCookie } from "./support/sign_in.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
const WINDOW = 20n;
const LONG = 2_000;
const SUBJECT = "did:web:keys.test";
const BINDING = findSchemaByName("key-binding")!;

let dns: DnsServer;
let proxy: RpcProxy;
let stack: Stack;
let service: Service;
let writer: ReturnType<typeof easWriter>;
let owner: Hex;
let stranger: Hex;
const signingKey = generatePrivateKey();
const expiringKey = generatePrivateKey();
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;
const KEY = pkh(signingKey);
let ownerCookie: string;
let strangerCookie: string;

const width = (call: RpcCall) => {
  const filter = call.params[0] as { fromBlock: string; toBlock: string };
  return BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n;
};

beforeAll(async () => {
  dns = await startDnsServer();
  proxy = startRpcProxy("");
  proxy.onCall = (call) =>
    call.method === "eth_getLogs" && width(call) > WINDOW ? { code: -32005, message: "query exceeds max block range 20" } : undefined;
  stack = await startStack({ rpcUrlFor: inFrontOf(proxy) });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  [owner, stranger] = stack.devnet.keys.users as [Hex, Hex];
  // A long history before the service that is measured starts: 100 provider windows.
  const anvil = createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) });
  for (let mined = 0; mined < LONG; mined += 250) await anvil.mine({ blocks: 250 });
  service = await stack.restartService({
    DNS_SERVERS: dns.address,
    ALLOW_PRIVATE_NETWORK: "true",
    DISCOVERY_CACHE_SECONDS: "0",
    DISCOVERY_DOMAIN_RATE_PER_MINUTE: "100000",
    SIWE_DOMAINS: "app.test",
    CORS_ORIGINS: APP,
    SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
    FREE_PLAN_SCHEMAS: "*",
    FREE_PLAN_ANNUAL_WRITES: "20",
    KEY_STATUS_RATE_PER_MINUTE: "1000",
    INDEX_FOLLOW: "true",
    INDEX_CONFIRMATIONS: "0",
    // One backfill, then the follower sleeps: its polls stay out of the counted lookups.
    INDEX_POLL_MS: "600000",
    INDEX_LEASE_SECONDS: "1200",
    INDEX_STEP_BLOCKS: "400",
  });
  ownerCookie = await signInCookie(service.url, owner, { origin: APP });
  strangerCookie = await signInCookie(service.url, stranger, { origin: APP });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
  await dns?.stop();
});

const session = (cookie: string) => ({ baseUrl: service.url, cookie, origin: APP });
async function call(method: string, path: string, cookie: string, body?: unknown) {
  const res = await fetch(`${service.url}${path}`, {
    method,
    headers: { origin: APP, cookie, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

/** A key status, with the JSON-RPC calls the service made for it. */
async function status(keyDid = KEY, at?: number) {
  const before = proxy.calls.length;
  const record = await fetchKeyStatus({ subjectDid: SUBJECT, keyDid, at }, { baseUrl: service.url });
  const calls = proxy.calls.slice(before);
  expect(calls.length).toBeLessThanOrEqual(6);
  return { record, calls };
}
/** Waits until the chain's clock is past `seconds`, so the next block is later (e2e/support/chain_clock.ts). */
const after = (seconds: bigint | number) => afterChainSecond(writer.client, seconds);
const blockTime = async (blockNumber: number | bigint) => (await writer.client.getBlock({ blockNumber: BigInt(blockNumber) })).timestamp;
const verdict = async (keyDid = KEY, at?: number) => {
  const { record } = await status(keyDid, at);
  return [record.status, record.trustLevel];
};

/** A key binding of `keyDid` to the subject, signed by `key` and sent through the private relay as `cookie`'s account. */
async function bindThroughRelay(key: Hex, cookie: string, keyDid: string, expiresAt = 0n) {
  const account = privateKeyToAccount(key);
  const nonce = await writer.client.readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["key-binding"] as Hex, schema: BINDING.schema, revocable: BINDING.revocable },
    data: { subject: SUBJECT, keyId: keyDid, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0, effectiveAt: 0, expiresAt },
    attester: account.address,
    nonce,
    chainId: service.chainId,
    easAddress: service.easAddress,
  });
  const signature = await account.signTypedData(signableTypedData(prepared));
  return await call("POST", "/api/private/relay/eas/delegated-attest", cookie, { prepared, signature, attester: account.address, subjectDid: SUBJECT });
}

const REFERENCE_KEY = {
  id: "string",
  accountId: "string",
  keyDid: "string",
  keyType: "attestation|service-signing",
  displayName: "string",
  tags: ["string"],
  notes: "string|null",
  createdAt: "string",
  updatedAt: "string",
} as const;

describe("signing keys and key trust on a real chain", () => {
  test("the reference client's records: upsert with created, the same key for another account, filters, newest first", async () => {
    const created = await registerSigningKey({ keyDid: KEY.toUpperCase().replace("DID:PKH:EIP155", "did:pkh:eip155"), keyType: "service-signing", displayName: "x402 receipt signer", tags: ["x402"], notes: "In a KMS" }, session(ownerCookie));
    expect(shapeErrors({ ...REFERENCE_KEY, created: "boolean" }, created)).toEqual([]);
    expect(created).toMatchObject({ keyDid: KEY, keyType: "service-signing", created: true, tags: ["x402"], notes: "In a KMS" });
    const updated = await call("POST", "/api/private/signing-keys", ownerCookie, { keyDid: KEY, keyType: "attestation", displayName: "Receipts", tags: ["x402", "mcp"] });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: created.id, keyType: "service-signing", displayName: "Receipts", notes: null, created: false, createdAt: created.createdAt });
    await registerSigningKey({ keyDid: pkh(expiringKey), keyType: "service-signing", displayName: "Short-lived", tags: ["mcp"] }, session(ownerCookie));
    expect((await registerSigningKey({ keyDid: KEY, keyType: "service-signing", displayName: "Mine too" }, session(strangerCookie))).created).toBe(true);

    const listed = await call("GET", "/api/private/signing-keys", ownerCookie);
    expect(listed.status).toBe(200);
    for (const key of listed.body.keys) expect(shapeErrors(REFERENCE_KEY, key)).toEqual([]);
    expect(listed.body.keys.map((k: { keyDid: string }) => k.keyDid)).toEqual([pkh(expiringKey), KEY]);
    expect((await listSigningKeys({ tag: "x402" }, session(ownerCookie))).map((k) => k.keyDid)).toEqual([KEY]);
    expect(await listSigningKeys({ keyType: "attestation" }, session(ownerCookie))).toEqual([]);

    expect((await call("POST", "/api/private/signing-keys", ownerCookie, { keyDid: "did:web:keys.test", keyType: "service-signing", displayName: "x" })).body)
      .toEqual({ error: "keyDid must be a did:pkh, did:key, did:jwk or did:ethr", code: "INVALID_INPUT" });
    expect((await call("POST", "/api/private/signing-keys", ownerCookie, { keyDid: KEY, keyType: "service-signing", displayName: "x", tags: ["x".repeat(51)] })).body.error)
      .toBe("tags[0] must be at most 50 characters");
    expect((await call("GET", "/api/private/signing-keys", "")).status).toBe(401);
  });

  test("none, then basic (the TXT record), intermediate (the service's witness), advanced (a binding through the private relay)", async () => {
    expect(await verdict()).toEqual(["registered", "none"]);
    dns.setTxt("_controllers.keys.test", [[`v=1;controller=${pkh(owner)};controller=${KEY};controller=${pkh(expiringKey)}`]]);
    const basic = await status();
    expect([basic.record.status, basic.record.trustLevel, basic.record.endpointEvidence.found, basic.record.endpointEvidence.sources]).toEqual(["registered", "basic", true, ["dns-txt"]]);

    const witness = await call("POST", "/v1/controller-witness", ownerCookie, { subjectDid: SUBJECT, controllerDid: KEY });
    expect(witness.status).toBe(200);
    const intermediate = await status();
    expect([intermediate.record.trustLevel, intermediate.record.controllerWitness?.uid]).toEqual(["intermediate", witness.body.uid]);

    // The relay writes a key binding only for a subject the account holds (SUBJECT_SCOPED_SCHEMAS); written a second
    // after the witness, so that a time between the two exists.
    await after(await blockTime(witness.body.blockNumber));
    expect((await call("POST", "/api/private/subjects", ownerCookie, { did: "keys.test" })).status).toBe(201);
    const bound = await bindThroughRelay(owner, ownerCookie, KEY);
    expect(bound.status).toBe(200);
    const advanced = await status();
    expect(advanced.record).toMatchObject({
      status: "active",
      trustLevel: "advanced",
      keyBinding: { uid: bound.body.uid, attester: privateKeyToAccount(owner).address, keyPurpose: ["assertionMethod"], revocationTime: 0 },
    });
    expect((await isKeyAuthorized({ subjectDid: SUBJECT, keyDid: KEY }, { baseUrl: service.url })).authorized).toBe(true);

    // `at` before the binding was mined: as the chain stood then. The premise first, with the blocks and times in
    // the message if it fails: the binding's block came at least a second after the witness's (the wait above, on
    // the chain's clock since a CI run found both blocks stamped with the same second after a wall-clock wait).
    const witnessed = await blockTime(witness.body.blockNumber);
    const mined = await blockTime(bound.body.blockNumber);
    expect({ witness: [witness.body.blockNumber, witnessed], binding: [bound.body.blockNumber, mined], secondsApart: mined - witnessed >= 1n })
      .toMatchObject({ secondsApart: true });
    expect(await verdict(KEY, Number(mined) - 1)).toEqual(["registered", "intermediate"]);

    // The account's list carries the trust per subject.
    const listed = await listSigningKeys({}, session(ownerCookie));
    expect(listed.find((k) => k.keyDid === KEY)?.subjects).toEqual([{ subjectDid: SUBJECT, status: "active", trustLevel: "advanced" }]);
  });

  test("a stranger's binding never counts; a binding past its expiry is expired", async () => {
    // The stranger binds its own key to the subject, straight through EAS (it pays its gas): ignored.
    const strangerKey = pkh(stranger);
    const { uid } = await writer.attest(stranger, stack.devnet.schemaUids["key-binding"] as Hex, {
      recipient: (didToAddress(SUBJECT) as { value: Hex }).value,
      data: (encodeSchemaData(BINDING.schema, { subject: SUBJECT, keyId: strangerKey, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0n, effectiveAt: 0n, expiresAt: 0n }) as { value: Hex }).value,
      revocable: true,
    });
    expect(uid).toMatch(/^0x/);
    // Written straight to the chain, not through the service: its follower polls before the read.
    await stack.sync();
    const ignored = await status(strangerKey);
    expect([ignored.record.status, ignored.record.keyBinding]).toEqual(["registered", null]);
    // The stranger's relay write is refused outright: it does not hold the subject.
    expect((await bindThroughRelay(stranger, strangerCookie, strangerKey)).body.code).toBe("SUBJECT_OWNERSHIP_REQUIRED");

    // The owner (a controller by the TXT record) binds a key whose binding expired ten seconds ago, straight through EAS.
    const now = BigInt(Math.floor(Date.now() / 1000));
    await writer.attest(owner, stack.devnet.schemaUids["key-binding"] as Hex, {
      recipient: (didToAddress(SUBJECT) as { value: Hex }).value,
      data: (encodeSchemaData(BINDING.schema, { subject: SUBJECT, keyId: pkh(expiringKey), publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0n, effectiveAt: 0n, expiresAt: now - 10n }) as { value: Hex }).value,
      revocable: true,
    });
    await stack.sync();
    expect(await verdict(pkh(expiringKey))).toEqual(["expired", "basic"]);
  });

  test("a revocation: revoked from then on, still active at a time before it", async () => {
    const before = await status();
    const bindingUid = before.record.keyBinding!.uid as Hex;
    // A second after anything else was written, so that a time between the binding and its revocation exists.
    await after((await writer.client.getBlock()).timestamp);
    await writer.revoke(owner, stack.devnet.schemaUids["key-binding"] as Hex, bindingUid);
    await stack.sync();
    const revoked = await status();
    expect(revoked.record).toMatchObject({ status: "revoked", trustLevel: "intermediate", keyBinding: { uid: bindingUid } });
    const revokedAt = revoked.record.keyBinding!.revocationTime;
    expect(await verdict(KEY, revokedAt - 1)).toEqual(["active", "advanced"]);
    expect((await isKeyAuthorized({ subjectDid: SUBJECT, keyDid: KEY }, { baseUrl: service.url })).authorized).toBe(false);
    // A lower minimum does not bring a revoked key back: the record keeps the witness's level, the window has ended.
    for (const minimumTrust of ["intermediate", "basic"] as const) {
      expect((await isKeyAuthorized({ subjectDid: SUBJECT, keyDid: KEY, minimumTrust }, { baseUrl: service.url })).authorized).toBe(false);
    }
  });

  test("no JSON-RPC call per lookup on a chain 100 provider windows long, once the index is warm; bad input; a chain that is down", async () => {
    const counted: number[] = [];
    for (let i = 0; i < 3; i++) counted.push((await status()).calls.length);
    // Before issue 34: up to 5 (the head, the logs after the index's checkpoint, the witnesses, the bindings).
    expect(counted).toEqual([0, 0, 0]);
    console.log(`[key_trust_test] JSON-RPC calls per key-status lookup: ${counted.join(", ")} (chain of ${LONG}+ blocks, ${WINDOW}-block provider window)`);

    const get = async (query: string) => {
      const res = await fetch(`${service.url}/v1/key-status?${query}`);
      return { status: res.status, body: await res.json() as Record<string, unknown> };
    };
    const calls = proxy.calls.length;
    expect(await get(`subjectDid=${SUBJECT}`)).toEqual({ status: 400, body: { error: "keyDid is required", code: "INVALID_INPUT" } });
    expect((await get(`subjectDid=nope&keyDid=${KEY}`)).body.code).toBe("INVALID_DID");
    expect((await get(`subjectDid=${SUBJECT}&keyDid=did:web:keys.test`)).body.code).toBe("INVALID_DID");
    expect((await get(`subjectDid=${SUBJECT}&keyDid=${KEY}&at=${Math.floor(Date.now() / 1000) + 3600}`)).body).toEqual({ error: "at must not be in the future", code: "INVALID_INPUT" });
    expect(proxy.calls.length).toBe(calls);

    // 200 lookups at once: at most KEY_STATUS_MAX_IN_FLIGHT (16) run, the rest are 429; none reaches the chain.
    const flood = proxy.calls.length;
    const answers = await Promise.all(Array.from({ length: 200 }, () => fetch(`${service.url}/v1/key-status?subjectDid=${SUBJECT}&keyDid=${KEY}`)));
    const served = answers.filter((r) => r.status === 200).length;
    const refused = answers.filter((r) => r.status === 429 && r.headers.get("retry-after") === "1").length;
    expect(answers.filter((r) => r.status !== 200 && r.status !== 429).map((r) => r.status)).toEqual([]);
    expect(served + refused).toBe(200);
    expect(proxy.calls.length - flood).toBe(0);
    console.log(`[key_trust_test] 200 parallel lookups: ${served} served, ${refused} refused 429, ${proxy.calls.length - flood} JSON-RPC calls`);

    // The provider down: lookups answer from the index, at the head it last read. Without `at` each answer is as of
    // its own second (`at`, `endpointEvidence.checkedAt`: the clock's, not the index's); the two may straddle one.
    const unclocked = ({ status, body }: Awaited<ReturnType<typeof get>>) =>
      ({ status, body: { ...body, at: undefined, endpointEvidence: { ...(body.endpointEvidence as object), checkedAt: undefined } } });
    const before = await get(`subjectDid=${SUBJECT}&keyDid=${KEY}`);
    proxy.onHttp = () => new Response("down", { status: 503 });
    try {
      const down = await get(`subjectDid=${SUBJECT}&keyDid=${KEY}`);
      expect(unclocked(down)).toEqual(unclocked(before));
      expect(down.body.at as number).toBeGreaterThanOrEqual(before.body.at as number);
      expect((down.body.asOf as { blockNumber: number }).blockNumber).toBeGreaterThan(LONG);
      const listed = await call("GET", "/api/private/signing-keys", ownerCookie);
      expect(listed.status).toBe(200);
      expect(listed.body.keys.find((k: { keyDid: string }) => k.keyDid === KEY)).toMatchObject({ subjects: [{ subjectDid: SUBJECT, status: "revoked" }] });
    } finally {
      proxy.onHttp = undefined;
    }
  });
});
