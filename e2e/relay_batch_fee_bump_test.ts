/**
 * A batch stuck under a fee spike (issue 36, decisions §15 and §23) on a real Anvil: a batch of four delegated
 * attestations (and one refused request) is sent in one `multiAttestByDelegation` transaction, the base fee jumps past
 * its fee cap before it is mined, and the service dies waiting. The next start's reconciler bumps the batch as one
 * transaction: one replacement a round, at the batch's nonce, kept for every request (each request's submission
 * record counts the same bumps). The replacement mined holds every attestation; the next start settles each request
 * with its own uid, the submission's `items` show them with its `feeBumps`, a retry with the batch's Idempotency-Key
 * answers them all and sends nothing, and each signature then answers 409 DUPLICATE with its uid.
 */
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { createPublicClient, type Hex, http, parseEventLogs } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { normalizeSignature } from "../domain/delegation/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { restartableService } from "./support/restartable_service.ts";
import { signedReviewBody } from "./support/review_signer.ts";

const stack = restartableService("ats-batch-feebump-");
/** Bumps once a transaction has waited a second (the start-up rounds of the reconciler run within one). */
const start = () => stack.start({ FEE_BUMP_AFTER_SECONDS: "1" });

const review = (n: number) => ({ subject: `did:web:bumped-batch-${n}.test`, version: "1", ratingValue: 3, reviewBody: `stuck batch ${n}`, screenshotUrls: [], proofs: [] });
const replayKey = (signature: string) => {
  const key = normalizeSignature(signature);
  if (!key.ok) throw new Error("bad signature");
  return key.value.hex;
};

type View = {
  state: string;
  txHash: string;
  uid: string | null;
  feeBumps: number;
  items: { index: number; state: string; uid: string | null; error?: string }[];
};

describe("a batch stuck under a fee spike", () => {
  test("is replaced as one transaction a round at its nonce; the replacement settles every request with its uid, its bumps counted on the submission", async () => {
    const devnet = stack.devnet();
    const chain = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
    const delegate = privateKeyToAccount(devnet.keys.delegate).address;
    const [alice, bob, carol] = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()];
    const forged = { ...(await signedReviewBody(devnet, generatePrivateKey(), { data: review(9) })), attester: privateKeyToAccount(generatePrivateKey()).address };
    const requests = [
      await signedReviewBody(devnet, alice, { nonce: 0n, data: review(0) }),
      await signedReviewBody(devnet, bob, { nonce: 0n, data: review(1) }),
      forged,
      await signedReviewBody(devnet, alice, { nonce: 1n, data: review(2) }),
      await signedReviewBody(devnet, carol, { nonce: 0n, data: review(3) }),
    ];
    const sent = requests.filter((r) => r !== forged);
    const attesters = sent.map((r) => r.attester);
    const body = JSON.stringify({ requests });
    const key = crypto.randomUUID();
    const post = (url: string) =>
      fetch(`${url}/v1/delegated-attest/batch`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body });

    const first = await start();
    await stack.rpc("evm_setAutomine", [false]);
    const minedBefore = await chain.getTransactionCount({ address: delegate });
    // The request waits for a receipt that no block brings; the service dies while it waits.
    void post(first.url).catch(() => undefined);
    const pending = await stack.pendingFrom(delegate);
    const original = await chain.getTransaction({ hash: pending });
    expect(original.nonce).toBe(minedBefore);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    // The spike: the next block's base fee is ten times the batch's cap, so no block will take it.
    await stack.rpc("anvil_setNextBlockBaseFeePerGas", [`0x${(original.maxFeePerGas! * 10n).toString(16)}`]);
    // Past FEE_BUMP_AFTER_SECONDS since it was signed (a lower bound only: a slower machine waits longer).
    await Bun.sleep(1_100);

    // The dead request still holds its key in the stopped service's file, naming the batch's submission; the next start
    // ends its lease (nothing else uses the file), so the retry below takes it over at once.
    const sqlite = join(stack.dataDir(), "ats.sqlite");
    let db = new Database(sqlite);
    const held = db.query<{ submission_id: string | null }, [string]>("SELECT submission_id FROM idempotency_keys WHERE key = ? AND state = 'running'").all(key);
    expect(held).toHaveLength(1);
    const submissionId = held[0]!.submission_id!;
    expect(submissionId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    db.close();
    const submission = async (url: string) => await (await fetch(`${url}/v1/submissions/${submissionId}`)).json() as View;

    // The next start's reconciler finds the batch pending past FEE_BUMP_AFTER_SECONDS and replaces it: one
    // transaction of the delegate in the pool, at the batch's nonce, not the batch's first.
    const second = await start();
    const ours = await stack.poolFrom(delegate);
    expect(ours).toHaveLength(1);
    expect(ours[0]!.hash).not.toBe(pending);
    expect(Number(ours[0]!.nonce)).toBe(original.nonce);
    // Replaced (the periodic rounds leave rows younger than their grace alone, so nothing moves while it is read):
    // the newest transaction is the one in the pool, every request of the batch in the transaction's state.
    const replaced = await submission(second.url);
    expect([replaced.state, replaced.txHash]).toEqual(["replaced", ours[0]!.hash]);
    expect(replaced.feeBumps).toBeGreaterThanOrEqual(1);
    expect(replaced.items.map((item) => [item.state, item.uid])).toEqual([
      ["replaced", null], ["replaced", null], ["refused", null], ["replaced", null], ["replaced", null],
    ]);
    expect(replaced.items[2]!.error).toBe("ATTESTER_MISMATCH");
    // No request of the batch was given back while it is on its way: each one's replay record is open, so each
    // signature is still taken (409) and nothing is sent.
    db = new Database(sqlite, { readonly: true });
    const replayState = db.query<{ state: string }, [string]>("SELECT state FROM replay WHERE key = ?");
    for (const request of sent) expect(["signed", "sent"]).toContain(replayState.get(replayKey(request.signature))?.state ?? "released");
    db.close();
    const single = (url: string, request: unknown) =>
      fetch(`${url}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) });
    for (const request of sent) {
      const taken = await single(second.url, request);
      const answer = await taken.json() as { code: string; details: string };
      expect([taken.status, answer.code]).toEqual([409, "DUPLICATE"]);
    }
    expect((await stack.poolFrom(delegate)).map((t) => t.hash)).toEqual([ours[0]!.hash]);

    // The replacement is mined: the delegate spent exactly one nonce, on one transaction holding every attestation.
    await stack.rpc("evm_mine");
    await stack.rpc("evm_setAutomine", [true]);
    expect(await chain.getTransactionCount({ address: delegate })).toBe(minedBefore + 1);
    expect(await chain.getTransactionReceipt({ hash: pending }).catch(() => null)).toBeNull();
    const receipt = await chain.getTransactionReceipt({ hash: ours[0]!.hash });
    expect(receipt.status).toBe("success");
    const block = await chain.getBlock({ blockNumber: receipt.blockNumber, includeTransactions: true });
    expect(block.transactions.filter((t) => t.from.toLowerCase() === delegate.toLowerCase()).map((t) => t.hash)).toEqual([ours[0]!.hash]);
    const replacement = await chain.getTransaction({ hash: ours[0]!.hash });
    expect(replacement.nonce).toBe(original.nonce);
    expect(replacement.maxFeePerGas! * 8n >= original.maxFeePerGas! * 9n).toBe(true);
    expect(replacement.maxPriorityFeePerGas! * 8n >= original.maxPriorityFeePerGas! * 9n).toBe(true);
    const attested = parseEventLogs({ abi: EAS_ABI, eventName: "Attested", logs: receipt.logs });
    expect(attested.map((log) => log.args.attester)).toEqual(attesters);
    const uids = attested.map((log) => log.args.uid as Hex);
    expect(new Set(uids).size).toBe(sent.length);
    /** Each request's result in the batch's order: its own uid, or the refusal. */
    const results: string[] = [uids[0]!, uids[1]!, "ATTESTER_MISMATCH", uids[2]!, uids[3]!];
    expect(await second.stop()).toBe(0);

    // One replacement a round for the batch, not one per request: every sent request's record keeps the same
    // replacements (as many as the submission's fee bumps, the newest the one mined); the refused one has none.
    db = new Database(sqlite, { readonly: true });
    const kept = (signature: string) =>
      db.query<{ tx_hash: string; tx_nonce: number }, [string]>("SELECT tx_hash, tx_nonce FROM tx_replacements WHERE id = ? ORDER BY created_at_ms, rowid").all(replayKey(signature));
    const bumps = kept(sent[0]!.signature);
    expect(bumps).toHaveLength(replaced.feeBumps);
    expect(bumps.at(-1)!.tx_hash).toBe(ours[0]!.hash);
    expect(bumps.every((b) => b.tx_nonce === original.nonce)).toBe(true);
    for (const request of sent) expect(kept(request.signature)).toEqual(bumps);
    expect(kept(forged.signature)).toEqual([]);
    const distinct = db.query<{ n: number }, []>("SELECT COUNT(DISTINCT tx_hash) AS n FROM tx_replacements").get()!.n;
    expect(distinct).toBe(replaced.feeBumps);
    db.close();

    // The next start's reconciler records the replacement's receipt for every request of the batch, each its own uid.
    const third = await start();
    const settled = await submission(third.url);
    expect(["mined", "confirmed"]).toContain(settled.state);
    expect([settled.txHash, settled.uid, settled.feeBumps]).toEqual([replacement.hash, uids[0]!, replaced.feeBumps]);
    expect(settled.items.map((item) => item.state === "refused" ? item.error : item.uid)).toEqual(results);
    for (const [i, uid] of uids.entries()) {
      const attestation = await chain.readContract({ address: devnet.easAddress as Hex, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
      expect(attestation.attester).toBe(attesters[i]!);
    }

    // The retry answers the batch from its submission: the replacement's hash, each request's own result; nothing sent.
    const retry = await post(third.url);
    const answer = await retry.json() as { submissionId: string; txHash: string; results: Record<string, unknown>[] };
    expect([retry.status, answer.submissionId, answer.txHash]).toEqual([200, submissionId, replacement.hash]);
    expect(answer.results.map((r) => r.uid ?? r.code)).toEqual(results);
    const again = await post(third.url);
    expect([again.status, again.headers.get("idempotent-replayed"), ((await again.json()) as { results: unknown[] }).results]).toEqual([200, "true", answer.results]);

    // Each signature sent is spent: the single route answers 409 DUPLICATE with its own uid, and sends nothing.
    for (const [i, request] of sent.entries()) {
      const again = await single(third.url, request);
      const duplicate = await again.json() as { code: string; details: string };
      expect([again.status, duplicate.code, duplicate.details]).toEqual([409, "DUPLICATE", uids[i]!]);
    }
    expect(await chain.getTransactionCount({ address: delegate })).toBe(minedBefore + 1);
    expect(await third.stop()).toBe(0);
  });
});
