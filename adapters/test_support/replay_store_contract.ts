import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { claim, signedTx, fresh } from "./_helpers.ts";

/** The chain of `claim`'s records. */
const C = 1;

/** The storage contract's tests of replay records: claims, the states of a submission, open records and pruning; registered inside its describe, `open` gives the storage under test. */
export function replayStoreContract(open: () => Promise<Storage>) {
  test("replay: a key is claimed once; a second live claim on the same attester nonce is refused", async () => {
    const { replay } = await open();
    const [a, b, c] = [fresh("0xa"), fresh("0xb"), fresh("0xc")];
    const attester = fresh("0xatt");
    expect(await replay.claim(claim(a, 0n, attester))).toBe("claimed");
    expect(await replay.claim(claim(a, 0n, attester))).toBe("duplicate-signature");
    expect(await replay.claim(claim(b, 0n, attester))).toBe("nonce-in-flight");
    expect(await replay.claim(claim(c, 1n, attester))).toBe("claimed");
    expect(await replay.find(C, a)).toMatchObject({ key: a, state: "checked", nonce: 0n, tx: null, txHash: null });
    expect(await replay.find(C, fresh("0xnever"))).toBeUndefined();
  });

  test("replay: checked → signed (the transaction stored) → sent → mined; a released record frees key and nonce", async () => {
    const { replay } = await open();
    const attester = fresh("0xatt");
    const [a, b] = [fresh("0xa"), fresh("0xb")];
    await replay.claim(claim(a, 0n, attester));
    await replay.release(C, a);
    expect(await replay.find(C, a)).toBeUndefined();
    expect(await replay.claim(claim(a, 0n, attester))).toBe("claimed");
    expect(await replay.markSigned(C, a, signedTx("0xhash", 4))).toBe(true);
    expect(await replay.find(C, a)).toMatchObject({ state: "signed", txHash: "0xhash", tx: signedTx("0xhash", 4) });
    await replay.markSent(C, a);
    expect((await replay.find(C, a))?.state).toBe("sent");
    expect(await replay.markSigned(C, a, signedTx("0xother", 5))).toBe(false);
    // Released because its nonce was taken, or it was provably never broadcast: the same signature works again.
    await replay.release(C, a);
    expect(await replay.find(C, a)).toBeUndefined();
    expect(await replay.claim(claim(a, 0n, attester))).toBe("claimed");
    await replay.finish(C, a, { state: "mined", txHash: "0xh2", uid: "0xu", blockNumber: 5n });
    await replay.release(C, a);
    expect(await replay.find(C, a)).toMatchObject({ state: "mined", uid: "0xu", blockNumber: 5n, txHash: "0xh2" });
    expect(await replay.claim(claim(a, 0n, attester))).toBe("duplicate-signature");
    expect(await replay.claim(claim(b, 0n, attester))).toBe("nonce-in-flight");
  });

  test("replay: a reverted submission frees the nonce but keeps the key", async () => {
    const { replay } = await open();
    const attester = fresh("0xatt");
    const [a, b] = [fresh("0xa"), fresh("0xb")];
    await replay.claim(claim(a, 0n, attester));
    await replay.finish(C, a, { state: "reverted", txHash: "0xhash", blockNumber: 3n });
    expect(await replay.claim(claim(a, 0n, attester))).toBe("duplicate-signature");
    expect(await replay.claim(claim(b, 0n, attester))).toBe("claimed");
  });

  test("replay: open lists checked, signed and sent records created before a time", async () => {
    const { replay } = await open();
    const attester = fresh("0xatt");
    const [a, b, c, d] = [fresh("0xa"), fresh("0xb"), fresh("0xc"), fresh("0xd")];
    await replay.claim({ ...claim(a, 0n, attester), createdAtMs: 10 });
    await replay.claim({ ...claim(b, 1n, attester), createdAtMs: 11 });
    await replay.markSigned(C, b, signedTx(`0x${b}`, 7));
    await replay.claim({ ...claim(c, 2n, attester), createdAtMs: 12 });
    await replay.finish(C, c, { state: "mined", txHash: "0xc", uid: null, blockNumber: 1n });
    await replay.claim({ ...claim(d, 3n, attester), createdAtMs: 50 });
    const open_ = (await replay.open(20)).filter((r) => r.attester === attester.toLowerCase());
    expect(open_.map((r) => [r.key, r.state])).toEqual([[a, "checked"], [b, "signed"]]);
    expect(open_[1]!.tx).toEqual(signedTx(`0x${b}`, 7));
  });

  test("replay: prune drops settled records whose deadline passed; open ones wait for the reconciler", async () => {
    const { replay } = await open();
    const [key, open_] = [fresh("0xold"), fresh("0xopen")];
    await replay.claim({ ...claim(key, 0n, fresh("0xatt")), deadline: 100n });
    await replay.finish(C, key, { state: "mined", txHash: "0x1", uid: null, blockNumber: 1n });
    await replay.claim({ ...claim(open_, 0n, fresh("0xatt")), deadline: 100n });
    expect(await replay.prune(101n)).toBeGreaterThanOrEqual(1);
    expect(await replay.find(C, key)).toBeUndefined();
    expect((await replay.find(C, open_))?.state).toBe("checked");
  });

  test("replay: a record's identity is (chain, key): the same key is claimed on two chains, each found, signed, finished and released on its own", async () => {
    // A contract wallet whose `isValidSignature` ignores the bytes (a Safe's approved hashes) can sign the same
    // attestation on two chains with the same 65 bytes (decisions §30): each chain's write is its own.
    const { replay } = await open();
    const key = fresh("0xtwochains");
    const attester = fresh("0xatt");
    const [A, B] = [C, 8453];
    expect(await replay.claim({ ...claim(key, 0n, attester), chainId: A })).toBe("claimed");
    expect(await replay.claim({ ...claim(key, 0n, attester), chainId: B })).toBe("claimed");
    expect(await replay.claim({ ...claim(key, 0n, attester), chainId: B })).toBe("duplicate-signature");
    expect(await replay.find(A, key)).toMatchObject({ key, chainId: A, state: "checked" });
    expect(await replay.find(B, key)).toMatchObject({ key, chainId: B, state: "checked" });
    expect(await replay.find(2, key)).toBeUndefined();
    expect(await replay.markSigned(A, key, signedTx("0xa1", 1))).toBe(true);
    await replay.markSent(A, key);
    await replay.finish(A, key, { state: "mined", txHash: "0xa1", uid: "0xuida", blockNumber: 3n });
    expect(await replay.find(B, key)).toMatchObject({ state: "checked", txHash: null, uid: null });
    // Released on B: A's mined record stays, and B's signature works again there only.
    await replay.release(B, key);
    expect(await replay.find(B, key)).toBeUndefined();
    expect(await replay.find(A, key)).toMatchObject({ state: "mined", uid: "0xuida", txHash: "0xa1" });
    expect(await replay.claim({ ...claim(key, 0n, attester), chainId: A })).toBe("duplicate-signature");
    expect(await replay.claim({ ...claim(key, 0n, attester), chainId: B })).toBe("claimed");
    await replay.finish(B, key, { state: "mined", txHash: "0xb1", uid: "0xuidb", blockNumber: 9n });
    expect((await replay.find(A, key))?.uid).toBe("0xuida");
    expect((await replay.find(B, key))?.uid).toBe("0xuidb");
  });

  test("replay: concurrent claims of one key: exactly one wins", async () => {
    const { replay } = await open();
    const key = fresh("0xrace");
    const attester = fresh("0xatt");
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => replay.claim(claim(key, 0n, attester))));
    expect(outcomes.filter((o) => o === "claimed")).toHaveLength(1);
  });
}
