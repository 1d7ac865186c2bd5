import { type TSchema, Type as t } from "@sinclair/typebox";
import { IdentifierList, TrustAnchorsModel } from "../domain/identity/mod.ts";
import type { CachePolicy } from "./http_cache.ts";
import { Address, Bytes32, ChainParam, Uint, NonBlank, SubjectDid } from "./model_fields.ts";
import { NonceQuery, DelegatedAttestBody, SubmissionAcceptedModel, DelegatedAttestBatchBody } from "./relay_models.ts";
import { SubjectOwnershipBody, SubjectCreateBody, SubjectPatchBody, AccountPatchBody, ChallengeBody, VerifyBody, ControllerWitnessBody, PremiumRpcBody, SigningKeyBody, SigningKeyListQuery } from "./account_models.ts";

export * from "./model_fields.ts";
export * from "./relay_models.ts";
export * from "./account_models.ts";

/** The one error body. */
export const ErrorModel = t.Object({ error: t.String(), code: t.String(), details: t.Optional(t.String()) });

/** The error body of the EAS routes, which also carry `elapsed`. */
export const EasErrorModel = t.Object({
  error: t.String(),
  code: t.String(),
  details: t.Optional(t.String()),
  elapsed: t.String({ pattern: "^[0-9]+ms$" }),
});

/** identity-resolve: at most 100 strings of at most 10,240 characters (the MCP tool resolve_identities checks the same list). */
export const IdentityResolveBody = t.Object({
  identifiers: IdentifierList,
});

export const IdentityRecordModel = t.Object({
  input: t.String(),
  canonical: t.String(),
  label: t.String(),
  type: t.String(),
  source: t.String(),
});

export const IdentityResolveResponse = t.Object({ identities: t.Array(IdentityRecordModel) });

/** controller-endpoint-confirm: the subject only. */
export const ControllerEndpointConfirmQuery = t.Object({ subjectDid: SubjectDid });

/** controller-confirm: the subject and, optionally, the connected wallet. */
export const ControllerConfirmQuery = t.Object({
  subjectDid: SubjectDid,
  walletDid: t.Optional(NonBlank("The connected wallet DID, usually did:pkh:eip155:<chainId>:<address>")),
});

/** artifact-trust: only `artifactDid` is read. */
export const ArtifactTrustQuery = t.Object({
  artifactDid: t.String({ minLength: 1, description: "Canonical did:artifact (CIDv1, raw codec, sha2-256, base32-lower), given once" }),
  chain: ChainParam,
});

const ArtifactTrustItemModel = t.Object({
  attestation: t.Object({
    uid: Bytes32,
    schema: Bytes32,
    schemaName: t.Union([
      t.Literal("responsibility-claim"),
      t.Literal("security-assessment"),
      t.Literal("certification"),
      t.Literal("linked-identifier"),
    ]),
    attester: Address,
    attesterLabel: t.Optional(t.String({ description: "Present for a recognized approved issuer" })),
    recipient: Address,
    time: Uint,
    expirationTime: Uint,
    revocationTime: t.Literal("0"),
    data: t.Record(t.String(), t.Unknown(), { description: "Decoded payload; big integers as base-10 strings" }),
  }),
  verification: t.Object({
    valid: t.Literal(true),
    basis: t.Array(t.Union([
      t.Literal("approved-issuer"),
      t.Literal("proof"),
      t.Literal("controller-authorization"),
      t.Literal("authorization-window"),
    ])),
  }),
});

/** The filters of which an attestation query names at least one (decisions §24); published as `x-required-any-of`. */
export const ATTESTATION_LEADING_FILTERS = ["subject", "attester", "recipient", "schema"] as const;

/** The filters of the attestation queries (decisions §24): at least one of subject, attester, recipient and schema. */
const AttestationFilterFields = {
  chain: ChainParam,
  subject: t.Optional(t.String({ minLength: 1, maxLength: 2_048, description: "The subject DID (normalized as everywhere): sent to its DID address and naming it in its data" })),
  attester: t.Optional(t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "The attester's 0x address" })),
  recipient: t.Optional(t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "The recipient's 0x address" })),
  schema: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "A schema name of the trust anchors (e.g. user-review) or a schema UID (0x and 64 hex digits)" })),
  revoked: t.Optional(t.String({ pattern: "^(true|false)$", description: "true: only revoked attestations; false: only unrevoked ones; default either" })),
  since: t.Optional(t.String({ pattern: "^[0-9]{1,19}$", description: "Unix seconds, inclusive, on the attestation's time" })),
  until: t.Optional(t.String({ pattern: "^[0-9]{1,19}$", description: "Unix seconds, exclusive, on the attestation's time" })),
};

/** The query of the attestation list (decisions §11, §24). */
export const AttestationListQuery = t.Object({
  ...AttestationFilterFields,
  order: t.Optional(t.String({ pattern: "^(newest|oldest)$", description: "newest (default) or oldest first: by block, then log position in the block" })),
  limit: t.Optional(t.String({ pattern: "^[0-9]{1,3}$", description: "Items per page, 1 to 100 (default 25)" })),
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "The nextCursor of the previous page of the same query (same filters and order)" })),
}, { description: "At least one of subject, attester, recipient and schema", "x-required-any-of": [...ATTESTATION_LEADING_FILTERS] });

/** The query of the attestation count (decisions §24): the list's filters. */
export const AttestationCountQuery = t.Object(AttestationFilterFields, {
  description: "At least one of subject, attester, recipient and schema",
  "x-required-any-of": [...ATTESTATION_LEADING_FILTERS],
});

/** The index head a public read was computed at (decisions §21). */
export const AsOfModel = t.Object({
  blockNumber: t.Integer({ description: "The newest block the attestation index holds: the block the answer was computed at" }),
  blockHash: Bytes32,
  timestamp: t.Union([t.Integer(), t.Null()], { description: "That block's time, Unix seconds (null for a checkpoint stored before it was kept)" }),
  checkedAt: t.Integer({ description: "When the index follower last completed a poll of the chain, Unix seconds; an idle chain's block may be older" }),
}, { description: "What the answer stands on; when no poll completed for INDEX_STALL_SECONDS the read is 503 INDEX_STALE instead" });

/** The artifact trust record (interface "Artifact trust record"). */
export const ArtifactTrustRecordModel = t.Object({
  asOf: AsOfModel,
  artifactDid: t.String(),
  chain: t.Object({ chainId: t.Integer(), caip2: t.String(), easContract: Address }, { description: "The chain the answer was read on (decisions §30)" }),
  trustAnchorsVersion: t.Integer(),
  responsibilityClaims: t.Array(ArtifactTrustItemModel),
  securityAssessments: t.Array(ArtifactTrustItemModel),
  certifications: t.Array(ArtifactTrustItemModel),
  otherAttestations: t.Array(ArtifactTrustItemModel),
  summary: t.Object({
    totalQueried: t.Integer({ minimum: 0 }),
    totalVerified: t.Integer({ minimum: 0 }),
    totalExcluded: t.Integer({ minimum: 0 }),
    complete: t.Literal(true),
  }),
});

export { TrustAnchorsModel };

/** `GET /v1/key-status`. */
export const KeyStatusQuery = t.Object({
  subjectDid: t.String({ minLength: 1, maxLength: 2_048, description: "The subject (did:web of a service, did:pkh, …)" }),
  keyDid: t.String({ minLength: 1, maxLength: 2_048, description: "The key: did:pkh, did:key, did:jwk or did:ethr" }),
  at: t.Optional(t.String({ pattern: "^[0-9]{1,12}$", description: "Unix seconds, not in the future; default now. The chain's records are judged as they stood then" })),
  chain: ChainParam,
});

/** `GET /v1/controller-authorization` (decisions §25). */
export const ControllerAuthorizationQuery = t.Object({
  subjectDid: t.String({ minLength: 1, maxLength: 2_048, description: "The subject, a bare DID (a DID URL is 400 INVALID_DID: a key reference, not a subject)" }),
  controllerDid: t.String({ minLength: 1, maxLength: 2_048, description: "A durable controller: did:pkh or did:jwk (a DID URL is 400 INVALID_DID; resolve it with GET /v1/did-url/resolve)" }),
  purpose: t.Optional(t.String({ maxLength: 200, description: "Comma list of authentication, assertionMethod, keyAgreement; default authentication,assertionMethod" })),
  chain: ChainParam,
  at: t.Optional(t.String({ pattern: "^[0-9]{1,12}$", description: "Unix seconds, not in the future; default now. Evidence written after at does not count; live evidence counts only when at is omitted or no older than DISCOVERY_CACHE_SECONDS" })),
});

/** `GET /v1/did-url/resolve` (decisions §25). */
export const DidUrlResolveQuery = t.Object({
  didUrl: t.String({ minLength: 1, maxLength: 2_048, description: "A DID URL naming a key, such as did:web:api.example.com#key-1 (URL-encode the #)" }),
});

/** The request models of one operation: a query object or a JSON body. */
export type RequestModels = { readonly query?: TSchema | undefined; readonly body?: TSchema | undefined };

/**
 * The request model of every operation that takes input: the routes compile their checks from these
 * objects and `/openapi.json` publishes the same objects, so what is documented is what is validated.
 */
export const REQUEST_MODELS = {
  nonce: { query: NonceQuery },
  delegatedAttest: { body: DelegatedAttestBody },
  delegatedAttestBatch: { body: DelegatedAttestBatchBody },
  identityResolve: { body: IdentityResolveBody },
  controllerEndpointConfirm: { query: ControllerEndpointConfirmQuery },
  controllerConfirm: { query: ControllerConfirmQuery },
  artifactTrust: { query: ArtifactTrustQuery },
  attestationList: { query: AttestationListQuery },
  attestationCount: { query: AttestationCountQuery },
  walletChallenge: { body: ChallengeBody },
  walletVerify: { body: VerifyBody },
  accountPatch: { body: AccountPatchBody },
  subjectCreate: { body: SubjectCreateBody },
  subjectPatch: { body: SubjectPatchBody },
  subjectOwnership: { body: SubjectOwnershipBody },
  premiumRpc: { body: PremiumRpcBody },
  controllerWitness: { body: ControllerWitnessBody },
  signingKeyUpsert: { body: SigningKeyBody },
  signingKeyList: { query: SigningKeyListQuery },
  keyStatus: { query: KeyStatusQuery },
  controllerAuthorization: { query: ControllerAuthorizationQuery },
  didUrlResolve: { query: DidUrlResolveQuery },
} as const satisfies Record<string, RequestModels>;

/**
 * Who may call an operation, published as its OpenAPI `security` (http/openapi.ts): `public` needs nothing;
 * `session` the sign-in cookie; `session-or-x402` the cookie, or instead an x402 payment where a price is
 * configured; `session-and-x402` both (buying the plan); `session-optional` acts on the cookie when one is sent;
 * `x402` a payment only (the paid aliases). A route with a `scope` also takes an OAuth access token that carries it.
 */
export type RouteAuth = "public" | "session" | "session-or-x402" | "session-and-x402" | "session-optional" | "x402";

/** One documented operation: the paths it is served on, who may call it and its models. */
export type RouteDoc = {
  readonly method: "get" | "post" | "patch" | "delete";
  readonly paths: readonly string[];
  /** Required, so that a new route cannot be published without saying who may call it. */
  readonly auth: RouteAuth;
  /**
   * How its answers may be kept (decisions §21; http/http_cache.ts applies it to every answer). Required, so that a
   * new route cannot be published without saying so either.
   */
  readonly cache: CachePolicy;
  /**
   * Answered at the server's edge ahead of Elysia (http/edge_routes.ts; issues 28, 34): `answer`, every request of the
   * paths, with the guards the app's hooks apply; `kept`, a GET whose kept index answer is held now (the rest go to the
   * app). The edge's table is built from the declarations that say so (http/app.ts).
   */
  readonly edge?: "answer" | "kept" | undefined;
  /** The OAuth scope a bearer token needs here (decisions §19); absent: no bearer access. */
  readonly scope?: "witness:write" | "relay:write" | "rpc:read" | "account:read" | "subjects:write" | "keys:write" | "webhooks:write" | undefined;
  readonly summary: string;
  /** A description of each `{name}` of the paths; every such parameter is declared, described or not. */
  readonly pathParameters?: Readonly<Record<string, string>> | undefined;
  readonly request?: RequestModels | undefined;
  /**
   * A body the route reads but checks in its own code rather than with a model of `request` (see the models above
   * `REQUEST_MODELS`); `required: false` when it may be left out; `mediaType` default application/json.
   */
  readonly body?: {
    readonly schema: TSchema;
    readonly mediaType?: "application/json" | "application/x-www-form-urlencoded" | undefined;
    readonly required?: boolean | undefined;
  } | undefined;
  /** A query the route reads in its own code rather than with a model of `request` (GET /oauth/authorize). */
  readonly query?: TSchema | undefined;
  /**
   * A write that takes `Idempotency-Key` (decisions §23): the header is published, every answer may carry
   * `Idempotent-Replayed`, and the key's refusals (400, 409, 422) are added to `responses`.
   */
  readonly idempotent?: true | undefined;
  /**
   * A relay that honours `Prefer: respond-async` (decisions §23): the header is published, and its 202 with `Location`
   * and the {@link SubmissionAcceptedModel} body is added to `responses`.
   */
  readonly respondAsync?: true | undefined;
  /** Each status the route can answer; `mediaType`: an answer that is not JSON (the OAuth pages are text/html). */
  readonly responses: Readonly<Record<number, { description: string; schema?: TSchema | undefined; mediaType?: "text/html" | undefined }>>;
};
