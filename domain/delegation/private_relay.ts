/**
 * The private relay (decisions §12): delegated attestation for a signed-in account, paid from its plan's
 * sponsored writes. The checks of decisions §6 run as on the public route; once the signature verified, and
 * before anything is recorded or spent, the relay checks, in this order: the attester is the account's wallet
 * (403 ATTESTER_MISMATCH), the plan may write the schema (403 SCHEMA_NOT_ELIGIBLE), for a subject-scoped schema
 * the subject inside the signed data (its decoded `subject`, whose DID address must be the recipient) agrees
 * with a given `subjectDid` (400 INVALID_INPUT) and is the wallet's own or one of the account's proven subjects
 * (403 SUBJECT_OWNERSHIP_REQUIRED) — for a schema whose authority lives behind `refUID` ({@link REFERENCED_AUTHORITY}:
 * a review's response) the subject checked, and the one `subjectDid` must name, is that of the attestation `refUID`
 * names, read from the chain — and one sponsored write is reserved atomically from the witness's ledger
 * (403 SPONSORED_WRITE_LIMIT_EXCEEDED). The write follows the transaction (signed, sent, committed with the
 * receipt) and is given back when nothing was broadcast; the reconciler settles it like a witness.
 */
import type { Account, SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { AttestationRead, HexString } from "../../ports/eas.ts";
import type { Random } from "../../ports/random.ts";
import type { SubjectStore } from "../../ports/subjects.ts";
import { walletDid } from "../accounts/mod.ts";
import type { CallerTicket, DelegatedAttest, DelegatedAttestFailure } from "./delegated_attest.ts";
import type { DelegatedRequest } from "./delegated_request.ts";
import type { DelegatedAttestBatchCaller } from "./delegated_attest_batch.ts";
import { didToAddress, normalizeDid } from "../did/mod.ts";
import { type PlanPolicy, planAllowsSchema, quotaYear } from "../accounts/mod.ts";
import { fail } from "../result.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import type { VerifySubjectOwnership } from "../accounts/mod.ts";
import { type PayingAgent, payerLedgerId } from "../payments/mod.ts";

/** The schemas only a subject's owner may write through the relay (`SUBJECT_SCOPED_SCHEMAS`). */
export const DEFAULT_SUBJECT_SCOPED_SCHEMAS = ["key-binding", "linked-identifier", "user-review-response"] as const;

/** Where a schema's authority lives when it is not its own `subject` (issue 23, finding 4). */
export type ReferencedAuthority = {
  /** The schema the attestation `refUID` names must be of; the owner of its decoded `subject` may write. */
  readonly of: string;
  /** A field of the signed data that repeats the refUID (the reference's readers drop a reply whose field differs). */
  readonly repeatedIn?: string | undefined;
};

/**
 * Schemas whose authority lives behind `refUID`: a `user-review-response` is the reviewed service's answer, so it
 * is its owner (the subject of the review `refUID` names) who may write it, not the owner of the response's own
 * `subject` (the reviewer's did:pkh, reference §3.1). The public relay never writes these (main.ts refuses them in
 * `SUBSIDIZED_SCHEMAS`): it has no identity whose ownership could be checked.
 */
export const REFERENCED_AUTHORITY: ReadonlyMap<string, ReferencedAuthority> = new Map([
  ["user-review-response", { of: "user-review", repeatedIn: "refUID" }],
]);

const ZERO_UID = /^0x0{64}$/;

/** What the relay needs. */
export type PrivateRelayDeps = {
  /** Delegated attestation over every anchored schema (the plan decides which), without the public guard. */
  readonly attest: DelegatedAttest;
  readonly ledger: SponsoredWriteLedger;
  readonly plans: PlanPolicy;
  readonly subjects: SubjectStore;
  readonly clock: Clock;
  readonly random: Random;
  /** The anchored schema UIDs (lowercase) to their names. */
  readonly schemaNames: ReadonlyMap<string, string>;
  readonly subjectScoped: ReadonlySet<string>;
  readonly chainId: number;
  /**
   * Reads the attestation a request's `refUID` names (EAS `getAttestation`), for the schemas of
   * {@link REFERENCED_AUTHORITY} that are subject-scoped.
   */
  readonly readAttestation: (uid: HexString) => Promise<AttestationRead>;
  /**
   * Proves a paying agent's ownership of a subject by the existing rules (decisions §12): a paid call has no
   * account whose proven subjects could be read. Absent: a paying agent may only write about its own wallet.
   */
  readonly verifyOwnership?: VerifySubjectOwnership | undefined;
};

/**
 * How the relay's account checks apply to a paying agent (decisions §13): the payer is the identity. The attester
 * must be the payer's wallet (403 ATTESTER_MISMATCH); the schema must be one the paid plan may write (403
 * SCHEMA_NOT_ELIGIBLE); a subject-scoped subject must be the payer's own did:pkh or be proven owned by the payer's
 * wallet now, by the ownership rules of `POST /api/verify/subject-ownership` (403 SUBJECT_OWNERSHIP_REQUIRED, 502
 * NETWORK_ERROR when that cannot be looked up). The write is counted in the sponsored-write ledger under the payer
 * (for the reconciler) with no limit: it does not consume any account's plan quota.
 */
const PAID_WRITE_LIMIT = Number.MAX_SAFE_INTEGER;

/** A failure with the relay's own status (403 for an attester that is not the account's wallet). */
const refused = (code: string, message: string, status?: number): DelegatedAttestFailure =>
  ({ ...fail(code as never, message), ...(status === undefined ? {} : { status }) }) as DelegatedAttestFailure;

/** Builds the relay: `(body, account)` → the delegated attestation's result. */
export function createPrivateRelay(deps: PrivateRelayDeps) {
  const newId = () => Array.from(deps.random.bytes(16), (b) => b.toString(16).padStart(2, "0")).join("");

  /**
   * The subject whose owner may write `name`: the signed data's own `subject`, or for a schema of
   * {@link REFERENCED_AUTHORITY} the subject of the attestation `refUID` names, read from the chain (one call).
   * That attestation must exist, be of the table's schema and not be revoked (400 INVALID_INPUT naming refUID);
   * a read that cannot be made is 502 NETWORK_ERROR, never a refusal or an acceptance.
   */
  async function authoritySubject(
    name: string,
    request: DelegatedRequest,
    data: Readonly<Record<string, unknown>>,
    own: string,
  ): Promise<string | DelegatedAttestFailure> {
    const rule = REFERENCED_AUTHORITY.get(name);
    if (rule === undefined) return own;
    if (ZERO_UID.test(request.refUID)) return refused("INVALID_INPUT", `refUID must name the ${rule.of} attestation this ${name} answers`);
    if (rule.repeatedIn !== undefined) {
      const repeated = data[rule.repeatedIn];
      if (typeof repeated !== "string" || repeated.toLowerCase() !== request.refUID.toLowerCase()) {
        return refused("INVALID_INPUT", `refUID differs from the ${rule.repeatedIn} field inside the signed data`);
      }
    }
    const read = await deps.readAttestation(request.refUID);
    if (!read.ok) return refused("NETWORK_ERROR", "The attestation refUID names could not be read from the chain");
    const target = read.attestation;
    if (target === null) return refused("INVALID_INPUT", `refUID names no attestation on this chain (expected a ${rule.of})`);
    const targetName = deps.schemaNames.get(target.schema.toLowerCase());
    if (targetName !== rule.of) {
      return refused("INVALID_INPUT", `refUID names a ${targetName ?? "non-anchored"} attestation, not a ${rule.of}`);
    }
    if (target.revocationTime !== 0n) return refused("INVALID_INPUT", `refUID names a revoked ${rule.of}`);
    const definition = findSchemaByName(rule.of);
    const decoded = definition === undefined ? undefined : decodeSchemaData(definition.schema, target.data);
    const subject = decoded?.ok && typeof decoded.value.subject === "string" ? normalizeDid(decoded.value.subject) : undefined;
    if (subject === undefined || !subject.ok) return refused("INVALID_INPUT", `The ${rule.of} refUID names has no subject DID`);
    return subject.value;
  }

  async function admit(caller: Account | PayingAgent, request: DelegatedRequest, subjectDid: unknown): Promise<DelegatedAttestFailure | CallerTicket> {
    const payer = "kind" in caller ? caller : undefined;
    const account = payer === undefined ? caller as Account : { id: payerLedgerId(payer.address), address: payer.address.toLowerCase(), plan: "paid" as const };
    if (request.attester.toLowerCase() !== account.address.toLowerCase()) {
      return payer === undefined
        ? refused("ATTESTER_MISMATCH", "The attester is not the signed-in account's wallet", 403)
        : refused("ATTESTER_MISMATCH", "The attester is not the paying wallet", 403);
    }
    const name = deps.schemaNames.get(request.schema.toLowerCase());
    const terms = payer === undefined ? deps.plans[account.plan] : { ...deps.plans.paid, annualWrites: PAID_WRITE_LIMIT };
    if (name === undefined || !planAllowsSchema(terms, name, request.schema)) {
      return refused("SCHEMA_NOT_ELIGIBLE", "The schema is not eligible for your plan");
    }
    if (deps.subjectScoped.has(name)) {
      const definition = findSchemaByName(name);
      const data = definition === undefined ? undefined : decodeSchemaData(definition.schema, request.data);
      const subject = data?.ok && typeof data.value.subject === "string" ? normalizeDid(data.value.subject) : undefined;
      if (subject === undefined || !subject.ok) return refused("INVALID_INPUT", "The signed data names no subject DID");
      const address = didToAddress(subject.value);
      if (!address.ok || address.value.toLowerCase() !== request.recipient.toLowerCase()) {
        return refused("INVALID_INPUT", "recipient must be the DID address of the signed data's subject");
      }
      const authority = await authoritySubject(name, request, data?.ok ? data.value : {}, subject.value);
      if (typeof authority !== "string") return authority;
      if (subjectDid !== undefined) {
        const given = typeof subjectDid === "string" ? normalizeDid(subjectDid) : undefined;
        if (given === undefined || !given.ok || given.value !== authority) {
          return refused(
            "INVALID_INPUT",
            authority === subject.value
              ? "subjectDid differs from the subject inside the signed data"
              : `subjectDid differs from ${authority}, the subject of the attestation refUID names, whose owner may write ${name}`,
          );
        }
      }
      const wallet = walletDid(account, deps.chainId);
      let own = authority === wallet;
      if (!own && payer === undefined) {
        // An account's subject, proven when it was added, is proven again as it stands now: a DNS record taken down,
        // a contract's owner() moved on, and the former owner kept writing key bindings for it.
        const kept = (await deps.subjects.list(account.id)).find((s) => s.canonicalDid === authority);
        if (kept !== undefined && deps.verifyOwnership === undefined) own = true;
        else if (kept !== undefined) {
          const proof = await deps.verifyOwnership!({ subjectDid: authority, connectedWalletDid: wallet, provenBy: kept.ownershipMethod });
          if (!proof.ok && proof.code === "NETWORK_ERROR") return refused("NETWORK_ERROR", "The subject's ownership could not be looked up");
          if (!proof.ok || !proof.value.ok) {
            const why = proof.ok && !proof.value.ok ? `: ${proof.value.error}` : "";
            return refused("SUBJECT_OWNERSHIP_REQUIRED", `The account's proof of ${authority} no longer holds${why}; prove it again`);
          }
          own = true;
        }
      }
      if (!own && payer !== undefined && deps.verifyOwnership !== undefined) {
        const proof = await deps.verifyOwnership({ subjectDid: authority, connectedWalletDid: wallet });
        if (!proof.ok && proof.code === "NETWORK_ERROR") return refused("NETWORK_ERROR", "The subject's ownership could not be looked up");
        own = proof.ok && proof.value.ok;
      }
      if (!own) return refused("SUBJECT_OWNERSHIP_REQUIRED", `Only an owner of ${authority} may write ${name}: add it as a subject first`);
    }
    const id = newId();
    const now = deps.clock.nowMs();
    const reserved = await deps.ledger.reserve(
      // The chain written on (decisions §30): that chain's reconciler settles the row after a crash.
      { id, accountId: account.id, year: quotaYear(now), fingerprint: `${account.id}|relay|${name}|${request.recipient.toLowerCase()}`, createdAtMs: now, chainId: deps.chainId },
      terms.annualWrites,
    );
    if (!reserved) return refused("SPONSORED_WRITE_LIMIT_EXCEEDED", "Sponsored write limit exceeded");
    return {
      release: () => deps.ledger.release(id, deps.clock.nowMs()),
      onSigned: async (tx) => {
        if (!(await deps.ledger.markSigned(id, tx, deps.clock.nowMs()))) throw new Error("The reservation was released before sending");
      },
      onSent: () => deps.ledger.markSent(id, deps.clock.nowMs()),
      onMined: (outcome) => deps.ledger.commit(id, outcome, deps.clock.nowMs()),
      // Gas burned without the attestation landing (a factory call that deployed nothing, a revert) is not given
      // back (issue 23): the write is committed with no uid, so a wallet cannot make the relay burn gas for free.
      onBurned: (burn) => deps.ledger.commit(id, { ...burn, uid: null }, deps.clock.nowMs()),
    };
  }

  const subjectDidOf = (body: unknown) => typeof body === "object" && body !== null ? (body as { subjectDid?: unknown }).subjectDid : undefined;
  type Hooks = { onSubmitting?: ((key: string) => Promise<void>) | undefined };
  type BatchHooks = { onSubmitting?: DelegatedAttestBatchCaller["onSubmitting"] };

  /** `caller`: the signed-in account, or a paying agent (decisions §13); `hooks`: the submission's tracking (§23). */
  const privateRelay = function privateRelay(body: unknown, account: Account | PayingAgent, hooks: Hooks = {}) {
    return deps.attest(body, { clientKey: gasShareKey(account), admit: (request) => admit(account, request, subjectDidOf(body)), onSubmitting: hooks.onSubmitting });
  };
  /**
   * A batch (decisions §23): every request checked as `privateRelay` checks it, each sent one a sponsored write of its
   * own (reserved, then committed or given back with its item); undefined when the attestation use case cannot batch.
   */
  const batch = deps.attest.batch === undefined ? undefined : (bodies: readonly unknown[], account: Account | PayingAgent, hooks: BatchHooks = {}) =>
    deps.attest.batch!(bodies, {
      clientKey: gasShareKey(account),
      admit: (request, index) => admit(account, request, subjectDidOf(bodies[index])),
      onSubmitting: hooks.onSubmitting,
    });
  return Object.assign(privateRelay, { batch });
}

/**
 * Whose share of the private relay's hourly gas a write is charged to (the guard's client key): `free:<account>` for an
 * account on the free plan, whose share is bounded (`PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR`: free accounts cost
 * nothing to make, so a few of them closed the relay for an hour, paying accounts too); `paid:<account>` and
 * `paid:<payer ledger id>` (x402) are not (they paid for their writes).
 */
export function gasShareKey(caller: Account | PayingAgent): string {
  if ("kind" in caller) return `paid:${payerLedgerId(caller.address)}`;
  return `${caller.plan === "free" ? "free" : "paid"}:${caller.id}`;
}

/** The private relay use case. */
export type PrivateRelay = ReturnType<typeof createPrivateRelay>;
