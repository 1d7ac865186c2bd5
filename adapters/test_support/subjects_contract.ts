import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of subjects of an account; registered inside its describe, `open` gives the storage under test. */
export function subjectsContract(open: () => Promise<Storage>) {
  test("subjects: one bootstrap under concurrency, replaced by the first added; unique per account; one default; removal passes the default on", async () => {
    const { subjects } = await open();
    const accountId = fresh("acct");
    const subject = (id: string, did: string, bootstrap = false, createdAtMs = 1) => ({
      id, accountId, canonicalDid: did, subjectDidHash: "0x", displayName: null, isDefault: false, bootstrap,
      ownershipMethod: "wallet", ownershipWalletDid: "did:pkh:eip155:1:0xa", verifiedAtMs: createdAtMs, createdAtMs,
    });
    await Promise.all(Array.from({ length: 5 }, (_, i) => subjects.ensureBootstrap(subject(fresh("boot"), "did:pkh:eip155:1:0xa", true))));
    expect((await subjects.list(accountId)).map((x) => [x.canonicalDid, x.isDefault, x.bootstrap])).toEqual([["did:pkh:eip155:1:0xa", true, true]]);
    const [a, b2, c] = [fresh("s"), fresh("s"), fresh("s")];
    expect(await subjects.add(subject(a, "did:web:a.test", false, 2), 100)).toBe("added");
    expect((await subjects.list(accountId)).map((x) => [x.id, x.isDefault])).toEqual([[a, true]]);
    expect(await subjects.add(subject(fresh("s"), "did:web:a.test", false, 3), 100)).toBe("exists");
    expect(await subjects.add(subject(b2, "did:web:b.test", false, 4), 100)).toBe("added");
    expect(await subjects.add(subject(c, "did:web:c.test", false, 5), 100)).toBe("added");
    expect(await subjects.update(accountId, c, { isDefault: true, displayName: "C" })).toMatchObject({ id: c, isDefault: true, displayName: "C" });
    expect((await subjects.list(accountId)).filter((x) => x.isDefault).map((x) => x.id)).toEqual([c]);
    expect(await subjects.update(fresh("other"), c, { displayName: "x" })).toBeUndefined();
    expect(await subjects.remove(fresh("other"), c)).toBe(false);
    expect(await subjects.remove(accountId, c)).toBe(true);
    expect((await subjects.list(accountId)).map((x) => [x.id, x.isDefault])).toEqual([[a, true], [b2, false]]);
    // Another account may hold the same DID.
    const other = fresh("acct");
    expect(await subjects.add({ ...subject(fresh("s"), "did:web:a.test"), accountId: other }, 100)).toBe("added");
  });

  test("subjects under concurrency: parallel first adds leave one default and no bootstrap; one DID added once; parallel make-default leaves one default", async () => {
    const { subjects } = await open();
    const accountId = fresh("acct");
    const subject = (did: string, bootstrap = false) => ({
      id: fresh("s"), accountId, canonicalDid: did, subjectDidHash: "0x", displayName: null, isDefault: false, bootstrap,
      ownershipMethod: "dns", ownershipWalletDid: "did:pkh:eip155:1:0xa", verifiedAtMs: 1, createdAtMs: 1,
    });
    await subjects.ensureBootstrap(subject("did:pkh:eip155:1:0xa", true));
    const added = await Promise.all(["a", "b", "c", "a", "a"].map((d) => subjects.add(subject(`did:web:${d}.test`), 100)));
    expect(added.filter((r) => r === "added")).toHaveLength(3);
    const listed = await subjects.list(accountId);
    expect(listed.map((x) => x.canonicalDid).sort()).toEqual(["did:web:a.test", "did:web:b.test", "did:web:c.test"]);
    expect(listed.filter((x) => x.isDefault)).toHaveLength(1);
    expect(listed[0]!.isDefault).toBe(true);
    await Promise.all(listed.map((x) => subjects.update(accountId, x.id, { isDefault: true })));
    expect((await subjects.list(accountId)).filter((x) => x.isDefault)).toHaveLength(1);
    await Promise.all(listed.map((x) => subjects.remove(accountId, x.id)));
    expect(await subjects.list(accountId)).toEqual([]);
  });

  test("subjects are bounded per account (issue 33): parallel adds past the bound store exactly the bound; the bootstrap subject does not count; a duplicate is still exists", async () => {
    const { subjects } = await open();
    const accountId = fresh("acct");
    const subject = (did: string, bootstrap = false) => ({
      id: fresh("s"), accountId, canonicalDid: did, subjectDidHash: "0x", displayName: null, isDefault: false, bootstrap,
      ownershipMethod: "dns", ownershipWalletDid: "did:pkh:eip155:1:0xa", verifiedAtMs: 1, createdAtMs: 1,
    });
    await subjects.ensureBootstrap(subject("did:pkh:eip155:1:0xa", true));
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => subjects.add(subject(`did:web:s${i}.test`), 4)));
    expect(outcomes.filter((r) => r === "added")).toHaveLength(4);
    expect(outcomes.filter((r) => r === "limit")).toHaveLength(8);
    const listed = await subjects.list(accountId);
    expect(listed).toHaveLength(4);
    expect(listed.some((x) => x.bootstrap)).toBe(false);
    expect(await subjects.add(subject(listed[0]!.canonicalDid), 4)).toBe("exists");
    // Removing one makes room for exactly one.
    await subjects.remove(accountId, listed[1]!.id);
    const again = await Promise.all(["x", "y", "z"].map((d) => subjects.add(subject(`did:web:${d}.test`), 4)));
    expect(again.filter((r) => r === "added")).toHaveLength(1);
    expect(await subjects.list(accountId)).toHaveLength(4);
    // A bound of one still replaces the bootstrap subject.
    const fresher = fresh("acct");
    await subjects.ensureBootstrap({ ...subject("did:pkh:eip155:1:0xb", true), accountId: fresher });
    expect(await subjects.add({ ...subject("did:web:one.test"), accountId: fresher }, 1)).toBe("added");
    expect(await subjects.add({ ...subject("did:web:two.test"), accountId: fresher }, 1)).toBe("limit");
    expect((await subjects.list(fresher)).map((x) => x.canonicalDid)).toEqual(["did:web:one.test"]);
  });
}
