/**
 * A provider whose receipts lag (a load-balanced backend behind the head answers `eth_getTransactionReceipt` with null
 * for a mined transaction): a write on chain is never given back (decisions §12, §15). Found by attack: a private relay
 * write mined, its ledger row released at the restart's reconciliation, and the plan's three writes then sent again.
 */
import { describe, expect, test } from "bun:test";
import { encodeFunctionData, serializeTransaction } from "viem";
import type { HexString, SignedTx } from "../../ports/eas.ts";
import { fakeClock, fakeEasReader, fakeReplayStore, fakeWriteLedger, NO_BLOCK_READS } from "../../ports/fakes/mod.ts";
import type { TxStatus } from "../../ports/submissions.ts";
import { EAS_ABI } from "../eas_abi.ts";
import { delegatedSignatureKeys } from "./sponsored_write_spent.ts";
import { createSubmissionReconciler, replayBook, witnessBook } from "./submission_reconciler.ts";

const EAS = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString;
const DELEGATE = "0x00000000000000000000000000000000000000aa" as HexString;
const SCHEMA = `0x${"5c".repeat(32)}` as HexString;
const ZERO = `0x${"00".repeat(32)}` as HexString;
const request = { recipient: DELEGATE, expirationTime: 0n, revocable: true, refUID: ZERO, data: "0x1234" as HexString, value: 0n };

/** The replay key of the signature `sig(n)`, as the relay records it. */
const key = (n: number) => `0x${n.toString(16).padStart(64, "0")}${"11".repeat(32)}1b`;
const sig = (n: number) => ({ v: 27, r: `0x${n.toString(16).padStart(64, "0")}` as HexString, s: `0x${"11".repeat(32)}` as HexString });

/** A stored transaction (unsigned bytes suffice: only its calldata is read) of the delegate at `nonce`. */
function stored(name: string, nonce: number, data: HexString): SignedTx {
  const raw = serializeTransaction({ chainId: 31337, type: "eip1559", nonce, to: EAS, data, gas: 300_000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n });
  return { txHash: `0x${name}` as HexString, raw, wallet: DELEGATE, nonce };
}
const delegated = (name: string, nonce: number, attester: HexString, signature = 1) =>
  stored(name, nonce, encodeFunctionData({ abi: EAS_ABI, functionName: "attestByDelegation", args: [{ schema: SCHEMA, data: request, signature: sig(signature), attester, deadline: 2_000_000_000n }] }));
const witnessed = (name: string, nonce: number) =>
  stored(name, nonce, encodeFunctionData({ abi: EAS_ABI, functionName: "attest", args: [{ schema: SCHEMA, data: request }] }));

/** A chain answering from a table; every hash it does not list is unknown with its nonce free. */
function fakeChain(statuses: Record<string, TxStatus>) {
  const chain = {
    ...NO_BLOCK_READS,
    statuses,
    rebroadcasts: [] as string[],
    replacements: 0,
    status: (hash: HexString) => Promise.resolve(chain.statuses[hash] ?? { status: "not-found" as const }),
    rebroadcast: (signed: SignedTx) => (chain.rebroadcasts.push(signed.txHash), Promise.resolve("accepted" as const)),
    replacement: (of: SignedTx) => (chain.replacements++, Promise.resolve({ ...of, txHash: `${of.txHash}bump` as HexString })),
  };
  return chain;
}

/** A private relay write: its replay record and its sponsored write, both holding one sent transaction. */
async function relayWrite(tx: SignedTx, attester: HexString, signature = 1, nonce = 0n) {
  const replay = fakeReplayStore();
  const ledger = fakeWriteLedger();
  const k = key(signature);
  await replay.claim({ key: k, chainId: 31337, attester, nonce, deadline: 2_000_000_000n, createdAtMs: 0 });
  await replay.markSigned(31337, k, tx);
  await replay.markSent(31337, k);
  await ledger.reserve({ id: "w", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 0 }, 3);
  await ledger.markSigned("w", tx, 0);
  await ledger.markSent("w", 0);
  return { replay, ledger, k };
}

describe("a write on chain whose receipt the provider does not give yet", () => {
  test("the transaction in a block with a null receipt: both rows stay open, nothing released or bumped, whatever the rounds; the receipt settles them", async () => {
    const clock = fakeClock(10_000_000);
    const attester = "0x00000000000000000000000000000000000000a1" as HexString;
    const tx = delegated("mined", 0, attester);
    const { replay, ledger, k } = await relayWrite(tx, attester);
    const eas = fakeEasReader();
    eas.nonces.set(attester, 1n);
    const chain = fakeChain({ "0xmined": { status: "included", blockNumber: 12n } });
    const reconcile = createSubmissionReconciler({
      chainId: 31337,
      books: [replayBook(replay, 31337, eas), witnessBook(ledger, clock, undefined, { replay, eas })],
      txStatus: chain,
      clock,
      graceMs: 0,
      lostAfterMs: 600_000,
      replacements: { add: () => Promise.resolve(), list: () => Promise.resolve([]), prune: () => Promise.resolve(0) },
      bumpAfterMs: 1,
    });
    for (let round = 0; round < 3; round++) expect(await reconcile()).toEqual({ mined: 0, reverted: 0, released: 0, rebroadcast: 0, bumped: 0, open: 2 });
    expect([(await replay.find(31337, k))?.state, (await ledger.find("w"))?.state]).toEqual(["sent", "broadcast"]);
    expect(await ledger.usage("a", 2026)).toEqual({ used: 0, reserved: 1 });
    expect([chain.replacements, chain.rebroadcasts.length]).toEqual([0, 0]);
    const uid = `0x${"9".repeat(64)}` as HexString;
    chain.statuses["0xmined"] = { status: "success", blockNumber: 12n, uid };
    expect(await reconcile()).toMatchObject({ mined: 2, released: 0, open: 0 });
    expect(await replay.find(31337, k)).toMatchObject({ state: "mined", uid, blockNumber: 12n });
    expect(await ledger.find("w")).toMatchObject({ state: "committed", uid, blockNumber: 12n });
    expect(await ledger.usage("a", 2026)).toEqual({ used: 1, reserved: 0 });
  });

  test("a fee bump's original in a block without its receipt keeps the submission open (the replacement reads replaced)", async () => {
    const clock = fakeClock(10_000_000);
    const ledger = fakeWriteLedger();
    await ledger.reserve({ id: "w", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 0 }, 3);
    await ledger.markSigned("w", witnessed("orig", 4), 0);
    await ledger.markSent("w", 0);
    const replacements = { add: () => Promise.resolve(), list: () => Promise.resolve([{ tx: witnessed("bump", 4), createdAtMs: 1 }]), prune: () => Promise.resolve(0) };
    const chain = fakeChain({ "0xorig": { status: "included", blockNumber: 3n }, "0xbump": { status: "replaced" } });
    const reconcile = createSubmissionReconciler({ chainId: 31337, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000, replacements });
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect((await ledger.find("w"))?.state).toBe("broadcast");
  });
});

describe("witnessBook(): a private relay write replaced with its transaction absent", () => {
  test("charged when the attester's EAS nonce moved past the signature's (even once the replay row is settled first)", async () => {
    const clock = fakeClock(10_000_000);
    const attester = "0x00000000000000000000000000000000000000a2" as HexString;
    const { replay, ledger, k } = await relayWrite(delegated("gone", 0, attester), attester);
    const eas = fakeEasReader();
    eas.nonces.set(attester, 1n);
    const chain = fakeChain({ "0xgone": { status: "replaced" } });
    const reconcile = createSubmissionReconciler({
      chainId: 31337,
      books: [replayBook(replay, 31337, eas), witnessBook(ledger, clock, undefined, { replay, eas })],
      txStatus: chain,
      clock,
      graceMs: 0,
      lostAfterMs: 600_000,
    });
    expect(await reconcile()).toMatchObject({ mined: 2, released: 0 });
    expect(await replay.find(31337, k)).toMatchObject({ state: "mined", uid: null });
    expect(await ledger.find("w")).toMatchObject({ state: "committed", txHash: "0xgone" });
  });

  test("released as before when the attester's nonce did not move, or for a witness's own attest; left open when the nonce cannot be read", async () => {
    const clock = fakeClock(10_000_000);
    const attester = "0x00000000000000000000000000000000000000a3" as HexString;
    const eas = fakeEasReader();
    const relay = await relayWrite(delegated("taken", 0, attester), attester);
    const chain = fakeChain({ "0xtaken": { status: "replaced" }, "0xown": { status: "replaced" } });
    // One reconciler a ledger: a sponsored write's nonce taken is read twice, five minutes apart, before it is released.
    const reconcilers = new Map<ReturnType<typeof fakeWriteLedger>, () => Promise<unknown>>();
    const reconcile = (ledger: ReturnType<typeof fakeWriteLedger>) => {
      if (!reconcilers.has(ledger)) {
        reconcilers.set(ledger, createSubmissionReconciler({ chainId: 31337, books: [witnessBook(ledger, clock, undefined, { replay: relay.replay, eas })], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 }));
      }
      return reconcilers.get(ledger)!();
    };
    eas.failing = true;
    expect(await reconcile(relay.ledger)).toMatchObject({ released: 0, open: 1 });
    eas.failing = false;
    expect(await reconcile(relay.ledger)).toMatchObject({ released: 0, open: 1 });
    clock.set(10_300_000);
    expect(await reconcile(relay.ledger)).toMatchObject({ released: 1, mined: 0 });
    expect((await relay.ledger.find("w"))?.state).toBe("released");
    const own = fakeWriteLedger();
    await own.reserve({ id: "own", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 0 }, 3);
    await own.markSigned("own", witnessed("own", 1), 0);
    await own.markSent("own", 0);
    expect(await reconcile(own)).toMatchObject({ released: 0 });
    clock.set(10_600_000);
    expect(await reconcile(own)).toMatchObject({ released: 1 });
  });

  test("the replay keys read from a stored transaction: one for attestByDelegation, each of a batch's, none for attest or bytes that do not decode", () => {
    expect(delegatedSignatureKeys(delegated("a", 0, DELEGATE, 7).raw)).toEqual([key(7)]);
    const batch = encodeFunctionData({
      abi: EAS_ABI,
      functionName: "multiAttestByDelegation",
      args: [[{ schema: SCHEMA, data: [request, request], signatures: [sig(8), sig(9)], attester: DELEGATE, deadline: 2_000_000_000n }]],
    });
    expect(delegatedSignatureKeys(stored("c", 0, batch).raw)).toEqual([key(8), key(9)]);
    expect(delegatedSignatureKeys(witnessed("b", 0).raw)).toBeUndefined();
    expect(delegatedSignatureKeys("0x02dead")).toBeUndefined();
  });
});
