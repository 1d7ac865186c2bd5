/**
 * Subjects of an account on the real service (issue 17, item 2): the bootstrap subject, adding a did:web proven by
 * DNS, no duplicates in one account, no squatting across accounts, another account's subject not found, rename,
 * default, delete; session/me and accounts/me follow the default; contract subjects added by owner(), by their creation
 * transaction and by an ownership transfer, and 502 when the chain cannot be reached.
 */
import { base58btcEncode } from "../domain/did/mod.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http, keccak256, stringToBytes } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { ownedContract } from "./support/owned_contract.ts";
import { inFrontOf, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
let stack: Stack;
let dns: DnsServer;
let proxy: RpcProxy;
const alice = generatePrivateKey();
const bob = generatePrivateKey();
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.shop.test", [[`v=1;controller=${pkh(alice)};controller=${pkh(bob)}`]]);
  dns.setTxt("_controllers.bobs.test", [[`v=1;controller=${pkh(bob)}`]]);
  proxy = startRpcProxy("");
  stack = await startStack({
    env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, SIWE_CHALLENGE_RATE_PER_MINUTE: "1000", DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true", SUBJECTS_PER_ACCOUNT: "3" },
    rpcUrlFor: inFrontOf(proxy),
  });
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
  await proxy?.stop();
});

async function call(method: string, path: string, cookie: string, body?: unknown) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { origin: APP, cookie, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

const signIn = (key: Hex) => signInCookie(stack.baseUrl, key, { origin: APP });

describe("subjects", () => {
  test("bootstrap, add by DNS proof (replacing the bootstrap), duplicates, no squatting, not found across accounts, rename, default, delete", async () => {
    const a = await signIn(alice);
    const b = await signIn(bob);
    const start = await call("GET", "/api/private/subjects", a);
    expect(start.body.subjects).toHaveLength(1);
    expect(start.body.subjects[0]).toMatchObject({ canonicalDid: pkh(alice), isDefault: true, ownership: { method: "wallet", walletDid: pkh(alice) } });

    const added = await call("POST", "/api/private/subjects", a, { did: "shop.test", displayName: "Shop" });
    expect(added.status).toBe(201);
    expect(added.body.subject).toMatchObject({
      canonicalDid: "did:web:shop.test",
      subjectDidHash: keccak256(stringToBytes("did:web:shop.test")),
      displayName: "Shop",
      isDefault: true,
      ownership: { method: "dns", walletDid: pkh(alice) },
    });
    const listed = await call("GET", "/api/private/subjects", a);
    expect(listed.body.subjects.map((s: { canonicalDid: string }) => s.canonicalDid)).toEqual(["did:web:shop.test"]);
    expect((await call("GET", "/v1/session/me", a)).body.primarySubject).toEqual({ canonicalDid: "did:web:shop.test", subjectDidHash: keccak256(stringToBytes("did:web:shop.test")) });
    expect((await call("GET", "/api/private/accounts/me", a)).body.primarySubject).toMatchObject({ id: added.body.subject.id, displayName: "Shop" });

    const twice = await call("POST", "/api/private/subjects", a, { subjectDid: "did:web:www.shop.test" });
    expect([twice.status, twice.body.code]).toEqual([409, "SUBJECT_ALREADY_EXISTS"]);
    const bobsToo = await call("POST", "/api/private/subjects", b, { did: "did:web:shop.test" });
    expect(bobsToo.status).toBe(201);
    const notHis = await call("GET", `/api/private/subjects/${added.body.subject.id}`, b);
    expect([notHis.status, notHis.body.code]).toEqual([404, "SUBJECT_NOT_FOUND"]);
    expect((await call("DELETE", `/api/private/subjects/${added.body.subject.id}`, b)).status).toBe(404);

    const refused = await call("POST", "/api/private/subjects", a, { did: "did:web:bobs.test" });
    expect([refused.status, refused.body.code]).toEqual([403, "SUBJECT_OWNERSHIP_VERIFICATION_FAILED"]);
    expect(refused.body.details).toContain("_controllers.bobs.test");

    const wallet = await call("POST", "/api/private/subjects", a, { did: pkh(alice) });
    expect(wallet.body.subject).toMatchObject({ isDefault: false, ownership: { method: "wallet" } });
    const renamed = await call("PATCH", `/api/private/subjects/${wallet.body.subject.id}`, a, { displayName: "Wallet", isDefault: true });
    expect(renamed.body.subject).toMatchObject({ displayName: "Wallet", isDefault: true });
    const order = (await call("GET", "/api/private/subjects", a)).body.subjects.map((s: { canonicalDid: string; isDefault: boolean }) => [s.canonicalDid, s.isDefault]);
    expect(order).toEqual([[pkh(alice), true], ["did:web:shop.test", false]]);
    expect((await call("DELETE", `/api/private/subjects/${wallet.body.subject.id}`, a)).body).toEqual({ success: true, id: wallet.body.subject.id });
    expect((await call("GET", "/api/private/subjects", a)).body.subjects).toEqual([expect.objectContaining({ canonicalDid: "did:web:shop.test", isDefault: true })]);
  });

  test("bad input 400; without a session 401; a cross-origin DELETE is refused", async () => {
    const a = await signIn(generatePrivateKey());
    expect((await call("POST", "/api/private/subjects", a, {})).body.code).toBe("INVALID_INPUT");
    expect((await call("POST", "/api/private/subjects", a, { did: "did:" })).body.code).toBe("INVALID_DID");
    const id = (await call("GET", "/api/private/subjects", a)).body.subjects[0].id;
    expect((await call("PATCH", `/api/private/subjects/${id}`, a, { isDefault: false })).body.code).toBe("INVALID_INPUT");
    expect((await call("GET", "/api/private/subjects", "ats_session=nope")).status).toBe(401);
    const cross = await fetch(`${stack.baseUrl}/api/private/subjects/${id}`, { method: "DELETE", headers: { origin: "https://evil.test", cookie: a } });
    expect(cross.status).toBe(403);
    expect((await call("GET", "/api/private/subjects", a)).body.subjects).toHaveLength(1);
  });
});

describe("subjects are bounded (issue 33)", () => {
  test("the wallet's own did:pkh on made-up chains is 400 UNSUPPORTED_CHAIN and stores nothing; past SUBJECTS_PER_ACCOUNT (3) 403 SUBJECT_LIMIT_EXCEEDED, exactly 3 of 10 parallel adds stored; the key list judges at most 3 subjects per key", async () => {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address.toLowerCase();
    for (let i = 0; i < 10; i++) dns.setTxt(`_controllers.bound${i}.test`, [[`v=1;controller=${pkh(key)}`]]);
    const c = await signIn(key);
    const chains = Array.from({ length: 200 }, (_, n) => n + 1).filter((n) => n !== 31337);
    const made = await Promise.all(chains.map((n) => call("POST", "/api/private/subjects", c, { did: `did:pkh:eip155:${n}:${address}` })));
    expect(new Set(made.map((r) => `${r.status} ${r.body.code}`))).toEqual(new Set(["400 UNSUPPORTED_CHAIN"]));
    // The active chain spelled with a leading zero is no chain's spelling: the one subject rule refuses it (issue 43).
    const zero = await call("POST", "/api/private/subjects", c, { did: `did:pkh:eip155:031337:${address}` });
    expect([zero.status, zero.body.code]).toEqual([400, "INVALID_DID"]);
    expect((await call("GET", "/api/private/subjects", c)).body.subjects.map((s: { canonicalDid: string }) => s.canonicalDid)).toEqual([pkh(key)]);

    const ip = await call("POST", "/api/private/subjects", c, { did: "did:web:127.0.0.1" });
    expect([ip.status, ip.body.code]).toEqual([400, "INVALID_DID"]);

    const parallel = await Promise.all(Array.from({ length: 10 }, (_, i) => call("POST", "/api/private/subjects", c, { did: `bound${i}.test` })));
    expect(parallel.filter((r) => r.status === 201)).toHaveLength(3);
    const refused = parallel.filter((r) => r.status !== 201);
    expect(new Set(refused.map((r) => `${r.status} ${r.body.code}`))).toEqual(new Set(["403 SUBJECT_LIMIT_EXCEEDED"]));
    expect(refused[0]!.body).toEqual({ error: "An account holds at most 3 subjects; delete one first", code: "SUBJECT_LIMIT_EXCEEDED" });
    const held = (await call("GET", "/api/private/subjects", c)).body.subjects as { id: string; canonicalDid: string }[];
    expect(held).toHaveLength(3);

    for (const n of [1, 2]) {
      const k = await call("POST", "/api/private/signing-keys", c, { keyDid: `did:key:z${base58btcEncode(Uint8Array.from([0xed, 0x01, ...new Array<number>(32).fill(n)]))}`, keyType: "service-signing", displayName: `k${n}` });
      expect(k.status).toBe(200);
    }
    const listed = await fetch(`${stack.baseUrl}/api/private/signing-keys`, { headers: { origin: APP, cookie: c } });
    const keys = ((await listed.json()) as { keys: { subjects: { subjectDid: string }[] | null }[] }).keys;
    expect(keys).toHaveLength(2);
    expect(keys.map((k) => k.subjects?.map((v) => v.subjectDid))).toEqual([0, 1].map(() => held.map((s) => s.canonicalDid)));

    // Deleting one makes room for one.
    expect((await call("DELETE", `/api/private/subjects/${held[0]!.id}`, c)).status).toBe(200);
    const spare = parallel.findIndex((r) => r.status !== 201);
    expect((await call("POST", "/api/private/subjects", c, { did: `bound${spare}.test` })).status).toBe(201);
    expect((await call("POST", "/api/private/subjects", c, { did: pkh(key) })).body.code).toBe("SUBJECT_LIMIT_EXCEEDED");
  }, 60_000);
});

describe("contract subjects", () => {
  test("added by owner(), by the creation transaction and by an ownership transfer; a stranger is refused saying why; the chain down is 502", async () => {
    const creatorKey = generatePrivateKey();
    const creator = privateKeyToAccount(creatorKey);
    const buyerKey = generatePrivateKey();
    const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 20 });
    await client.request({ method: "anvil_setBalance", params: [creator.address, "0x56bc75e2d63100000"] } as never);
    const wallet = createWalletClient({ account: creator, transport: http(stack.devnet.rpcUrl) });
    const { abi, bytecode } = await ownedContract();
    const deploy = async () => {
      const hash = await wallet.deployContract({ abi, bytecode, chain: null });
      return { hash, address: (await client.waitForTransactionReceipt({ hash })).contractAddress! };
    };
    const owned = await deploy();
    const minted = await deploy();
    const sold = await deploy();
    const toBuyer = async (contract: Hex) => {
      const hash = await wallet.writeContract({ address: contract, abi: abi as never, functionName: "transferOwnership" as never, args: [privateKeyToAccount(buyerKey).address] as never, chain: null });
      await client.waitForTransactionReceipt({ hash });
      return hash;
    };
    // `minted` moves on to the buyer: only its creation transaction still ties it to the creator.
    await toBuyer(minted.address);
    const transferHash = await toBuyer(sold.address);
    const c = await signIn(creatorKey);
    const b = await signIn(buyerKey);
    const did = (address: string) => `did:pkh:eip155:31337:${address.toLowerCase()}`;

    const byOwner = await call("POST", "/api/private/subjects", c, { did: did(owned.address) });
    expect([byOwner.status, byOwner.body.subject?.ownership.method, byOwner.body.subject?.isDefault]).toEqual([201, "contract", true]);
    const notOwner = await call("POST", "/api/private/subjects", c, { did: did(minted.address) });
    expect([notOwner.status, notOwner.body.code]).toEqual([403, "SUBJECT_OWNERSHIP_VERIFICATION_FAILED"]);
    expect(notOwner.body.error).toContain("owner()");
    expect(notOwner.body.details).toContain("txHash");
    // Created by the creator, but owned by the buyer now: its creation no longer proves the creator's control (it kept
    // proving a contract it had sold, and wrote key bindings for it). e2e/subject_ownership_test proves a creation.
    const soldOn = await call("POST", "/api/private/subjects", c, { did: did(minted.address), txHash: minted.hash });
    expect([soldOn.status, soldOn.body.code]).toEqual([403, "SUBJECT_OWNERSHIP_VERIFICATION_FAILED"]);
    expect(soldOn.body.error).toContain("owner() is now");
    const byTransfer = await call("POST", "/api/private/subjects", b, { subjectDid: did(sold.address), txHash: transferHash });
    expect([byTransfer.status, byTransfer.body.subject?.ownership.method]).toEqual([201, "transfer"]);
    const stranger = await call("POST", "/api/private/subjects", b, { did: did(owned.address) });
    expect([stranger.status, stranger.body.code]).toEqual([403, "SUBJECT_OWNERSHIP_VERIFICATION_FAILED"]);
    expect((await call("POST", "/api/private/subjects", c, { did: did(owned.address), txHash: "0x12" })).body.code).toBe("INVALID_INPUT");

    proxy.onHttp = () => new Response("down", { status: 502 });
    try {
      const down = await call("POST", "/api/private/subjects", b, { did: did(owned.address) });
      expect([down.status, down.body.code]).toEqual([502, "NETWORK_ERROR"]);
      expect(JSON.stringify(down.body)).not.toContain("127.0.0.1");
    } finally {
      proxy.onHttp = undefined;
    }
    expect((await call("GET", "/api/private/subjects", b)).body.subjects.map((s: { canonicalDid: string }) => s.canonicalDid)).toEqual([did(sold.address)]);
  }, 60_000);
});
