/**
 * The subjects of an account (decisions §12): the DIDs it has proven to own. Every account starts with its
 * wallet's did:pkh as its default (bootstrap) subject; the first subject it adds, once the signed-in wallet is
 * proven to own it, replaces the bootstrap one and becomes the default. The same DID twice in one account is
 * refused; two accounts may both hold a DID (no squatting). Another account's subject is not found.
 *
 * Beyond the reference (issue 33): an account holds at most `maxPerAccount` subjects besides the bootstrap one
 * (`SUBJECT_LIMIT_EXCEEDED`, checked before the ownership lookup and again in the insert's transaction), and a did:pkh
 * subject must name a chain the service knows (`knownChains`: the trust anchors' chains and the chains it is
 * configured for; else `UNSUPPORTED_CHAIN`), so that nobody fills an account with the wallet's own address on
 * thousands of made-up chains, each costing key-trust work in every signing-key list.
 */
import type { Account } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { Random } from "../../ports/random.ts";
import type { Subject, SubjectStore } from "../../ports/subjects.ts";
import { MAX_DISPLAY_NAME, walletDid } from "./account_views.ts";
import { computeDidHash, normalizeSubjectDid, parseDidPkh } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import type { VerifySubjectOwnership } from "./subject_ownership.ts";
import { displayTextProblem } from "../display_text.ts";

/** A subject as the API answers it. */
export type SubjectView = {
  readonly id: string;
  readonly canonicalDid: string;
  readonly subjectDidHash: string;
  readonly displayName: string | null;
  readonly isDefault: boolean;
  readonly ownership: { readonly method: string; readonly walletDid: string; readonly verifiedAt: string };
  readonly createdAt: string;
};

export type SubjectCode =
  | "INVALID_INPUT"
  | "INVALID_DID"
  | "NETWORK_ERROR"
  | "SUBJECT_OWNERSHIP_VERIFICATION_FAILED"
  | "SUBJECT_ALREADY_EXISTS"
  | "SUBJECT_LIMIT_EXCEEDED"
  | "UNSUPPORTED_CHAIN"
  | "SUBJECT_NOT_FOUND";

/** Subjects one account may hold besides its bootstrap subject, by default (`SUBJECTS_PER_ACCOUNT`). */
export const DEFAULT_MAX_SUBJECTS_PER_ACCOUNT = 20;

/** Builds the subject use cases for signed-in accounts. */
export function createSubjects(deps: {
  readonly store: SubjectStore;
  readonly ownership: VerifySubjectOwnership;
  readonly clock: Clock;
  readonly random: Random;
  readonly chainId: number;
  /** Subjects an account may hold besides the bootstrap one; default {@link DEFAULT_MAX_SUBJECTS_PER_ACCOUNT}. */
  readonly maxPerAccount?: number | undefined;
  /** CAIP-2 ids (`eip155:1`) a did:pkh subject may name; default the active chain only. */
  readonly knownChains?: readonly string[] | undefined;
}) {
  const max = deps.maxPerAccount ?? DEFAULT_MAX_SUBJECTS_PER_ACCOUNT;
  const knownChains = new Set([...(deps.knownChains ?? []), `eip155:${deps.chainId}`]);
  const limitExceeded = () => fail("SUBJECT_LIMIT_EXCEEDED" as const, `An account holds at most ${max} subjects; delete one first`);
  const newId = () => `sub_${Array.from(deps.random.bytes(12), (b) => b.toString(16).padStart(2, "0")).join("")}`;
  const view = (s: Subject): SubjectView => ({
    id: s.id,
    canonicalDid: s.canonicalDid,
    subjectDidHash: s.subjectDidHash,
    displayName: s.displayName,
    isDefault: s.isDefault,
    ownership: { method: s.ownershipMethod, walletDid: s.ownershipWalletDid, verifiedAt: new Date(s.verifiedAtMs).toISOString() },
    createdAt: new Date(s.createdAtMs).toISOString(),
  });
  const subjectOf = (account: Account, did: string, method: string, bootstrap: boolean, displayName: string | null): Subject => {
    const now = deps.clock.nowMs();
    const hash = computeDidHash(did);
    return {
      id: newId(),
      accountId: account.id,
      canonicalDid: did,
      subjectDidHash: hash.ok ? hash.value : "",
      displayName,
      isDefault: false,
      bootstrap,
      ownershipMethod: method,
      ownershipWalletDid: walletDid(account, deps.chainId),
      verifiedAtMs: now,
      createdAtMs: now,
    };
  };
  const ensure = (account: Account) => deps.store.ensureBootstrap(subjectOf(account, walletDid(account, deps.chainId), "wallet", true, null));
  const readName = (value: unknown): Result<string | null, "INVALID_INPUT"> => {
    if (value === null || value === undefined) return ok(null);
    if (typeof value !== "string") return fail("INVALID_INPUT", "displayName must be a string or null");
    const trimmed = value.trim();
    if (trimmed.length > MAX_DISPLAY_NAME) return fail("INVALID_INPUT", `displayName must be at most ${MAX_DISPLAY_NAME} characters`);
    const problem = displayTextProblem("displayName", trimmed);
    if (problem !== undefined) return fail("INVALID_INPUT", problem);
    return ok(trimmed === "" ? null : trimmed);
  };

  return {
    async list(account: Account): Promise<SubjectView[]> {
      await ensure(account);
      return (await deps.store.list(account.id)).map(view);
    },
    async primary(account: Account): Promise<SubjectView> {
      await ensure(account);
      return view((await deps.store.list(account.id))[0]!);
    },
    async get(account: Account, id: string): Promise<Result<SubjectView, SubjectCode>> {
      await ensure(account);
      const found = (await deps.store.list(account.id)).find((s) => s.id === id);
      return found === undefined ? fail("SUBJECT_NOT_FOUND", "Subject not found") : ok(view(found));
    },
    /** Adds `{did, displayName?, txHash?}` (`subjectDid` accepted for `did`) once the signed-in wallet is proven to own it. */
    async add(account: Account, body: Record<string, unknown>): Promise<Result<SubjectView, SubjectCode>> {
      const raw = body.did ?? body.subjectDid;
      if (typeof raw !== "string" || raw.trim() === "") return fail("INVALID_INPUT", "did is required");
      const did = normalizeSubjectDid(raw);
      if (!did.ok) return fail("INVALID_DID", `did is not a subject this service takes: ${did.message}`);
      if (did.value.startsWith("did:pkh:")) {
        const pkh = parseDidPkh(did.value);
        // A chain of this deployment, by its CAIP-2 id (the subject rule has already refused `eip155:01` and the like).
        if (!pkh.ok || !knownChains.has(`${pkh.value.namespace}:${pkh.value.chainId}`)) {
          return fail("UNSUPPORTED_CHAIN", `A did:pkh subject must be on a chain this service knows: ${[...knownChains].sort().join(", ")}`);
        }
      }
      const name = readName(body.displayName);
      if (!name.ok) return name;
      if (body.txHash !== undefined && typeof body.txHash !== "string") return fail("INVALID_INPUT", "txHash must be 32 bytes of hex");
      const txHash = body.txHash as string | undefined;
      // A subject held already, or a full account, costs no lookup; the insert's transaction checks both again.
      const held = await deps.store.list(account.id);
      if (held.some((s) => s.canonicalDid === did.value)) return fail("SUBJECT_ALREADY_EXISTS", "The account already holds this subject");
      if (held.filter((s) => !s.bootstrap).length >= max) return limitExceeded();
      const proof = await deps.ownership({ subjectDid: did.value, connectedWalletDid: walletDid(account, deps.chainId), txHash });
      if (!proof.ok) return proof;
      if (!proof.value.ok || proof.value.method === undefined) {
        return fail(
          "SUBJECT_OWNERSHIP_VERIFICATION_FAILED",
          proof.value.error ?? "The signed-in wallet could not be proven to own the subject",
          proof.value.details ?? proof.value.error,
        );
      }
      await ensure(account);
      const subject = subjectOf(account, did.value, proof.value.method, false, name.value);
      const added = await deps.store.add(subject, max);
      if (added === "exists") return fail("SUBJECT_ALREADY_EXISTS", "The account already holds this subject");
      if (added === "limit") return limitExceeded();
      const stored = (await deps.store.list(account.id)).find((s) => s.id === subject.id)!;
      return ok(view(stored));
    },
    async update(account: Account, id: string, body: Record<string, unknown>): Promise<Result<SubjectView, SubjectCode>> {
      const change: { displayName?: string | null; isDefault?: true } = {};
      if ("displayName" in body) {
        const name = readName(body.displayName);
        if (!name.ok) return name;
        change.displayName = name.value;
      }
      if ("isDefault" in body) {
        if (body.isDefault !== true) return fail("INVALID_INPUT", "isDefault can only be set to true");
        change.isDefault = true;
      }
      if (Object.keys(change).length === 0) return fail("INVALID_INPUT", "Give displayName or isDefault");
      await ensure(account);
      const updated = await deps.store.update(account.id, id, change);
      return updated === undefined ? fail("SUBJECT_NOT_FOUND", "Subject not found") : ok(view(updated));
    },
    async remove(account: Account, id: string): Promise<Result<true, SubjectCode>> {
      return (await deps.store.remove(account.id, id)) ? ok(true) : fail("SUBJECT_NOT_FOUND", "Subject not found");
    },
  };
}

/** The subject use cases. */
export type Subjects = ReturnType<typeof createSubjects>;
