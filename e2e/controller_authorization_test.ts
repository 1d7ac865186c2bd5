/**
 * Controller authorization as the reference now defines it (issue 38, decisions §25), against the real service over
 * loopback: Anvil with the real EAS contracts and the index followed, the real DNS server on 127.0.0.1 and a real HTTPS
 * server with the test CA. did:jwk controllers by a DNS `jkt=S256:` thumbprint, a did.json `publicKeyJwk` and a JWK Set
 * at `/.well-known/jwks.json`; a witness window closed by a key binding's revocation, with a key-pinning witness; DID
 * URL resolution; the bad-input 400s; and no JSON-RPC call per lookup once the index is warm.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { fetchControllerAuthorization, resolveDidUrl } from "../client/mod.ts";
import { didToAddress, jwkToDidJwk } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { afterChainSecond } from "./support/chain_clock.ts";
import { easWriter } from "./support/eas_writer.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

const HOSTS = ["jkt.test", "doc.test", "jwks.test", "pin.test"];
const WITNESS = findSchemaByName("controller-witness")!;
const BINDING = findSchemaByName("key-binding")!;

let dns: DnsServer;
let https: HttpsServer;
let stack: Stack;
let writer: ReturnType<typeof easWriter>;
let owner: Hex;
/** One key published each way, and the key pinned on pin.test. */
const keys: Record<"dns" | "doc" | "jwks" | "pin", { jwk: Record<string, string>; did: string }> = {} as never;
const subject = (host: string) => `did:web:${host}%3A${https.port}`;

beforeAll(async () => {
  for (const name of ["dns", "doc", "jwks", "pin"] as const) {
    const { publicKey } = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(publicKey) as Record<string, string>;
    keys[name] = { jwk, did: (jwkToDidJwk(jwk) as { value: string }).value };
  }
  dns = await startDnsServer();
  await getTestCa();
  const leaf = await issueLeaf(HOSTS);
  https = await startHttpsServer({
    ...leaf,
    routes: (request) => {
      const host = (request.headers.get("host") ?? "").split(":")[0]!;
      const path = new URL(request.url).pathname;
      const id = subject(host);
      if (host === "doc.test" && path === "/.well-known/did.json") {
        // Members in another order, with kid, alg and use: compared by the key type's public members.
        const { x, y, crv, kty } = keys.doc.jwk;
        return Response.json({ id, verificationMethod: [{ id: "#key-1", type: "JsonWebKey2020", publicKeyJwk: { y, kid: "key-1", x, alg: "ES256", use: "sig", crv, kty } }] });
      }
      if (host === "jwks.test" && path === "/.well-known/jwks.json") return Response.json({ keys: [{ ...keys.jwks.jwk, kid: "k1", use: "sig" }] });
      if (host === "pin.test" && path === "/.well-known/did.json") {
        return Response.json({ id, verificationMethod: [{ id: `${id}#key-1`, type: "JsonWebKey2020", publicKeyJwk: keys.pin.jwk }] });
      }
      return new Response("nope", { status: 404 });
    },
  });
  for (const name of HOSTS) dns.setA(name, ["127.0.0.1"]);
  // Only the thumbprint: a did:jwk would not fit in one 255-character TXT string.
  dns.setTxt("_omatrust.jkt.test", [[`v=1;jkt=S256:${await calculateJwkThumbprint(keys.dns.jwk as never, "sha256")}`]]);
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "100000",
      KEY_STATUS_RATE_PER_MINUTE: "100000",
    },
    didJsonCa: (await getTestCa()).cert,
  });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress as Hex });
  owner = stack.devnet.keys.users[0] as Hex;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await https?.stop();
  await dns?.stop();
});

async function get(path: string) {
  const res = await fetch(`${stack.baseUrl}${path}`);
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}
const authorization = (subjectDid: string, controllerDid: string, more = "") =>
  get(`/v1/controller-authorization?subjectDid=${encodeURIComponent(subjectDid)}&controllerDid=${encodeURIComponent(controllerDid)}${more}`);
/** Waits until the chain's clock is past `seconds`, so the next block is later (e2e/support/chain_clock.ts). */
const after = (seconds: bigint | number) => afterChainSecond(writer.client, seconds);
const blockTime = async (blockNumber: bigint) => (await writer.client.getBlock({ blockNumber })).timestamp;

describe("controller authorization on a real chain, real DNS and real HTTPS", () => {
  test("a did:jwk named by a DNS TXT jkt=S256: thumbprint: authorized by dns, with asOf and public cache headers", async () => {
    const res = await authorization(subject("jkt.test"), keys.dns.did);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      subjectDid: `did:web:jkt.test%3a${https.port}`,
      controllerDid: keys.dns.did,
      authorized: true,
      requestedPurpose: ["authentication", "assertionMethod"],
      keyPurposeStatus: "unknown",
      anchoredFrom: null,
      until: null,
      currentlyVerified: true,
      liveMethod: "dns",
      controllerWitnesses: [],
      keyBindingUid: null,
      keyBindingUids: [],
    });
    expect(typeof res.body.at).toBe("number");
    expect(res.body.asOf).toMatchObject({ blockNumber: expect.any(Number), blockHash: expect.stringMatching(/^0x/) });
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+/);
    // Another key is not named.
    expect((await authorization(subject("jkt.test"), keys.doc.did)).body).toMatchObject({ authorized: false, currentlyVerified: false, liveMethod: null });
  });

  test("a did.json publicKeyJwk in another member order with kid/alg/use: did-document; a JWK Set: jwks, fetched under the same policy", async () => {
    expect((await authorization(subject("doc.test"), keys.doc.did)).body).toMatchObject({ authorized: true, liveMethod: "did-document" });
    const before = https.requests.length;
    expect((await authorization(subject("jwks.test"), keys.jwks.did)).body).toMatchObject({ authorized: true, liveMethod: "jwks" });
    expect(https.requests.slice(before).map((r) => r.path)).toContain("/.well-known/jwks.json");
    // Kept by the discovery cache: asked again (another purpose, another answer), the JWK Set is not fetched again.
    const again = https.requests.length;
    expect((await authorization(subject("jwks.test"), keys.jwks.did, "&purpose=authentication")).body).toMatchObject({ authorized: true, liveMethod: "jwks" });
    expect(https.requests.slice(again).filter((r) => r.path === "/.well-known/jwks.json")).toEqual([]);
  });

  test("key status (§17) reads the same evidence: a did:jwk named by jkt= or the JWK Set is basic", async () => {
    const status = (host: string, key: string) => get(`/v1/key-status?subjectDid=${encodeURIComponent(subject(host))}&keyDid=${encodeURIComponent(key)}`);
    expect((await status("jkt.test", keys.dns.did)).body).toMatchObject({ trustLevel: "basic", endpointEvidence: { found: true, sources: ["dns-txt"] } });
    expect((await status("jwks.test", keys.jwks.did)).body).toMatchObject({ trustLevel: "basic", endpointEvidence: { found: true, sources: ["jwks"] } });
    expect((await status("doc.test", keys.doc.did)).body).toMatchObject({ trustLevel: "basic", endpointEvidence: { found: true, sources: ["did-json"] } });
  });

  test("a witness window: a pinning witness of a DID URL, a binding by the witnessed owner, closed by its revocation", async () => {
    const pin = subject("pin.test");
    const recipient = (didToAddress(pin) as { value: Hex }).value;
    const witnessKey = stack.devnet.keys.witness as Hex;
    const witness = (subjectText: string, controller: string) =>
      writer.attest(witnessKey, stack.devnet.schemaUids["controller-witness"] as Hex, {
        recipient,
        data: (encodeSchemaData(WITNESS.schema, { subject: subjectText, controller, method: "did-json", observedAt: BigInt(Math.floor(Date.now() / 1000)) }) as { value: Hex }).value,
        revocable: false,
      });
    const ownerDid = `did:pkh:eip155:${stack.service.chainId}:${privateKeyToAccount(owner).address.toLowerCase()}`;
    await witness(pin, ownerDid);
    const pinned = await witness(`${pin}#key-1`, keys.pin.did);
    await after(await blockTime(pinned.blockNumber));
    const bound = await writer.attest(owner, stack.devnet.schemaUids["key-binding"] as Hex, {
      recipient,
      data: (encodeSchemaData(BINDING.schema, {
        subject: pin,
        keyId: `${pin}#key-1`,
        publicKeyJwk: JSON.stringify({ ...keys.pin.jwk, kid: "key-1" }),
        keyPurpose: ["authentication", "assertionMethod"],
        proofs: [],
        issuedAt: 0n,
        effectiveAt: 0n,
        expiresAt: 0n,
      }) as { value: Hex }).value,
      revocable: true,
    });
    const boundAt = await blockTime(bound.blockNumber);
    await after(boundAt);
    await writer.revoke(owner, stack.devnet.schemaUids["key-binding"] as Hex, bound.uid);
    await stack.sync();

    const pinnedAt = String(await blockTime(pinned.blockNumber));
    const open = await authorization(pin, keys.pin.did, `&at=${boundAt}`);
    expect(open.body).toMatchObject({
      authorized: true,
      keyPurposeStatus: "matched",
      anchoredFrom: pinnedAt,
      until: null,
      controllerWitnesses: [{ uid: pinned.uid, issuedAt: pinnedAt, attester: privateKeyToAccount(witnessKey).address, method: "did-json", pinned: `${pin}#key-1` }],
      keyBindingUid: bound.uid,
      keyBindingUids: [bound.uid],
    });
    const closed = await authorization(pin, keys.pin.did);
    expect(closed.body.until).toMatch(/^\d+$/);
    expect(BigInt(closed.body.until)).toBeGreaterThan(boundAt);
    // The revocation closes the window; the did.json still names the key, but live evidence does not outlast until.
    expect(closed.body).toMatchObject({ authorized: false, currentlyVerified: true, liveMethod: "did-document", keyPurposeStatus: "matched" });
    // keyAgreement was never granted.
    expect((await authorization(pin, keys.pin.did, `&at=${boundAt}&purpose=keyAgreement`)).body).toMatchObject({ authorized: false, keyPurposeStatus: "mismatch" });
  });

  test("a DID URL resolves to the durable did:jwk of the key its document names now", async () => {
    const didUrl = `${subject("pin.test")}#key-1`;
    const res = await get(`/v1/did-url/resolve?didUrl=${encodeURIComponent(didUrl)}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      didUrl: `did:web:pin.test%3a${https.port}#key-1`,
      did: `did:web:pin.test%3a${https.port}`,
      fragment: "key-1",
      publicKeyJwk: { crv: keys.pin.jwk.crv, kty: keys.pin.jwk.kty, x: keys.pin.jwk.x, y: keys.pin.jwk.y },
      controllerDid: keys.pin.did,
    });
    expect(await resolveDidUrl(didUrl, { baseUrl: stack.baseUrl })).toEqual(res.body as never);
    expect((await get(`/api/public/did-url/resolve?didUrl=${encodeURIComponent(`${subject("pin.test")}#key-9`)}`)).status).toBe(404);
  });

  test("bad input is 400 with a message saying what to give; no JSON-RPC call per lookup once the index is warm", async () => {
    const now = Math.floor(Date.now() / 1000);
    const subjectUrl = await authorization(`${subject("pin.test")}#key-1`, keys.pin.did);
    expect([subjectUrl.status, subjectUrl.body.code]).toEqual([400, "INVALID_DID"]);
    expect(subjectUrl.body.error).toContain("a key reference, not a subject");
    const controllerUrl = await authorization(subject("pin.test"), `${subject("pin.test")}#key-1`);
    expect([controllerUrl.status, controllerUrl.body.code]).toEqual([400, "INVALID_DID"]);
    expect(controllerUrl.body.error).toContain("/v1/did-url/resolve");
    expect((await authorization(subject("pin.test"), keys.pin.did, "&purpose=capabilityDelegation")).body)
      .toEqual({ error: "purpose must be a comma list of authentication, assertionMethod, keyAgreement", code: "INVALID_INPUT" });
    expect((await authorization(subject("pin.test"), keys.pin.did, `&at=${now + 3600}`)).body).toEqual({ error: "at must not be in the future", code: "INVALID_INPUT" });
    expect((await get(`/v1/did-url/resolve?didUrl=${encodeURIComponent(subject("pin.test"))}`)).status).toBe(400);

    stack.rpc.reset();
    for (const [host, key] of [["jkt.test", keys.dns.did], ["pin.test", keys.pin.did], ["doc.test", keys.doc.did]] as const) {
      expect((await authorization(subject(host), key, "&purpose=authentication")).status).toBe(200);
    }
    const client = await fetchControllerAuthorization({ subjectDid: subject("jwks.test"), controllerDid: keys.jwks.did }, { baseUrl: stack.baseUrl });
    expect(client.authorized).toBe(true);
    expect(stack.rpc.trips()).toEqual([]);
  });
});
