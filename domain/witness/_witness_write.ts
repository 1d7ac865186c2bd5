/**
 * The witness's write: the per-domain rate, the endpoint evidence, the witness wallet, then one write reserved,
 * simulated, signed, sent and settled (decisions §8, §15).
 */
import type { HexString } from "../../ports/eas.ts";
import { SIGNER_RETRY_AFTER_SECONDS } from "../../ports/signer.ts";
import { type EvidenceItem, liveControllerEvidence } from "../discovery/mod.ts";
import { didWebLocation } from "../did/mod.ts";
import { registrableDomain } from "../rate_limit.ts";
import { fail, ok } from "../result.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { type ControllerWitnessDeps, WITNESS, type WitnessFailure, type WitnessResult } from "./_types.ts";
import { WITNESS_WRITE_PREFIX } from "./witness_resume.ts";

const ZERO_UID = `0x${"0".repeat(64)}` as HexString;

/** A 429 answer with its `Retry-After`. */
export const rateLimited = (retryAfterSeconds: number, message: string): WitnessFailure => ({
  ...fail("RATE_LIMITED" as const, message),
  retryAfterSeconds,
});

/**
 * The chain did not answer before anything was sent (its balance read, the simulation, the wallet's nonce or fees just
 * before signing): 500 `RPC_ERROR` (decisions §2,
 * "chain unreachable"), an answer that did nothing, so a retry under the same `Idempotency-Key` runs again. Before, it
 * was 500 `SERVER_ERROR`, which the key kept: the retry was told the same for 24 hours.
 */
const chainSilent = (): WitnessFailure => fail("RPC_ERROR", "Witness submission failed: the chain did not answer");

const cannotWrite = (funds: "low" | "rpc-error"): WitnessFailure =>
  funds === "low"
    ? { ...fail("SUBMISSION_FAILED" as const, "The witness wallet cannot pay for gas right now; nothing was charged"), unavailable: true }
    : chainSilent();

const randomId = (deps: ControllerWitnessDeps) => Array.from(deps.random.bytes(16), (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * "dns-txt _controllers.example.com: found, did-json https://…: not-found"; a source read and unusable for good says why
 * ("did-json https://…: unavailable (DID document is not valid JSON)"): it is the subject's to fix. The reasons are our
 * own words, never upstream text.
 */
function describeEvidence(evidence: readonly EvidenceItem[]): string {
  return evidence.map((e) => `${e.kind} ${e.location}: ${e.status}${e.lasting === true && e.error !== undefined ? ` (${e.error})` : ""}`).join(", ");
}

/**
 * The controller confirmed by no source while one of them could not be read now (DNS SERVFAIL or a timeout, a did.json
 * whose host did not answer, refused the connection or answered 5xx: `unavailable` and not `lasting`): 502
 * `NETWORK_ERROR`, "a required verification lookup failed" (interface), never 422 `EVIDENCE_NOT_FOUND`, since the
 * source that could not be read may be the one naming the controller (performance_reliability fault matrix 31: a
 * failing lookup is never a definitive answer). 422 is kept for every source answering, none naming the controller;
 * a controller one source confirms is written whatever the others said. A source that was read and is unusable for good
 * (`lasting`: a did.json that is not JSON or not the subject's DID document, over 64 KiB, a redirect) answered too: it names no controller, so it leaves the answer 422, the message saying why.
 * Before, those were 502 as well, and a client retried a subject's own lasting fault as an outage of ours. The rule is
 * controller authorization's (liveControllerEvidence's `unavailable`), so the two never disagree on one subject.
 * Nothing was reserved, paid or sent: the answer is not kept under an `Idempotency-Key` (domain/idempotency
 * `didNothing`), and the retry it invites runs once the lookup answers. Before, it was 422, kept under the key for 24
 * hours after DNS answered again.
 */
function evidenceUnreadable(controller: string, subject: string, checked: string): WitnessFailure {
  return fail(
    "NETWORK_ERROR",
    `Controller ${controller} not confirmed for ${subject}, and endpoint evidence could not be read now; try again. Evidence checked: ${checked}`,
  );
}

export async function confirmAndWrite(deps: ControllerWitnessDeps, request: {
  accountId: string;
  year: number;
  limit: number;
  subject: string;
  controller: string;
  recipient: HexString;
  schemaUid: HexString;
  onReserved?: ((noted: string) => Promise<void>) | undefined;
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
  const evidence = liveControllerEvidence(controller, discovery.value);
  const live = evidence.methods;
  const method = live.includes("dns") ? "dns-txt" as const : live.includes("did-document") ? "did-json" as const : undefined;
  if (method === undefined) {
    const checked = describeEvidence(discovery.value.evidence);
    // Not confirmed and a source could not be read: see evidenceUnreadable.
    if (evidence.unavailable) return evidenceUnreadable(controller, subject, checked);
    return fail("EVIDENCE_NOT_FOUND", `Controller ${controller} not confirmed by endpoint evidence for ${subject}. Evidence checked: ${checked}`);
  }
  const writer = deps.writer;
  if (writer === undefined) return fail("SERVER_ERROR", "Server wallet not configured");
  const funds = await writer.checkFunds();
  if (funds !== "ok") return cannotWrite(funds);

  const observedAt = Math.floor(deps.clock.nowMs() / 1000);
  const data = encodeSchemaData(WITNESS.schema, { subject, controller, method, observedAt: BigInt(observedAt) });
  if (!data.ok) return fail("INVALID_DID", "Subject or controller cannot be encoded");

  // Only now, with the evidence found, is a write reserved: one insert under an exclusive lock, so
  // parallel requests with one write left give exactly one success, and requests that were going to
  // fail never make others fail (decisions §15).
  const reservationId = randomId(deps);
  const reserved = await deps.ledger.reserve({
    id: reservationId,
    accountId: request.accountId,
    year: request.year,
    fingerprint: `${request.accountId}|${subject}|${controller}`,
    createdAtMs: deps.clock.nowMs(),
    // The chain written on (decisions §30): that chain's reconciler settles the row after a crash.
    chainId: deps.chainId,
  }, request.limit);
  if (!reserved) return fail("SPONSORED_WRITE_LIMIT_EXCEEDED", "Sponsored write limit exceeded");

  let signed = false;
  try {
    await request.onReserved?.(`${WITNESS_WRITE_PREFIX}${reservationId}`);
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
      if (simulation.reason === "rpc-error") return chainSilent();
      return fail("SERVER_ERROR", "Witness submission failed: the chain refused the write");
    }
    const submission = await writer.submit(call, {
      gas: simulation.gas,
      onSigned: async (tx) => {
        if (!(await deps.ledger.markSigned(reservationId, tx, deps.clock.nowMs()))) {
          throw new Error("The reservation was released before sending");
        }
        signed = true;
      },
      onSent: () => deps.ledger.markSent(reservationId, deps.clock.nowMs()),
    });
    if (submission.ok) {
      await deps.ledger.commit(reservationId, submission, deps.clock.nowMs());
      return ok({
        success: true as const,
        uid: submission.uid,
        txHash: submission.txHash,
        blockNumber: Number(submission.blockNumber),
        observedAt,
        method,
      });
    }
    // (`expired` only answers a submission that asked `stillValid`, which the witness does not: nothing was sent either.)
    if (submission.reason === "not-broadcast" || submission.reason === "expired") {
      await deps.ledger.release(reservationId, deps.clock.nowMs(), "unsent");
      return fail("SUBMISSION_FAILED", "The chain refused the witness transaction; nothing was written or charged");
    }
    if (submission.reason === "reverted") {
      await deps.ledger.release(reservationId, deps.clock.nowMs(), "reverted");
      return fail("SERVER_ERROR", "Witness submission failed", submission.txHash);
    }
    if (submission.reason === "rpc-error") {
      // The wallet's nonce or fees could not be read before signing: nothing sent or charged, RPC_ERROR as for the
      // balance read and the simulation (it was SUBMISSION_FAILED, kept under the Idempotency-Key).
      await deps.ledger.release(reservationId, deps.clock.nowMs(), "unsent");
      return chainSilent();
    }
    if (submission.reason === "nonce-unavailable") {
      // The wallet's shared nonce could not be taken (the storage failed): nothing sent or charged; not the chain's
      // refusal, and an answer that did nothing (500 INTERNAL_ERROR, not kept under an Idempotency-Key).
      await deps.ledger.release(reservationId, deps.clock.nowMs(), "unsent");
      return fail("INTERNAL_ERROR", "The service could not take its wallet's next nonce; nothing was written or charged, and the same request may be sent again");
    }
    if (submission.reason === "signer-unavailable") {
      // Nothing signed or sent (decisions §27): the write goes back and nothing is charged.
      await deps.ledger.release(reservationId, deps.clock.nowMs(), "unsent");
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
    if (!signed) await deps.ledger.release(reservationId, deps.clock.nowMs(), "unsent");
  }
}
