/**
 * The controller witness: when a did:web subject publishes a controller key (DNS TXT or did.json),
 * the service's witness wallet writes a non-revocable `controller-witness` attestation, charged to
 * the signed-in user's sponsored-write quota.
 *
 * Check order (decisions §8): body → session (401) → per-user rate → chain → quota (403) → schema
 * deployed (500) → plan eligibility (403) → DIDs (400) → reserve one write atomically (403 when a
 * parallel request took the last one) → per-domain rate (429, before any outbound lookup) → evidence
 * (422) → witness wallet (500) → simulate → submit → commit. Every failure before broadcast gives the
 * write back; a broadcast whose outcome is unknown stays reserved until {@link createWitnessReconciler}
 * settles it from the stored transaction hash.
 */
import type { Account, SponsoredWriteLedger, WriteRecord } from "../ports/accounts.ts";
import type { Clock } from "../ports/clock.ts";
import type { HexString } from "../ports/eas.ts";
import type { Random } from "../ports/random.ts";
import type { TxStatusReader, WitnessWriter } from "../ports/witness.ts";
import type { DiscoverControllers, EvidenceItem } from "./controller_discovery.ts";
import { canonicalControllerKey, didWebLocation } from "./controller_discovery.ts";
import { didToAddress, isSameControllerId, normalizeDid } from "./did.ts";
import { type PlanPolicy, planAllowsSchema, quotaYear } from "./plans.ts";
import { type RateLimiter, registrableDomain } from "./rate_limit.ts";
import { fail, type Fail, ok, type Ok, type Result } from "./result.ts";
import { encodeSchemaData } from "./schema_data.ts";
import { findSchemaByName } from "./schemas.ts";

/** Error codes of the witness endpoint. */
export type WitnessCode =
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
  | "SERVER_ERROR";

/** A failure; `retryAfterSeconds` is set on RATE_LIMITED. */
export type WitnessFailure = Fail<WitnessCode> & { readonly retryAfterSeconds?: number };

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
  readonly userRate: RateLimiter;
  readonly domainRate: RateLimiter;
};

const WITNESS = findSchemaByName("controller-witness")!;
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

  async function run(session: Result<Account, "UNAUTHENTICATED">, parsed: Result<ParsedBody, "INVALID_INPUT">): Promise<WitnessResult> {
    if (!parsed.ok) return parsed;
    if (!session.ok) return session;
    const account = session.value;
    const userTurn = deps.userRate.take(account.id);
    if (!userTurn.allowed) return rateLimited(userTurn.retryAfterSeconds, "Too many witness requests; try again later");
    const { subjectDid, controllerDid, chainId } = parsed.value;
    if (chainId !== undefined && chainId !== deps.chainId) {
      return fail("UNSUPPORTED_CHAIN", `This service writes witnesses on eip155:${deps.chainId} only`);
    }

    const terms = deps.plans[account.plan];
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

    const subject = normalizeDid(subjectDid);
    if (!subject.ok) return fail("INVALID_DID", "Invalid subjectDid");
    const controller = canonicalControllerKey(controllerDid);
    if (controller === undefined || !controllerDid.trim().startsWith("did:")) return fail("INVALID_DID", "Invalid controllerDid");
    if (!subject.value.startsWith("did:web:")) {
      return fail(
        "UNSUPPORTED_SUBJECT_TYPE",
        "Controller witness currently requires a did:web subject for endpoint evidence discovery",
      );
    }
    const recipient = didToAddress(subject.value);
    if (!recipient.ok) return fail("INVALID_DID", "Invalid subjectDid");

    // The reservation is the quota check that counts: one insert under an exclusive lock.
    const reservationId = randomId();
    const reserved = await ledger.reserve({
      id: reservationId,
      accountId: account.id,
      year,
      fingerprint: `${account.id}|${subject.value}|${controller}`,
      createdAtMs: nowMs,
    }, terms.annualWrites);
    if (!reserved) return limitExceeded;

    let broadcast = false;
    try {
      const written = await confirmAndWrite(subject.value, controller, recipient.value as HexString, schemaUid, reservationId, () => {
        broadcast = true;
      });
      return written;
    } finally {
      // Anything that did not reach the chain gives the write back. A broadcast is settled by
      // confirmAndWrite (commit, or release on revert) or, when its outcome is unknown, by the reconciler.
      if (!broadcast) await ledger.release(reservationId, clock.nowMs());
    }
  }

  async function confirmAndWrite(
    subject: string,
    controller: string,
    recipient: HexString,
    schemaUid: HexString,
    reservationId: string,
    onBroadcast: () => void,
  ): Promise<WitnessResult> {
    // The per-domain limit comes before any lookup: we must not be a way to hammer someone's DNS or web
    // server. It is keyed on the registrable domain, so subdomains of one victim share it; discovery's
    // own budget for the domain (shared with the read-only views) is checked, too, and also answers 429.
    const host = didWebLocation(subject)?.host;
    const domainTurn = deps.domainRate.take(host === undefined ? subject : registrableDomain(host));
    if (!domainTurn.allowed) {
      return rateLimited(domainTurn.retryAfterSeconds, "Too many witness requests for this domain; try again later");
    }
    const discovery = await deps.discover(subject, { refuseWhenRateLimited: true });
    if (!discovery.ok) {
      if (discovery.code === "RATE_LIMITED") return rateLimited(discovery.retryAfterSeconds, discovery.message);
      return fail("INVALID_DID", "Invalid subjectDid");
    }
    const key = discovery.value.controllerKeys.find((k) => k.basic && isSameControllerId(k.canonicalId, controller));
    const method = key?.sources.find((s): s is "dns-txt" | "did-json" => s === "dns-txt" || s === "did-json");
    if (key === undefined || method === undefined) {
      return fail(
        "EVIDENCE_NOT_FOUND",
        `Controller ${controller} not confirmed by endpoint evidence for ${subject}. Evidence checked: ${
          describeEvidence(discovery.value.evidence)
        }`,
      );
    }
    const writer = deps.writer;
    if (writer === undefined) return fail("SERVER_ERROR", "Server wallet not configured");

    const observedAt = Math.floor(clock.nowMs() / 1000);
    const data = encodeSchemaData(WITNESS.schema, { subject, controller, method, observedAt: BigInt(observedAt) });
    if (!data.ok) return fail("INVALID_DID", "Subject or controller cannot be encoded");
    const call = {
      schema: schemaUid,
      data: { recipient, expirationTime: 0n, revocable: false, refUID: ZERO_UID, data: data.value, value: 0n },
    };
    const simulation = await writer.simulate(call);
    if (!simulation.ok) {
      if (simulation.reason === "reverted" && simulation.errorName === "InvalidSchema") {
        return fail("SCHEMA_NOT_DEPLOYED", "Controller witness schema not deployed on this chain");
      }
      const why = simulation.reason === "insufficient-funds" ? "the witness wallet cannot pay gas" : "the chain refused the write";
      return fail("SERVER_ERROR", `Witness submission failed: ${why}`);
    }
    const submission = await writer.submit(call, {
      gas: simulation.gas,
      onSigned: async (txHash) => {
        await ledger.markBroadcast(reservationId, txHash, clock.nowMs());
        onBroadcast();
      },
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
    if (submission.reason === "reverted" || submission.reason === "not-broadcast") {
      await ledger.release(reservationId, clock.nowMs());
      return fail("SERVER_ERROR", "Witness submission failed");
    }
    // Broadcast, outcome unknown: the write stays reserved until the reconciler reads the receipt.
    return fail("SERVER_ERROR", "Witness submission outcome unknown; it will be settled", submission.txHash);
  }

  return async function controllerWitness(body: unknown, session: Result<Account, "UNAUTHENTICATED">): Promise<WitnessOutcome> {
    const parsed = parseWitnessBody(body);
    const result = await run(session, parsed);
    const deprecated = parsed.ok && parsed.value.deprecated;
    return { result, deprecated, deprecation: deprecated ? LEGACY_WITNESS_DEPRECATION_HEADER : undefined };
  };
}

/** The witness use case. */
export type ControllerWitness = ReturnType<typeof createControllerWitness>;

/** What settling unsettled writes did. */
export type ReconcileReport = { committed: number; released: number; pending: number };

/**
 * Settles sponsored writes a crash or a lost receipt left open, from what was stored before
 * broadcast (the transaction hash). A write is given back only when its transaction cannot be mined:
 *
 * - mined: committed with its uid, whatever its age; reverted: released;
 * - `replaced` (no receipt, and the wallet's mined nonce has moved past the transaction's nonce, so
 *   another transaction took its place): released, whatever its age;
 * - `pending` (the node still holds it, its nonce still free): kept reserved, whatever its age,
 *   since it may be mined at any time and must then be charged;
 * - `not-found` (the node has never seen the hash, or dropped it) and reservations that never got a
 *   hash: released once older than `staleAfterMs`, so requests still in flight (here or in another
 *   instance on the same database) are left alone;
 * - an RPC failure: left for the next round.
 *
 * Only the hash is stored with a write, not its nonce, so a transaction the node has forgotten
 * cannot be checked against the wallet's nonce. Releasing it once stale is the remaining (small)
 * risk: a peer rebroadcasting it later with its nonce still free would write an uncharged witness.
 */
export function createWitnessReconciler(deps: {
  ledger: SponsoredWriteLedger;
  txStatus: TxStatusReader;
  clock: Clock;
  staleAfterMs: number;
}) {
  return async function reconcile(): Promise<ReconcileReport> {
    const now = deps.clock.nowMs();
    const report: ReconcileReport = { committed: 0, released: 0, pending: 0 };
    const open: WriteRecord[] = await deps.ledger.unsettled(now + 1);
    const release = async (write: WriteRecord) => {
      await deps.ledger.release(write.id, now);
      report.released++;
    };
    for (const write of open) {
      const stale = now - write.createdAtMs >= deps.staleAfterMs;
      if (write.txHash === null) {
        if (stale) await release(write);
        else report.pending++;
        continue;
      }
      const status = await deps.txStatus.status(write.txHash as HexString);
      switch (status.status) {
        case "success":
          await deps.ledger.commit(write.id, { txHash: write.txHash, uid: status.uid, blockNumber: status.blockNumber }, now);
          report.committed++;
          break;
        case "reverted":
        case "replaced":
          await release(write);
          break;
        case "not-found":
          if (stale) await release(write);
          else report.pending++;
          break;
        case "pending":
        case "rpc-error":
          report.pending++;
          break;
      }
    }
    return report;
  };
}
