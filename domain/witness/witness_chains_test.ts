import { describe, expect, test } from "bun:test";
import type { Account } from "../../ports/accounts.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver, fakeRandom, fakeWitnessWriter, fakeWriteLedger } from "../../ports/fakes/mod.ts";
import { createDiscoverControllers } from "../discovery/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { ok } from "../result.ts";
import { createControllerWitness, parseWitnessBody } from "./controller_witness.ts";

const SCHEMA_A = `0x${"aa".repeat(32)}` as HexString;
const SCHEMA_B = `0x${"bb".repeat(32)}` as HexString;
const KEY = "0x9e2aD1bcC2FD0A4dC5Ff9E8c1aB3c4D5e6F7a8B9";
const CONTROLLER = `did:pkh:eip155:1:${KEY.toLowerCase()}`;
const account: Account = { id: "acct-1", address: "0xabc", plan: "paid", createdAtMs: 0 };
const body = { subjectDid: "did:web:svc.example", controllerDid: `did:pkh:eip155:31337:${KEY}` };

/** A witness on two attestation chains (31337 the default, 31338), each chain its own writer. */
function setup(options: { otherChains?: boolean } = {}) {
  const clock = fakeClock(Date.UTC(2026, 10, 23));
  const rate = () => createRateLimiter(clock, { capacity: 100, perMinute: 100 });
  const writerA = fakeWitnessWriter();
  const writerB = fakeWitnessWriter();
  const ledger = fakeWriteLedger();
  const witness = createControllerWitness({
    discover: createDiscoverControllers({
      dns: fakeDnsResolver({ "_controllers.svc.example": { status: "found", records: [`v=1;controller=${CONTROLLER}`] } }),
      didDocuments: fakeDidDocumentFetcher(),
      serviceDnsLabel: "omatrust",
      domainRate: rate(),
    }),
    ledger,
    writer: writerA,
    witnessSchemaUid: SCHEMA_A,
    chainId: 31337,
    otherChains: options.otherChains === false ? undefined : new Map([[31338, { writer: writerB, witnessSchemaUid: SCHEMA_B }]]),
    plans: { free: { annualWrites: 3, schemas: ["controller-witness"] }, paid: { annualWrites: 100, schemas: ["*"] } },
    clock,
    random: fakeRandom(),
    userRate: rate(),
    domainRate: rate(),
  });
  return { writerA, writerB, witness, ledger };
}

const codeOf = (outcome: { result: { ok: boolean; code?: string } }) => (outcome.result.ok ? "ok" : outcome.result.code);

describe("the witness on several chains (decisions §30)", () => {
  test("chain (CAIP-2, a decimal id or a number) names the chain written on; absent, the default; chainId still reads", async () => {
    const s = setup();
    for (const chain of ["eip155:31338", "31338", 31338]) expect(codeOf(await s.witness({ ...body, chain }, ok(account)))).toBe("ok");
    expect(codeOf(await s.witness({ ...body, chainId: 31338 }, ok(account)))).toBe("ok");
    expect(s.writerB.sent).toHaveLength(4);
    expect(s.writerA.sent).toHaveLength(0);
    expect(codeOf(await s.witness(body, ok(account)))).toBe("ok");
    expect(codeOf(await s.witness({ ...body, chain: "eip155:31337" }, ok(account)))).toBe("ok");
    expect([s.writerA.sent.length, s.writerB.sent.length]).toEqual([2, 4]);
  });

  test("each sponsored write's row names the chain written on, so that chain's reconciler settles it after a crash", async () => {
    const s = setup();
    expect(codeOf(await s.witness({ ...body, chain: "eip155:31338" }, ok(account)))).toBe("ok");
    expect(codeOf(await s.witness(body, ok(account)))).toBe("ok");
    expect([...s.ledger.writes.values()].map((w) => w.chainId)).toEqual([31338, 31337]);
  });

  test("a chain not served is UNSUPPORTED_CHAIN, a malformed or contradicting one INVALID_INPUT; nothing is written", async () => {
    const s = setup();
    expect(codeOf(await s.witness({ ...body, chain: "eip155:1" }, ok(account)))).toBe("UNSUPPORTED_CHAIN");
    expect(codeOf(await s.witness({ ...body, chain: "base" }, ok(account)))).toBe("INVALID_INPUT");
    expect(codeOf(await s.witness({ ...body, chain: "31338", chainId: 31337 }, ok(account)))).toBe("INVALID_INPUT");
    const single = setup({ otherChains: false });
    const refused = await single.witness({ ...body, chain: "31338" }, ok(account));
    expect(refused.result).toMatchObject({ code: "UNSUPPORTED_CHAIN", message: "This service writes witnesses on eip155:31337 only" });
    expect([s.writerA.sent, s.writerB.sent, single.writerA.sent]).toEqual([[], [], []]);
  });

  test("parseWitnessBody() reads chain into chainId", () => {
    expect(parseWitnessBody({ ...body, chain: "eip155:8453" })).toEqual(ok({ ...body, chainId: 8453, deprecated: false }));
  });
});
