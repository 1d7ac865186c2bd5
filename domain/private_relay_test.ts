import { describe, expect, test } from "bun:test";
import type { HexString } from "../ports/eas.ts";
import { fakeClock, fakeRandom, fakeSubjectStore, fakeWriteLedger } from "../ports/fakes.ts";
import type { DelegatedAttest } from "./delegated_attest.ts";
import type { DelegatedRequest } from "./delegated_request.ts";
import { didToAddress } from "./did.ts";
import { createPrivateRelay } from "./private_relay.ts";
import { ok } from "./result.ts";
import { encodeSchemaData } from "./schema_data.ts";
import { findSchemaByName } from "./schemas.ts";
import type { VerifySubjectOwnership } from "./subject_ownership.ts";

const LINKED = findSchemaByName("linked-identifier")!;
const LINKED_UID = `0x${"11".repeat(32)}` as HexString;
const PAYER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc" as HexString;

/** A delegated attestation whose signature "verified": the fake hands the request straight to the relay's admit. */
function fakeAttest(): DelegatedAttest & { admitted: number } {
  const attest = (async (body: unknown, caller?: Parameters<DelegatedAttest>[1]) => {
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
  const verifyOwnership: VerifySubjectOwnership = async (r) => {
    asked.push(r.subjectDid);
    if (proof === "network") return { ok: false, code: "NETWORK_ERROR", message: "down" } as never;
    return ok({ ok: proof === "verified", status: proof, subjectDid: r.subjectDid, connectedWalletDid: r.connectedWalletDid });
  };
  const relay = createPrivateRelay({
    attest,
    ledger,
    plans: { free: { annualWrites: 0, schemas: [] }, paid: { annualWrites: 0, schemas: ["*"] } },
    subjects: fakeSubjectStore(),
    clock: fakeClock(Date.UTC(2026, 0, 2)),
    random: fakeRandom(),
    schemaNames: new Map([[LINKED_UID, "linked-identifier"]]),
    subjectScoped: new Set(["linked-identifier"]),
    chainId: 31337,
    verifyOwnership,
  });
  return { relay, ledger, attest, asked };
}

const payer = { kind: "x402" as const, address: PAYER };

describe("privateRelay() paid with x402 (decisions §13)", () => {
  test("the payer's own did:pkh needs no proof; the write is counted under the payer with no plan limit", async () => {
    const { relay, ledger, asked } = setup("failed");
    const result = await relay(request(PAYER, `did:pkh:eip155:31337:${PAYER}`), payer);
    expect(result.ok).toBe(true);
    expect(asked).toEqual([]);
    // Reserved although the paid plan allows no writes at all: a paid call takes nothing from a plan.
    expect(await ledger.usage("x402:" + PAYER, 2026)).toEqual({ used: 0, reserved: 1 });
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
