/**
 * Contract test against the real frontend client (issue 17): every answer of the routes it calls carries every field
 * its types read, with their types (e2e/support/frontend_shapes.ts), on the real service and devnet, through the
 * flow the frontend runs: register, sign in, session and account views, a subject proven by DNS, the relay.
 * A change that drops or retypes one of those fields fails here.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack, type Stack } from "./harness.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { FRONTEND_SHAPES, shapeErrors } from "./support/frontend_shapes.ts";

const APP = "https://app.test";
let stack: Stack;
let dns: DnsServer;
const key = generatePrivateKey();
const wallet = privateKeyToAccount(key);
const walletDid = `did:pkh:eip155:31337:${wallet.address}`;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.frontend.test", [[`v=1;controller=${walletDid.toLowerCase()}`]]);
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      FREE_PLAN_SCHEMAS: "*",
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

type Route = keyof typeof FRONTEND_SHAPES;
let cookie = "";
/** Every answer seen, by route, so the last test can say that each route of the table was exercised. */
const seen = new Set<string>();

/** Calls `route` as the frontend does (JSON, credentials, its origin) and checks the answer against its shape. */
async function call(route: Exclude<Route, "error">, body?: unknown, query = ""): Promise<Record<string, any>> {
  const [method, path] = route.split(" ") as [string, string];
  const res = await fetch(`${stack.baseUrl}${path}${query}`, {
    method,
    headers: { "content-type": "application/json", origin: APP, ...(cookie ? { cookie } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await res.json() as Record<string, any>;
  const setCookie = res.headers.get("set-cookie");
  if (setCookie?.startsWith("ats_session=") && !setCookie.startsWith("ats_session=;")) cookie = setCookie.split(";")[0]!;
  expect({ route, status: res.status, answer: res.ok ? "ok" : answer }).toEqual({ route, status: res.status, answer: "ok" });
  expect({ route, errors: shapeErrors(FRONTEND_SHAPES[route], answer) }).toEqual({ route, errors: [] });
  seen.add(route);
  return answer;
}

async function signIn(route: "POST /api/private/session/wallet/verify" | "POST /api/private/session/wallet/register", provider = true) {
  const challenge = await call("POST /api/private/session/wallet/challenge", { walletDid, chainId: 31337, domain: "app.test", uri: `${APP}/login` });
  return await call(route, {
    challengeId: challenge.challengeId,
    walletDid,
    siweMessage: challenge.siweMessage,
    signature: await wallet.signMessage({ message: challenge.siweMessage }),
    ...(provider ? { walletProviderId: "io.metamask", executionMode: "native" } : {}),
  });
}

describe("the frontend client's view of our answers", () => {
  test("the checker itself: a real answer with a field dropped or retyped fails, with the field's path", () => {
    const answer = { account: { id: "a", displayName: null }, client: { clientId: "c" }, session: { id: "s", expiresAt: "t" } };
    const shape = FRONTEND_SHAPES["POST /api/private/session/wallet/verify"];
    expect(shapeErrors(shape, answer)).toEqual([]);
    expect(shapeErrors(shape, { ...answer, session: { id: "s" } })).toEqual(["$.session.expiresAt: missing"]);
    expect(shapeErrors(shape, { ...answer, account: { id: 1, displayName: null } })).toEqual(["$.account.id: expected string, got 1"]);
    expect(shapeErrors(FRONTEND_SHAPES["GET /api/private/subjects"], { subjects: [{}] })).toHaveLength(5);
  });

  test("register, sign in, session, account, subscription, rename and logout", async () => {
    // A sign-in naming no provider or mode (our clients) answers every field the frontend reads all the same.
    await signIn("POST /api/private/session/wallet/register", false);
    expect((await call("GET /api/private/session/me")).wallet).toMatchObject({ walletProviderId: null, executionMode: "subscription" });
    await signIn("POST /api/private/session/wallet/verify");
    const me = await call("GET /api/private/session/me");
    expect(me.wallet).toMatchObject({ walletProviderId: "io.metamask", executionMode: "native", isManagedWallet: false });
    await call("GET /api/private/accounts/me");
    await call("PATCH /api/private/accounts/me", { displayName: "Frontend" });
    const renamed = await call("PATCH /api/private/accounts/me", { displayName: null });
    expect(renamed.account.displayName).toBeNull();
    await call("GET /api/private/subscriptions/current");
  });

  test("subjects: the bootstrap default, ownership by DNS (verified and failed), adding a proven one", async () => {
    const bootstrap = await call("GET /api/private/subjects");
    expect(bootstrap.subjects).toHaveLength(1);
    const verified = await call("POST /api/verify/subject-ownership", { subjectDid: "did:web:frontend.test", connectedWalletDid: walletDid });
    expect(verified).toMatchObject({ ok: true, status: "verified", method: "dns" });
    const failed = await call("POST /api/verify/subject-ownership", { subjectDid: "did:web:nobody.test", connectedWalletDid: walletDid });
    expect(failed).toMatchObject({ ok: false, status: "failed" });
    await call("POST /api/private/subjects", { did: "did:web:frontend.test", displayName: "Frontend" });
    const after = await call("GET /api/private/subjects");
    expect(after.subjects[0]).toMatchObject({ canonicalDid: "did:web:frontend.test", isDefault: true });
    const account = await call("GET /api/private/accounts/me");
    expect(account.primarySubject).toMatchObject({ canonicalDid: "did:web:frontend.test" });
  });

  test("the relay: nonce and a write; error answers carry error and code; logout", async () => {
    const nonce = await call("GET /api/private/relay/eas/nonce", undefined, `?attester=${wallet.address}`);
    const def = findSchemaByName("linked-identifier")!;
    const prepared = prepareDelegatedAttestation({
      schema: { uid: stack.devnet.schemaUids["linked-identifier"] as Hex, schema: def.schema, revocable: def.revocable },
      data: { subject: "did:web:frontend.test", linkedId: "did:web:elsewhere.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 },
      attester: wallet.address,
      nonce: BigInt(nonce.nonce),
      chainId: nonce.chainId,
      easAddress: nonce.easAddress as Hex,
    });
    const written = await call("POST /api/private/relay/eas/delegated-attest", {
      attester: wallet.address,
      prepared,
      signature: await wallet.signTypedData(signableTypedData(prepared)),
      subjectDid: "did:web:frontend.test",
    });
    const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
    const onChain = await chain.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [written.uid as Hex] });
    expect(onChain.attester).toBe(wallet.address);

    const refused = await fetch(`${stack.baseUrl}/api/private/relay/eas/delegated-attest`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: APP, cookie },
      body: JSON.stringify({ attester: wallet.address, prepared, signature: "0x00" }),
    });
    const error = await refused.json();
    expect(refused.status).toBe(400);
    expect(shapeErrors(FRONTEND_SHAPES.error, error)).toEqual([]);
    expect(Object.keys(error)).toEqual(expect.arrayContaining(["error", "code"]));

    await call("POST /api/private/session/logout");
    const gone = await fetch(`${stack.baseUrl}/api/private/session/me`, { headers: { origin: APP, cookie } });
    expect(gone.status).toBe(401);
  });

  test("every route of the table was called", () => {
    expect([...seen].sort()).toEqual(Object.keys(FRONTEND_SHAPES).filter((k) => k !== "error").sort());
  });
});
