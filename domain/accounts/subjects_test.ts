import { describe, expect, test } from "bun:test";
import { keccak256, stringToBytes } from "viem/utils";
import type { Account } from "../../ports/accounts.ts";
import { fakeClock, fakeRandom, fakeSubjectStore } from "../../ports/fakes/mod.ts";
import type { OwnershipAnswer, OwnershipRequest, VerifySubjectOwnership } from "./subject_ownership.ts";
import { createSubjects } from "./subjects.ts";

const ALICE: Account = { id: "acc_a", address: "0x00000000000000000000000000000000000000aa", plan: "free", createdAtMs: 0 };
const BOB: Account = { id: "acc_b", address: "0x00000000000000000000000000000000000000bb", plan: "free", createdAtMs: 0 };
const ALICE_DID = `did:pkh:eip155:31337:${ALICE.address}`;

/** An ownership check that verifies `did:web:*.ok` by dns, fails `did:web:*.no`, and is unreachable for `did:web:*.down`. */
function fakeOwnership() {
  const seen: OwnershipRequest[] = [];
  const verify: VerifySubjectOwnership = (request) => {
    seen.push(request);
    const base = { subjectDid: request.subjectDid, connectedWalletDid: request.connectedWalletDid };
    if (request.subjectDid.endsWith(".down")) return Promise.resolve({ ok: false, code: "NETWORK_ERROR", message: "The chain did not answer" });
    const answer: OwnershipAnswer = request.subjectDid.endsWith(".no")
      ? { ...base, ok: false, status: "failed", error: "The wallet is not a controller of the subject", details: "Publish a TXT record at _controllers.x.no" }
      : { ...base, ok: true, status: "verified", method: request.subjectDid.startsWith("did:pkh") ? "wallet" : "dns" };
    return Promise.resolve({ ok: true, value: answer });
  };
  return { verify, seen };
}

function setup(options: { maxPerAccount?: number; knownChains?: string[] } = {}) {
  const store = fakeSubjectStore();
  const clock = fakeClock(1_800_000_000_000);
  const ownership = fakeOwnership();
  const subjects = createSubjects({ store, ownership: ownership.verify, clock, random: fakeRandom(), chainId: 31337, ...options });
  return { store, clock, ownership, subjects };
}

describe("createSubjects()", () => {
  test("list() starts an account with its wallet's did:pkh as the default subject, once", async () => {
    const { subjects, store } = setup();
    const first = await subjects.list(ALICE);
    await subjects.list(ALICE);
    expect(first).toEqual([{
      id: expect.stringMatching(/^sub_[0-9a-f]{24}$/),
      canonicalDid: ALICE_DID,
      subjectDidHash: keccak256(stringToBytes(ALICE_DID)),
      displayName: null,
      isDefault: true,
      ownership: { method: "wallet", walletDid: ALICE_DID, verifiedAt: "2027-01-15T08:00:00.000Z" },
      createdAt: "2027-01-15T08:00:00.000Z",
    }]);
    expect(store.rows()).toHaveLength(1);
    expect((await subjects.primary(ALICE)).canonicalDid).toBe(ALICE_DID);
  });

  test("add() proves ownership with the signed-in wallet, normalizes the DID and replaces the bootstrap subject", async () => {
    const { subjects, ownership, clock } = setup();
    await subjects.list(ALICE);
    clock.set(1_800_000_001_000);
    const added = await subjects.add(ALICE, { subjectDid: " www.Shop.ok ", displayName: "  Shop " });
    expect(ownership.seen).toEqual([{ subjectDid: "did:web:shop.ok", connectedWalletDid: ALICE_DID, txHash: undefined }]);
    expect(added).toMatchObject({
      ok: true,
      value: { canonicalDid: "did:web:shop.ok", subjectDidHash: keccak256(stringToBytes("did:web:shop.ok")), displayName: "Shop", isDefault: true, ownership: { method: "dns", walletDid: ALICE_DID } },
    });
    expect((await subjects.list(ALICE)).map((s) => s.canonicalDid)).toEqual(["did:web:shop.ok"]);
    const second = await subjects.add(ALICE, { did: "did:web:blog.ok", txHash: "0xabc" });
    expect(second).toMatchObject({ ok: true, value: { isDefault: false, displayName: null } });
    expect(ownership.seen[1]!.txHash).toBe("0xabc");
  });

  test("add() refuses a failed proof with what to publish, a duplicate in one account, bad input; passes NETWORK_ERROR on", async () => {
    const { subjects, store } = setup();
    expect(await subjects.add(ALICE, { did: "did:web:x.no" })).toEqual({
      ok: false,
      code: "SUBJECT_OWNERSHIP_VERIFICATION_FAILED",
      message: "The wallet is not a controller of the subject",
      details: "Publish a TXT record at _controllers.x.no",
    });
    expect(await subjects.add(ALICE, { did: "did:web:x.down" })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(store.writes).toBe(0);
    expect(await subjects.add(ALICE, {})).toMatchObject({ ok: false, code: "INVALID_INPUT", message: "did is required" });
    expect(await subjects.add(ALICE, { did: 5 })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await subjects.add(ALICE, { did: "did:" })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await subjects.add(ALICE, { did: "a.ok", displayName: "x".repeat(101) })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await subjects.add(ALICE, { did: "a.ok", displayName: 7 })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await subjects.add(ALICE, { did: "a.ok", displayName: "a\u0007" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await subjects.add(ALICE, { did: "a.ok" })).toMatchObject({ ok: true });
    expect(await subjects.add(ALICE, { did: "did:web:www.a.ok" })).toMatchObject({ ok: false, code: "SUBJECT_ALREADY_EXISTS" });
  });

  test("two accounts may hold one subject; another account's subject is not found for get, update and remove", async () => {
    const { subjects } = setup();
    const mine = await subjects.add(ALICE, { did: "a.ok" });
    expect(await subjects.add(BOB, { did: "a.ok" })).toMatchObject({ ok: true });
    const id = mine.ok ? mine.value.id : "";
    expect(await subjects.get(ALICE, id)).toMatchObject({ ok: true, value: { id } });
    expect(await subjects.get(BOB, id)).toMatchObject({ ok: false, code: "SUBJECT_NOT_FOUND" });
    expect(await subjects.update(BOB, id, { displayName: "mine" })).toMatchObject({ ok: false, code: "SUBJECT_NOT_FOUND" });
    expect(await subjects.remove(BOB, id)).toMatchObject({ ok: false, code: "SUBJECT_NOT_FOUND" });
    expect(await subjects.get(ALICE, "sub_unknown")).toMatchObject({ ok: false, code: "SUBJECT_NOT_FOUND" });
  });

  test("update() renames (null clears) and makes default; refuses isDefault other than true and an empty change", async () => {
    const { subjects } = setup();
    const a = await subjects.add(ALICE, { did: "a.ok" });
    const b = await subjects.add(ALICE, { did: "b.ok" });
    const [aId, bId] = [a.ok ? a.value.id : "", b.ok ? b.value.id : ""];
    expect(await subjects.update(ALICE, bId, { displayName: "B", isDefault: true })).toMatchObject({ ok: true, value: { displayName: "B", isDefault: true } });
    expect((await subjects.list(ALICE)).map((s) => [s.id, s.isDefault])).toEqual([[bId, true], [aId, false]]);
    expect(await subjects.update(ALICE, bId, { displayName: null })).toMatchObject({ ok: true, value: { displayName: null, isDefault: true } });
    expect(await subjects.update(ALICE, bId, { isDefault: false })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await subjects.update(ALICE, bId, {})).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await subjects.update(ALICE, bId, { displayName: "x".repeat(101) })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });

  test("remove() passes the default to the oldest remaining subject; with none left the bootstrap subject comes back on the next read", async () => {
    const { subjects, clock } = setup();
    const a = await subjects.add(ALICE, { did: "a.ok" });
    clock.set(1_800_000_005_000);
    const b = await subjects.add(ALICE, { did: "b.ok" });
    clock.set(1_800_000_009_000);
    const c = await subjects.add(ALICE, { did: "c.ok" });
    const ids = [a, b, c].map((r) => (r.ok ? r.value.id : ""));
    expect(await subjects.remove(ALICE, ids[0]!)).toEqual({ ok: true, value: true });
    expect((await subjects.list(ALICE)).map((s) => [s.id, s.isDefault])).toEqual([[ids[1]!, true], [ids[2]!, false]]);
    await subjects.remove(ALICE, ids[1]!);
    await subjects.remove(ALICE, ids[2]!);
    expect((await subjects.list(ALICE)).map((s) => [s.canonicalDid, s.isDefault])).toEqual([[ALICE_DID, true]]);
  });
});

test("createSubjects() add() refuses a txHash that is not a string before any lookup", async () => {
  const { subjects, ownership } = setup();
  expect(await subjects.add(ALICE, { did: "a.ok", txHash: 5 })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: "txHash must be 32 bytes of hex" });
  expect(ownership.seen).toEqual([]);
});

describe("createSubjects() bounds (issue 33)", () => {
  test("an account holds at most maxPerAccount subjects besides the bootstrap one: past it SUBJECT_LIMIT_EXCEEDED with no ownership lookup; deleting one makes room", async () => {
    const { subjects, ownership, store } = setup({ maxPerAccount: 3 });
    await subjects.list(ALICE);
    for (const d of ["a", "b", "c"]) expect(await subjects.add(ALICE, { did: `${d}.ok` })).toMatchObject({ ok: true });
    const lookups = ownership.seen.length;
    const writes = store.writes;
    expect(await subjects.add(ALICE, { did: "d.ok" })).toEqual({ ok: false, code: "SUBJECT_LIMIT_EXCEEDED", message: "An account holds at most 3 subjects; delete one first" });
    expect(await subjects.add(ALICE, { did: ALICE_DID })).toMatchObject({ ok: false, code: "SUBJECT_LIMIT_EXCEEDED" });
    // A subject held already is still 409, and costs no lookup either.
    expect(await subjects.add(ALICE, { did: "b.ok" })).toMatchObject({ ok: false, code: "SUBJECT_ALREADY_EXISTS" });
    expect([ownership.seen.length, store.writes]).toEqual([lookups, writes]);
    expect(await subjects.list(ALICE)).toHaveLength(3);
    // Another account is not affected.
    expect(await subjects.add(BOB, { did: "d.ok" })).toMatchObject({ ok: true });
    const first = (await subjects.list(ALICE))[0]!;
    await subjects.remove(ALICE, first.id);
    expect(await subjects.add(ALICE, { did: "d.ok" })).toMatchObject({ ok: true });
    expect(await subjects.add(ALICE, { did: "e.ok" })).toMatchObject({ ok: false, code: "SUBJECT_LIMIT_EXCEEDED" });
  });

  test("parallel adds past the bound: the insert's transaction refuses the rest (the check before the lookup cannot see them)", async () => {
    const { subjects } = setup({ maxPerAccount: 2 });
    const outcomes = await Promise.all(["a", "b", "c", "d", "e"].map((d) => subjects.add(ALICE, { did: `${d}.ok` })));
    expect(outcomes.filter((r) => r.ok)).toHaveLength(2);
    expect(outcomes.filter((r) => !r.ok).map((r) => !r.ok && r.code)).toEqual(["SUBJECT_LIMIT_EXCEEDED", "SUBJECT_LIMIT_EXCEEDED", "SUBJECT_LIMIT_EXCEEDED"]);
    expect(await subjects.list(ALICE)).toHaveLength(2);
  });

  test("the default bound is 20", async () => {
    const { subjects } = setup();
    for (let i = 0; i < 20; i++) expect((await subjects.add(ALICE, { did: `s${i}.ok` })).ok).toBe(true);
    expect(await subjects.add(ALICE, { did: "s20.ok" })).toMatchObject({ ok: false, code: "SUBJECT_LIMIT_EXCEEDED" });
  });

  test("a did:pkh subject must name a chain the service knows (the active chain and knownChains), spelled as CAIP-2 does; else UNSUPPORTED_CHAIN before any lookup", async () => {
    const { subjects, ownership, store } = setup({ knownChains: ["eip155:66238", "eip155:1"] });
    const own = (chain: string) => `did:pkh:eip155:${chain}:${ALICE.address}`;
    for (const chain of ["2", "999999999999"]) {
      expect({ chain, answer: await subjects.add(ALICE, { did: own(chain) }) }).toMatchObject({ chain, answer: { ok: false, code: "UNSUPPORTED_CHAIN" } });
    }
    // A chain id no chain is spelled with fails the one subject rule first, as on every route (issue 43).
    for (const chain of ["0", "01", "031337", "0x1"]) {
      expect({ chain, answer: await subjects.add(ALICE, { did: own(chain) }) }).toMatchObject({ chain, answer: { ok: false, code: "INVALID_DID" } });
    }
    // The answer says which rule, as the read routes do.
    expect(await subjects.add(ALICE, { did: own("01") })).toMatchObject({
      ok: false,
      message: "did is not a subject this service takes: An eip155 did:pkh names its chain in decimal with no leading zero, and a 20-byte address",
    });
    expect(await subjects.add(ALICE, { did: "did:pkh:solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:abc" })).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    expect([ownership.seen, store.writes]).toEqual([[], 0]);
    for (const chain of ["1", "66238"]) expect(await subjects.add(ALICE, { did: own(chain) })).toMatchObject({ ok: true, value: { canonicalDid: own(chain).toLowerCase() } });
    // The active chain is always known (the bootstrap subject was replaced by the first subject added).
    expect(await subjects.add(ALICE, { did: own("31337") })).toMatchObject({ ok: true, value: { ownership: { method: "wallet" } } });
  });

  test("the attack of issue 33: the wallet's own did:pkh on 2,000 made-up chains stores nothing", async () => {
    const { subjects, ownership, store } = setup();
    await subjects.list(ALICE);
    const writes = store.writes;
    const outcomes = await Promise.all(Array.from({ length: 2_000 }, (_, n) => subjects.add(ALICE, { did: `did:pkh:eip155:${n + 40_000}:${ALICE.address}` })));
    expect(new Set(outcomes.map((r) => (r.ok ? "ok" : r.code)))).toEqual(new Set(["UNSUPPORTED_CHAIN"]));
    expect([ownership.seen.length, store.writes, (await subjects.list(ALICE)).length]).toEqual([0, writes, 1]);
  });
});
