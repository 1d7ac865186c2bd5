/**
 * Signing keys of an account (decisions §17), drop-in compatible with the reference backend's records: `upsert`
 * registers or updates `{keyDid, keyType, displayName, tags?, notes?}` (an update keeps the id, the creation time and
 * the key type; another account may register the same key), `list` answers the account's keys newest first, filtered
 * by `keyType` and `tag`. Beyond the reference, each listed key carries its status and trust level for every subject
 * of the account, computed by the service ({@link createKeyTrust}).
 *
 * Validation as the reference's: `keyDid` a did:pkh (5 parts), did:key, did:jwk or did:ethr, stored canonical;
 * `keyType` `attestation` or `service-signing`; `displayName` trimmed, 1–200 characters; at most 10 tags, each a
 * non-blank string of at most 50; `notes` at most 1,000 characters or null. Every refusal names the field.
 * Beyond it: an account holds at most `maxPerAccount` keys (`SIGNING_KEY_LIMIT_EXCEEDED`), so nobody fills the
 * database or makes the list's trust computation unbounded; and a list judges every key for at most `maxSubjects`
 * subjects (the account's first: default, then oldest), so one answer holds at most `maxPerAccount` × `maxSubjects`
 * verdicts (issue 33), whatever an account stored before the subject bound existed.
 */
import type { Account } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { Random } from "../../ports/random.ts";
import type { SigningKeyRecord, SigningKeyStore, SigningKeyType } from "../../ports/signing_keys.ts";
import { DEFAULT_MAX_SUBJECTS_PER_ACCOUNT } from "../accounts/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import type { KeyStatusValue, TrustLevel } from "./key_rules.ts";
import { type KeyTrustMany, readKeyDid } from "./key_status.ts";
import { displayTextProblem } from "../display_text.ts";

/** A signing key as the API answers it (the reference's fields). */
export type SigningKeyView = {
  readonly id: string;
  readonly accountId: string;
  readonly keyDid: string;
  readonly keyType: SigningKeyType;
  readonly displayName: string;
  readonly tags: readonly string[];
  readonly notes: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
};

/** The status and trust level of a key for one of the account's subjects. */
export type KeySubjectTrust = { readonly subjectDid: string; readonly status: KeyStatusValue; readonly trustLevel: TrustLevel };

/**
 * A listed key: the reference's fields, plus `subjects` (null when the chain or an endpoint could not be read; then
 * `subjectsError` says why, and nothing is guessed).
 */
export type ListedSigningKey = SigningKeyView & {
  readonly subjects: readonly KeySubjectTrust[] | null;
  readonly subjectsError?: { readonly code: string; readonly error: string } | undefined;
};

/** Codes of the signing-key use cases. */
export type SigningKeyCode = "INVALID_INPUT" | "SIGNING_KEY_LIMIT_EXCEEDED";

export const KEY_TYPES: readonly SigningKeyType[] = ["attestation", "service-signing"];
export const MAX_KEY_DISPLAY_NAME = 200;
export const MAX_TAGS = 10;
export const MAX_TAG_LENGTH = 50;
export const MAX_NOTES = 1_000;
/** Keys one account may hold, by default. */
export const DEFAULT_MAX_KEYS_PER_ACCOUNT = 100;

/** What the signing-key use cases need. */
export type SigningKeysDeps = {
  readonly store: SigningKeyStore;
  readonly clock: Clock;
  readonly random: Random;
  /** The canonical DIDs of the account's subjects, default first. */
  readonly subjectsOf: (account: Account) => Promise<readonly string[]>;
  /** The verdicts of keys for subjects, now. */
  readonly trust: KeyTrustMany;
  readonly maxPerAccount?: number | undefined;
  /** Subjects each listed key is judged for, the account's first (`SUBJECTS_PER_ACCOUNT`); default its default. */
  readonly maxSubjects?: number | undefined;
};

type Input = { keyDid: string; keyType: SigningKeyType; displayName: string; tags: string[]; notes: string | null };

/** Reads an upsert body, naming the first field that is wrong. */
export function readSigningKeyBody(body: unknown): Result<Input, "INVALID_INPUT"> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fail("INVALID_INPUT", "Body must be a JSON object");
  const b = body as Record<string, unknown>;
  const keyDid = readKeyDid(b.keyDid);
  if (!keyDid.ok) return fail("INVALID_INPUT", keyDid.message);
  if (typeof b.keyType !== "string" || b.keyType.trim() === "") return fail("INVALID_INPUT", "keyType is required");
  const keyType = b.keyType.trim();
  if (!(KEY_TYPES as readonly string[]).includes(keyType)) return fail("INVALID_INPUT", "keyType must be 'attestation' or 'service-signing'");
  if (typeof b.displayName !== "string" || b.displayName.trim() === "") return fail("INVALID_INPUT", "displayName is required (non-empty)");
  const displayName = b.displayName.trim();
  if (displayName.length > MAX_KEY_DISPLAY_NAME) return fail("INVALID_INPUT", `displayName must be at most ${MAX_KEY_DISPLAY_NAME} characters`);
  const nameProblem = displayTextProblem("displayName", displayName);
  if (nameProblem !== undefined) return fail("INVALID_INPUT", nameProblem);
  const tags = b.tags ?? [];
  if (!Array.isArray(tags)) return fail("INVALID_INPUT", "tags must be an array of strings");
  if (tags.length > MAX_TAGS) return fail("INVALID_INPUT", `tags: at most ${MAX_TAGS} tags are allowed`);
  for (const [i, tag] of tags.entries()) {
    if (typeof tag !== "string" || tag.trim() === "") return fail("INVALID_INPUT", `tags[${i}] must be a non-empty string`);
    if (tag.length > MAX_TAG_LENGTH) return fail("INVALID_INPUT", `tags[${i}] must be at most ${MAX_TAG_LENGTH} characters`);
    const tagProblem = displayTextProblem(`tags[${i}]`, tag);
    if (tagProblem !== undefined) return fail("INVALID_INPUT", tagProblem);
  }
  const notes = b.notes ?? null;
  if (notes !== null && typeof notes !== "string") return fail("INVALID_INPUT", "notes must be a string or null");
  if (notes !== null && notes.length > MAX_NOTES) return fail("INVALID_INPUT", `notes must be at most ${MAX_NOTES} characters`);
  const notesProblem = notes === null ? undefined : displayTextProblem("notes", notes, { multiline: true });
  if (notesProblem !== undefined) return fail("INVALID_INPUT", notesProblem);
  return ok({ keyDid: keyDid.value, keyType: keyType as SigningKeyType, displayName, tags: tags as string[], notes });
}

/** A stored key as the API answers it. */
export function signingKeyView(r: SigningKeyRecord): SigningKeyView {
  return {
    id: r.id,
    accountId: r.accountId,
    keyDid: r.keyDid,
    keyType: r.keyType,
    displayName: r.displayName,
    tags: [...r.tags],
    notes: r.notes,
    createdAt: new Date(r.createdAtMs).toISOString(),
    updatedAt: new Date(r.updatedAtMs).toISOString(),
  };
}

/** Builds the signing-key use cases for signed-in accounts. */
export function createSigningKeys(deps: SigningKeysDeps) {
  const max = deps.maxPerAccount ?? DEFAULT_MAX_KEYS_PER_ACCOUNT;
  const newId = () => {
    // A version 4 UUID, as the reference's ids are.
    const b = deps.random.bytes(16);
    b[6] = (b[6]! & 0x0f) | 0x40;
    b[8] = (b[8]! & 0x3f) | 0x80;
    const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  return {
    /** Registers or updates a key of the account: `created` tells which. */
    async upsert(account: Account, body: unknown): Promise<Result<SigningKeyView & { readonly created: boolean }, SigningKeyCode>> {
      const input = readSigningKeyBody(body);
      if (!input.ok) return input;
      const now = deps.clock.nowMs();
      const written = await deps.store.upsert({ id: newId(), accountId: account.id, ...input.value, createdAtMs: now, updatedAtMs: now }, max);
      if (written.outcome === "limit") {
        return fail("SIGNING_KEY_LIMIT_EXCEEDED", `An account holds at most ${max} signing keys; update one of them instead`);
      }
      const { createdAt, updatedAt, ...view } = signingKeyView(written.record);
      // The reference's field order: `created` before the times.
      return ok({ ...view, created: written.outcome === "created", createdAt, updatedAt });
    },
    /** The account's keys newest first, each with its verdict for every subject of the account. */
    async list(account: Account, filter: { keyType?: string | undefined; tag?: string | undefined } = {}): Promise<ListedSigningKey[]> {
      // A tag holds no control character (a stored one never does: tags are display text): such a filter matches
      // nothing, and is not sent to the store (U+0000 answered 500 on PostgreSQL).
      if (filter.tag !== undefined && /\p{Cc}/u.test(filter.tag)) return [];
      // So does a key type that is none of the two (it was sent as given).
      if (filter.keyType !== undefined && filter.keyType !== "" && filter.keyType !== "attestation" && filter.keyType !== "service-signing") return [];
      const records = await deps.store.list(account.id, {
        keyType: filter.keyType === undefined || filter.keyType === "" ? undefined : filter.keyType as SigningKeyType,
        tag: filter.tag === undefined || filter.tag === "" ? undefined : filter.tag,
      });
      if (records.length === 0) return [];
      const subjects = (await deps.subjectsOf(account)).slice(0, deps.maxSubjects ?? DEFAULT_MAX_SUBJECTS_PER_ACCOUNT);
      const verdicts = await deps.trust(subjects, [...new Set(records.map((r) => r.keyDid))]);
      return records.map((r) => {
        const view = signingKeyView(r);
        if (!verdicts.ok) return { ...view, subjects: null, subjectsError: { code: verdicts.code, error: verdicts.message } };
        return {
          ...view,
          subjects: subjects.map((subjectDid) => ({ subjectDid, ...verdicts.value.get(subjectDid)!.get(r.keyDid)! })),
        };
      });
    },
  };
}

/** The signing-key use cases. */
export type SigningKeys = ReturnType<typeof createSigningKeys>;
