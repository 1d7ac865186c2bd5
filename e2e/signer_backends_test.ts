/**
 * The service with its keys outside the process (decisions §27), on a real Anvil: the delegate wallet's key in
 * SoftHSM2 through PKCS#11, the witness key and the OAuth token key in a loopback KMS through the official AWS SDK. A
 * delegated attestation is sent from the HSM's address, the JWKS publishes the KMS key under its thumbprint,
 * `/readyz` names each signer, and `npm run ops -- signers` test-signs with each.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, type Hex, http, keccak256 } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { getAddress } from "viem";
import { runOps } from "../app/ops.ts";
import { jwkThumbprint } from "../adapters/signers/mod.ts";
import { startStack, type Stack } from "./harness.ts";
import { startKmsServer, type KmsServer, TEST_KMS_CREDENTIALS, TEST_KMS_REGION } from "./support/kms_server.ts";
import { createSoftHsm, type SoftHsm, softHsmAvailable, useSoftHsmInThisProcess } from "./support/softhsm.ts";
import { signedReviewBody } from "./support/review_signer.ts";

const AWS_ENV = {
  AWS_ACCESS_KEY_ID: TEST_KMS_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: TEST_KMS_CREDENTIALS.secretAccessKey,
  AWS_REGION: TEST_KMS_REGION,
  AWS_EC2_METADATA_DISABLED: "true",
  AWS_CONFIG_FILE: "/nonexistent/aws-config",
  AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/aws-credentials",
};
const addressOf = (publicKey: Uint8Array) => getAddress(`0x${keccak256(publicKey.subarray(1)).slice(-40)}`);

let stack: Stack;
let hsm: SoftHsm;
let kms: KmsServer;
let env: Record<string, string>;
let delegate: Hex;
let witness: Hex;
let oauthThumbprint: string;
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  if (!softHsmAvailable()) return;
  for (const [name, value] of Object.entries(AWS_ENV)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  hsm = createSoftHsm();
  await useSoftHsmInThisProcess(hsm);
  hsm.createToken("ats", "1234");
  delegate = addressOf(hsm.generateKey("ats", "1234", "delegate", "secp256k1", "01"));
  const pinFile = join(hsm.dir, "pin");
  writeFileSync(pinFile, "1234\n");
  kms = startKmsServer();
  const witnessKey = kms.createKey("ECC_SECG_P256K1", "alias/ats-witness");
  witness = addressOf(witnessKey.publicKey);
  const oauthKey = kms.createKey("ECC_NIST_P256");
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
  oauthThumbprint = jwkThumbprint({ kty: "EC", crv: "P-256", x: b64(oauthKey.publicKey.subarray(1, 33)), y: b64(oauthKey.publicKey.subarray(33)) });
  env = {
    DELEGATE_SIGNER: hsm.uri("ats", "delegate", "1234", pinFile),
    DELEGATE_ADDRESS: delegate,
    WITNESS_SIGNER: `awskms://${kms.hostPort}/alias/ats-witness`,
    OAUTH_SIGNER: `awskms://${kms.hostPort}/${oauthKey.id}`,
  };
  // The devnet funds the HSM's and the KMS's addresses and trusts the KMS witness.
  stack = await startStack({ env, devnet: { delegateAddress: delegate, witnessAddress: witness } });
});
afterAll(async () => {
  await stack?.stop();
  await kms?.stop();
  hsm?.remove();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe.skipIf(!softHsmAvailable())("keys in an HSM and a KMS", () => {
  test("a delegated attestation is signed in the HSM and sent from its address", async () => {
    const res = await fetch(`${stack.baseUrl}/v1/delegated-attest`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(await signedReviewBody(stack.devnet, generatePrivateKey())),
    });
    const body = await res.json() as { txHash: Hex };
    expect(res.status).toBe(200);
    const chain = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
    expect((await chain.getTransaction({ hash: body.txHash })).from.toLowerCase()).toBe(delegate.toLowerCase());
    const ready = await (await fetch(`${stack.baseUrl}/readyz`)).json() as { signers: Record<string, string> };
    expect(ready.signers).toMatchObject({ delegate: "up", witness: expect.stringMatching(/^(up|unknown)$/), oauth: expect.stringMatching(/^(up|unknown)$/) });
  });

  test("the OAuth JWKS publishes the KMS key under its thumbprint", async () => {
    const jwks = await (await fetch(`${stack.baseUrl}/oauth/jwks.json`)).json() as { keys: { kid: string; crv: string }[] };
    expect(jwks.keys[0]).toMatchObject({ kid: oauthThumbprint, crv: "P-256" });
  });

  test("ops signers names each role's backend and key and test-signs with each", async () => {
    const lines: string[] = [];
    const code = await runOps(["signers"], { ...process.env, ...env, RPC_URL: stack.devnet.rpcUrl, TRUST_ANCHORS_PATH: stack.devnet.trustAnchorsPath }, (line) => void lines.push(line));
    const rows = lines.map((line) => JSON.parse(line) as { roles: string[]; backend: string; key: string; testSignature: string });
    expect(code).toBe(0);
    expect(rows).toEqual(expect.arrayContaining([
      expect.objectContaining({ roles: ["delegate"], backend: "pkcs11", key: delegate, testSignature: "ok" }),
      expect.objectContaining({ roles: ["witness", "x402"], backend: "awskms", key: witness, testSignature: "ok" }),
      expect.objectContaining({ roles: ["oauth"], backend: "awskms", key: oauthThumbprint, testSignature: "ok" }),
    ]));
    // Never the PIN in what it prints.
    expect(lines.join("\n")).not.toContain("1234");
  });
});
