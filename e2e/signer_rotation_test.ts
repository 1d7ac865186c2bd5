/**
 * Rotation (decisions §27) on a real Anvil: the delegate role is pointed at a new key (a keystore file) and the service
 * restarted while a transaction the old key sent waits in the node's pool. The new instance sends nothing for it (no
 * second transaction, from either key); once it is mined the reconciler settles the submission from its own sender's
 * receipt, the same signature then answers 409 with the uid, and new work is sent from the new key.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Keystore } from "ox";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { restartableService } from "./support/restartable_service.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { tempDirs } from "./support/temp_dirs.ts";

const stack = restartableService("ats-rotation-");
const rpc = stack.rpc;

const keystoreDir = tempDirs("ats-rotation-key-");

/** A keystore of a fresh key, as an operator would make one, and the URI naming it. */
function newKeystore(): { address: Hex; uri: string } {
  const dir = keystoreDir();
  const key = generatePrivateKey();
  const [derived, options] = Keystore.scrypt({ password: "rotate me", n: 1 << 12, r: 8, p: 1 });
  writeFileSync(join(dir, "key.json"), JSON.stringify(Keystore.encrypt(key, derived, options)));
  writeFileSync(join(dir, "password"), "rotate me\n");
  return { address: privateKeyToAccount(key).address, uri: `keystore:${join(dir, "key.json")}?password-file=${join(dir, "password")}` };
}

describe("rotating the delegate key", () => {
  test("what the old key sent settles once; new work goes from the new key", async () => {
    const devnet = stack.devnet();
    const chain = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
    const oldDelegate = privateKeyToAccount(devnet.keys.delegate).address;
    const attesterKey = generatePrivateKey();
    const body = JSON.stringify(await signedReviewBody(devnet, attesterKey));
    const first = await stack.start();

    await rpc("evm_setAutomine", [false]);
    const oldSentBefore = await chain.getTransactionCount({ address: oldDelegate });
    const accepted = await fetch(`${first.url}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json", prefer: "respond-async" }, body });
    expect(accepted.status).toBe(202);
    const { submissionId } = await accepted.json() as { submissionId: string };
    const pending = await stack.pendingFrom(oldDelegate);
    first.proc.kill("SIGKILL");
    await first.proc.exited;

    // The new key: a keystore, funded, for both Ethereum roles (the old key is no longer held by any instance).
    const next = newKeystore();
    await rpc("anvil_setBalance", [next.address, "0x3635c9adc5dea00000"]);
    const rotated = { DELEGATE_SIGNER: next.uri, WITNESS_SIGNER: next.uri, DELEGATE_ADDRESS: next.address };
    const second = await stack.start(rotated);
    // The old key's transaction is still the only one in the pool: nothing was sent again, by either key.
    expect((await stack.poolFrom(oldDelegate)).map((t) => t.hash)).toEqual([pending]);
    expect(await stack.poolFrom(next.address)).toEqual([]);
    await rpc("evm_mine");
    await rpc("evm_setAutomine", [true]);
    expect(await second.stop()).toBe(0);

    // The next instance's reconciler settles the submission from the old sender's receipt.
    const third = await stack.start(rotated);
    const settled = await (await fetch(`${third.url}/v1/submissions/${submissionId}`)).json() as Record<string, unknown>;
    expect(["mined", "confirmed"]).toContain(settled.state as string);
    expect(settled.txHash).toBe(pending);
    const again = await fetch(`${third.url}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect([again.status, (await again.json() as { code: string }).code]).toEqual([409, "DUPLICATE"]);
    expect(await chain.getTransactionCount({ address: oldDelegate })).toBe(oldSentBefore + 1);
    const logs = await chain.getContractEvents({ address: devnet.easAddress as Hex, abi: EAS_ABI, eventName: "Attested", fromBlock: 0n, args: { attester: privateKeyToAccount(attesterKey).address } });
    expect(logs).toHaveLength(1);

    // New work: from the new key.
    const fresh = await fetch(`${third.url}/v1/delegated-attest`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(await signedReviewBody(devnet, generatePrivateKey())),
    });
    expect(fresh.status).toBe(200);
    const { txHash } = await fresh.json() as { txHash: Hex };
    expect((await chain.getTransaction({ hash: txHash })).from.toLowerCase()).toBe(next.address.toLowerCase());
    expect(await chain.getTransactionCount({ address: oldDelegate })).toBe(oldSentBefore + 1);
  });
});
