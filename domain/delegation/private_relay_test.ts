import { describe, expect, test } from "bun:test";
import type { HexString } from "../../ports/eas.ts";
import { privateKeyToAccount } from "viem/accounts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeRandom, fakeReplayStore, fakeSubjectStore, fakeWriteLedger } from "../../ports/fakes/mod.ts";
import { buildAttestTypedData, ZERO_UID } from "./attest_typed_data.ts";
import { createDelegatedAttest, type DelegatedAttest } from "./delegated_attest.ts";
import type { DelegatedRequest } from "./delegated_request.ts";
import { didToAddress } from "../did/mod.ts";
import { createPrivateRelay } from "./private_relay.ts";
import { ok } from "../result.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import type { VerifySubjectOwnership } from "../accounts/mod.ts";

const LINKED = findSchemaByName("linked-identifier")!;
const LINKED_UID = `0x${"11".repeat(32)}` as HexString;
const PAYER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc" as HexString;

/**
 * A delegated attestation whose signature "verified": the fake hands the request to the relay's precheck (as the use
 * case does before any RPC), then straight to its admit.
 */
function fakeAttest(): DelegatedAttest & { admitted: number } {
  const attest = (async (body: unknown, caller?: Parameters<DelegatedAttest>[1]) => {
    const refused = await caller!.precheck?.(body as DelegatedRequest);
    if (refused !== undefined) return refused;
    const ticket = await caller!.admit!(body as DelegatedRequest);
    if ("ok" in ticket && ticket.ok === false) return ticket;
    attest.admitted++;
    return ok({ txHash: `0x${"ab".repeat(32)}`, uid: `0x${"cd".repeat(32)}`, blockNumber: 7n });
  }) as DelegatedAttest & { admitted: number };
  attest.admitted = 0;
  return attest;
}

function request(attester: HexString, subject: string): DelegatedRequest {
  const data = encodeSchemaData(LINKED.schema, { subject, linkedId: "did:web:x.test", proofs: [], issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n });
  if (!data.ok) throw new Error(data.message);
  const recipient = didToAddress(subject);
  return {
    attester, signature: "0x", schema: LINKED_UID, deadline: 0n, recipient: (recipient.ok ? recipient.value : "0x") as HexString,
    expirationTime: 0n, revocable: true, refUID: `0x${"00".repeat(32)}`, data: data.value, value: 0n, clientNonce: undefined,
  };
}

function setup(proof: "verified" | "failed" | "network") {
  const ledger = fakeWriteLedger();
  const attest = fakeAttest();
  const asked: string[] = [];
  const provenBy: (string | undefined)[] = [];
  const verifyOwnership: VerifySubjectOwnership = async (r) => {
    asked.push(r.subjectDid);
    provenBy.push(r.provenBy);
    if (proof === "network") return { ok: false, code: "NETWORK_ERROR", message: "down" } as never;
    return ok(proof === "verified"
      ? { ok: true, status: "verified", subjectDid: r.subjectDid, connectedWalletDid: r.connectedWalletDid }
      : { ok: false, status: "failed", subjectDid: r.subjectDid, connectedWalletDid: r.connectedWalletDid, error: "No TXT record names the wallet any more" });
  };
  const subjects = fakeSubjectStore();
  const relay = createPrivateRelay({
    attest,
    ledger,
    plans: { free: { annualWrites: 0, schemas: [] }, paid: { annualWrites: 5, schemas: ["*"] } },
    subjects,
    clock: fakeClock(Date.UTC(2026, 0, 2)),
    random: fakeRandom(),
    schemaNames: new Map([[LINKED_UID, "linked-identifier"]]),
    subjectScoped: new Set(["linked-identifier"]),
    chainId: 31337,
    verifyOwnership,
    readAttestation: () => Promise.resolve({ ok: true, attestation: null }),
  });
  return { relay, ledger, attest, asked, provenBy, subjects };
}

const payer = { kind: "x402" as const, address: PAYER };

describe("privateRelay() for a signed-in account's subject", () => {
  const account = { id: "acct-1", address: PAYER, plan: "paid" as const, createdAtMs: 0 };
  const keep = async (env: ReturnType<typeof setup>, method: string) =>
    await env.subjects.add({
      id: "s1", accountId: account.id, canonicalDid: "did:web:owned.test", subjectDidHash: "0x", displayName: null, isDefault: false,
      bootstrap: false, ownershipMethod: method, ownershipWalletDid: `did:pkh:eip155:31337:${PAYER}`, verifiedAtMs: 0, createdAtMs: 0,
    }, 10);

  test("a subject the account proved is proven again as it stands now, with how it was proven; a proof that lapsed is refused saying why", async () => {
    const still = setup("verified");
    await keep(still, "minting-wallet");
    expect((await still.relay(request(PAYER, "did:web:owned.test"), account)).ok).toBe(true);
    expect([still.asked, still.provenBy]).toEqual([["did:web:owned.test"], ["minting-wallet"]]);
    const lapsed = setup("failed");
    await keep(lapsed, "dns");
    const refused = await lapsed.relay(request(PAYER, "did:web:owned.test"), account);
    expect(refused).toMatchObject({ ok: false, code: "SUBJECT_OWNERSHIP_REQUIRED" });
    expect(!refused.ok && refused.message).toContain("No TXT record names the wallet any more");
    expect(lapsed.attest.admitted).toBe(0);
    const unknown = setup("network");
    await keep(unknown, "dns");
    expect(await unknown.relay(request(PAYER, "did:web:owned.test"), account)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    // A subject the account never added is refused without asking.
    const never = setup("verified");
    expect(await never.relay(request(PAYER, "did:web:owned.test"), account)).toMatchObject({ ok: false, code: "SUBJECT_OWNERSHIP_REQUIRED" });
    expect(never.asked).toEqual([]);
  });
});

describe("privateRelay() paid with x402 (decisions §13)", () => {
  test("the payer's own did:pkh needs no proof; the write is counted under the payer with no plan limit", async () => {
    const { relay, ledger, asked } = setup("failed");
    const result = await relay(request(PAYER, `did:pkh:eip155:31337:${PAYER}`), payer);
    expect(result.ok).toBe(true);
    expect(asked).toEqual([]);
    // Reserved although the paid plan allows no writes at all: a paid call takes nothing from a plan.
    expect(await ledger.usage("x402:" + PAYER, 2026)).toEqual({ used: 0, reserved: 1 });
    // The row names the chain written on (decisions §30): that chain's reconciler settles it after a crash.
    expect([...ledger.writes.values()].map((w) => w.chainId)).toEqual([31337]);
  });

  test("a subject-scoped subject must be proven owned by the payer's wallet now", async () => {
    const proven = setup("verified");
    expect((await proven.relay(request(PAYER, "did:web:owned.test"), payer)).ok).toBe(true);
    expect(proven.asked).toEqual(["did:web:owned.test"]);
    const refused = setup("failed");
    expect(await refused.relay(request(PAYER, "did:web:owned.test"), payer)).toMatchObject({ ok: false, code: "SUBJECT_OWNERSHIP_REQUIRED" });
    expect(refused.attest.admitted).toBe(0);
    const unknown = setup("network");
    expect(await unknown.relay(request(PAYER, "did:web:owned.test"), payer)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
  });

  test("the attester must be the payer", async () => {
    const { relay, attest } = setup("verified");
    const other = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" as HexString;
    expect(await relay(request(other, `did:pkh:eip155:31337:${other}`), payer)).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH", status: 403 });
    expect(attest.admitted).toBe(0);
  });
});

const REVIEW = findSchemaByName("user-review")!;
const RESPONSE = findSchemaByName("user-review-response")!;
const REVIEW_SCHEMA = `0x${"22".repeat(32)}` as HexString;
const RESPONSE_SCHEMA = `0x${"33".repeat(32)}` as HexString;
const REVIEW_AT = `0x${"44".repeat(32)}` as HexString;
const LINKED_AT = `0x${"55".repeat(32)}` as HexString;
const REVOKED_AT = `0x${"66".repeat(32)}` as HexString;
const OWNER = "0x90f79bf6eb2c4f870365e785982e1f101e93b906" as HexString;
const REVIEWER = "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65" as HexString;

/** A user-review-response answering `refUID`, its own subject the reviewer's did:pkh (reference §3.1). */
function response(attester: HexString, refUID: HexString, options: { subject?: string; dataRefUID?: string } = {}): DelegatedRequest {
  const subject = options.subject ?? `did:pkh:eip155:31337:${REVIEWER}`;
  const data = encodeSchemaData(RESPONSE.schema, { subject, refUID: options.dataRefUID ?? refUID, responseBody: "Thanks" });
  if (!data.ok) throw new Error(data.message);
  const recipient = didToAddress(subject);
  return {
    attester, signature: "0x", schema: RESPONSE_SCHEMA, deadline: 0n, recipient: (recipient.ok ? recipient.value : "0x") as HexString,
    expirationTime: 0n, revocable: false, refUID, data: data.value, value: 0n, clientNonce: undefined,
  };
}

function stored(uid: HexString, schema: HexString, data: HexString, revocationTime = 0n) {
  return { uid, schema, attester: REVIEWER, recipient: REVIEWER, revocationTime, data };
}

/** The relay with a review of did:web:shop.test on "chain", owned (by DNS, say) by OWNER's wallet. */
function responseSetup(chain: "up" | "down" = "up") {
  const review = encodeSchemaData(REVIEW.schema, { subject: "did:web:shop.test", version: "1", ratingValue: 2, reviewBody: "slow", screenshotUrls: [], proofs: [] });
  const linked = encodeSchemaData(LINKED.schema, { subject: "did:web:shop.test", linkedId: "did:web:x.test", proofs: [], issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n });
  if (!review.ok || !linked.ok) throw new Error("encoding");
  const attestations = new Map([
    [REVIEW_AT, stored(REVIEW_AT, REVIEW_SCHEMA, review.value)],
    [LINKED_AT, stored(LINKED_AT, LINKED_UID, linked.value)],
    [REVOKED_AT, stored(REVOKED_AT, REVIEW_SCHEMA, review.value, 5n)],
  ]);
  const reads: string[] = [];
  const asked: string[] = [];
  const attest = fakeAttest();
  const ledger = fakeWriteLedger();
  const relay = createPrivateRelay({
    attest,
    ledger,
    plans: { free: { annualWrites: 0, schemas: [] }, paid: { annualWrites: 0, schemas: ["*"] } },
    subjects: fakeSubjectStore(),
    clock: fakeClock(Date.UTC(2026, 0, 2)),
    random: fakeRandom(),
    schemaNames: new Map([[LINKED_UID, "linked-identifier"], [REVIEW_SCHEMA, "user-review"], [RESPONSE_SCHEMA, "user-review-response"]]),
    subjectScoped: new Set(["linked-identifier", "user-review-response"]),
    chainId: 31337,
    verifyOwnership: async (r) => {
      asked.push(r.subjectDid);
      const owns = r.subjectDid === "did:web:shop.test" && r.connectedWalletDid === `did:pkh:eip155:31337:${OWNER}`;
      return ok({ ok: owns, status: owns ? "verified" : "failed", subjectDid: r.subjectDid, connectedWalletDid: r.connectedWalletDid });
    },
    readAttestation: (uid) => {
      reads.push(uid);
      if (chain === "down") return Promise.resolve({ ok: false, reason: "rpc-error" });
      return Promise.resolve({ ok: true, attestation: attestations.get(uid) ?? null });
    },
  });
  return { relay, attest, reads, asked, ledger };
}

describe("privateRelay(): a user-review-response is the reviewed subject's owner's (issue 23, finding 4)", () => {
  test("the owner of the review's subject may answer it; the reviewer's did:pkh inside the response is not what is checked", async () => {
    const { relay, attest, reads, asked } = responseSetup();
    expect((await relay(response(OWNER, REVIEW_AT), { kind: "x402", address: OWNER })).ok).toBe(true);
    expect([reads, asked, attest.admitted]).toEqual([[REVIEW_AT], ["did:web:shop.test"], 1]);
  });

  test("a stranger answering the review is refused, and so is the reviewer; a stranger naming their own did:pkh as the response's subject is 400", async () => {
    const { relay, attest } = responseSetup();
    const stranger = "0x976ea74026e726554db657fa54763abd0c3a0aa9" as HexString;
    expect(await relay(response(stranger, REVIEW_AT), { kind: "x402", address: stranger })).toMatchObject({ ok: false, code: "SUBJECT_OWNERSHIP_REQUIRED" });
    expect(await relay(response(REVIEWER, REVIEW_AT), { kind: "x402", address: REVIEWER })).toMatchObject({ ok: false, code: "SUBJECT_OWNERSHIP_REQUIRED" });
    const own = await relay(response(stranger, REVIEW_AT, { subject: `did:pkh:eip155:31337:${stranger}` }), { kind: "x402", address: stranger });
    expect(own).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(attest.admitted).toBe(0);
  });

  test("the owner's response must be about the reviewer: a third party's DID (and its address as recipient), or the reviewer on another chain, is 400 before any ownership look-up or reservation", async () => {
    // Found by attack: the proven owner of shop.test answered a review of it with subject (and recipient)
    // did:web:victim.test, and the relay wrote, paid, a subject-scoped attestation about a subject its attester
    // does not own, listed under GET /v1/attestations?subject=did:web:victim.test.
    const { relay, attest, reads, asked, ledger } = responseSetup();
    const owner = { kind: "x402" as const, address: OWNER };
    for (const subject of ["did:web:victim.test", `did:pkh:eip155:1:${REVIEWER}`, `did:pkh:eip155:31337:${OWNER}`]) {
      const result = await relay(response(OWNER, REVIEW_AT, { subject }), owner);
      expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT" });
      expect((result as { message: string }).message).toContain(`did:pkh:eip155:31337:${REVIEWER}`);
    }
    // One read each (the review refUID names), no ownership asked, nothing reserved.
    expect([reads.length, asked, attest.admitted, ledger.writes.size]).toEqual([3, [], 0, 0]);
    // The reviewer's did:pkh in any letter case is the reviewer's.
    expect((await relay(response(OWNER, REVIEW_AT, { subject: `did:pkh:eip155:31337:${REVIEWER.toUpperCase().replace("0X", "0x")}` }), owner)).ok).toBe(true);
  });

  test("refUID naming nothing, another schema, a revoked review, zero, or differing from the data's refUID is 400 INVALID_INPUT naming refUID", async () => {
    const { relay, attest, reads } = responseSetup();
    const owner = { kind: "x402" as const, address: OWNER };
    for (const body of [
      response(OWNER, `0x${"77".repeat(32)}`),
      response(OWNER, LINKED_AT),
      response(OWNER, REVOKED_AT),
      response(OWNER, `0x${"00".repeat(32)}`),
      response(OWNER, REVIEW_AT, { dataRefUID: LINKED_AT }),
    ]) {
      const result = await relay(body, owner);
      expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT" });
      expect((result as { message: string }).message).toContain("refUID");
    }
    expect(attest.admitted).toBe(0);
    // Zero and a differing data field are refused without a read.
    expect(reads).toEqual([`0x${"77".repeat(32)}`, LINKED_AT, REVOKED_AT]);
  });

  test("a chain that cannot be read is 502 NETWORK_ERROR, never a refusal or an acceptance", async () => {
    const { relay, attest, asked } = responseSetup("down");
    expect(await relay(response(OWNER, REVIEW_AT), { kind: "x402", address: OWNER })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect([attest.admitted, asked]).toEqual([0, []]);
  });

  test("subjectDid must name the review's subject (the one whose owner may answer), not the reviewer", async () => {
    const { relay } = responseSetup();
    const owner = { kind: "x402" as const, address: OWNER };
    const withSubject = (subjectDid: string) => ({ ...response(OWNER, REVIEW_AT), subjectDid });
    expect((await relay(withSubject("shop.test"), owner)).ok).toBe(true);
    expect(await relay(withSubject(`did:pkh:eip155:31337:${REVIEWER}`), owner)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});

describe("privateRelay() over the real use case: what needs no chain is refused before any RPC (found by attack)", () => {
  const KEY = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
  const ME = KEY.address.toLowerCase() as HexString;
  const REVIEW_UID = `0x${"77".repeat(32)}` as HexString;
  const me = { id: "acct-free", address: ME, plan: "free" as const, createdAtMs: 0 };

  function realSetup() {
    const clock = fakeClock(Date.UTC(2026, 0, 2));
    const eas = fakeEasReader();
    const delegate = fakeDelegate();
    const rpc = { nonces: 0, balances: 0, attestations: 0 };
    const reader = { ...eas, getAttesterNonce: (attester: HexString) => (rpc.nonces++, eas.getAttesterNonce(attester)) };
    const wallet = { ...delegate, checkFunds: () => (rpc.balances++, delegate.checkFunds()) };
    const ledger = fakeWriteLedger();
    const attest = createDelegatedAttest({
      clock, eas: reader, delegate: wallet, replay: fakeReplayStore(), mainnet: false,
      subsidized: new Map([[LINKED_UID, { name: "linked-identifier", revocable: true }], [REVIEW_UID, { name: "user-review", revocable: false }]]),
    });
    const relay = createPrivateRelay({
      attest,
      ledger,
      plans: { free: { annualWrites: 1, schemas: ["linked-identifier"] }, paid: { annualWrites: 5, schemas: ["*"] } },
      subjects: fakeSubjectStore(),
      clock,
      random: fakeRandom(),
      schemaNames: new Map([[LINKED_UID, "linked-identifier"], [REVIEW_UID, "user-review"]]),
      subjectScoped: new Set(["linked-identifier"]),
      chainId: 31337,
      readAttestation: () => (rpc.attestations++, Promise.resolve({ ok: true, attestation: null })),
    });
    const calls = () => rpc.nonces + rpc.balances + rpc.attestations;
    return { relay, ledger, rpc, calls, clock, eas };
  }

  /** A signed linked-identifier (or, `schema` given, a write under that schema) about `subject`, for nonce 0 unless given. */
  async function signed(env: ReturnType<typeof realSetup>, subject: string, options: { schema?: HexString; signer?: typeof KEY; linkedId?: string; nonce?: bigint } = {}) {
    const signer = options.signer ?? KEY;
    const data = encodeSchemaData(LINKED.schema, { subject, linkedId: options.linkedId ?? "did:web:x.test", proofs: [], issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n });
    const recipient = didToAddress(subject);
    if (!data.ok || !recipient.ok) throw new Error("encoding");
    const message = {
      attester: signer.address, schema: options.schema ?? LINKED_UID, recipient: recipient.value as HexString, expirationTime: 0n,
      revocable: options.schema === REVIEW_UID ? false : true, refUID: ZERO_UID, data: data.value, value: 0n, nonce: options.nonce ?? 0n,
      deadline: BigInt(Math.floor(env.clock.nowMs() / 1000) + 600),
    } as const;
    const typedData = buildAttestTypedData(env.eas, message);
    const strings = Object.fromEntries(Object.entries(message).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]));
    return {
      attester: signer.address,
      signature: await signer.signTypedData(typedData),
      prepared: { delegatedRequest: { ...strings, easContractAddress: env.eas.easAddress, chainId: env.eas.chainId } },
    };
  }

  test("ATTESTER_MISMATCH, SCHEMA_NOT_ELIGIBLE, SUBJECT_OWNERSHIP_REQUIRED (a subject never added) and SPONSORED_WRITE_LIMIT_EXCEEDED cost no RPC call", async () => {
    const env = realSetup();
    const own = `did:pkh:eip155:31337:${ME}`;
    const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
    expect(await env.relay(await signed(env, `did:pkh:eip155:31337:${other.address.toLowerCase()}`, { signer: other }), me))
      .toMatchObject({ ok: false, code: "ATTESTER_MISMATCH", status: 403 });
    expect(await env.relay(await signed(env, own, { schema: REVIEW_UID }), me)).toMatchObject({ ok: false, code: "SCHEMA_NOT_ELIGIBLE" });
    expect(await env.relay(await signed(env, "did:web:never-added.test"), me)).toMatchObject({ ok: false, code: "SUBJECT_OWNERSHIP_REQUIRED" });
    expect(env.calls()).toBe(0);
    // The plan's one write, taken: the next is refused from a read of the ledger, before any RPC.
    const written = await signed(env, own);
    expect((await env.relay(written, me)).ok).toBe(true);
    expect([env.rpc.nonces, env.rpc.balances]).toEqual([1, 1]);
    const before = env.calls();
    env.eas.nonces.set(ME, 1n);
    expect(await env.relay(await signed(env, own, { linkedId: "did:web:y.test", nonce: 1n }), me)).toMatchObject({ ok: false, code: "SPONSORED_WRITE_LIMIT_EXCEEDED" });
    expect(env.calls()).toBe(before);
    // A signature on record still answers with its outcome first (decisions §6), quota or not.
    expect(await env.relay(written, me)).toMatchObject({ ok: false, code: "DUPLICATE" });
    expect(env.calls()).toBe(before);
    expect(env.ledger.writes.size).toBe(1);
  });
});
