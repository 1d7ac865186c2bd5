// Runs only with ANVIL_RUNTIME=container and a container runtime that answers; otherwise its one describe block
// is skipped and its name says why.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { attestDelegated } from "../client/delegated_attest.ts";
import { clearTrustAnchorsCache } from "../client/trust_anchors.ts";
import { anvilImage, anvilRuntime, startStack, type Stack } from "./harness.ts";
import { containerAnvil, probeContainerRuntime } from "./support/anvil_container.ts";

async function skipReason(): Promise<string | undefined> {
  if (anvilRuntime() !== "container") return "ANVIL_RUNTIME is not container";
  const runtime = await probeContainerRuntime();
  return runtime.available ? undefined : `ANVIL_RUNTIME=container but no container runtime answers: ${runtime.reason}`;
}

const skip = await skipReason();
if (skip !== undefined) console.warn(`e2e/container_runtime_test.ts skipped: ${skip}`);

describe.skipIf(skip !== undefined)(skip === undefined ? `e2e with Anvil in a container (${anvilImage()})` : `Anvil in a container: skipped (${skip})`, () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    clearTrustAnchorsCache();
  }, 300_000);
  afterAll(async () => await stack?.stop());

  const client = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });

  test("the container's Anvil carries EAS 1.4.0 deployed by the devnet code", async () => {
    expect(await client().getChainId()).toBe(31337);
    expect(await client().request({ method: "web3_clientVersion" as never })).toMatch(/^anvil/i);
    expect(await client().readContract({ address: stack.devnet.easAddress, abi: EAS_ABI, functionName: "version" })).toBe("1.4.0");
    expect(stack.service.easAddress).toBe(stack.devnet.easAddress);
  });

  test("a delegated attestation through the service lands on the container's chain", async () => {
    const user = privateKeyToAccount(stack.devnet.keys.users[0]!);
    const result = await attestDelegated(
      {
        schemaName: "user-review",
        data: { subject: "did:web:container.example", version: "1", ratingValue: 4, reviewBody: "in a box", screenshotUrls: [], proofs: [] },
        attester: user.address,
        sign: (typedData) => user.signTypedData(typedData),
      },
      { baseUrl: stack.baseUrl },
    );
    const attestation = await client().readContract({
      address: stack.devnet.easAddress,
      abi: EAS_ABI,
      functionName: "getAttestation",
      args: [result.uid!],
    });
    expect(attestation.attester).toBe(user.address);
    expect(attestation.schema).toBe(stack.devnet.schemaUids["user-review"]!);
  });
});

// After the block above, so that the stack's container is gone: the container this test stops is the only one, and
// Podman removes its bridge (and the bridge's gateway address) with it.
describe.skipIf(skip !== undefined)(skip === undefined ? "a stopped Anvil container" : `a stopped Anvil container: skipped (${skip})`, () => {
  test("refuses connections at once, as a stopped local Anvil does (the chain-down tests rely on it)", async () => {
    const anvil = await containerAnvil(anvilImage())({ chainId: 31337, log: () => {} });
    await anvil.stop();
    const error = await fetch(anvil.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(3_000),
    }).then(() => undefined, (e: unknown) => e as { code?: string; name?: string });
    expect(error?.code ?? error?.name).toBe("ECONNREFUSED");
  }, 60_000);
});
