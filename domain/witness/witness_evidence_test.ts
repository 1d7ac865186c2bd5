import { describe, expect, test } from "bun:test";
import type { Account } from "../../ports/accounts.ts";
import type { DidDocumentFetch, TxtLookup } from "../../ports/discovery.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver, fakeRandom, fakeWitnessWriter, fakeWriteLedger } from "../../ports/fakes/mod.ts";
import { createDiscoverControllers } from "../discovery/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { ok } from "../result.ts";
import { createControllerWitness } from "./controller_witness.ts";

const SCHEMA = `0x${"11".repeat(32)}` as HexString;
const KEY = "0x9e2aD1bcC2FD0A4dC5Ff9E8c1aB3c4D5e6F7a8B9";
const CONTROLLER = `did:pkh:eip155:31337:${KEY.toLowerCase()}`;
const SUBJECT = "did:web:svc.example";
const URL = "https://svc.example/.well-known/did.json";
const account: Account = { id: "acct-1", address: "0xabc", plan: "free", createdAtMs: 0 };
const body = { subjectDid: SUBJECT, controllerDid: CONTROLLER };

/** The witness over hand-written fakes of the DNS and did.json ports: both TXT names answer with no record. */
function setup(didJson: DidDocumentFetch, txt: TxtLookup = { status: "nodata" }) {
  const clock = fakeClock(Date.UTC(2026, 10, 23));
  const rate = () => createRateLimiter(clock, { capacity: 100, perMinute: 100 });
  const dns = fakeDnsResolver({ "_controllers.svc.example": txt, "_omatrust.svc.example": { status: "nodata" } });
  const didDocuments = fakeDidDocumentFetcher({ "svc.example": didJson });
  const ledger = fakeWriteLedger();
  const writer = fakeWitnessWriter();
  const witness = createControllerWitness({
    discover: createDiscoverControllers({ dns, didDocuments, serviceDnsLabel: "omatrust", domainRate: rate() }),
    ledger,
    writer,
    witnessSchemaUid: SCHEMA,
    chainId: 31337,
    plans: { free: { annualWrites: 3, schemas: ["controller-witness"] }, paid: { annualWrites: 100, schemas: ["*"] } },
    clock,
    random: fakeRandom(),
    userRate: rate(),
    domainRate: rate(),
  });
  return { witness, ledger, writer, didDocuments };
}

const unavailable = (reason: Extract<DidDocumentFetch, { status: "unavailable" }>["reason"], httpStatus?: number): DidDocumentFetch =>
  httpStatus === undefined ? { status: "unavailable", url: URL, reason } : { status: "unavailable", url: URL, reason, httpStatus };

async function answer(didJson: DidDocumentFetch, txt?: TxtLookup) {
  const s = setup(didJson, txt);
  const outcome = await s.witness(body, ok(account));
  expect(s.didDocuments.fetches).toEqual(["svc.example"]);
  expect(s.writer.sent).toHaveLength(0);
  expect(await s.ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
  return outcome.result.ok ? { code: "ok", message: "" } : { code: outcome.result.code, message: outcome.result.message };
}

describe("the witness tells a source read and unusable for good from one that could not be read now", () => {
  test("a did.json that was read and cannot be used is an answer: 422 EVIDENCE_NOT_FOUND saying why, never 502", async () => {
    // Before, every one of these was 502 NETWORK_ERROR ("could not be read now; try again"): a client retried the
    // subject's own lasting fault as if it were an outage, and nothing told the subject what to fix.
    const cases: [DidDocumentFetch, string][] = [
      [unavailable("invalid-json"), "DID document is not valid JSON"],
      [unavailable("too-large"), "DID document exceeds 64 KiB"],
      [unavailable("invalid-host"), "Invalid host"],
      [unavailable("redirect"), "Redirects are not followed"],
      [{ status: "ok", url: URL, document: [1, 2] }, "DID document is not a JSON object"],
      [{ status: "ok", url: URL, document: { id: "did:web:evil.example" } }, "DID document id does not match the subject"],
      [{ status: "ok", url: URL, document: { id: SUBJECT, verificationMethod: "x" } }, "DID document verificationMethod is not an array"],
    ];
    for (const [didJson, why] of cases) {
      expect({ why, answer: await answer(didJson) }).toEqual({
        why,
        answer: {
          code: "EVIDENCE_NOT_FOUND",
          message: `Controller ${CONTROLLER} not confirmed by endpoint evidence for ${SUBJECT}. Evidence checked: ` +
            `dns-txt _controllers.svc.example: not-found, dns-txt _omatrust.svc.example: not-found, did-json ${URL}: unavailable (${why})`,
        },
      });
    }
  });

  test("a source that could not be read now stays 502 NETWORK_ERROR: a timeout, a refused connection, any HTTP status, a refused address, DNS SERVFAIL", async () => {
    const transient: DidDocumentFetch[] = [
      unavailable("timeout"),
      unavailable("network-error"),
      unavailable("tls-error"),
      unavailable("dns-failure"),
      unavailable("http-status", 500),
      unavailable("http-status", 503),
      unavailable("http-status", 429),
      unavailable("http-status", 408),
      // A WAF's 403, a CDN's 421 and an address our policy refuses can be a third party's doing, not the subject's.
      unavailable("http-status", 403),
      unavailable("http-status", 421),
      unavailable("blocked-address"),
    ];
    for (const didJson of transient) {
      const { code, message } = await answer(didJson);
      expect({ didJson, code }).toEqual({ didJson, code: "NETWORK_ERROR" });
      // The source's status is listed without a reason: it may answer on the next read.
      expect(message).toEndWith(`did-json ${URL}: unavailable`);
    }
    // A lasting did.json fault does not hide a DNS name that could not be read: that one may name the controller.
    expect((await answer(unavailable("invalid-json"), { status: "servfail" })).code).toBe("NETWORK_ERROR");
    expect((await answer(unavailable("too-large"), { status: "timeout" })).code).toBe("NETWORK_ERROR");
    // And a source that names the controller is enough, whatever the did.json is.
    const named = setup(unavailable("invalid-json"), { status: "found", records: [`v=1;controller=${CONTROLLER}`] });
    expect((await named.witness(body, ok(account))).result).toMatchObject({ ok: true, value: { method: "dns-txt" } });
  });
});

describe("every controller a source publishes counts (decisions §8)", () => {
  /** 70 distinct controllers, the one asked for last. */
  const many = Array.from({ length: 69 }, (_, i) => `did:pkh:eip155:31337:0x${(i + 1).toString(16).padStart(40, "0")}`).concat(CONTROLLER);

  test("the 70th controller= of a TXT name (70 records, one each) is confirmed: no cap answers 'not confirmed'", async () => {
    // Before, only the first 64 values of a name were read: 422 EVIDENCE_NOT_FOUND for a controller the domain published.
    const s = setup({ status: "not-found", url: URL }, { status: "found", records: many.map((c) => `v=1;controller=${c}`) });
    expect((await s.witness(body, ok(account))).result).toMatchObject({ ok: true, value: { method: "dns-txt" } });
    expect(s.writer.sent).toHaveLength(1);
  });

  test("the 70th controller= of one TXT record, and the 70th verificationMethod of a did.json, are confirmed", async () => {
    const oneRecord = setup({ status: "not-found", url: URL }, { status: "found", records: [`v=1;${many.map((c) => `controller=${c}`).join(";")}`] });
    expect((await oneRecord.witness(body, ok(account))).result).toMatchObject({ ok: true, value: { method: "dns-txt" } });
    const document = {
      id: SUBJECT,
      verificationMethod: many.map((c, i) => ({ id: `${SUBJECT}#k${i}`, blockchainAccountId: c.slice("did:pkh:".length) })),
    };
    const didJson = setup({ status: "ok", url: URL, document });
    expect((await didJson.witness(body, ok(account))).result).toMatchObject({ ok: true, value: { method: "did-json" } });
    expect(didJson.writer.sent).toHaveLength(1);
  });
});
