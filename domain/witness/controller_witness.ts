/**
 * The controller witness: when a did:web subject publishes a controller key (DNS TXT or did.json),
 * the service's witness wallet writes a non-revocable `controller-witness` attestation, charged to
 * the signed-in user's sponsored-write quota.
 *
 * Check order (decisions §8, §15): body → session (401) → per-user rate → chain → quota, read without
 * reserving (403) → schema deployed (500) → plan eligibility (403) → DIDs (400) → per-domain rate (429,
 * before any outbound lookup) → evidence (422) → witness wallet (500) → its balance (503) → reserve one
 * write atomically (403 when a parallel request took the last one) → simulate → sign (the transaction is
 * stored) → send → commit. Requests that fail a check never hold a reservation, so they cannot make others
 * fail. A write whose transaction was never signed or provably never sent is given back; one that may have
 * reached the chain stays reserved until the reconciler ({@link createSubmissionReconciler}) settles it.
 */
import type { Account, SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import { SIGNER_RETRY_AFTER_SECONDS } from "../../ports/signer.ts";
import type { HexString } from "../../ports/eas.ts";
import type { Random } from "../../ports/random.ts";
import type { WitnessWriter } from "../../ports/witness.ts";
import { canonicalControllerKey, type DiscoverControllers, type EvidenceItem, liveControllerEvidence } from "../discovery/mod.ts";
import { didToAddress, didWebLocation, normalizeSubjectDid } from "../did/mod.ts";
import { type PlanPolicy, planAllowsSchema, quotaYear } from "../accounts/mod.ts";
import { type RateLimit, registrableDomain } from "../rate_limit.ts";
import { fail, type Fail, ok, type Ok, type Result } from "../result.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { payerLedgerId } from "../payments/mod.ts";
import { findSchemaByName } from "../schemas.ts";

/** Error codes of the witness endpoint. */
export type WitnessCode =
  | "SUBMISSION_FAILED"
  | "OUTCOME_UNKNOWN"
  | "INVALID_INPUT"
  | "INVALID_DID"
  | "UNSUPPORTED_CHAIN"
  | "UNSUPPORTED_SUBJECT_TYPE"
  | "UNAUTHENTICATED"
  | "SPONSORED_WRITE_LIMIT_EXCEEDED"
  | "SCHEMA_NOT_ELIGIBLE"
  | "RATE_LIMITED"
  | "EVIDENCE_NOT_FOUND"
  | "SCHEMA_NOT_DEPLOYED"
  | "SERVER_ERROR"
  | "SIGNER_UNAVAILABLE";

/**
 * A failure; `retryAfterSeconds` is set on RATE_LIMITED, `unavailable` on a SUBMISSION_FAILED that the
 * service's own state causes (its wallet cannot pay), answered 503.
 */
export type WitnessFailure = Fail<WitnessCode> & { readonly retryAfterSeconds?: number; readonly unavailable?: true };

/** The answer of a written witness. */
export type WitnessWritten = {
  success: true;
  uid: HexString | null;
  txHash: HexString;
  blockNumber: number;
  observedAt: number;
  method: "dns-txt" | "did-json";
};

/** A written witness or why not. */
export type WitnessResult = Ok<WitnessWritten> | WitnessFailure;

/**
 * When the legacy request body (`subject`, `controller`, `attestationUid`, `easContract`, `schemaUid`,
 * `method`) was deprecated: 2026-05-08T00:00:00Z, the backend release ("Upgrade to alpha.11") whose
 * witness takes `{subjectDid, controllerDid}` (reference §6.4, §6.6).
 */
export const LEGACY_WITNESS_BODY_DEPRECATED_AT = Date.UTC(2026, 4, 8) / 1000;

/** The `Deprecation` header value (RFC 9745: `@` and Unix seconds) answering a legacy body. */
export const LEGACY_WITNESS_DEPRECATION_HEADER = `@${LEGACY_WITNESS_BODY_DEPRECATED_AT}`;

/**
 * The outcome of a witness request; `deprecated` when the legacy body was used, and then
 * `deprecation`, the value of the `Deprecation` response header ({@link LEGACY_WITNESS_DEPRECATION_HEADER}).
 */
export type WitnessOutcome = {
  readonly result: WitnessResult;
  readonly deprecated: boolean;
  readonly deprecation: string | undefined;
};

/** What the witness needs. */
export type ControllerWitnessDeps = {
  readonly discover: DiscoverControllers;
  readonly ledger: SponsoredWriteLedger;
  /** The service's witness wallet; absent when no key is configured. */
  readonly writer: WitnessWriter | undefined;
  /** The active chain's `controller-witness` schema UID from the trust anchors, if deployed. */
  readonly witnessSchemaUid: HexString | undefined;
  readonly chainId: number;
  readonly plans: PlanPolicy;
  readonly clock: Clock;
  readonly random: Random;
  /** Witness requests per account (or paying agent); the service counts it in the storage, for every instance. */
  readonly userRate: RateLimit;
  /** Witness requests per registrable domain; counted likewise (decisions §21). */
  readonly domainRate: RateLimit;
};

const WITNESS = findSchemaByName("controller-witness")!;
/** A paid witness is one write bought outright: any schema, no annual limit. */
const PAID_CALL_TERMS = { annualWrites: Number.MAX_SAFE_INTEGER, schemas: ["*"] } as const;
const ZERO_UID = `0x${"0".repeat(64)}` as HexString;
const MAX_FIELD = 2_048;
const LEGACY_FIELDS = ["subject", "controller", "attestationUid", "easContract", "schemaUid", "method"] as const;

type ParsedBody = { subjectDid: string; controllerDid: string; chainId: number | undefined; deprecated: boolean };

/** Reads the current or the legacy body (decisions §8); the legacy extras are checked for type and ignored. */
export function parseWitnessBody(body: unknown): Result<ParsedBody, "INVALID_INPUT"> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fail("INVALID_INPUT", "Body must be a JSON object");
  const input = body as Record<string, unknown>;
  for (const name of ["subjectDid", "controllerDid", ...LEGACY_FIELDS]) {
    const value = input[name];
    if (value === undefined) continue;
    if (typeof value !== "string") return fail("INVALID_INPUT", `${name} must be a string`);
    if (value.length === 0) return fail("INVALID_INPUT", `${name} must not be empty`);
    if (value.length > MAX_FIELD) return fail("INVALID_INPUT", `${name} is too long`);
  }
  const chainId = input.chainId;
  if (chainId !== undefined && (typeof chainId !== "number" || !Number.isSafeInteger(chainId) || chainId <= 0)) {
    return fail("INVALID_INPUT", "chainId must be a positive integer");
  }
  const subjectDid = (input.subjectDid ?? input.subject) as string | undefined;
  const controllerDid = (input.controllerDid ?? input.controller) as string | undefined;
  if (subjectDid === undefined) return fail("INVALID_INPUT", "subjectDid or subject is required");
  if (controllerDid === undefined) return fail("INVALID_INPUT", "controllerDid or controller is required");
  const deprecated = LEGACY_FIELDS.some((name) => input[name] !== undefined);
  return ok({ subjectDid, controllerDid, chainId: chainId as number | undefined, deprecated });
}

/** "dns-txt _controllers.example.com: found, did-json https://…: not-found" */
function describeEvidence(evidence: readonly EvidenceItem[]): string {
  return evidence.map((e) => `${e.kind} ${e.location}: ${e.status}`).join(", ");
}

/** Builds the witness use case: `(body, session)` → outcome. */
export function createControllerWitness(deps: ControllerWitnessDeps) {
  const { ledger, clock } = deps;
  const randomId = () => Array.from(deps.random.bytes(16), (b) => b.toString(16).padStart(2, "0")).join("");
  const rateLimited = (retryAfterSeconds: number, message: string): WitnessFailure => ({
    ...fail("RATE_LIMITED" as const, message),
    retryAfterSeconds,
  });
  const cannotWrite = (funds: "low" | "rpc-error"): WitnessFailure =>
    funds === "low"
      ? { ...fail("SUBMISSION_FAILED" as const, "The witness wallet cannot pay for gas right now; nothing was charged"), unavailable: true }
      : fail("SERVER_ERROR", "Witness submission failed: the chain did not answer");

  async function run(
    session: Result<Account, "UNAUTHENTICATED">,
    parsed: Result<ParsedBody, "INVALID_INPUT">,
    paidBy: string | undefined,
  ): Promise<WitnessResult> {
    if (!parsed.ok) return parsed;
    // A paying agent (decisions §13) bought this one write: no plan, no quota, but the same rates and checks.
    if (paidBy === undefined && !session.ok) return session;
    const account = paidBy === undefined ? (session as Ok<Account>).value : { id: payerLedgerId(paidBy), plan: "paid" as const };
    const userTurn = await deps.userRate.take(account.id);
    if (!userTurn.allowed) return rateLimited(userTurn.retryAfterSeconds, "Too many witness requests; try again later");
    const { subjectDid, controllerDid, chainId } = parsed.value;
    if (chainId !== undefined && chainId !== deps.chainId) {
      return fail("UNSUPPORTED_CHAIN", `This service writes witnesses on eip155:${deps.chainId} only`);
    }

    const terms = paidBy === undefined ? deps.plans[account.plan] : PAID_CALL_TERMS;
    const nowMs = clock.nowMs();
    const year = quotaYear(nowMs);
    const usage = await ledger.usage(account.id, year);
    const limitExceeded = fail("SPONSORED_WRITE_LIMIT_EXCEEDED" as const, "Sponsored write limit exceeded");
    if (usage.used + usage.reserved >= terms.annualWrites) return limitExceeded;
    const schemaUid = deps.witnessSchemaUid;
    if (schemaUid === undefined) return fail("SCHEMA_NOT_DEPLOYED", "Controller witness schema not deployed on this chain");
    if (!planAllowsSchema(terms, WITNESS.name, schemaUid)) {
      return fail("SCHEMA_NOT_ELIGIBLE", "Controller witness schema not eligible for your plan");
    }

    const subject = normalizeSubjectDid(subjectDid);
    if (!subject.ok) return fail("INVALID_DID", "Invalid subjectDid");
    const controller = canonicalControllerKey(controllerDid);
    if (controller === undefined || !controllerDid.trim().startsWith("did:")) return fail("INVALID_DID", "Invalid controllerDid");
    if (!subject.value.startsWith("did:web:")) {
      return fail(
        "UNSUPPORTED_SUBJECT_TYPE",
        "Controller witness currently requires a did:web subject for endpoint evidence discovery",
      );
    }
    // The host rule every did:web route shares: an IP address is bad input, refused before any rate or lookup.
    if (didWebLocation(subject.value) === undefined) return fail("INVALID_DID", "Invalid subjectDid", "did:web host is not a domain name");
    const recipient = didToAddress(subject.value);
    if (!recipient.ok) return fail("INVALID_DID", "Invalid subjectDid");

    return await confirmAndWrite({
      accountId: account.id,
      year,
      limit: terms.annualWrites,
      subject: subject.value,
      controller,
      recipient: recipient.value as HexString,
      schemaUid,
    });
  }

  async function confirmAndWrite(request: {
    accountId: string;
    year: number;
    limit: number;
    subject: string;
    controller: string;
    recipient: HexString;
    schemaUid: HexString;
  }): Promise<WitnessResult> {
    const { subject, controller, recipient, schemaUid } = request;
    // The per-domain limit comes before any lookup: we must not be a way to hammer someone's DNS or web
    // server. It is keyed on the registrable domain, so subdomains of one victim share it; discovery's
    // own budget for the domain (shared with the read-only views) is checked, too, and also answers 429.
    const host = didWebLocation(subject)?.host;
    const domainTurn = await deps.domainRate.take(host === undefined ? subject : registrableDomain(host));
    if (!domainTurn.allowed) {
      return rateLimited(domainTurn.retryAfterSeconds, "Too many witness requests for this domain; try again later");
    }
    const discovery = await deps.discover(subject, { refuseWhenRateLimited: true });
    if (!discovery.ok) {
      if (discovery.code === "RATE_LIMITED") return rateLimited(discovery.retryAfterSeconds, discovery.message);
      return fail("INVALID_DID", "Invalid subjectDid");
    }
    // Controller authorization's reading of the evidence (decisions §25): a did:jwk also by its jkt= thumbprint in DNS TXT.
    const live = liveControllerEvidence(controller, discovery.value).methods;
    const method = live.includes("dns") ? "dns-txt" as const : live.includes("did-document") ? "did-json" as const : undefined;
    if (method === undefined) {
      return fail(
        "EVIDENCE_NOT_FOUND",
        `Controller ${controller} not confirmed by endpoint evidence for ${subject}. Evidence checked: ${
          describeEvidence(discovery.value.evidence)
        }`,
      );
    }
    const writer = deps.writer;
    if (writer === undefined) return fail("SERVER_ERROR", "Server wallet not configured");
    const funds = await writer.checkFunds();
    if (funds !== "ok") return cannotWrite(funds);

    const observedAt = Math.floor(clock.nowMs() / 1000);
    const data = encodeSchemaData(WITNESS.schema, { subject, controller, method, observedAt: BigInt(observedAt) });
    if (!data.ok) return fail("INVALID_DID", "Subject or controller cannot be encoded");

    // Only now, with the evidence found, is a write reserved: one insert under an exclusive lock, so
    // parallel requests with one write left give exactly one success, and requests that were going to
    // fail never make others fail (decisions §15).
    const reservationId = randomId();
    const reserved = await ledger.reserve({
      id: reservationId,
      accountId: request.accountId,
      year: request.year,
      fingerprint: `${request.accountId}|${subject}|${controller}`,
      createdAtMs: clock.nowMs(),
    }, request.limit);
    if (!reserved) return fail("SPONSORED_WRITE_LIMIT_EXCEEDED", "Sponsored write limit exceeded");

    let signed = false;
    try {
      const call = {
        schema: schemaUid,
        data: { recipient, expirationTime: 0n, revocable: false, refUID: ZERO_UID, data: data.value, value: 0n },
      };
      const simulation = await writer.simulate(call);
      if (!simulation.ok) {
        if (simulation.reason === "reverted" && simulation.errorName === "InvalidSchema") {
          return fail("SCHEMA_NOT_DEPLOYED", "Controller witness schema not deployed on this chain");
        }
        if (simulation.reason === "insufficient-funds") return cannotWrite("low");
        return fail("SERVER_ERROR", "Witness submission failed: the chain refused the write");
      }
      const submission = await writer.submit(call, {
        gas: simulation.gas,
        onSigned: async (tx) => {
          if (!(await ledger.markSigned(reservationId, tx, clock.nowMs()))) {
            throw new Error("The reservation was released before sending");
          }
          signed = true;
        },
        onSent: () => ledger.markSent(reservationId, clock.nowMs()),
      });
      if (submission.ok) {
        await ledger.commit(reservationId, submission, clock.nowMs());
        return ok({
          success: true as const,
          uid: submission.uid,
          txHash: submission.txHash,
          blockNumber: Number(submission.blockNumber),
          observedAt,
          method,
        });
      }
      if (submission.reason === "not-broadcast") {
        await ledger.release(reservationId, clock.nowMs());
        return fail("SUBMISSION_FAILED", "The chain refused the witness transaction; nothing was written or charged");
      }
      if (submission.reason === "reverted") {
        await ledger.release(reservationId, clock.nowMs());
        return fail("SERVER_ERROR", "Witness submission failed", submission.txHash);
      }
      if (submission.reason === "signer-unavailable") {
        // Nothing signed or sent (decisions §27): the write goes back and nothing is charged.
        await ledger.release(reservationId, clock.nowMs());
        return {
          ...fail("SIGNER_UNAVAILABLE" as const, "The service's signer is unavailable; nothing was written or charged, and the same request may be sent again"),
          unavailable: true,
          retryAfterSeconds: SIGNER_RETRY_AFTER_SECONDS,
        };
      }
      // It may have reached the chain: the write stays reserved until the reconciler reads the receipt.
      return fail(
        "OUTCOME_UNKNOWN",
        "The witness transaction was sent but its outcome is not known yet; it will be settled",
        submission.txHash,
      );
    } finally {
      // Anything that was not signed gives the write back; a signed transaction is settled above or, if
      // this request ends early, by the reconciler from the stored bytes.
      if (!signed) await ledger.release(reservationId, clock.nowMs());
    }
  }

  /** `options.paidBy`: the payer of an x402 payment (decisions §13), instead of the session's account. */
  return async function controllerWitness(
    body: unknown,
    session: Result<Account, "UNAUTHENTICATED">,
    options: { readonly paidBy?: string | undefined } = {},
  ): Promise<WitnessOutcome> {
    const parsed = parseWitnessBody(body);
    const result = await run(session, parsed, options.paidBy);
    const deprecated = parsed.ok && parsed.value.deprecated;
    return { result, deprecated, deprecation: deprecated ? LEGACY_WITNESS_DEPRECATION_HEADER : undefined };
  };
}

/** The witness use case. */
export type ControllerWitness = ReturnType<typeof createControllerWitness>;
