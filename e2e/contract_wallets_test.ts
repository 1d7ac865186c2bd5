/**
 * Smart-contract wallets (issue 17 item 5, decisions §12) on the devnet with the real EAS: a deployed ERC-1271
 * wallet attests through the public relay, signs in and writes through the private relay; a counterfactual one
 * signs in and attests with ERC-6492 signatures, the relay deploying it first. The wallet contract is
 * e2e/contracts/TestWallet.sol, compiled with the project's forge set-up.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack, type Stack } from "./harness.ts";
import { deployWalletFactory, type WalletFactory } from "./support/test_wallet.ts";

const APP = "https://app.test";
let stack: Stack;
let factory: WalletFactory;
let chain: PublicClient;
const owner = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  stack = await startStack({
    env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, SIWE_CHALLENGE_RATE_PER_MINUTE: "1000", FREE_PLAN_SCHEMAS: "*" },
  });
  chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 }) as PublicClient;
  const deployer = createWalletClient({
    account: privateKeyToAccount(stack.devnet.keys.users[5]!),
    chain: { id: stack.devnet.chainId, name: "devnet", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [stack.devnet.rpcUrl] } } },
    transport: http(stack.devnet.rpcUrl),
  });
  factory = await deployWalletFactory(deployer, chain);
});
afterAll(async () => await stack?.stop());

const code = async (address: Hex) => (await chain.getCode({ address })) ?? "0x";
const delegateNonce = () => chain.getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.delegate).address });

/** A delegated attestation by the wallet `attester`, signed by `signer` at the wallet's EAS nonce; `wrap` may make it ERC-6492. */
async function signedFor(attester: Hex, schemaName: "user-review" | "linked-identifier", data: Record<string, unknown>, signer = owner, wrap = (s: Hex) => s) {
  const def = findSchemaByName(schemaName)!;
  const nonce = await chain.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [attester] });
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids[schemaName] as Hex, schema: def.schema, revocable: def.revocable },
    data,
    attester,
    nonce,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return { prepared, signature: wrap(await signer.signTypedData(signableTypedData(prepared))), attester };
}

const review = (subject: string) => ({ subject, version: "1.0.0", ratingValue: 4, reviewBody: "Signed by a wallet contract", screenshotUrls: [], proofs: [] });

async function post(path: string, body: unknown, cookie?: string) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: APP, ...(cookie === undefined ? {} : { cookie }) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any>, cookie: res.headers.get("set-cookie")?.split(";")[0] };
}

/** Signs the wallet contract `address` in with a personal_sign by `signer`, wrapped by `wrap`. */
async function signIn(address: Hex, signer = owner, wrap = (s: Hex) => s) {
  const challenge = await post("/v1/session/wallet/challenge", { walletDid: `did:pkh:eip155:31337:${address}`, domain: "app.test", uri: `${APP}/login` });
  expect(challenge.status).toBe(200);
  const signature = wrap(await signer.signMessage({ message: challenge.body.siweMessage }));
  return await post("/v1/session/wallet/verify", { challengeId: challenge.body.challengeId, siweMessage: challenge.body.siweMessage, signature });
}

async function attestationOf(uid: Hex) {
  return await chain.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [uid] }) as { attester: Hex; schema: Hex };
}

describe("a deployed ERC-1271 wallet", () => {
  test("attests through the public relay with its owner's signature; a stranger's signature for it is refused before any gas", async () => {
    const wallet = await factory.deploy(owner.address, 1);
    expect(await code(wallet)).not.toBe("0x");
    const before = await delegateNonce();
    const refused = await post("/v1/delegated-attest", await signedFor(wallet, "user-review", review("did:web:wallet.test"), stranger));
    expect([refused.status, refused.body.code]).toEqual([400, "ATTESTER_MISMATCH"]);
    expect(await delegateNonce()).toBe(before);

    const written = await post("/v1/delegated-attest", await signedFor(wallet, "user-review", review("did:web:wallet.test")));
    expect(written.status).toBe(200);
    const attestation = await attestationOf(written.body.uid);
    expect(attestation.attester.toLowerCase()).toBe(wallet.toLowerCase());
    expect(await delegateNonce()).toBe(before + 1);
  });

  test("signs in by ERC-1271 and writes through the private relay, charged to its plan", async () => {
    const wallet = await factory.deploy(owner.address, 2);
    const notOwner = await signIn(wallet, stranger);
    expect([notOwner.status, notOwner.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
    const signedIn = await signIn(wallet);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.wallet.did.toLowerCase()).toBe(`did:pkh:eip155:31337:${wallet.toLowerCase()}`);
    const cookie = signedIn.cookie!;

    const subject = `did:pkh:eip155:31337:${wallet.toLowerCase()}`;
    const written = await post("/api/private/relay/eas/delegated-attest", await signedFor(wallet, "linked-identifier", {
      subject, linkedId: "did:web:wallet.test", proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0,
    }), cookie);
    expect(written.status).toBe(200);
    expect((await attestationOf(written.body.uid)).attester.toLowerCase()).toBe(wallet.toLowerCase());
    const me = await fetch(`${stack.baseUrl}/api/private/accounts/me`, { headers: { cookie, origin: APP } });
    expect(((await me.json()) as any).subscription.sponsoredWritesUsedCurrentYear).toBe(1);
  });
});

describe("a counterfactual wallet (ERC-6492)", () => {
  test("signs in without being deployed; its first attestation deploys it and lands; the same signature unwrapped is a duplicate", async () => {
    const wallet = await factory.predict(owner.address, 3);
    expect(await code(wallet)).toBe("0x");
    const wrap = (signature: Hex) => factory.wrap6492(owner.address, 3, signature);

    const signedIn = await signIn(wallet, owner, wrap);
    expect(signedIn.status).toBe(200);
    expect(await code(wallet)).toBe("0x");

    const body = await signedFor(wallet, "user-review", review("did:web:counterfactual.test"), owner, wrap);
    const written = await post("/v1/delegated-attest", body);
    expect(written.status).toBe(200);
    expect(await code(wallet)).not.toBe("0x");
    expect((await attestationOf(written.body.uid)).attester.toLowerCase()).toBe(wallet.toLowerCase());

    const inner = await signedFor(wallet, "user-review", review("did:web:counterfactual.test"));
    const again = await post("/v1/delegated-attest", { ...body, signature: (await owner.signTypedData(signableTypedData(body.prepared))) });
    expect([again.status, again.body.code]).toEqual([409, "DUPLICATE"]);
    expect(inner.prepared.delegatedRequest.nonce).toBe("1");
  });

  test("a stranger's ERC-6492 signature deploys nothing and spends no gas", async () => {
    const wallet = await factory.predict(owner.address, 4);
    const wrap = (signature: Hex) => factory.wrap6492(owner.address, 4, signature);
    const before = await delegateNonce();
    const refused = await post("/v1/delegated-attest", await signedFor(wallet, "user-review", review("did:web:counterfactual.test"), stranger, wrap));
    expect([refused.status, refused.body.code]).toEqual([400, "ATTESTER_MISMATCH"]);
    expect(await code(wallet)).toBe("0x");
    expect(await delegateNonce()).toBe(before);
    const notSignedIn = await signIn(wallet, stranger, wrap);
    expect([notSignedIn.status, notSignedIn.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
  });
});
