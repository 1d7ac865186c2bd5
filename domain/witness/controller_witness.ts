/**
 * The controller witness: when a did:web subject publishes a controller key (DNS TXT or did.json),
 * the service's witness wallet writes a non-revocable `controller-witness` attestation, charged to
 * the signed-in user's sponsored-write quota.
 *
 * Check order (decisions §8, §15): body → session (401) → per-user rate → chain → quota, read without
 * reserving (403) → schema deployed (500) → plan eligibility (403) → DIDs (400) → per-domain rate (429,
 * before any outbound lookup) → evidence (422; 502 `NETWORK_ERROR` when no source confirms the controller
 * and one could not be read now; a source read and unusable for good is an answer: 422) → witness wallet (500) → its balance (503) → reserve one write atomically
 * (403 when a parallel request took the last one) → simulate → sign (the transaction is stored) → send →
 * commit. Requests that fail a check never hold a reservation, so they cannot make others
 * fail. A write whose transaction was never signed or provably never sent is given back; one that may have
 * reached the chain stays reserved until the reconciler ({@link createSubmissionReconciler}) settles it.
 */
import type { Account } from "../../ports/accounts.ts";
import type { HexString } from "../../ports/eas.ts";
import { canonicalControllerKey } from "../discovery/mod.ts";
import { didToAddress, normalizeSubjectDid } from "../did/mod.ts";
import { planAllowsSchema, quotaYear } from "../accounts/mod.ts";
import { fail, type Ok, ok, type Result } from "../result.ts";
import { parseChainParam } from "../chains/mod.ts";
import { payerLedgerId } from "../payments/mod.ts";
import { type ControllerWitnessDeps, WITNESS, type WitnessResult } from "./_types.ts";
import { confirmAndWrite, rateLimited } from "./_witness_write.ts";

export type { ControllerWitnessDeps, WitnessCode, WitnessFailure, WitnessResult, WitnessWritten } from "./_types.ts";

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

/** A paid witness is one write bought outright: any schema, no annual limit. */
const PAID_CALL_TERMS = { annualWrites: Number.MAX_SAFE_INTEGER, schemas: ["*"] } as const;
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
  const legacyChainId = input.chainId;
  if (legacyChainId !== undefined && (typeof legacyChainId !== "number" || !Number.isSafeInteger(legacyChainId) || legacyChainId <= 0)) {
    return fail("INVALID_INPUT", "chainId must be a positive integer");
  }
  // Decisions §30: `chain` (CAIP-2 or a decimal id) names the chain to write on; `chainId` is its older spelling.
  const chain = input.chain;
  const named = chain === undefined ? undefined : typeof chain === "number" || typeof chain === "string" ? parseChainParam(String(chain)) : undefined;
  if (chain !== undefined && named === undefined) return fail("INVALID_INPUT", "chain must be a chain id (8453) or CAIP-2 (eip155:8453)");
  if (named !== undefined && legacyChainId !== undefined && named !== legacyChainId) return fail("INVALID_INPUT", "chain and chainId name different chains");
  const chainId = named ?? legacyChainId;
  const subjectDid = (input.subjectDid ?? input.subject) as string | undefined;
  const controllerDid = (input.controllerDid ?? input.controller) as string | undefined;
  if (subjectDid === undefined) return fail("INVALID_INPUT", "subjectDid or subject is required");
  if (controllerDid === undefined) return fail("INVALID_INPUT", "controllerDid or controller is required");
  const deprecated = LEGACY_FIELDS.some((name) => input[name] !== undefined);
  return ok({ subjectDid, controllerDid, chainId: chainId as number | undefined, deprecated });
}

/** Builds the witness use case: `(body, session)` → outcome. */
export function createControllerWitness(deps: ControllerWitnessDeps) {
  /**
   * `options.paidBy`: the payer of an x402 payment (decisions §13), instead of the session's account.
   * `options.onReserved`: told `witness-write:<id>` once the write is reserved, before anything is signed (the
   * request's `Idempotency-Key` notes it, so a retry after a crash answers from it: createWitnessResume).
   */
  return async function controllerWitness(
    body: unknown,
    session: Result<Account, "UNAUTHENTICATED">,
    options: { readonly paidBy?: string | undefined; readonly onReserved?: ((noted: string) => Promise<void>) | undefined } = {},
  ): Promise<WitnessOutcome> {
    const parsed = parseWitnessBody(body);
    const result = await checkAndWrite(deps, session, parsed, options.paidBy, options.onReserved);
    const deprecated = parsed.ok && parsed.value.deprecated;
    return { result, deprecated, deprecation: deprecated ? LEGACY_WITNESS_DEPRECATION_HEADER : undefined };
  };
}

/** The checks before any lookup (decisions §8): rate, chain, quota, schema, plan, DIDs. */
async function checkAndWrite(
  served: ControllerWitnessDeps,
  session: Result<Account, "UNAUTHENTICATED">,
  parsed: Result<ParsedBody, "INVALID_INPUT">,
  paidBy: string | undefined,
  onReserved: ((noted: string) => Promise<void>) | undefined,
): Promise<WitnessResult> {
  if (!parsed.ok) return parsed;
  // A paying agent (decisions §13) bought this one write: no plan, no quota, but the same rates and checks.
  if (paidBy === undefined && !session.ok) return session;
  const account = paidBy === undefined ? (session as Ok<Account>).value : { id: payerLedgerId(paidBy), plan: "paid" as const };
  const userTurn = await served.userRate.take(account.id);
  if (!userTurn.allowed) return rateLimited(userTurn.retryAfterSeconds, "Too many witness requests; try again later");
  const { subjectDid, controllerDid, chainId } = parsed.value;
  const onChain = witnessChain(served, chainId);
  if (!onChain.ok) return onChain;
  // The deps of the chain written on: its witness writer and schema (decisions §30).
  const deps = onChain.value;

  const terms = paidBy === undefined ? deps.plans[account.plan] : PAID_CALL_TERMS;
  const nowMs = deps.clock.nowMs();
  const year = quotaYear(nowMs);
  // With the time: a write given back on a cause that proves nothing still holds its quota (it may land).
  const usage = await deps.ledger.usage(account.id, year, { nowMs });
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
  const recipient = didToAddress(subject.value);
  if (!recipient.ok) return fail("INVALID_DID", "Invalid subjectDid");

  return await confirmAndWrite(deps, {
    accountId: account.id,
    year,
    limit: terms.annualWrites,
    subject: subject.value,
    controller,
    recipient: recipient.value as HexString,
    schemaUid,
    onReserved,
  });
}

/**
 * The chain a witness is written on (decisions §30): the default's deps when none or the default is named, another
 * served attestation chain's writer and schema when named; any other chain UNSUPPORTED_CHAIN.
 */
function witnessChain(deps: ControllerWitnessDeps, chainId: number | undefined): Result<ControllerWitnessDeps, "UNSUPPORTED_CHAIN"> {
  if (chainId === undefined || chainId === deps.chainId) return ok(deps);
  const other = deps.otherChains?.get(chainId);
  if (other === undefined) {
    return deps.otherChains === undefined || deps.otherChains.size === 0
      ? fail("UNSUPPORTED_CHAIN", `This service writes witnesses on eip155:${deps.chainId} only`)
      : fail("UNSUPPORTED_CHAIN", `Chain eip155:${chainId} is not an attestation chain of this deployment`);
  }
  return ok({ ...deps, chainId, writer: other.writer, witnessSchemaUid: other.witnessSchemaUid });
}

/** The witness use case. */
export type ControllerWitness = ReturnType<typeof createControllerWitness>;
