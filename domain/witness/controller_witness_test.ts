import { describe, expect, test } from "bun:test";
import { decodeAbiParameters, parseAbiParameters } from "viem";
import type { Account } from "../../ports/accounts.ts";
import {
  fakeClock,
  fakeDidDocumentFetcher,
  fakeDnsResolver,
  fakeRandom,
  fakeWitnessWriter,
  fakeWriteLedger,
} from "../../ports/fakes/mod.ts";
import type { HexString } from "../../ports/eas.ts";
import { createDiscoverControllers, jwkThumbprint } from "../discovery/mod.ts";
import {
  createControllerWitness,
  type ControllerWitnessDeps,
  LEGACY_WITNESS_DEPRECATION_HEADER,
  parseWitnessBody,
} from "./controller_witness.ts";
import { didToAddress, jwkToDidJwk } from "../did/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { fail, ok } from "../result.ts";

const SCHEMA = "0x1111111111111111111111111111111111111111111111111111111111111111" as HexString;
const KEY = "0x9e2aD1bcC2FD0A4dC5Ff9E8c1aB3c4D5e6F7a8B9";
const CONTROLLER = `did:pkh:eip155:1:${KEY.toLowerCase()}`;
const SUBJECT = "did:web:svc.example";
const account: Account = { id: "acct-1", address: "0xabc", plan: "free", createdAtMs: 0 };
const signedIn = ok(account);

function setup(options: {
  annualWrites?: number;
  schemas?: string[];
  witnessSchemaUid?: HexString | undefined;
  noWriter?: boolean;
  userPerMinute?: number;
  domainPerMinute?: number;
  discoveryPerMinute?: number;
} = {}) {
  const clock = fakeClock(Date.UTC(2026, 10, 23));
  const dns = fakeDnsResolver({ "_controllers.svc.example": { status: "found", records: [`v=1;controller=${CONTROLLER}`] } });
  const didDocuments = fakeDidDocumentFetcher();
  const ledger = fakeWriteLedger();
  const writer = fakeWitnessWriter();
  const deps: ControllerWitnessDeps = {
    discover: createDiscoverControllers({
      dns,
      didDocuments,
      serviceDnsLabel: "omatrust",
      domainRate: createRateLimiter(clock, { capacity: options.discoveryPerMinute ?? 100, perMinute: options.discoveryPerMinute ?? 100 }),
    }),
    ledger,
    writer: options.noWriter ? undefined : writer,
    witnessSchemaUid: "witnessSchemaUid" in options ? options.witnessSchemaUid : SCHEMA,
    chainId: 31337,
    plans: {
      free: { annualWrites: options.annualWrites ?? 3, schemas: options.schemas ?? ["controller-witness"] },
      paid: { annualWrites: 100, schemas: ["*"] },
    },
    clock,
    random: fakeRandom(),
    userRate: createRateLimiter(clock, { capacity: options.userPerMinute ?? 100, perMinute: options.userPerMinute ?? 100 }),
    domainRate: createRateLimiter(clock, { capacity: options.domainPerMinute ?? 100, perMinute: options.domainPerMinute ?? 100 }),
  };
  return { clock, dns, didDocuments, ledger, writer, deps, witness: createControllerWitness(deps) };
}

const body = { subjectDid: SUBJECT, controllerDid: `did:pkh:eip155:31337:${KEY}` };
const codeOf = (outcome: { result: { ok: boolean; code?: string } }) => outcome.result.ok ? "ok" : outcome.result.code;

describe("parseWitnessBody()", () => {
  test("reads the current and the legacy body, and flags the legacy one", () => {
    expect(parseWitnessBody(body)).toEqual(ok({ ...body, chainId: undefined, deprecated: false }));
    const legacy = parseWitnessBody({
      subject: SUBJECT,
      controller: CONTROLLER,
      attestationUid: "0x01",
      easContract: "0x02",
      schemaUid: "0x03",
      method: "dns-txt",
      chainId: 31337,
    });
    expect(legacy).toEqual(ok({ subjectDid: SUBJECT, controllerDid: CONTROLLER, chainId: 31337, deprecated: true }));
  });

  test("names the field that is missing or of the wrong type", () => {
    expect(parseWitnessBody({ controllerDid: CONTROLLER })).toEqual(fail("INVALID_INPUT", "subjectDid or subject is required"));
    expect(parseWitnessBody({ subjectDid: SUBJECT })).toEqual(fail("INVALID_INPUT", "controllerDid or controller is required"));
    expect(parseWitnessBody({ ...body, chainId: "31337" })).toEqual(fail("INVALID_INPUT", "chainId must be a positive integer"));
    expect(parseWitnessBody({ ...body, subjectDid: "" })).toEqual(fail("INVALID_INPUT", "subjectDid must not be empty"));
    expect(parseWitnessBody({ ...body, method: 5 })).toEqual(fail("INVALID_INPUT", "method must be a string"));
    expect(parseWitnessBody("text").ok).toBe(false);
  });
});

describe("createControllerWitness()", () => {
  test("writes a non-revocable witness to the subject's DID address and charges one write", async () => {
    const s = setup();
    const outcome = await s.witness(body, signedIn);
    expect(outcome.result.ok).toBe(true);
    if (!outcome.result.ok) return;
    expect(outcome.result.value).toMatchObject({ success: true, method: "dns-txt", observedAt: Date.UTC(2026, 10, 23) / 1000 });
    expect(outcome.deprecated).toBe(false);
    expect(outcome.deprecation).toBeUndefined();
    const [call] = s.writer.sent;
    expect(call!.schema).toBe(SCHEMA);
    expect(call!.data).toMatchObject({ recipient: didToAddress(SUBJECT).ok && (didToAddress(SUBJECT) as { value: string }).value, revocable: false, expirationTime: 0n, value: 0n });
    const [subject, controller, method, observedAt] = decodeAbiParameters(
      parseAbiParameters("string subject, string controller, string method, uint256 observedAt"),
      call!.data.data,
    );
    expect([subject, controller, method, observedAt]).toEqual([SUBJECT, `did:pkh:eip155:31337:${KEY.toLowerCase()}`, "dns-txt", BigInt(Date.UTC(2026, 10, 23) / 1000)]);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
  });

  test("checks in the contract's order: body, session, quota, schema, plan, DIDs, evidence, wallet", async () => {
    const cases: [ReturnType<typeof setup>, unknown, Parameters<ReturnType<typeof setup>["witness"]>[1], string][] = [
      [setup(), { subjectDid: SUBJECT }, fail("UNAUTHENTICATED", "Unauthenticated"), "INVALID_INPUT"],
      [setup(), body, fail("UNAUTHENTICATED", "Unauthenticated"), "UNAUTHENTICATED"],
      [setup({ annualWrites: 0, witnessSchemaUid: undefined }), body, signedIn, "SPONSORED_WRITE_LIMIT_EXCEEDED"],
      [setup({ witnessSchemaUid: undefined, schemas: [] }), body, signedIn, "SCHEMA_NOT_DEPLOYED"],
      [setup({ schemas: ["user-review"] }), { ...body, subjectDid: "did:web:" }, signedIn, "SCHEMA_NOT_ELIGIBLE"],
      [setup(), { ...body, subjectDid: "did:web:" }, signedIn, "INVALID_DID"],
      [setup(), { ...body, subjectDid: "did:web:127.0.0.1" }, signedIn, "INVALID_DID"],
      [setup(), { ...body, subjectDid: "did:web:1.2.3" }, signedIn, "INVALID_DID"],
      [setup(), { ...body, controllerDid: "did:pkh:broken" }, signedIn, "INVALID_DID"],
      [setup(), { ...body, controllerDid: "svc.example" }, signedIn, "INVALID_DID"],
      [setup(), { ...body, subjectDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001" }, signedIn, "UNSUPPORTED_SUBJECT_TYPE"],
      [setup(), { ...body, chainId: 1 }, signedIn, "UNSUPPORTED_CHAIN"],
      [setup(), { ...body, controllerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000002" }, signedIn, "EVIDENCE_NOT_FOUND"],
      [setup({ noWriter: true }), body, signedIn, "SERVER_ERROR"],
    ];
    for (const [s, input, session, code] of cases) {
      const outcome = await s.witness(input, session);
      expect({ input, code: codeOf(outcome) }).toEqual({ input, code });
      // Nothing was charged, nothing was sent.
      expect(s.writer.sent).toHaveLength(0);
      expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
    }
  });

  test("no lookup is made for a request refused before the evidence step", async () => {
    const s = setup({ annualWrites: 0 });
    await s.witness(body, signedIn);
    const t = setup();
    await t.witness({ ...body, subjectDid: "did:key:z6Mk" }, signedIn);
    expect([...s.dns.lookups, ...t.dns.lookups, ...s.didDocuments.fetches, ...t.didDocuments.fetches]).toEqual([]);
  });

  test("a did:web whose host is an IP address is INVALID_DID before any lookup and spends no domain turn (issue 33)", async () => {
    const s = setup({ domainPerMinute: 1 });
    for (const subjectDid of ["did:web:127.0.0.1", "did:web:0", "did:web:2130706433"]) {
      expect(codeOf(await s.witness({ ...body, subjectDid }, signedIn))).toBe("INVALID_DID");
    }
    expect([...s.dns.lookups, ...s.didDocuments.fetches]).toEqual([]);
    expect(s.writer.sent).toHaveLength(0);
  });

  test("EVIDENCE_NOT_FOUND says which sources were checked and what they said", async () => {
    const s = setup();
    s.dns.txt["_omatrust.svc.example"] = { status: "nxdomain" };
    const outcome = await s.witness({ ...body, controllerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000002" }, signedIn);
    expect(outcome.result.ok).toBe(false);
    if (outcome.result.ok) return;
    expect(outcome.result.code).toBe("EVIDENCE_NOT_FOUND");
    expect(outcome.result.message).toBe(
      "Controller did:pkh:eip155:1:0x0000000000000000000000000000000000000002 not confirmed by endpoint evidence for did:web:svc.example. " +
        "Evidence checked: dns-txt _controllers.svc.example: found, dns-txt _omatrust.svc.example: not-found, " +
        "did-json https://svc.example/.well-known/did.json: not-found",
    );
  });

  test("a source that could not be read, and none naming the controller: 502 NETWORK_ERROR, never 'not confirmed'; nothing reserved or sent", async () => {
    const other = "did:pkh:eip155:1:0x0000000000000000000000000000000000000002";
    // Every source failing (DNS SERVFAIL, did.json not answering). Before: 422 EVIDENCE_NOT_FOUND, a definitive answer
    // the Idempotency-Key kept for 24 hours.
    const down = setup();
    down.dns.txt["_controllers.svc.example"] = { status: "servfail" };
    down.dns.txt["_omatrust.svc.example"] = { status: "servfail" };
    down.didDocuments.answers["svc.example"] = { status: "unavailable", reason: "http-status", httpStatus: 500, url: "https://svc.example/.well-known/did.json" };
    const outcome = await down.witness(body, signedIn);
    expect(codeOf(outcome)).toBe("NETWORK_ERROR");
    if (outcome.result.ok) return;
    expect(outcome.result.message).toBe(
      `Controller did:pkh:eip155:31337:${KEY.toLowerCase()} not confirmed for did:web:svc.example, and endpoint evidence could not be read now; ` +
        "try again. Evidence checked: dns-txt _controllers.svc.example: unavailable, dns-txt _omatrust.svc.example: unavailable, " +
        "did-json https://svc.example/.well-known/did.json: unavailable",
    );
    expect(down.writer.sent).toHaveLength(0);
    expect(await down.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
    // One source answered without the controller, another could not be read: that one may name it.
    const half = setup();
    half.dns.txt["_omatrust.svc.example"] = { status: "servfail" };
    expect(codeOf(await half.witness({ ...body, controllerDid: other }, signedIn))).toBe("NETWORK_ERROR");
    // A source that confirms it is enough, whatever another said.
    expect(codeOf(await half.witness(body, signedIn))).toBe("ok");
  });

  test("a controller in did.json confirms with method did-json, matched across chain ids", async () => {
    const s = setup();
    s.dns.txt["_controllers.svc.example"] = { status: "nxdomain" };
    s.didDocuments.answers["svc.example"] = {
      status: "ok",
      url: "https://svc.example/.well-known/did.json",
      document: { id: SUBJECT, verificationMethod: [{ id: `${SUBJECT}#k`, blockchainAccountId: `eip155:1:${KEY}` }] },
    };
    const outcome = await s.witness(body, signedIn);
    expect(outcome.result.ok && outcome.result.value.method).toBe("did-json");
  });

  test("the quota: the last write goes to exactly one of ten parallel requests", async () => {
    const s = setup({ annualWrites: 1 });
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => s.witness(body, signedIn)));
    expect(outcomes.map(codeOf).sort()).toEqual(["SPONSORED_WRITE_LIMIT_EXCEEDED", ...Array(8).fill("SPONSORED_WRITE_LIMIT_EXCEEDED"), "ok"].sort());
    expect(s.writer.sent).toHaveLength(1);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
  });

  test("a witness signer that gives no signature: 503 SIGNER_UNAVAILABLE with Retry-After, the write given back (decisions §27)", async () => {
    const s = setup();
    s.writer.submission = { ok: false, reason: "signer-unavailable" };
    expect((await s.witness(body, signedIn)).result).toMatchObject({ ok: false, code: "SIGNER_UNAVAILABLE", unavailable: true, retryAfterSeconds: 5 });
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
    s.writer.submission = undefined;
    expect((await s.witness(body, signedIn)).result.ok).toBe(true);
  });

  test("the witness wallet's nonce or fees not read before signing: 500 RPC_ERROR, nothing sent, the write given back", async () => {
    // It was 500 SUBMISSION_FAILED ("the chain refused the witness transaction"), kept under an Idempotency-Key.
    const s = setup();
    s.writer.submission = { ok: false, reason: "rpc-error" };
    expect((await s.witness(body, signedIn)).result).toEqual({ ok: false, code: "RPC_ERROR", message: "Witness submission failed: the chain did not answer" });
    expect(s.writer.sent).toHaveLength(0);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
    s.writer.submission = undefined;
    expect((await s.witness(body, signedIn)).result.ok).toBe(true);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
  });

  test("a failed submission gives the write back; an unknown outcome keeps it reserved (decisions §15)", async () => {
    const reverted = setup();
    reverted.writer.submission = { ok: false, reason: "reverted", txHash: `0x${"e".repeat(64)}`, blockNumber: 5n };
    expect(codeOf(await reverted.witness(body, signedIn))).toBe("SERVER_ERROR");
    expect(await reverted.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });

    const unsent = setup();
    unsent.writer.submission = { ok: false, reason: "not-broadcast" };
    expect(codeOf(await unsent.witness(body, signedIn))).toBe("SUBMISSION_FAILED");
    expect(await unsent.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });

    const refused = setup();
    refused.writer.simulation = { ok: false, reason: "insufficient-funds" };
    const cannotPay = (await refused.witness(body, signedIn)).result;
    expect(cannotPay).toMatchObject({ ok: false, code: "SUBMISSION_FAILED", unavailable: true });
    expect(refused.writer.sent).toHaveLength(0);
    expect(await refused.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });

    const lost = setup();
    lost.writer.submission = { ok: false, reason: "unknown-outcome", txHash: `0x${"f".repeat(64)}` };
    const unknown = (await lost.witness(body, signedIn)).result;
    expect(unknown).toMatchObject({ ok: false, code: "OUTCOME_UNKNOWN", details: `0x${"f".repeat(64)}` });
    const [write] = lost.ledger.writes.values();
    expect(write).toMatchObject({ state: "broadcast", txHash: `0x${"c".repeat(63)}1` });
    expect(write?.tx?.raw).toBe(`0x02${"c".repeat(63)}1`);
  });

  test("an unfunded witness wallet is refused before anything is reserved", async () => {
    const s = setup();
    s.writer.funds = "low";
    expect((await s.witness(body, signedIn)).result).toMatchObject({ ok: false, code: "SUBMISSION_FAILED", unavailable: true });
    expect(s.ledger.writes.size).toBe(0);
    expect(s.writer.simulated).toHaveLength(0);
  });

  test("a chain that does not answer before anything is sent is 500 RPC_ERROR, the write given back (a retry under its key runs again)", async () => {
    const silent = setup();
    silent.writer.funds = "rpc-error";
    expect((await silent.witness(body, signedIn)).result).toMatchObject({ ok: false, code: "RPC_ERROR", message: "Witness submission failed: the chain did not answer" });
    expect(silent.ledger.writes.size).toBe(0);
    const simulation = setup();
    simulation.writer.simulation = { ok: false, reason: "rpc-error" };
    expect(codeOf(await simulation.witness(body, signedIn))).toBe("RPC_ERROR");
    expect(simulation.writer.sent).toHaveLength(0);
    expect(await simulation.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
  });

  test("requests without evidence never hold a reservation, so they cannot make others hit the limit", async () => {
    const s = setup({ annualWrites: 1 });
    let reservedDuringLookups = 0;
    const discover = s.deps.discover;
    const withoutEvidence = { ...body, controllerDid: "did:pkh:eip155:1:0x000000000000000000000000000000000000dead" };
    const witness = createControllerWitness({
      ...s.deps,
      discover: async (subject, options) => {
        reservedDuringLookups = Math.max(reservedDuringLookups, (await s.ledger.usage(account.id, 2026)).reserved);
        return await discover(subject, options);
      },
    });
    const outcomes = await Promise.all([
      ...Array.from({ length: 14 }, () => witness(withoutEvidence, signedIn)),
      witness(body, signedIn),
    ]);
    expect(outcomes.map(codeOf).sort()).toEqual([...Array(14).fill("EVIDENCE_NOT_FOUND"), "ok"].sort());
    expect(reservedDuringLookups).toBe(0);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
  });

  test("the transaction hash is stored before broadcast", async () => {
    const s = setup();
    let seen: unknown;
    s.writer.duringSend = async () => {
      seen = [...s.ledger.writes.values()].map((w) => [w.state, w.txHash]);
    };
    await s.witness(body, signedIn);
    expect(seen).toEqual([["broadcast", `0x${"c".repeat(63)}1`]]);
    const [write] = s.ledger.writes.values();
    expect(write).toMatchObject({ state: "committed", tx: { nonce: 0, txHash: `0x${"c".repeat(63)}1` } });
  });

  test("per-user and per-domain rate limits answer RATE_LIMITED with Retry-After, and the domain limit precedes any lookup", async () => {
    const s = setup({ userPerMinute: 2 });
    expect((await Promise.all([1, 2, 3].map(() => s.witness(body, signedIn)))).map(codeOf)).toEqual(["ok", "ok", "RATE_LIMITED"]);

    const d = setup({ domainPerMinute: 1 });
    const other: Account = { ...account, id: "acct-2" };
    expect(codeOf(await d.witness(body, signedIn))).toBe("ok");
    const lookups = d.dns.lookups.length;
    const limited = await d.witness(body, ok(other));
    expect(codeOf(limited)).toBe("RATE_LIMITED");
    expect(!limited.result.ok && limited.result.retryAfterSeconds).toBeGreaterThan(0);
    expect(d.dns.lookups.length).toBe(lookups);
    expect(await d.ledger.usage(other.id, 2026)).toEqual({ used: 0, reserved: 0 });
  });
});

describe("createControllerWitness() rate limits", () => {
  test("the per-domain limit is keyed on the registrable domain: subdomains of one victim share it", async () => {
    const s = setup({ domainPerMinute: 2 });
    const victim = (sub: string) => ({ ...body, subjectDid: `did:web:${sub}.victim.example` });
    const codes = [];
    for (const sub of ["a", "b", "c"]) codes.push(codeOf(await s.witness(victim(sub), signedIn)));
    expect(codes).toEqual(["EVIDENCE_NOT_FOUND", "EVIDENCE_NOT_FOUND", "RATE_LIMITED"]);
    // Two requests looked up two TXT names each; the third nothing.
    expect(s.dns.lookups.filter((l) => l.endsWith("victim.example"))).toHaveLength(4);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
  });

  test("a domain whose discovery budget the read-only views spent is 429 for the witness, before any lookup", async () => {
    const s = setup({ discoveryPerMinute: 1 });
    const other: Account = { ...account, id: "acct-2" };
    expect(codeOf(await s.witness(body, signedIn))).toBe("ok");
    const lookups = s.dns.lookups.length;
    const limited = await s.witness(body, ok(other));
    expect(codeOf(limited)).toBe("RATE_LIMITED");
    expect(!limited.result.ok && limited.result.message).toBe("Lookups for svc.example are rate limited; try again later");
    expect(!limited.result.ok && limited.result.retryAfterSeconds).toBe(60);
    expect(s.dns.lookups.length).toBe(lookups);
    expect(await s.ledger.usage(other.id, 2026)).toEqual({ used: 0, reserved: 0 });
  });
});

describe("legacy body deprecation", () => {
  test("a legacy body is answered with an RFC 9745 Deprecation value: @ and the Unix seconds of 2026-05-08", async () => {
    expect(LEGACY_WITNESS_DEPRECATION_HEADER).toBe("@1778198400");
    const s = setup();
    const outcome = await s.witness({ subject: SUBJECT, controller: CONTROLLER, method: "dns-txt" }, signedIn);
    expect(codeOf(outcome)).toBe("ok");
    expect([outcome.deprecated, outcome.deprecation]).toEqual([true, "@1778198400"]);
  });
});

describe("controllerWitness() paid with x402 (decisions §13)", () => {
  test("a paying agent without a session gets the witness; it is counted under the payer, never against a plan's quota", async () => {
    const { witness, ledger } = setup({ annualWrites: 0, schemas: [] });
    const unauthenticated = fail("UNAUTHENTICATED" as const, "Unauthenticated");
    expect(codeOf(await witness(body, unauthenticated))).toBe("UNAUTHENTICATED");
    const paid = await witness(body, unauthenticated, { paidBy: "0xPAYER" });
    expect(codeOf(paid)).toBe("ok");
    expect((await ledger.usage("x402:0xpayer", 2026)).used).toBe(1);
    expect((await ledger.usage(account.id, 2026)).used).toBe(0);
  });

  test("a paid witness runs the same evidence checks: no evidence, no write", async () => {
    const { witness, writer } = setup();
    const outcome = await witness({ ...body, controllerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001" }, signedIn, { paidBy: "0xpayer" });
    expect(codeOf(outcome)).toBe("EVIDENCE_NOT_FOUND");
    expect(writer.sent).toHaveLength(0);
  });
});

describe("createControllerWitness() with did:jwk controllers (decisions §25)", () => {
  test("a did:jwk named only by its jkt=S256: thumbprint in DNS TXT is witnessed through dns-txt", async () => {
    const jwk = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
    const didJwk = (jwkToDidJwk(jwk) as { value: string }).value;
    const s = setup();
    s.dns.txt["_omatrust.svc.example"] = { status: "found", records: [`v=1;jkt=S256:${jwkThumbprint(jwk)}`] };
    const outcome = await s.witness({ subjectDid: SUBJECT, controllerDid: didJwk }, signedIn);
    expect(outcome.result).toMatchObject({ ok: true, value: { method: "dns-txt" } });
    // Another key (its coordinates swapped) is not named by that thumbprint.
    const other = (jwkToDidJwk({ ...jwk, x: jwk.y, y: jwk.x }) as { value: string }).value;
    expect(codeOf(await s.witness({ subjectDid: SUBJECT, controllerDid: other }, signedIn))).toBe("EVIDENCE_NOT_FOUND");
  });
});

describe("createControllerWitness(): the witness wallet's shared nonce", () => {
  test("the witness wallet's shared nonce not taken (several instances, the storage failed): 500 INTERNAL_ERROR, nothing sent, the write given back; the same request then goes through", async () => {
    // It was 500 SUBMISSION_FAILED ("the chain refused the witness transaction"), which the chain had not been asked.
    const s = setup();
    s.writer.submission = { ok: false, reason: "nonce-unavailable" };
    const result = (await s.witness(body, signedIn)).result;
    expect(result).toMatchObject({ ok: false, code: "INTERNAL_ERROR" });
    expect(result.ok ? "" : result.message).toContain("nothing was written or charged");
    expect(s.writer.sent).toHaveLength(0);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
    s.writer.submission = undefined;
    expect((await s.witness(body, signedIn)).result.ok).toBe(true);
    expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
  });
});

describe("createControllerWitness(): the quota held by a write that may land (found in review)", () => {
  test("a write given back on a cause that proves nothing still holds the quota at the check before any lookup", async () => {
    const s = setup({ annualWrites: 1 });
    const now = s.clock.nowMs();
    expect(await s.ledger.reserve({ id: "w0", accountId: account.id, year: 2026, fingerprint: "w0", createdAtMs: now }, 1)).toBe(true);
    await s.ledger.release("w0", now, "silence");
    // Refused before the DIDs are read (the check's order), not told the DID is wrong as though the quota were free.
    expect(codeOf(await s.witness({ ...body, subjectDid: "did:web:" }, signedIn))).toBe("SPONSORED_WRITE_LIMIT_EXCEEDED");
  });
});
