/**
 * What OAuth 2 for registered software keeps (decisions §19): clients, authorization codes, grants with their
 * refresh tokens, revoked access tokens and the service's token-signing keys. Secrets, codes and refresh tokens are
 * stored only as SHA-256 hashes (lowercase hex). One store per database, shared by the instances on it.
 */

/** How a client authenticates at the token endpoint (RFC 7591 `token_endpoint_auth_method`). */
export type ClientAuthMethod = "none" | "client_secret_basic" | "client_secret_post";

/** A registered client: a public one registered by anyone (RFC 7591) or an account's API client ("API key"). */
export type OAuthClient = {
  readonly clientId: string;
  /** The account that owns an API client; null for a client registered through `POST /oauth/register`. */
  readonly accountId: string | null;
  /** SHA-256 of the client secret; null for a public client. */
  readonly secretHash: string | null;
  readonly name: string | null;
  readonly redirectUris: readonly string[];
  readonly grantTypes: readonly string[];
  /** The scopes the client may ask for, space-separated. */
  readonly scope: string;
  readonly authMethod: ClientAuthMethod;
  readonly createdAtMs: number;
};

/** An authorization code, single use; stored by its hash. */
export type AuthorizationCode = {
  readonly codeHash: string;
  readonly clientId: string;
  readonly accountId: string;
  /** Where the code was sent: the request's `redirect_uri`, or the client's only registered one when it named none. */
  readonly redirectUri: string;
  /**
   * Whether the authorization request named `redirect_uri`: then the token request must name the same (RFC 6749
   * §4.1.3); when it did not, the token request may leave it out.
   */
  readonly redirectUriGiven: boolean;
  readonly scope: string;
  /** BASE64URL(SHA-256(code_verifier)) (PKCE S256). */
  readonly codeChallenge: string;
  /** The RFC 8707 resource the code was asked for; null: the service itself. */
  readonly resource: string | null;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
};

/** A stored code: `usedAtMs` and `grantId` are set by its one exchange. */
export type StoredCode = AuthorizationCode & { readonly usedAtMs: number | null; readonly grantId: string | null };

/** What a person authorised one client to do: the family of every refresh token issued from one code. */
export type Grant = {
  readonly id: string;
  readonly clientId: string;
  readonly accountId: string;
  readonly scope: string;
  readonly resource: string | null;
  readonly createdAtMs: number;
  /** The grant's refresh tokens and access tokens are dead once set. */
  readonly revokedAtMs: number | null;
};

/** A refresh token, single use: using it issues the next one of its grant (rotation). */
export type RefreshToken = {
  readonly tokenHash: string;
  readonly grantId: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
  /** Set once it was exchanged; a second use is reuse (RFC 6819 §5.2.2.3): its grant is revoked. */
  readonly usedAtMs: number | null;
};

/** What one exchange of a refresh token did. */
export type RefreshRotation =
  | { readonly kind: "rotated"; readonly grant: Grant }
  /** The token was used before: its grant (and so every token of it) is revoked now. */
  | { readonly kind: "reused"; readonly grantId: string }
  /** Unknown, expired, or its grant or client is gone or revoked. */
  | { readonly kind: "invalid" };

/**
 * How long a newly registered open client is never evicted (review finding 3: a client whose user was still signing in
 * was evicted by a burst of registrations from elsewhere). A real client is used within minutes of registering (the
 * user signs in and approves, and the code, live for 60 s, is exchanged); one unused after this long is abandoned or
 * a flood's. Flushing a real client out therefore takes more than the pool's registrations inside its first 10 minutes
 * and, after them, can still not take one that holds a live code.
 */
export const UNUSED_CLIENT_GRACE_MS = 10 * 60_000;

/**
 * The most unused clients one registration evicts (found by review): past the grace the pool may be thousands over
 * (it is passed while clients are young), and one registration evicting them all held a lock per client in one
 * transaction (PostgreSQL's lock table ran out) or the event loop (SQLite). Two a registration still shrinks an
 * overfull pool by one each time.
 */
export const MAX_EVICTIONS_PER_REGISTRATION = 2;

/**
 * The outcome of a registration: refused by the caller's own rate (its address, or its IPv6 /48 network), or stored,
 * with how many unused open clients it evicted to stay within the pool (see {@link RegistrationLimits.total}).
 */
export type RegistrationOutcome =
  | { readonly ok: true; readonly evicted: number }
  | { readonly ok: false; readonly limit: "client" | "network"; readonly retryAfterMs: number };

/**
 * Bounds of open registration (decisions §19). The caller's own rates refuse (429); the pool shared by everyone never
 * does: one network could otherwise spend it and close registration for every other client (attack review, finding 4).
 */
export type RegistrationLimits = {
  /** The caller's address key (an IPv4 address, an IPv6 /64, or `unknown`). */
  readonly client: string;
  /** Registrations one address key may make in the window (rows of the window, evicted ones included). */
  readonly perClient: number;
  /**
   * The caller's wider network, for an IPv6 caller: its /48's key (`2001:db8:1::/48`), stored with the client, and the
   * registrations all its /64s together may make in the window; null or absent for IPv4 and `unknown`.
   */
  readonly network?: { readonly key: string; readonly max: number } | null | undefined;
  /**
   * Unused open clients (never exchanged a code, not evicted) registered in the window that are kept at once: past it
   * a new registration evicts the oldest evictable one (its expired codes deleted, the client unknown from then on, its
   * row kept as the rate's record, metadata blanked, until pruning), so the pool bounds rows without refusing anyone.
   * Never evicted: a client registered less than {@link UNUSED_CLIENT_GRACE_MS} ago, or one holding a live code (a
   * user between approval and exchange). When none is evictable the pool is passed instead (nobody refused).
   */
  readonly total: number;
  readonly windowMs: number;
};

/**
 * Bounds on authorization codes that are live (neither exchanged nor expired at the new code's `createdAtMs`). Neither
 * refuses (attack review, finding 2: a client's shared bound refused every user once throwaway accounts filled it):
 * - `perAccount`: past it the account's own oldest live code goes, one for the same client first (so per account and
 *   client too, and one account's codes never push out another's);
 * - `perClient`: a row bound per client; past it the oldest live code of the account holding the most live codes of
 *   the client goes (a person holding one code loses it only when no account holds more).
 */
export type CodeLimits = { readonly perAccount: number; readonly perClient: number };

/** What storing a code under {@link CodeLimits} did: it is always stored; `evicted` live codes were deleted to make room. */
export type CodeSaveOutcome = { readonly evicted: number };

/** A client an account authorised through the consent page, with its live grants taken together. */
export type AuthorizedClient = {
  readonly clientId: string;
  readonly clientName: string | null;
  /** The distinct scope strings of its live grants (each space-separated). */
  readonly scopes: readonly string[];
  readonly firstAuthorizedAtMs: number;
  readonly lastAuthorizedAtMs: number;
  /** How many live grants (one per approved authorization) it holds. */
  readonly grants: number;
};

/** A token-signing key of the service: the private JWK stays in the store. */
export type StoredSigningKey = {
  readonly kid: string;
  /** The private JWK, as JSON text. */
  readonly privateJwk: string;
  /** The public JWK, as JSON text (what the JWKS publishes). */
  readonly publicJwk: string;
  readonly createdAtMs: number;
  /**
   * When `OAUTH_SIGNER` took over from the store's keys (decisions §27): from then on the key only verifies what it
   * signed before, and goes once its grace ends. Null: a key that may sign.
   */
  readonly retiredAtMs?: number | null | undefined;
  /** When an operator revoked it (`ops oauth revoke-signer-key`): it never signs or verifies again. Absent: not revoked. */
  readonly revokedAtMs?: number | undefined;
};

/**
 * The public key of an `OAUTH_SIGNER` (decisions §27) some instance signs with, recorded so that every instance
 * verifies and publishes the tokens of every other's signer and of the signer it had before a restart (a rotation
 * logs nobody out, §19). Public only: the signer keeps its private key.
 */
export type SignerPublicKey = {
  /** The key's RFC 7638 thumbprint, its tokens' `kid`. */
  readonly kid: string;
  /** The public JWK, as JSON text (what the JWKS publishes). */
  readonly publicJwk: string;
  /** When an instance first recorded it. */
  readonly firstSeenAtMs: number;
  /** When an instance signing with it last said so (at its start and at each upkeep); it goes once this is old enough. */
  readonly seenAtMs: number;
  /**
   * When an operator revoked it (a leaked key, or a forgotten instance still signing with a replaced one): it is
   * neither trusted nor published from then on, however recently an instance recorded it. Absent: not revoked.
   */
  readonly revokedAtMs?: number | undefined;
};

/** An operator's revocation of a token-signing key, kept for good (a key seen again stays revoked). */
export type RevokedKey = { readonly kid: string; readonly revokedAtMs: number };

/** Clients, codes, grants, refresh tokens, revoked access tokens and signing keys. */
export interface OAuthStore {
  /**
   * Stores an openly registered client if its address key and its network are under their rates, evicting the oldest
   * unused open clients past the pool ({@link RegistrationLimits}), atomically.
   */
  readonly registerClient: (client: OAuthClient, limits: RegistrationLimits, nowMs: number) => Promise<RegistrationOutcome>;
  /** Stores an account's API client unless the account already holds `maxPerAccount`; false then. */
  readonly createClient: (client: OAuthClient, maxPerAccount: number) => Promise<boolean>;
  /** A client by its id; an evicted open client is unknown. */
  readonly findClient: (clientId: string) => Promise<OAuthClient | undefined>;
  /** The API clients of an account, oldest first. */
  readonly listClients: (accountId: string) => Promise<OAuthClient[]>;
  /** Deletes an account's client with its codes, grants and refresh tokens; false when it has no such client. */
  readonly deleteClient: (accountId: string, clientId: string) => Promise<boolean>;
  /**
   * Stores a code, first evicting live codes past `limits` ({@link CodeLimits}), atomically (parallel requests, and on
   * PostgreSQL other instances, cannot pass the bounds together). An exchanged code is never evicted (single use kept).
   */
  readonly saveCode: (code: AuthorizationCode, limits: CodeLimits) => Promise<CodeSaveOutcome>;
  /** A code by its hash, with whether it was exchanged already (and for which grant). */
  readonly findCode: (codeHash: string) => Promise<StoredCode | undefined>;
  /**
   * Uses a code up, atomically with storing the grant it creates and the grant's first refresh token (if any):
   * false when another exchange used it first (nothing is stored then). The account then holds at most
   * `maxGrantsPerAccount` unrevoked grants: past it its oldest others are revoked in the same transaction (their
   * refresh and access tokens stop working), so an account approving again and again stores a bounded number.
   */
  readonly exchangeCode: (codeHash: string, grant: Grant, refresh: RefreshToken | null, nowMs: number, maxGrantsPerAccount: number) => Promise<boolean>;
  /** Exchanges a refresh token for `next`, atomically; see {@link RefreshRotation}. */
  readonly rotateRefreshToken: (tokenHash: string, next: RefreshToken, nowMs: number) => Promise<RefreshRotation>;
  /** The grant a refresh token belongs to (for revocation), whatever its state. */
  readonly findRefreshToken: (tokenHash: string) => Promise<{ readonly token: RefreshToken; readonly grant: Grant } | undefined>;
  readonly revokeGrant: (grantId: string, nowMs: number) => Promise<void>;
  /**
   * The clients an account authorised whose grants are live at `nowMs` (not revoked, and a refresh token still
   * live or an access token possibly still live: created in the last hour), most recently authorised first, at most `max`.
   */
  readonly listAuthorizations: (accountId: string, nowMs: number, max: number) => Promise<AuthorizedClient[]>;
  /**
   * Ends what an account authorised a client to do, atomically: every grant of the pair is revoked (so their refresh
   * and access tokens die) and its unexchanged codes are deleted. How many grants and codes were live; 0: nothing.
   */
  readonly revokeAuthorizations: (accountId: string, clientId: string, nowMs: number) => Promise<number>;
  /** Marks an access token revoked until it expires anyway. */
  readonly revokeAccessToken: (jti: string, clientId: string, expiresAtMs: number) => Promise<void>;
  /**
   * Whether an access token may still be used: it was not revoked itself; with a grant (`gid`), the grant is the
   * client's and the account's (`sub`) and not revoked; without one (client credentials), the client is a
   * confidential client of that account. One query.
   */
  readonly accessTokenActive: (token: { readonly jti: string; readonly clientId: string; readonly grantId: string | null; readonly accountId: string }) => Promise<boolean>;
  /** The signing keys, newest first, each with its revocation if it was revoked (one read). */
  readonly signingKeys: () => Promise<StoredSigningKey[]>;
  readonly addSigningKey: (key: StoredSigningKey) => Promise<void>;
  /**
   * Drops the keys that may sign created before `createdBeforeMs` except the newest of them, and the retired keys
   * retired before `retiredBeforeMs`.
   */
  readonly dropSigningKeys: (createdBeforeMs: number, retiredBeforeMs: number) => Promise<number>;
  /** Retires (at `nowMs`) every key not retired yet: a signer signs from now on. Returns how many. */
  readonly retireSigningKeys: (nowMs: number) => Promise<number>;
  /** The signers' public keys, the most recently seen first, each with its revocation if it was revoked (one read). */
  readonly signerKeys: () => Promise<SignerPublicKey[]>;
  /**
   * Records that an instance signs with this key at `nowMs`: a new key is added (first and last seen now), a known
   * one's `seenAtMs` is moved forward (never back: instances' clocks differ). The JWK is stored as given for a new key.
   * A revocation is never cleared by it.
   */
  readonly seeSignerKey: (kid: string, publicJwk: string, nowMs: number) => Promise<void>;
  /** Drops the signers' keys last seen before `seenBeforeMs` (their revocations stay). Returns how many. */
  readonly dropSignerKeys: (seenBeforeMs: number) => Promise<number>;
  /**
   * Revokes a token-signing key by its `kid` (a signer's or a stored one, recorded or not yet): kept for good, so that
   * no later record trusts it again. True when it was not revoked before (the first revocation's time stays).
   */
  readonly revokeKey: (kid: string, nowMs: number) => Promise<boolean>;
  /** Every revocation, the latest first. */
  readonly revokedKeys: () => Promise<RevokedKey[]>;
  /**
   * Drops what expired before `nowMs` (codes, refresh tokens, revoked-token marks, grants with no live refresh
   * token) and openly registered clients created before `unusedBeforeMs` that never got a grant.
   */
  readonly prune: (nowMs: number, unusedBeforeMs: number) => Promise<number>;
}

/** The claims of an access token (RFC 9068) that the service reads back. */
export type AccessTokenClaims = {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string;
  readonly client_id: string;
  readonly scope: string;
  readonly jti: string;
  readonly iat: number;
  readonly exp: number;
  /** The grant (refresh-token family) of an authorization-code token; absent for client credentials. */
  readonly gid?: string | undefined;
};

/** Why a token did not verify. */
export type TokenRefusal = "invalid" | "expired";

/** Signs and verifies the service's access tokens (JWT, ES256) and publishes the keys (JWKS). */
export interface AccessTokenKeys {
  /** Signs claims with the newest key (`typ: at+jwt`). */
  readonly sign: (claims: AccessTokenClaims) => Promise<string>;
  /** Checks signature, `typ`, issuer, audience and expiry; the claims, or why not. */
  readonly verify: (token: string, expected: { readonly issuer: string; readonly audience: string }) =>
    Promise<{ readonly ok: true; readonly claims: AccessTokenClaims } | { readonly ok: false; readonly reason: TokenRefusal }>;
  /** The public keys every instance may sign with or has signed with recently. */
  readonly jwks: () => Promise<{ readonly keys: readonly Record<string, unknown>[] }>;
  /** Makes a new signing key the newest; earlier keys keep verifying until they are dropped. Returns its kid. */
  readonly rotate: () => Promise<string>;
}
