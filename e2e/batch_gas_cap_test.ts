/**
 * `MAX_GAS_PER_TX` holds for each request of a batch as it does for one sent alone (decisions §23: "check each as the
 * single route would"; §12: a request whose simulation needs more is 400 `INVALID_INPUT` before any gas), on the real
 * service and the devnet's EAS. Before, a batch compared its average gas per request with the cap: cheap requests
 * carried one the single route refuses, and it was written.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { startStack, type Stack } from "./harness.ts";
import { signedLinkedIdentifier } from "./support/linked_identifier.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
/** A linked identifier this long stores about 80 words of data: 1.7 million gas, over the cap of a million. */
const BIG = `did:web:big.test/${"x".repeat(2500)}`;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "100",
      MAX_GAS_PER_TX: "1000000",
    },
  });
});
afterAll(async () => await stack?.stop());

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
async function call(path: string, cookie: string, body: unknown) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method: "POST",
    headers: { origin: APP, cookie, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}
const linked = (key: Hex, linkedId: string, nonce?: bigint) => signedLinkedIdentifier(stack, key, linkedId, nonce);
const uids = (results: Record<string, any>[]) => results.filter((r) => typeof r.uid === "string").length;

describe("MAX_GAS_PER_TX in a batch", () => {
  test("a request the single route refuses for its gas is refused in a batch too, last behind cheap ones or first", async () => {
    const key = generatePrivateKey();
    const cookie = await signInCookie(stack.baseUrl, key, { origin: APP });
    const alone = await call("/api/private/relay/eas/delegated-attest", cookie, await linked(key, BIG));
    expect([alone.status, alone.body.code]).toEqual([400, "INVALID_INPUT"]);

    // Last, behind nine cheap requests of the same attester: their average is under the cap.
    const last = [];
    for (let i = 0n; i < 9n; i++) last.push(await linked(key, `did:web:s${i}.test`, i));
    last.push(await linked(key, BIG, 9n));
    const behind = await call("/api/private/relay/eas/delegated-attest/batch", cookie, { requests: last });
    expect(behind.body.results[9]).toMatchObject({ code: "INVALID_INPUT" });
    expect(behind.body.results[9].error).toContain("1000000 allowed per transaction");
    expect(uids(behind.body.results)).toBe(9);

    // First, before cheap requests of the same attester: it is refused, and they with it (their nonces follow its).
    const first = [await linked(key, BIG, 9n)];
    for (let i = 10n; i < 15n; i++) first.push(await linked(key, `did:web:t${i}.test`, i));
    const ahead = await call("/api/private/relay/eas/delegated-attest/batch", cookie, { requests: first });
    expect(ahead.body.results[0]).toMatchObject({ code: "INVALID_INPUT" });
    expect(ahead.body.results.slice(1).map((r: { code: string }) => r.code)).toEqual(Array(5).fill("ATTESTER_MISMATCH"));
    const nonce = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [privateKeyToAccount(key).address] });
    expect(nonce).toBe(9n);
  });

  test("data of zero bytes is not free: one the single route refuses is refused in a batch too", async () => {
    const key = generatePrivateKey();
    const cookie = await signInCookie(stack.baseUrl, key, { origin: APP });
    // 20,000 zero bytes: words of zeros still cost their stores and their call data, well past a million gas.
    const zeros = `did:web:z.test/${"\u0000".repeat(20_000)}`;
    const alone = await call("/api/private/relay/eas/delegated-attest", cookie, await linked(key, zeros));
    expect([alone.status, alone.body.code]).toEqual([400, "INVALID_INPUT"]);
    const requests = [];
    for (let i = 0n; i < 9n; i++) requests.push(await linked(key, `did:web:z${i}.test`, i));
    requests.push(await linked(key, zeros, 9n));
    const batch = await call("/api/private/relay/eas/delegated-attest/batch", cookie, { requests });
    // Before, its least counted the words that are not all zeros only, so it was never priced alone and was written.
    expect(batch.body.results[9]).toMatchObject({ code: "INVALID_INPUT" });
    expect(uids(batch.body.results)).toBe(9);
  });
});
