/**
 * The private relay (decisions §12): delegated attestation for a signed-in account, paid from its plan's
 * sponsored writes. The checks of decisions §6 run as on the public route. The relay's own checks are, in this order:
 * the attester is the account's wallet (403 ATTESTER_MISMATCH), the plan may write the schema (403
 * SCHEMA_NOT_ELIGIBLE), for a subject-scoped schema the subject inside the signed data (its decoded `subject`, whose
 * DID address must be the recipient) agrees with a given `subjectDid` (400 INVALID_INPUT) and is the wallet's own or
 * one of the account's proven subjects (403 SUBJECT_OWNERSHIP_REQUIRED) — for a schema whose authority lives behind
 * `refUID` ({@link REFERENCED_AUTHORITY}: a review's response) the subject checked, and the one `subjectDid` must
 * name, is that of the attestation `refUID` names, read from the chain, and the response's own subject must be the
 * did:pkh of that attestation's attester (400 INVALID_INPUT) — and one sponsored write is reserved atomically from the
 * witness's ledger (403 SPONSORED_WRITE_LIMIT_EXCEEDED).
 *
 * What of these needs no chain (the wallet, the plan, the subject's shape, an ownership storage alone refuses, and a
 * read-only look at the writes left) is checked before any RPC, right after the replay lookup (`precheck`: a
 * signature on record still answers with its outcome first); found by attack, such refusals were made only after the
 * attester's nonce and the delegate's balance had been read. The rest runs once the signature verified and before
 * anything is recorded or spent (`admit`), which repeats the checks that need nothing and reserves the write; so a
 * request whose ownership must be read from the chain or proven again now is told of an exhausted quota first. The
 * write follows the transaction (signed, sent, committed with the receipt) and is given back when nothing was
 * broadcast; the reconciler settles it like a witness.
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
import type { DelegatedAttestCaller } from "./_delegated_attest_types.ts";
import { buildDidPkh, didToAddress, normalizeDid } from "../did/mod.ts";
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
  /**
   * The signed data's own `subject` must be the did:pkh, on the write's chain, of the attester of the attestation
   * `refUID` names (and the recipient, as everywhere in the relay, that DID's address): a response is about the reviewer.
   */
  readonly subjectIsAttester?: boolean | undefined;
};

/**
 * Schemas whose authority lives behind `refUID`: a `user-review-response` is the reviewed service's answer, so it
 * is its owner (the subject of the review `refUID` names) who may write it, not the owner of the response's own
 * `subject` (the reviewer's did:pkh, reference §3.1). The public relay never writes these (main.ts refuses them in
 * `SUBSIDIZED_SCHEMAS`): it has no identity whose ownership could be checked.
 */
export const REFERENCED_AUTHORITY: ReadonlyMap<string, ReferencedAuthority> = new Map([
  ["user-review-response", { of: "user-review", repeatedIn: "refUID", subjectIsAttester: true }],
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

/** A given `subjectDid` names `did` (normalized as the relay normalizes subjects). */
function namesSubject(subjectDid: unknown, did: string): boolean {
  const given = typeof subjectDid === "string" ? normalizeDid(subjectDid) : undefined;
  return given !== undefined && given.ok && given.value === did;
}

/** A failure with the relay's own status (403 for an attester that is not the account's wallet). */
const refused = (code: string, message: string, status?: number): DelegatedAttestFailure =>
  ({ ...fail(code as never, message), ...(status === undefined ? {} : { status }) }) as DelegatedAttestFailure;

const limitExceeded = () => refused("SPONSORED_WRITE_LIMIT_EXCEEDED", "Sponsored write limit exceeded");

/** What the request and the caller alone decide (no storage, no chain): who writes, under which terms, about whom. */
type Standing = {
  readonly payer: PayingAgent | undefined;
  readonly account: Pick<Account, "id" | "address" | "plan">;
  readonly name: string;
  readonly terms: PlanPolicy[keyof PlanPolicy];
  /** For a subject-scoped schema: the signed data's own subject (normalized) and its decoded fields. */
  readonly scoped?: { readonly subject: string; readonly data: Readonly<Record<string, unknown>> } | undefined;
};

/**
 * The relay's checks that need neither storage nor chain, in the order of the module's doc: the attester is the
 * caller's wallet, the plan may write the schema, a subject-scoped request's subject decodes and its DID address is
 * the recipient, and (own subject) a given `subjectDid` names it, or (a schema of {@link REFERENCED_AUTHORITY}) its
 * refUID is not zero and is the one its data repeats.
 */
function standing(deps: PrivateRelayDeps, caller: Account | PayingAgent, request: DelegatedRequest, subjectDid: unknown): Standing | DelegatedAttestFailure {
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
  if (!deps.subjectScoped.has(name)) return { payer, account, name, terms };
  const definition = findSchemaByName(name);
  const decoded = definition === undefined ? undefined : decodeSchemaData(definition.schema, request.data);
  const subject = decoded?.ok && typeof decoded.value.subject === "string" ? normalizeDid(decoded.value.subject) : undefined;
  if (subject === undefined || !subject.ok) return refused("INVALID_INPUT", "The signed data names no subject DID");
  const address = didToAddress(subject.value);
  if (!address.ok || address.value.toLowerCase() !== request.recipient.toLowerCase()) {
    return refused("INVALID_INPUT", "recipient must be the DID address of the signed data's subject");
  }
  const data = decoded?.ok ? decoded.value : {};
  const rule = REFERENCED_AUTHORITY.get(name);
  if (rule !== undefined) {
    if (ZERO_UID.test(request.refUID)) return refused("INVALID_INPUT", `refUID must name the ${rule.of} attestation this ${name} answers`);
    if (rule.repeatedIn !== undefined) {
      const repeated = data[rule.repeatedIn];
      if (typeof repeated !== "string" || repeated.toLowerCase() !== request.refUID.toLowerCase()) {
        return refused("INVALID_INPUT", `refUID differs from the ${rule.repeatedIn} field inside the signed data`);
      }
    }
  } else if (subjectDid !== undefined && !namesSubject(subjectDid, subject.value)) {
    return refused("INVALID_INPUT", "subjectDid differs from the subject inside the signed data");
  }
  return { payer, account, name, terms, scoped: { subject: subject.value, data } };
}

/**
 * What storage alone says of the caller's ownership of `authority`: owned (the wallet's own did:pkh, or an account's
 * subject with no ownership check configured), to be proven now by the ownership rules (an account's kept subject,
 * with how it was proven; any subject of a paying agent), or refused (403 SUBJECT_OWNERSHIP_REQUIRED).
 */
async function storedOwnership(deps: PrivateRelayDeps, s: Standing, authority: string): Promise<{ readonly prove: boolean; readonly provenBy?: string } | DelegatedAttestFailure> {
  const notOwned = () => refused("SUBJECT_OWNERSHIP_REQUIRED", `Only an owner of ${authority} may write ${s.name}: add it as a subject first`);
  if (authority === walletDid(s.account, deps.chainId)) return { prove: false };
  if (s.payer !== undefined) return deps.verifyOwnership === undefined ? notOwned() : { prove: true };
  // An account's subject, proven when it was added, is proven again as it stands now: a DNS record taken down,
  // a contract's owner() moved on, and the former owner kept writing key bindings for it.
  const kept = (await deps.subjects.list(s.account.id)).find((subject) => subject.canonicalDid === authority);
  if (kept === undefined) return notOwned();
  return deps.verifyOwnership === undefined ? { prove: false } : { prove: true, provenBy: kept.ownershipMethod };
}

/**
 * The subject whose owner may write `s.name`: the signed data's own `subject`, or for a schema of
 * {@link REFERENCED_AUTHORITY} the subject of the attestation `refUID` names, read from the chain (one call).
 * That attestation must exist, be of the table's schema and not be revoked (400 INVALID_INPUT naming refUID), and
 * the response's own `subject` must be the did:pkh, on the write's chain, of that attestation's attester (reference
 * §3.1: the reviewer's; its DID address, the recipient, was checked with it): before, the owner of a reviewed
 * service answered with any third party as subject and recipient, and the relay wrote a subject-scoped attestation
 * about a subject its attester does not own. A read that cannot be made is 502 NETWORK_ERROR, never a refusal or an
 * acceptance.
 */
async function authoritySubject(deps: PrivateRelayDeps, s: Standing & { scoped: NonNullable<Standing["scoped"]> }, request: DelegatedRequest): Promise<string | DelegatedAttestFailure> {
  const rule = REFERENCED_AUTHORITY.get(s.name);
  if (rule === undefined) return s.scoped.subject;
  const read = await deps.readAttestation(request.refUID);
  if (!read.ok) return refused("NETWORK_ERROR", "The attestation refUID names could not be read from the chain");
  const target = read.attestation;
  if (target === null) return refused("INVALID_INPUT", `refUID names no attestation on this chain (expected a ${rule.of})`);
  const targetName = deps.schemaNames.get(target.schema.toLowerCase());
  if (targetName !== rule.of) {
    return refused("INVALID_INPUT", `refUID names a ${targetName ?? "non-anchored"} attestation, not a ${rule.of}`);
  }
  if (target.revocationTime !== 0n) return refused("INVALID_INPUT", `refUID names a revoked ${rule.of}`);
  if (rule.subjectIsAttester === true) {
    const expected = buildDidPkh("eip155", deps.chainId, target.attester);
    if (!expected.ok || expected.value !== s.scoped.subject) {
      return refused(
        "INVALID_INPUT",
        `subject must be ${expected.ok ? expected.value : "the did:pkh of its attester"}, the did:pkh of the attester of the ${rule.of} refUID names (and recipient its DID address)`,
      );
    }
  }
  const definition = findSchemaByName(rule.of);
  const decoded = definition === undefined ? undefined : decodeSchemaData(definition.schema, target.data);
  const subject = decoded?.ok && typeof decoded.value.subject === "string" ? normalizeDid(decoded.value.subject) : undefined;
  if (subject === undefined || !subject.ok) return refused("INVALID_INPUT", `The ${rule.of} refUID names has no subject DID`);
  return subject.value;
}

/** Builds the relay: `(body, account)` → the delegated attestation's result. */
export function createPrivateRelay(deps: PrivateRelayDeps) {
  const newId = () => Array.from(deps.random.bytes(16), (b) => b.toString(16).padStart(2, "0")).join("");

  /**
   * The relay's refusals that need no chain, run before any RPC (the use case's `precheck`): {@link standing}; for a
   * subject-scoped schema whose authority is its own subject, what storage says of its ownership; then a read-only
   * look at the account's sponsored writes left (403 SPONSORED_WRITE_LIMIT_EXCEEDED), as the witness looks. Found by
   * attack: each was refused only after the attester's nonce and the delegate's balance were read. The reservation in
   * {@link admit} stays the atomic check; a schema whose authority is read from the chain, and an ownership to prove
   * again now, are looked at there, so such a request is told of an exhausted quota first.
   */
  async function precheck(caller: Account | PayingAgent, request: DelegatedRequest, subjectDid: unknown): Promise<DelegatedAttestFailure | undefined> {
    const s = standing(deps, caller, request, subjectDid);
    if ("ok" in s) return s;
    if (s.scoped !== undefined && !REFERENCED_AUTHORITY.has(s.name)) {
      const owned = await storedOwnership(deps, s, s.scoped.subject);
      if ("ok" in owned) return owned;
    }
    if (s.payer !== undefined) return undefined;
    const nowMs = deps.clock.nowMs();
    const usage = await deps.ledger.usage(s.account.id, quotaYear(nowMs), { nowMs });
    if (usage.used + usage.reserved >= s.terms.annualWrites) return limitExceeded();
    return undefined;
  }

  async function admit(caller: Account | PayingAgent, request: DelegatedRequest, subjectDid: unknown): Promise<DelegatedAttestFailure | CallerTicket> {
    const s = standing(deps, caller, request, subjectDid);
    if ("ok" in s) return s;
    const { payer, account, name, terms } = s;
    if (s.scoped !== undefined) {
      const scoped = { ...s, scoped: s.scoped };
      const authority = await authoritySubject(deps, scoped, request);
      if (typeof authority !== "string") return authority;
      if (subjectDid !== undefined && !namesSubject(subjectDid, authority)) {
        return refused(
          "INVALID_INPUT",
          REFERENCED_AUTHORITY.has(name)
            ? `subjectDid differs from ${authority}, the subject of the attestation refUID names, whose owner may write ${name}`
            : "subjectDid differs from the subject inside the signed data",
        );
      }
      const owned = await storedOwnership(deps, s, authority);
      if ("ok" in owned) return owned;
      if (owned.prove) {
        const wallet = walletDid(account, deps.chainId);
        const proof = await deps.verifyOwnership!(
          payer === undefined ? { subjectDid: authority, connectedWalletDid: wallet, provenBy: owned.provenBy } : { subjectDid: authority, connectedWalletDid: wallet },
        );
        if (!proof.ok && proof.code === "NETWORK_ERROR") return refused("NETWORK_ERROR", "The subject's ownership could not be looked up");
        if (payer === undefined && (!proof.ok || !proof.value.ok)) {
          const why = proof.ok && !proof.value.ok ? `: ${proof.value.error}` : "";
          return refused("SUBJECT_OWNERSHIP_REQUIRED", `The account's proof of ${authority} no longer holds${why}; prove it again`);
        }
        if (!proof.ok || !proof.value.ok) return refused("SUBJECT_OWNERSHIP_REQUIRED", `Only an owner of ${authority} may write ${name}: add it as a subject first`);
      }
    }
    const id = newId();
    const now = deps.clock.nowMs();
    const reserved = await deps.ledger.reserve(
      // The chain written on (decisions §30): that chain's reconciler settles the row after a crash.
      { id, accountId: account.id, year: quotaYear(now), fingerprint: `${account.id}|relay|${name}|${request.recipient.toLowerCase()}`, createdAtMs: now, chainId: deps.chainId },
      terms.annualWrites,
    );
    if (!reserved) return limitExceeded();
    return {
      // Called only when nothing was broadcast (or the node refused it): nothing of it can land.
      release: () => deps.ledger.release(id, deps.clock.nowMs(), "unsent"),
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
  type Hooks = { onSubmitting?: DelegatedAttestCaller["onSubmitting"] };
  type BatchHooks = { onSubmitting?: DelegatedAttestBatchCaller["onSubmitting"] };

  /** `caller`: the signed-in account, or a paying agent (decisions §13); `hooks`: the submission's tracking (§23). */
  const privateRelay = function privateRelay(body: unknown, account: Account | PayingAgent, hooks: Hooks = {}) {
    return deps.attest(body, {
      clientKey: gasShareKey(account),
      precheck: (request) => precheck(account, request, subjectDidOf(body)),
      admit: (request) => admit(account, request, subjectDidOf(body)),
      onSubmitting: hooks.onSubmitting,
    });
  };
  /**
   * A batch (decisions §23): every request checked as `privateRelay` checks it, each sent one a sponsored write of its
   * own (reserved, then committed or given back with its item); undefined when the attestation use case cannot batch.
   */
  const batch = deps.attest.batch === undefined ? undefined : (bodies: readonly unknown[], account: Account | PayingAgent, hooks: BatchHooks = {}) =>
    deps.attest.batch!(bodies, {
      clientKey: gasShareKey(account),
      precheck: (request, index) => precheck(account, request, subjectDidOf(bodies[index])),
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
