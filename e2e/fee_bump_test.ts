/**
 * A transaction stuck under a fee spike (performance_reliability §b row 24) on a real Anvil: a delegated
 * attestation is sent, the base fee jumps past its fee cap before it is mined, and the service dies waiting. At the
 * next start the reconciler finds it pending, signs a replacement with the same nonce and higher fees, stores it,
 * sends it, and settles the submission with the replacement's receipt: one attestation, one receipt, and the same
 * signature then answers 409 with the uid.
 */
import { describe, expect, test } from "bun:test";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { restartableService } from "./support/restartable_service.ts";
import { signedReviewBody } from "./support/review_signer.ts";

const stack = restartableService("ats-feebump-");
const rpc = stack.rpc;
const start = () => stack.start({ FEE_BUMP_AFTER_SECONDS: "1" });

describe("a transaction stuck under a fee spike", () => {
  test("is replaced with higher fees at the same nonce; the replacement's receipt settles the submission, once", async () => {
    const devnet = stack.devnet();
    const chain = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
    const delegate = privateKeyToAccount(devnet.keys.delegate).address;
    const attesterKey = generatePrivateKey();
    const body = JSON.stringify(await signedReviewBody(devnet, attesterKey));
    const first = await start();

    await rpc("evm_setAutomine", [false]);
    const minedBefore = await chain.getTransactionCount({ address: delegate });
    // Asked to answer at once (decisions §23): the 202 names the submission, whose state the next starts show.
    const accepted = await fetch(`${first.url}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json", prefer: "respond-async" }, body });
    expect(accepted.status).toBe(202);
    const { submissionId } = await accepted.json() as { submissionId: string };
    const submission = async (url: string) => await (await fetch(`${url}/v1/submissions/${submissionId}`)).json() as Record<string, unknown>;
    // Until the service's transaction is in the pool, however long a loaded machine takes.
    const pending = await stack.pendingFrom(delegate);
    const original = await chain.getTransaction({ hash: pending });
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    // The spike: the next block's base fee is ten times the transaction's cap, so no block will take it.
    await rpc("anvil_setNextBlockBaseFeePerGas", [`0x${(original.maxFeePerGas! * 10n).toString(16)}`]);
    await Bun.sleep(1_100);

    // The next start's reconciler finds it pending past FEE_BUMP_AFTER_SECONDS and sends a replacement.
    const second = await start();
    const ours = await stack.poolFrom(delegate);
    expect(ours).toHaveLength(1);
    expect(ours[0]!.hash).not.toBe(pending);
    // Replaced: the newest transaction is the one in the pool; every bump is counted (one, or more if the start's
    // rounds outlasted FEE_BUMP_AFTER_SECONDS again).
    const replaced = await submission(second.url);
    expect([replaced.state, replaced.txHash]).toEqual(["replaced", ours[0]!.hash]);
    expect(replaced.feeBumps as number).toBeGreaterThanOrEqual(1);
    await rpc("evm_mine");
    await rpc("evm_setAutomine", [true]);
    expect(await chain.getTransactionCount({ address: delegate })).toBe(minedBefore + 1);
    expect(await chain.getTransactionReceipt({ hash: pending }).catch(() => null)).toBeNull();
    const replacementReceipt = await chain.getTransactionReceipt({ hash: ours[0]!.hash });
    expect(replacementReceipt.status).toBe("success");
    expect(await second.stop()).toBe(0);

    // The next reconciliation (here: the next start's) records the replacement's receipt for the signature.
    const third = await start();
    const again = await fetch(`${third.url}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const duplicate = await again.json() as { code: string; details: Hex };
    expect([again.status, duplicate.code]).toEqual([409, "DUPLICATE"]);
    expect(duplicate.details).toMatch(/^0x[0-9a-f]{64}$/);
    const attestation = await chain.readContract({ address: devnet.easAddress as Hex, abi: EAS_ABI, functionName: "getAttestation", args: [duplicate.details] });
    expect(attestation.attester).toBe(privateKeyToAccount(attesterKey).address);
    const logs = await chain.getContractEvents({ address: devnet.easAddress as Hex, abi: EAS_ABI, eventName: "Attested", fromBlock: 0n, args: { attester: privateKeyToAccount(attesterKey).address } });
    expect(logs).toHaveLength(1);
    const replacement = await chain.getTransaction({ hash: logs[0]!.transactionHash! });
    expect(replacement.nonce).toBe(original.nonce);
    expect(replacement.hash).not.toBe(original.hash);
    expect(replacement.maxFeePerGas! * 8n >= original.maxFeePerGas! * 9n).toBe(true);
    expect(replacement.maxPriorityFeePerGas! * 8n >= original.maxPriorityFeePerGas! * 9n).toBe(true);
    // The submission ends mined with the replacement's hash and the uid, its fee bumps counted.
    const settled = await submission(third.url);
    expect(["mined", "confirmed"]).toContain(settled.state as string);
    expect([settled.txHash, settled.uid]).toEqual([replacement.hash, duplicate.details]);
    expect(settled.feeBumps as number).toBeGreaterThanOrEqual(1);
  });
});
