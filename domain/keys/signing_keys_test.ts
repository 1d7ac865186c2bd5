import { describe, expect, test } from "bun:test";
import type { Account } from "../../ports/accounts.ts";
import { fakeClock, fakeRandom, fakeSigningKeyStore } from "../../ports/fakes/mod.ts";
import { fail, ok } from "../result.ts";
import type { KeyTrustMany } from "./key_status.ts";
import { createSigningKeys } from "./signing_keys.ts";
import { base58btcEncode } from "../did/mod.ts";

/** A well-formed did:key (an Ed25519 key of 32 bytes of `n`). */
const didKey = (n: number) => `did:key:z${base58btcEncode(Uint8Array.from([0xed, 0x01, ...new Array<number>(32).fill(n)]))}`;

const account: Account = { id: "acct-1", address: "0xaa", plan: "free", createdAtMs: 1 };
const KEY = "did:pkh:eip155:1:0xAbC0000000000000000000000000000000000001";

function setUp(trust: KeyTrustMany = (subjects, keys) =>
  Promise.resolve(ok(new Map(subjects.map((s) => [s, new Map(keys.map((k) => [k, { status: "registered" as const, trustLevel: "none" as const }]))])))), max?: number,
  subjects: readonly string[] = ["did:web:shop.test", "did:pkh:eip155:1:0xaa"], maxSubjects?: number) {
  const store = fakeSigningKeyStore();
  const clock = fakeClock(1_800_000_000_000);
  const asked: string[][] = [];
  const keys = createSigningKeys({
    store,
    clock,
    random: fakeRandom(),
    subjectsOf: () => Promise.resolve(subjects),
    trust: (judged, keyDids) => {
      asked.push([...keyDids]);
      judgedSubjects.push(judged.length);
      return trust(judged, keyDids);
    },
    maxPerAccount: max,
    maxSubjects,
  });
  const judgedSubjects: number[] = [];
  return { store, clock, keys, asked, judgedSubjects };
}

describe("createSigningKeys()", () => {
  test("upsert creates, then updates keeping id, creation time and key type; the key is stored canonical", async () => {
    const s = setUp();
    const created = await s.keys.upsert(account, { keyDid: ` ${KEY} `, keyType: "service-signing", displayName: " Receipt signer ", tags: ["x402"], notes: "KMS" });
    expect(created.ok).toBe(true);
    if (!created.ok) return;
    expect(created.value).toMatchObject({
      accountId: "acct-1",
      keyDid: KEY.toLowerCase(),
      keyType: "service-signing",
      displayName: "Receipt signer",
      tags: ["x402"],
      notes: "KMS",
      created: true,
      createdAt: "2027-01-15T08:00:00.000Z",
    });
    expect(created.value.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Object.keys(created.value)).toEqual(["id", "accountId", "keyDid", "keyType", "displayName", "tags", "notes", "created", "createdAt", "updatedAt"]);
    s.clock.set(1_800_000_060_000);
    const updated = await s.keys.upsert(account, { keyDid: KEY, keyType: "attestation", displayName: "Renamed" });
    expect(updated.ok && updated.value).toMatchObject({
      id: created.value.id,
      keyType: "service-signing",
      displayName: "Renamed",
      tags: [],
      notes: null,
      created: false,
      createdAt: created.value.createdAt,
      updatedAt: "2027-01-15T08:01:00.000Z",
    });
  });

  test("a did:key of the method's own examples is a key: Ed25519, secp256k1 and P-256", async () => {
    const s = setUp();
    for (const keyDid of ["did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme", "did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169"]) {
      expect(await s.keys.upsert(account, { keyDid, keyType: "service-signing", displayName: "k" })).toMatchObject({ ok: true, value: { keyDid } });
    }
  });

  test("every bad field is INVALID_INPUT naming it", async () => {
    const s = setUp();
    const good = { keyDid: KEY, keyType: "service-signing", displayName: "Signer" };
    const refusal = async (body: unknown) => {
      const r = await s.keys.upsert(account, body);
      return r.ok ? "ok" : `${r.code}: ${r.message}`;
    };
    expect(await refusal([])).toBe("INVALID_INPUT: Body must be a JSON object");
    expect(await refusal({ ...good, keyDid: undefined })).toBe("INVALID_INPUT: keyDid is required");
    expect(await refusal({ ...good, keyDid: "did:web:shop.test" })).toBe("INVALID_INPUT: keyDid must be a did:pkh, did:key, did:jwk or did:ethr");
    expect(await refusal({ ...good, keyDid: "did:pkh:eip155:1" })).toStartWith("INVALID_INPUT: keyDid");
    expect(await refusal({ ...good, keyDid: "did:jwk:not-base64!" })).toStartWith("INVALID_INPUT: keyDid");
    // A did:key must name a public key: before, `did:key:x` and a truncated `did:key:z6Mk` were registered.
    expect(await refusal({ ...good, keyDid: "did:key:x" })).toBe("INVALID_INPUT: keyDid: a did:key is base58btc multibase (z…)");
    expect(await refusal({ ...good, keyDid: "did:key:z6Mk" })).toStartWith("INVALID_INPUT: keyDid: a did:key names a public key type");
    expect(await refusal({ ...good, keyDid: `did:key:z${base58btcEncode(Uint8Array.from([0xed, 0x01, ...new Array<number>(31).fill(1)]))}` }))
      .toBe("INVALID_INPUT: keyDid: a did:key's key has the length its type has");
    expect(await refusal({ ...good, keyDid: "did:key:z0OIl" })).toBe("INVALID_INPUT: keyDid: a did:key is base58btc multibase (z…)");
    expect(await refusal({ ...good, keyDid: `did:key:z${base58btcEncode(Uint8Array.from([0x55, ...new Array<number>(32).fill(1)]))}` }))
      .toStartWith("INVALID_INPUT: keyDid: a did:key names a public key type of the did:key method");
    expect(await refusal({ ...good, keyType: "signing" })).toBe("INVALID_INPUT: keyType must be 'attestation' or 'service-signing'");
    expect(await refusal({ ...good, displayName: "   " })).toBe("INVALID_INPUT: displayName is required (non-empty)");
    expect(await refusal({ ...good, displayName: "x".repeat(201) })).toBe("INVALID_INPUT: displayName must be at most 200 characters");
    expect(await refusal({ ...good, displayName: "x".repeat(200) })).toBe("ok");
    expect(await refusal({ ...good, tags: "x402" })).toBe("INVALID_INPUT: tags must be an array of strings");
    expect(await refusal({ ...good, tags: Array(11).fill("t") })).toBe("INVALID_INPUT: tags: at most 10 tags are allowed");
    expect(await refusal({ ...good, tags: ["x402", " "] })).toBe("INVALID_INPUT: tags[1] must be a non-empty string");
    expect(await refusal({ ...good, tags: ["x".repeat(51)] })).toBe("INVALID_INPUT: tags[0] must be at most 50 characters");
    expect(await refusal({ ...good, notes: 5 })).toBe("INVALID_INPUT: notes must be a string or null");
    expect(await refusal({ ...good, notes: "n".repeat(1001) })).toBe("INVALID_INPUT: notes must be at most 1000 characters");
    // Text shown to people (domain/display_text.ts): a NUL in a tag, a right-to-left override in a name, a NUL in notes.
    expect(await refusal({ ...good, tags: ["a\u0000b"] })).toBe("INVALID_INPUT: tags[0] must not contain control characters");
    expect(await refusal({ ...good, displayName: "\u202Egnp.exe" })).toBe("INVALID_INPUT: displayName must not contain bidirectional control characters");
    expect(await refusal({ ...good, notes: "a\u0000" })).toBe("INVALID_INPUT: notes must not contain control characters");
    expect(await refusal({ ...good, notes: "line one\nline two" })).toBe("ok");
    expect(s.store.rows).toHaveLength(1);
  });

  test("past the account's limit a new key is SIGNING_KEY_LIMIT_EXCEEDED; a known one still updates", async () => {
    const s = setUp(undefined, 2);
    for (const n of [1, 2]) expect((await s.keys.upsert(account, { keyDid: didKey(n), keyType: "service-signing", displayName: "k" })).ok).toBe(true);
    const third = await s.keys.upsert(account, { keyDid: didKey(3), keyType: "service-signing", displayName: "k" });
    expect(third.ok ? "ok" : third.code).toBe("SIGNING_KEY_LIMIT_EXCEEDED");
    expect((await s.keys.upsert(account, { keyDid: didKey(1), keyType: "service-signing", displayName: "again" })).ok).toBe(true);
  });

  test("list: newest first, filtered, each key with its verdict per subject; a failed lookup gives null, not a guess", async () => {
    const s = setUp();
    await s.keys.upsert(account, { keyDid: didKey(1), keyType: "service-signing", displayName: "one", tags: ["x402"] });
    s.clock.set(1_800_000_001_000);
    await s.keys.upsert(account, { keyDid: didKey(2), keyType: "attestation", displayName: "two", tags: ["mcp"] });
    const all = await s.keys.list(account);
    expect(all.map((k) => k.keyDid)).toEqual([didKey(2), didKey(1)]);
    expect(all[0]!.subjects).toEqual([
      { subjectDid: "did:web:shop.test", status: "registered", trustLevel: "none" },
      { subjectDid: "did:pkh:eip155:1:0xaa", status: "registered", trustLevel: "none" },
    ]);
    expect((await s.keys.list(account, { keyType: "service-signing" })).map((k) => k.keyDid)).toEqual([didKey(1)]);
    expect((await s.keys.list(account, { tag: "mcp" })).map((k) => k.keyDid)).toEqual([didKey(2)]);
    expect(await s.keys.list(account, { tag: "none" })).toEqual([]);
    expect(s.asked).toEqual([[didKey(2), didKey(1)], [didKey(1)], [didKey(2)]]);

    const down = setUp(() => Promise.resolve(fail("NETWORK_ERROR", "The chain could not be read")));
    await down.keys.upsert(account, { keyDid: didKey(1), keyType: "service-signing", displayName: "one" });
    expect((await down.keys.list(account))[0]).toMatchObject({ subjects: null, subjectsError: { code: "NETWORK_ERROR", error: "The chain could not be read" } });
  });

  test("list: one answer holds at most keys × maxSubjects verdicts, the account's first subjects judged, whatever it stored (issue 33)", async () => {
    const many = Array.from({ length: 2_000 }, (_, n) => `did:pkh:eip155:${n + 1}:0xaa`);
    const s = setUp(undefined, 3, many, 5);
    for (const n of [1, 2, 3]) await s.keys.upsert(account, { keyDid: didKey(n), keyType: "service-signing", displayName: "k" });
    const listed = await s.keys.list(account);
    expect(listed.map((k) => k.subjects!.map((v) => v.subjectDid))).toEqual(Array.from({ length: 3 }, () => many.slice(0, 5)));
    expect(listed.flatMap((k) => k.subjects!)).toHaveLength(15);
    expect(s.judgedSubjects).toEqual([5]);
    // Without a bound given, the default (SUBJECTS_PER_ACCOUNT's default, 20) applies.
    const byDefault = setUp(undefined, undefined, many);
    await byDefault.keys.upsert(account, { keyDid: didKey(1), keyType: "service-signing", displayName: "k" });
    expect((await byDefault.keys.list(account))[0]!.subjects).toHaveLength(20);
  });
});
