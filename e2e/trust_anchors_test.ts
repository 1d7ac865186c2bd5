import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createPublicClient, createWalletClient, encodeAbiParameters, type Hex, http, parseAbi, parseAbiParameters } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { didToAddress } from "../domain/did/mod.ts";
import { clearTrustAnchorsCache, extractAllowlists, fetchTrustAnchors, getChainAnchors } from "../client/trust_anchors.ts";
import { findApprovedAttestations } from "../client/verifier.ts";
import { startStack, type Stack } from "./harness.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  clearTrustAnchorsCache();
});
afterAll(async () => await stack?.stop());

const ATTEST_ABI = parseAbi([
  "struct AttestationRequestData { address recipient; uint64 expirationTime; bool revocable; bytes32 refUID; bytes data; uint256 value; }",
  "struct AttestationRequest { bytes32 schema; AttestationRequestData data; }",
  "function attest(AttestationRequest request) payable returns (bytes32)",
]);

async function witness(key: Hex, subject: string, controller: string) {
  const account = privateKeyToAccount(key);
  const wallet = createWalletClient({ account, transport: http(stack.devnet.rpcUrl) });
  const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
  const recipient = didToAddress(subject);
  const hash = await wallet.writeContract({
    chain: null,
    address: stack.service.easAddress,
    abi: ATTEST_ABI,
    functionName: "attest",
    args: [{
      schema: stack.devnet.schemaUids["controller-witness"] as Hex,
      data: {
        recipient: (recipient.ok ? recipient.value : "0x") as Hex,
        expirationTime: 0n,
        revocable: false,
        refUID: `0x${"0".repeat(64)}`,
        data: encodeAbiParameters(parseAbiParameters("string, string, string, uint256"), [subject, controller, "dns-txt", 1n]),
        value: 0n,
      },
    }],
  });
  expect((await client.waitForTransactionReceipt({ hash })).status).toBe("success");
}

describe("trust anchors on the devnet", () => {
  test("the service serves the devnet's anchors file as written, its own origin leading widgetOrigins (decisions §29)", async () => {
    const served = await (await fetch(`${stack.baseUrl}/v1/trust-anchors`)).json();
    const written = JSON.parse(readFileSync(stack.devnet.trustAnchorsPath, "utf8"));
    // The first origin is PUBLIC_BASE_URL's (this stack leaves it to its default).
    // Decisions §30: plus the chains served, here the devnet's one.
    const caip2 = `eip155:${stack.service.chainId}`;
    const servedChains = [{ caip2, chainId: stack.service.chainId, role: "attestations", default: true }];
    expect(served).toEqual({ ...written, widgetOrigins: [served.widgetOrigins[0], ...written.widgetOrigins], servedChains, defaultChain: caip2 });
    expect(new URL(served.widgetOrigins[0]).origin).toBe(served.widgetOrigins[0]);
    const anchors = await fetchTrustAnchors({ url: `${stack.baseUrl}/v1/trust-anchors` });
    const chain = getChainAnchors(anchors, stack.service.chainId);
    expect(chain.easContract.toLowerCase()).toBe(stack.service.easAddress.toLowerCase());
    expect(Object.keys(chain.schemas).sort()).toEqual([
      "certification", "controller-witness", "key-binding", "linked-identifier", "responsibility-claim",
      "security-assessment", "user-review", "user-review-response",
    ]);
    expect(extractAllowlists(anchors).allowedContracts.map((a) => a.toLowerCase())).toEqual([stack.service.easAddress.toLowerCase()]);
  });

  test("the verifier workflow keeps only attestations from approved issuers for the schema", async () => {
    const subject = "did:web:verifier.example";
    const controller = `did:pkh:eip155:${stack.service.chainId}:0x1111111111111111111111111111111111111111`;
    await witness(stack.devnet.keys.witness as Hex, subject, controller);
    await witness(stack.devnet.keys.users[1] as Hex, subject, controller);
    const recipient = didToAddress(subject);
    const kept = await findApprovedAttestations({
      trustAnchors: `${stack.baseUrl}/v1/trust-anchors`,
      chain: stack.service.chainId,
      schemaName: "controller-witness",
      rpc: stack.devnet.rpcUrl,
      recipient: (recipient.ok ? recipient.value : undefined) as Hex,
    });
    expect(kept).toHaveLength(1);
    expect(kept[0]!.attester).toBe(privateKeyToAccount(stack.devnet.keys.witness as Hex).address);
    expect(kept[0]!.issuerLabel).toBe("ATS Devnet Witness");
  });
});
