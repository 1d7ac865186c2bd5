/** Webhook events name their chain (decisions §30): the outbox row's chain and EAS, and the settlement's chain. */
import { describe, expect, test } from "bun:test";
import { encodeAbiParameters, parseAbiParameters } from "viem/utils";
import type { StoredAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeClock, fakeRandom, fakeWebhookStore, fakeWebhookTransport } from "../../ports/fakes/mod.ts";
import type { OutboxRow } from "../../ports/webhooks.ts";
import { didToAddress } from "../did/mod.ts";
import { computeSchemaUid, findSchemaByName } from "../schemas.ts";
import { createSubmissionEvents, createWebhookEndpoints, createWebhookFanOut, derivedEventId, outboxChain } from "./mod.ts";
import { attestationEvent } from "./events.ts";

const account = { id: "acc-1", address: "0x00000000000000000000000000000000000000a1", plan: "free", createdAtMs: 0, displayName: null } as const;
const SUBJECT = "did:web:service.example";
const EAS_A = "0x00000000000000000000000000000000000000EA";
const EAS_B = "0x00000000000000000000000000000000000000eb";
const keySchema = findSchemaByName("key-binding")!;
const keyUid = computeSchemaUid(keySchema).toLowerCase();
const schemaNames = new Map([[keyUid, "key-binding"]]);

function setup() {
  const store = fakeWebhookStore();
  const clock = fakeClock(1_800_000_000_000);
  const endpoints = createWebhookEndpoints({ store, transport: fakeWebhookTransport({}), clock, random: fakeRandom(), allowPrivateNetwork: false });
  return { store, clock, endpoints };
}

function binding(uid: string): StoredAttestation {
  return {
    uid: uid as HexString,
    schema: keyUid as HexString,
    time: 1_800_000_000n,
    expirationTime: 0n,
    revocationTime: 0n,
    refUID: `0x${"0".repeat(64)}` as HexString,
    recipient: (didToAddress(SUBJECT) as { value: string }).value as HexString,
    attester: "0x00000000000000000000000000000000000000b2" as HexString,
    revocable: true,
    data: encodeAbiParameters(parseAbiParameters(keySchema.schema), [SUBJECT, "did:key:z6Mk", "{}", ["sign"], [], 1n, 1n, 0n]) as HexString,
    blockNumber: 10n,
    revokedBlock: null,
  };
}

const bodies = (store: ReturnType<typeof fakeWebhookStore>) => [...store.messages.values()].map((m) => ({ type: m.type, data: JSON.parse(m.body).data }));

describe("outboxChain()", () => {
  test("a row's chain id and EAS become {chainId, caip2, easContract}, the address lowercase; a row naming neither has none", () => {
    expect(outboxChain({ chainId: 8453, eas: EAS_A })).toEqual({ chainId: 8453, caip2: "eip155:8453", easContract: EAS_A.toLowerCase() });
    expect(outboxChain({})).toBeUndefined();
    expect(outboxChain({ chainId: 8453 })).toBeUndefined();
  });
});

describe("attestationEvent(): the one subject rule", () => {
  test("a subject no route can name (U+0000, whitespace) is about nobody: no event, the row consumed", () => {
    // Written by anyone to EAS, with the recipient its DID address: U+0000 reached PostgreSQL's text and stopped the
    // fan-out of every account's deliveries for good.
    for (const subject of [`${SUBJECT}\u0000`, "did:web:not a did"]) {
      const record = binding(`0x${"73".repeat(32)}`);
      const named = {
        ...record,
        recipient: (didToAddress(subject) as { value: string }).value as HexString,
        data: encodeAbiParameters(parseAbiParameters(keySchema.schema), [subject, "did:key:z6Mk", "{}", ["sign"], [], 1n, 1n, 0n]) as HexString,
      };
      expect(attestationEvent({ seq: 1, kind: "attested", uid: record.uid, blockNumber: 10n } as OutboxRow, named, schemaNames)).toBeUndefined();
    }
    expect(attestationEvent({ seq: 1, kind: "attested", uid: `0x${"73".repeat(32)}`, blockNumber: 10n } as OutboxRow, binding(`0x${"73".repeat(32)}`), schemaNames)?.subject).toBe(SUBJECT);
  });
});

describe("createWebhookFanOut(): events carry their chain (decisions §30)", () => {
  test("rows of two chains: each attestation.created and key.status_changed names the chain its row came from", async () => {
    const { store, clock, endpoints } = setup();
    store.owners.set(SUBJECT, [account.id]);
    const made = await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created", "key.status_changed"] });
    if (!made.ok) throw new Error("unreachable");
    const [u1, u2] = [`0x${"71".repeat(32)}`, `0x${"72".repeat(32)}`];
    const rows: OutboxRow[] = [
      { seq: 1, kind: "attested", uid: u1, blockNumber: 10n, txHash: null, chainId: 31337, eas: EAS_A },
      { seq: 2, kind: "attested", uid: u2, blockNumber: 10n, txHash: null, chainId: 31338, eas: EAS_B },
    ];
    store.outboxRows.push(...rows);
    await createWebhookFanOut({ store, records: () => Promise.resolve([binding(u1), binding(u2)]), schemaNames, clock })();
    const chainOf = (type: string, uid: string) => bodies(store).find((b) => b.type === type && b.data.uid === uid)?.data.chain;
    const a = { chainId: 31337, caip2: "eip155:31337", easContract: EAS_A.toLowerCase() };
    const b = { chainId: 31338, caip2: "eip155:31338", easContract: EAS_B };
    expect(chainOf("attestation.created", u1)).toEqual(a);
    expect(chainOf("key.status_changed", u1)).toEqual(a);
    expect(chainOf("attestation.created", u2)).toEqual(b);
    expect(chainOf("key.status_changed", u2)).toEqual(b);
    expect(store.deliveryRows.size).toBe(4);
  });
});

describe("createWebhookFanOut(): each row's record read from its own chain's index (decisions §30)", () => {
  test("one lookup per chain; a row of a chain with no index here stays in the outbox and holds back no other row", async () => {
    const { store, clock, endpoints } = setup();
    store.owners.set(SUBJECT, [account.id]);
    const made = await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created"] });
    if (!made.ok) throw new Error("unreachable");
    const [u1, u2, u3] = [`0x${"81".repeat(32)}`, `0x${"82".repeat(32)}`, `0x${"83".repeat(32)}`];
    store.outboxRows.push(
      { seq: 1, kind: "attested", uid: u3, blockNumber: 10n, txHash: null, chainId: 99, eas: EAS_B },
      { seq: 2, kind: "attested", uid: u1, blockNumber: 10n, txHash: null, chainId: 31337, eas: EAS_A },
      { seq: 3, kind: "attested", uid: u2, blockNumber: 10n, txHash: null, chainId: 31338, eas: EAS_B },
    );
    // Each chain's index holds only its own attestation; chain 99 has none here.
    const indexes = new Map([[31337, [binding(u1)]], [31338, [binding(u2)]]]);
    const lookups: { chainId: number | undefined; uids: readonly string[] }[] = [];
    const records = (uids: readonly HexString[], chain: { chainId?: number | undefined }) => {
      lookups.push({ chainId: chain.chainId, uids });
      return Promise.resolve((indexes.get(chain.chainId ?? 0) ?? []).filter((r) => uids.includes(r.uid)));
    };
    expect(await createWebhookFanOut({ store, records, schemaNames, clock })()).toBe(2);
    expect(lookups.sort((x, y) => Number(x.chainId) - Number(y.chainId))).toEqual([
      { chainId: 99, uids: [u3] },
      { chainId: 31337, uids: [u1] },
      { chainId: 31338, uids: [u2] },
    ]);
    expect(bodies(store).map((b) => [b.data.uid, b.data.chain.chainId])).toEqual([[u1, 31337], [u2, 31338]]);
    expect(store.outboxRows.map((r) => r.seq)).toEqual([1]);
  });

  test("the same uid on two chains is two events: the default chain's keeps its id, the other's names its chain", async () => {
    const { store, clock, endpoints } = setup();
    store.owners.set(SUBJECT, [account.id]);
    const made = await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created", "key.status_changed"] });
    if (!made.ok) throw new Error("unreachable");
    const uid = `0x${"a7".repeat(32)}`;
    store.outboxRows.push(
      { seq: 1, kind: "attested", uid, blockNumber: 10n, txHash: null, chainId: 31337, eas: EAS_A },
      { seq: 2, kind: "attested", uid, blockNumber: 10n, txHash: null, chainId: 31338, eas: EAS_A },
    );
    const records = (uids: readonly HexString[]) => Promise.resolve(uids.map((u) => binding(u)));
    await createWebhookFanOut({ store, records, schemaNames, clock, defaultChainId: 31337 })();
    const created = [...store.messages.values()].filter((m) => m.type === "attestation.created");
    expect(created.map((m) => JSON.parse(m.body).data.chain.chainId).sort()).toEqual([31337, 31338]);
    expect(created.find((m) => JSON.parse(m.body).data.chain.chainId === 31337)!.id).toBe(derivedEventId("attestation.created", uid));
    expect(new Set([...store.messages.values()].map((m) => m.id)).size).toBe(4);
    expect(store.deliveryRows.size).toBe(4);
  });

  test("with the chains it follows, the fan-out never reads another chain's rows", async () => {
    const { store, clock } = setup();
    const u1 = `0x${"91".repeat(32)}`;
    store.outboxRows.push(
      { seq: 1, kind: "attested", uid: u1, blockNumber: 10n, txHash: null, chainId: 99, eas: EAS_B },
      { seq: 2, kind: "attested", uid: u1, blockNumber: 10n, txHash: null, chainId: 31337, eas: EAS_A },
    );
    const asked: (number | undefined)[] = [];
    const records = (uids: readonly HexString[], chain: { chainId?: number | undefined }) => {
      asked.push(chain.chainId);
      return Promise.resolve(chain.chainId === 31337 ? [binding(uids[0]!)] : []);
    };
    expect(await createWebhookFanOut({ store, records, schemaNames, clock, chainIds: [31337] })()).toBe(1);
    expect(asked).toEqual([31337]);
    expect(store.outboxRows.map((r) => r.seq)).toEqual([1]);
  });
});

describe("createSubmissionEvents(): submission.settled carries its chain", () => {
  const outcome = { state: "mined", txHash: "0xabc", uid: "0xdef", blockNumber: 7n, feeBumps: 0 } as const;
  const scope = `account:${account.id}`;
  const records = { find: () => Promise.resolve(undefined) };
  const defaultChain = { chainId: 31337, caip2: "eip155:31337", easContract: EAS_A.toLowerCase() };

  test("the settlement's own chain, else the default chain given; neither: no chain", async () => {
    const { store, clock, endpoints } = setup();
    await endpoints.create(account, { url: "https://a.example/", events: ["submission.settled"] });
    const withDefault = createSubmissionEvents({ store, records, clock, chain: defaultChain });
    const other = { chainId: 31338, caip2: "eip155:31338", easContract: EAS_B };
    await withDefault({ submissionId: "sub-1", outcome, scope });
    await withDefault({ submissionId: "sub-2", outcome, scope, chain: other });
    await createSubmissionEvents({ store, records, clock })({ submissionId: "sub-3", outcome, scope });
    const chainOf = (id: string) => bodies(store).find((b) => b.data.submissionId === id)!.data.chain;
    expect(chainOf("sub-1")).toEqual(defaultChain);
    expect(chainOf("sub-2")).toEqual(other);
    expect(chainOf("sub-3")).toBeUndefined();
  });
});

describe("attestationEvent(): a record's subject as the index reads it", () => {
  test("whitespace or U+0000 in the subject's fragment: the event names the subject, as the list, the count and key status do", () => {
    // A fragment is not part of the subject (decisions §3): such a binding is listed, counted and read by key status
    // under SUBJECT, so its watchers hear of it too.
    for (const subject of [`${SUBJECT}#\tkey-1`, `${SUBJECT}#\u0000`, `${SUBJECT}# `]) {
      const record = binding(`0x${"74".repeat(32)}`);
      const named = { ...record, data: encodeAbiParameters(parseAbiParameters(keySchema.schema), [subject, "did:key:z6Mk", "{}", ["sign"], [], 1n, 1n, 0n]) as HexString };
      const event = attestationEvent({ seq: 1, kind: "attested", uid: record.uid, blockNumber: 10n } as OutboxRow, named, schemaNames);
      expect({ subject, named: event?.subject, data: event?.data.subject }).toEqual({ subject, named: SUBJECT, data: SUBJECT });
    }
  });
});
