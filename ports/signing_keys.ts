/** What a signing key is used for (decisions §17): the account's attestation wallet, or a key a service signs with. */
export type SigningKeyType = "attestation" | "service-signing";

/** A signing key an account registered: metadata only; its trust lives on the chain and at the subject's endpoints. */
export type SigningKeyRecord = {
  readonly id: string;
  readonly accountId: string;
  /** Canonical (normalized) DID of the key. */
  readonly keyDid: string;
  readonly keyType: SigningKeyType;
  readonly displayName: string;
  readonly tags: readonly string[];
  readonly notes: string | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
};

/** What an upsert did: `created` (a new row), `updated` (the account held the key already), or `limit` (nothing written). */
export type SigningKeyUpsert =
  | { readonly outcome: "created" | "updated"; readonly record: SigningKeyRecord }
  | { readonly outcome: "limit" };

/** The signing keys of accounts; one row per account and key DID (another account may register the same key). */
export interface SigningKeyStore {
  /**
   * Inserts the record, or, when the account already holds `keyDid`, overwrites its display name, tags, notes and
   * update time, keeping its id, creation time and key type. A new key beyond `maxPerAccount` of the account's keys
   * is `limit`. Atomic: parallel upserts of one key leave one row, and parallel new keys never pass the limit.
   */
  readonly upsert: (record: SigningKeyRecord, maxPerAccount: number) => Promise<SigningKeyUpsert>;
  /** The account's keys, newest first (creation time, then id), optionally only of one type or holding one tag. */
  readonly list: (accountId: string, filter?: { readonly keyType?: SigningKeyType | undefined; readonly tag?: string | undefined }) => Promise<SigningKeyRecord[]>;
}
