import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { T0, fresh } from "./_helpers.ts";

/** The storage contract's tests of submission records (decisions §23); registered inside its describe, `open` gives the storage under test. */
export function submissionRecordsContract(open: () => Promise<Storage>) {
  test("submission records (decisions §23): found by id; listed per scope newest first, paged after a cursor; settled once, by id or by replay record; settled ones pruned by age", async () => {
    const { submissions } = await open();
    const scope = fresh("account");
    const ids = [fresh("sub-a"), fresh("sub-b"), fresh("sub-c")];
    for (const [i, id] of ids.entries()) await submissions.create({ id, chainId: 1, scope, ref: `0xref-${id}`, createdAtMs: T0 + i });
    await submissions.create({ id: fresh("sub-other"), chainId: 1, scope: fresh("account"), ref: "0xother", createdAtMs: T0 });
    expect(await submissions.find(ids[0]!)).toEqual({ id: ids[0]!, scope, chainId: 1, ref: `0xref-${ids[0]}`, items: null, outcome: null, createdAtMs: T0, updatedAtMs: T0 });
    expect(await submissions.find("unknown")).toBeUndefined();
    expect((await submissions.list(scope, { limit: 2 })).map((r) => r.id)).toEqual([ids[2]!, ids[1]!]);
    expect((await submissions.list(scope, { limit: 2, after: { createdAtMs: T0 + 1, id: ids[1]! } })).map((r) => r.id)).toEqual([ids[0]!]);
    const mined = { state: "mined" as const, txHash: "0xtx", uid: "0xuid", blockNumber: 12n, feeBumps: 1 };
    expect(await submissions.settle(ids[0]!, mined, T0 + 10)).toBe(true);
    expect(await submissions.settle(ids[0]!, { state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps: 0 }, T0 + 11)).toBe(false);
    expect(await submissions.find(ids[0]!)).toMatchObject({ outcome: mined, updatedAtMs: T0 + 10 });
    const failed = { state: "failed" as const, txHash: "0xtx2", error: "SUBMISSION_FAILED", feeBumps: 0 };
    // Settled by its replay record on its chain: the same ref on another chain is not this submission's (decisions §30).
    expect(await submissions.settleRef(2, `0xref-${ids[1]}`, failed, T0 + 12)).toEqual([]);
    expect(await submissions.settleRef(1, `0xref-${ids[1]}`, failed, T0 + 12)).toEqual([ids[1]!]);
    expect(await submissions.settleRef(1, `0xref-${ids[1]}`, failed, T0 + 13)).toEqual([]);
    expect((await submissions.find(ids[1]!))?.outcome).toEqual(failed);
    expect((await submissions.find(ids[2]!))?.outcome).toBeNull();
    // The sweep's list: open ones and settled ones not yet told, created before the bound; told and newer ones left out.
    const untold = async (beforeMs: number) => (await submissions.untold(beforeMs, 1_000)).map((r) => r.id);
    expect(await untold(T0 + 3)).toEqual(expect.arrayContaining([ids[0]!, ids[1]!, ids[2]!]));
    await submissions.told(ids[0]!);
    // An open one cannot be marked told; it stays on the list until it settles.
    await submissions.told(ids[2]!);
    expect(await untold(T0 + 3)).not.toContain(ids[0]!);
    expect(await untold(T0 + 3)).toEqual(expect.arrayContaining([ids[1]!, ids[2]!]));
    expect(await untold(T0 + 2)).not.toContain(ids[2]!);
    // A settlement nobody is to be told of (issue 43) is kept told: it leaves the list as it settles.
    const quiet = fresh("sub-quiet");
    await submissions.create({ id: quiet, chainId: 1, scope: fresh("client"), ref: `0xref-${quiet}`, createdAtMs: T0 });
    expect(await untold(T0 + 3)).toContain(quiet);
    expect(await submissions.settle(quiet, mined, T0 + 14, { untold: false })).toBe(true);
    expect(await untold(T0 + 3)).not.toContain(quiet);
    const oldest = await submissions.untold(T0 + 3, 1_000);
    expect(oldest.map((r) => r.createdAtMs)).toEqual([...oldest.map((r) => r.createdAtMs)].sort((a, b) => a - b));
    // Open ones stay whatever their age; settled ones go.
    expect(await submissions.prune(T0 + 100)).toBeGreaterThanOrEqual(3);
    expect(await submissions.find(ids[0]!)).toBeUndefined();
    expect(await submissions.find(ids[2]!)).toBeDefined();
  });

  test("a batch's submission record keeps its requests in order and, once mined, each sent request's uid (decisions §23)", async () => {
    const { submissions } = await open();
    const [byId, byRef] = [fresh("sub-batch"), fresh("sub-batch")];
    const items = [{ ref: `0xa-${byId}` }, { refused: { code: "ATTESTER_MISMATCH", message: "Signer does not match attester" } }, { ref: `0xb-${byId}` }];
    await submissions.create({ id: byId, chainId: 1, scope: fresh("account"), ref: `0xa-${byId}`, createdAtMs: T0, items });
    expect(await submissions.find(byId)).toMatchObject({ items, outcome: null });
    const uids = { [`0xa-${byId}`]: "0xu1", [`0xb-${byId}`]: "0xu2" };
    const mined = { state: "mined" as const, txHash: "0xtx", uid: "0xu1", blockNumber: 3n, feeBumps: 0, uids };
    expect(await submissions.settle(byId, mined, T0 + 1)).toBe(true);
    expect((await submissions.find(byId))?.outcome).toEqual(mined);
    const twoItems = [{ ref: `0xc-${byRef}` }, { ref: `0xd-${byRef}` }];
    await submissions.create({ id: byRef, chainId: 1, scope: fresh("account"), ref: `0xc-${byRef}`, createdAtMs: T0, items: twoItems });
    const reconciled = { ...mined, uids: { [`0xc-${byRef}`]: "0xu3", [`0xd-${byRef}`]: null } };
    expect(await submissions.settleRef(1, `0xc-${byRef}`, reconciled, T0 + 2)).toEqual([byRef]);
    expect(await submissions.find(byRef)).toMatchObject({ items: twoItems, outcome: reconciled });
  });
}
