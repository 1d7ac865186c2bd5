import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { startStack, type Stack } from "./harness.ts";

let stack: Stack;
let mainnetUrl: string;
let body: unknown;
beforeAll(async () => {
  stack = await startStack();
  mainnetUrl = (await stack.restartService({ NEXT_PUBLIC_ACTIVE_CHAIN: "omachain-mainnet" })).url;
  const account = privateKeyToAccount(generatePrivateKey());
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: false },
    data: { subject: "did:web:example.com", version: "1", ratingValue: 3, reviewBody: "", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce: 0n,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  body = { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
});
afterAll(async () => await stack?.stop());

const post = async (base: string) => {
  const res = await fetch(`${base}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};

describe("mainnet setting and a chain that stops answering", () => {
  test("the mainnet setting answers 501 before any RPC", async () => {
    stack.rpc.reset();
    const res = await post(mainnetUrl);
    expect(res.status).toBe(501);
    expect(JSON.parse(res.text)).toMatchObject({ code: "MAINNET_NOT_SUPPORTED" });
    expect(stack.rpc.roundTrips()).toBe(0);
  });

  test("with the chain down: nonce 500 RPC_ERROR, delegated-attest 500, readyz 503, no upstream text", async () => {
    await stack.devnet.stop();
    const nonce = await fetch(`${stack.baseUrl}/v1/nonce?attester=0x70997970C51812dc3A010C7d01b50e0d17dc79C8`);
    const nonceText = await nonce.text();
    expect(nonce.status).toBe(500);
    expect(JSON.parse(nonceText)).toMatchObject({ code: "RPC_ERROR" });
    const attest = await post(stack.baseUrl);
    expect(attest.status).toBe(500);
    expect(JSON.parse(attest.text)).toMatchObject({ code: "RPC_ERROR" });
    for (const text of [nonceText, attest.text]) {
      expect(text).not.toContain(stack.devnet.rpcUrl);
      expect(text).not.toContain("127.0.0.1");
      expect(text).not.toMatch(/fetch failed|ECONNREFUSED|viem|Details:/i);
    }
    const ready = await fetch(`${stack.baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: "not-ready", checks: { rpc: false } });
  });
});
