/**
 * A batch whose request dies mid-send (issue 36, decisions §23): the service is killed while the batch's one
 * transaction waits in the node's pool, the chain mines it, and the next start's reconciler settles the batch's
 * submission with every request's own uid read off the receipt. A retry with the batch's Idempotency-Key then answers
 * the batch as its first answer would have been (each request's uid, the refused one refused) and sends nothing.
 */
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { restartableService } from "./support/restartable_service.ts";
import { signedReviewBody } from "./support/review_signer.ts";

const stack = restartableService("ats-batch-crash-");
const rpc = stack.rpc;
const start = () => stack.start();

const review = (n: number) => ({ subject: `did:web:crash-batch-${n}.test`, version: "1", ratingValue: 4, reviewBody: `batch ${n}`, screenshotUrls: [], proofs: [] });

describe("a batch whose request died mid-send", () => {
  test("is settled at the next start with each request's uid; a retry with its Idempotency-Key answers them all and sends nothing", async () => {
    const devnet = stack.devnet();
    const chain = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
    const delegate = privateKeyToAccount(devnet.keys.delegate).address;
    const [alice, bob] = [generatePrivateKey(), generatePrivateKey()];
    const forged = { ...(await signedReviewBody(devnet, generatePrivateKey(), { data: review(9) })), attester: privateKeyToAccount(generatePrivateKey()).address };
    const requests = [
      await signedReviewBody(devnet, alice, { nonce: 0n, data: review(0) }),
      forged,
      await signedReviewBody(devnet, bob, { nonce: 0n, data: review(1) }),
      await signedReviewBody(devnet, alice, { nonce: 1n, data: review(2) }),
    ];
    const body = JSON.stringify({ requests });
    const key = crypto.randomUUID();
    const post = (url: string) =>
      fetch(`${url}/v1/delegated-attest/batch`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body });

    const first = await start();
    await rpc("evm_setAutomine", [false]);
    const minedBefore = await chain.getTransactionCount({ address: delegate });
    // The request waits for a receipt that no block brings; the service dies while it waits.
    void post(first.url).catch(() => undefined);
    // Until the batch's transaction is in the pool, however long a loaded machine takes.
    const pending = await stack.pendingFrom(delegate);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    await rpc("evm_mine");
    await rpc("evm_setAutomine", [true]);
    expect((await chain.getTransactionReceipt({ hash: pending })).status).toBe("success");

    // The dead request still holds its key in the stopped service's file, naming the batch's submission. The next start
    // ends its lease (nothing else uses the file): the retry below takes it over at once. It was made to have passed
    // here by hand, and a retry waited IDEMPOTENCY_LEASE_MS (five minutes) behind 409 IDEMPOTENCY_KEY_IN_USE.
    const db = new Database(join(stack.dataDir(), "ats.sqlite"));
    const held = db.query<{ submission_id: string | null }, [string]>("SELECT submission_id FROM idempotency_keys WHERE key = ? AND state = 'running'").all(key);
    expect(held).toHaveLength(1);
    const submissionId = held[0]!.submission_id!;
    expect(submissionId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    db.close();

    // The next start's reconciler settles the batch before the first request.
    const second = await start();
    const view = await (await fetch(`${second.url}/v1/submissions/${submissionId}`)).json() as {
      state: string;
      txHash: string;
      items: { index: number; state: string; uid: string | null; error?: string }[];
    };
    expect(["mined", "confirmed"]).toContain(view.state);
    expect(view.txHash).toBe(pending);
    expect(view.items.map((item) => item.state === "refused" ? item.error : "sent")).toEqual(["sent", "ATTESTER_MISMATCH", "sent", "sent"]);
    const uids = view.items.filter((item) => item.state !== "refused").map((item) => item.uid!);
    expect(uids.every((uid) => /^0x[0-9a-f]{64}$/.test(uid))).toBe(true);
    expect(new Set(uids).size).toBe(3);

    // The retry answers the batch from its submission, each request's own result, and sends nothing.
    const retry = await post(second.url);
    const answer = await retry.json() as { submissionId: string; txHash: string; results: Record<string, unknown>[] };
    expect([retry.status, answer.submissionId, answer.txHash]).toEqual([200, submissionId, pending]);
    expect(answer.results.map((r) => r.uid ?? r.code)).toEqual([uids[0], "ATTESTER_MISMATCH", uids[1], uids[2]]);
    expect(answer.results[1]).toMatchObject({ status: 400 });
    expect(await chain.getTransactionCount({ address: delegate })).toBe(minedBefore + 1);
    // A retry of that answer is now the stored one.
    const again = await post(second.url);
    expect([again.status, again.headers.get("idempotent-replayed"), ((await again.json()) as { results: unknown[] }).results]).toEqual([200, "true", answer.results]);

    // Each uid is its request's attestation on chain.
    const attesters = [alice, bob, alice].map((k) => privateKeyToAccount(k).address);
    for (const [i, uid] of uids.entries()) {
      const attestation = await chain.readContract({ address: devnet.easAddress as Hex, abi: EAS_ABI, functionName: "getAttestation", args: [uid as Hex] });
      expect(attestation.attester).toBe(attesters[i]!);
    }
    expect(await second.stop()).toBe(0);
  });
});
