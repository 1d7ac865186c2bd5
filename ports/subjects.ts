/** A subject an account holds (decisions §12): a DID it has proven to own. */
export type Subject = {
  readonly id: string;
  readonly accountId: string;
  readonly canonicalDid: string;
  /** keccak256 of the UTF-8 canonical DID. */
  readonly subjectDidHash: string;
  readonly displayName: string | null;
  readonly isDefault: boolean;
  /** The wallet's own did:pkh every account starts with; replaced by the first subject the account adds. */
  readonly bootstrap: boolean;
  readonly ownershipMethod: string;
  readonly ownershipWalletDid: string;
  readonly verifiedAtMs: number;
  readonly createdAtMs: number;
};

/** The subjects of accounts; every change is atomic, one default per account. */
export interface SubjectStore {
  /** The account's subjects, default first, then oldest first. */
  readonly list: (accountId: string) => Promise<Subject[]>;
  /** Inserts the bootstrap subject unless the account has any subject. */
  readonly ensureBootstrap: (subject: Subject) => Promise<void>;
  /**
   * Adds a subject: `exists` when the account holds that DID already; `limit` when it already holds
   * `maxPerAccount` subjects besides the bootstrap one (counted in the insert's transaction, so parallel adds never
   * pass it). The first subject an account adds replaces its bootstrap subject and becomes the default; later ones
   * are not default.
   */
  readonly add: (subject: Subject, maxPerAccount: number) => Promise<"added" | "exists" | "limit">;
  /** Renames, or makes default (the previous default stops being one); undefined for another account's or an unknown id. */
  readonly update: (accountId: string, id: string, change: { readonly displayName?: string | null; readonly isDefault?: true }) => Promise<Subject | undefined>;
  /** Removes a subject; the oldest remaining one becomes default when the default went. False when unknown. */
  readonly remove: (accountId: string, id: string) => Promise<boolean>;
}
