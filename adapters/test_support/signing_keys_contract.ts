import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import type { SigningKeyRecord } from "../../ports/signing_keys.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of signing keys (decisions §17); registered inside its describe, `open` gives the storage under test. */
export function signingKeysContract(open: () => Promise<Storage>) {
  test("signing keys (decisions §17): upsert keeps id, creation and type; one row per account and key; another account may hold it; newest first; filters", async () => {
    const { signingKeys } = await open();
    const accountId = fresh("acct");
    const key = (keyDid: string, createdAtMs: number, extra: Partial<SigningKeyRecord> = {}): SigningKeyRecord => ({
      id: fresh("key"), accountId, keyDid, keyType: "service-signing", displayName: "Receipt signer", tags: ["x402"], notes: null,
      createdAtMs, updatedAtMs: createdAtMs, ...extra,
    });
    const first = key("did:pkh:eip155:1:0xaaa", 10, { notes: "In a KMS" });
    const created = await signingKeys.upsert(first, 100);
    expect(created).toEqual({ outcome: "created", record: first });
    const again = await signingKeys.upsert(key("did:pkh:eip155:1:0xaaa", 20, { keyType: "attestation", displayName: "Renamed", tags: ["mcp", "x402"] }), 100);
    expect(again).toEqual({
      outcome: "updated",
      record: { ...first, displayName: "Renamed", tags: ["mcp", "x402"], notes: null, updatedAtMs: 20 },
    });
    await signingKeys.upsert(key("did:jwk:eyJrdHkiOiJFQyJ9", 30, { keyType: "attestation", tags: [] }), 100);
    await signingKeys.upsert(key("did:key:z6Mk", 40, { tags: ["mcp"] }), 100);
    expect((await signingKeys.list(accountId)).map((k) => k.keyDid)).toEqual(["did:key:z6Mk", "did:jwk:eyJrdHkiOiJFQyJ9", "did:pkh:eip155:1:0xaaa"]);
    expect((await signingKeys.list(accountId, { keyType: "attestation" })).map((k) => k.keyDid)).toEqual(["did:jwk:eyJrdHkiOiJFQyJ9"]);
    expect((await signingKeys.list(accountId, { tag: "mcp" })).map((k) => k.keyDid)).toEqual(["did:key:z6Mk", "did:pkh:eip155:1:0xaaa"]);
    expect(await signingKeys.list(accountId, { tag: "x40" })).toEqual([]);
    expect(await signingKeys.list(accountId, { keyType: "service-signing", tag: "x402" })).toHaveLength(1);
    // Another account registers the same key: its own row.
    const other = fresh("acct");
    expect((await signingKeys.upsert({ ...key("did:pkh:eip155:1:0xaaa", 50), accountId: other }, 100)).outcome).toBe("created");
    expect(await signingKeys.list(other)).toHaveLength(1);
    expect((await signingKeys.list(accountId)).find((k) => k.keyDid === "did:pkh:eip155:1:0xaaa")?.displayName).toBe("Renamed");
  });

  test("signing keys under concurrency: parallel upserts of one key leave one row; parallel new keys stop at the limit exactly", async () => {
    const { signingKeys } = await open();
    const accountId = fresh("acct");
    const key = (keyDid: string, n: number): SigningKeyRecord => ({
      id: fresh("key"), accountId, keyDid, keyType: "service-signing", displayName: `name ${n}`, tags: [], notes: null, createdAtMs: n, updatedAtMs: n,
    });
    const same = await Promise.all(Array.from({ length: 10 }, (_, i) => signingKeys.upsert(key("did:pkh:eip155:1:0xbbb", i + 1), 100)));
    expect(same.filter((r) => r.outcome === "created")).toHaveLength(1);
    expect(same.filter((r) => r.outcome === "updated")).toHaveLength(9);
    expect(await signingKeys.list(accountId)).toHaveLength(1);
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => signingKeys.upsert(key(`did:pkh:eip155:1:0x${i}`, 100 + i), 5)));
    expect(many.filter((r) => r.outcome === "created")).toHaveLength(4);
    expect(many.filter((r) => r.outcome === "limit")).toHaveLength(16);
    expect(await signingKeys.list(accountId)).toHaveLength(5);
    // At the limit a known key still updates.
    expect((await signingKeys.upsert(key("did:pkh:eip155:1:0xbbb", 500), 5)).outcome).toBe("updated");
  });
}
