import { type TSchema, Type as t } from "@sinclair/typebox";
import { MAX_BATCH, PREMIUM_METHODS } from "../domain/accounts/mod.ts";
import { IdentifierList, TrustAnchorsModel } from "../domain/identity/mod.ts";
import { ALL_SCOPES } from "../domain/oauth/mod.ts";
import type { CachePolicy } from "./http_cache.ts";

/** The one error body. */
export const ErrorModel = t.Object({ error: t.String(), code: t.String(), details: t.Optional(t.String()) });
/** The error body of the EAS routes, which also carry `elapsed`. */
export const EasErrorModel = t.Object({
  error: t.String(),
  code: t.String(),
  details: t.Optional(t.String()),
  elapsed: t.String({ pattern: "^[0-9]+ms$" }),
});

const Address = t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "EVM address, 0x-prefixed, 20 bytes" });
const Bytes32 = t.String({ pattern: "^0x[0-9a-fA-F]{64}$" });
const Uint = t.String({ pattern: "^[0-9]+$", description: "base-10 integer" });
const SAFE_MAX = Number.MAX_SAFE_INTEGER;

/** A request string of the sign-in and witness bodies: present means 1 to 2,048 characters. */
const Text = (description?: string) => t.String({ minLength: 1, maxLength: 2_048, ...(description ? { description } : {}) });
/** A query value with at least one non-blank character. */
const NonBlank = (description: string) => t.String({ pattern: "\\S", description });

/** nonce: the attester whose EAS nonce is read (a mixed-case address must also pass its checksum). */
export const NonceQuery = t.Object({ attester: Address });
export const NonceRecordModel = t.Object({
  nonce: Uint,
  chain: t.String(),
  chainId: t.Integer(),
  easAddress: Address,
  elapsed: t.String(),
});

// The delegated-attest body as the domain parser (`parseDelegatedRequest`) reads it: the schema UID from
// `delegatedRequest.schema`, its alias `schemaUid` or the signed message; the deadline from `delegatedRequest`
// or the message; each attestation field from `typedData.message` when the message is an object holding it
// (not null), else from `delegatedRequest`, else the EAS default. The model states exactly those rules, so it
// accepts every body the parser accepts, and the parser stays the authority for what the values mean.
const Uint64 = t.Union([
  t.String({ pattern: "^0*[0-9]{1,20}$", maxLength: 78, description: "base-10 uint64" }),
  t.Integer({ minimum: 0, maximum: SAFE_MAX }),
]);
const ZeroValue = t.Union([t.String({ pattern: "^0{1,78}$" }), t.Literal(0)], { description: "Always 0" });
const HexBytes = t.String({ pattern: "^0x([0-9a-fA-F]{2})*$" });
const NotNull = t.Not(t.Null());

/** One attestation field: from the signed message when it holds it, else from `delegatedRequest` (or the default). */
function messageOrRequest(name: string, value: TSchema) {
  return t.Union([
    t.Object({ typedData: t.Object({ message: t.Object({ [name]: value }) }) }),
    t.Object({
      typedData: t.Optional(t.Object({ message: t.Optional(t.Not(t.Object({ [name]: NotNull }))) })),
      delegatedRequest: t.Object({ [name]: t.Optional(t.Union([value, t.Null()])) }),
    }),
  ], { description: `${name}: typedData.message.${name}, else delegatedRequest.${name}, else the EAS default` });
}

const DelegatedRequestModel = t.Object({
  schema: t.Optional(t.Unknown({ description: "Schema UID, bytes32 (alias: schemaUid)" })),
  schemaUid: t.Optional(t.Unknown({ description: "Legacy alias of schema", deprecated: true })),
  deadline: t.Optional(t.Unknown({ description: "uint64 Unix seconds, base-10 string (else typedData.message.deadline)" })),
  attester: t.Optional(t.Unknown({ description: "Ignored: the top-level attester counts" })),
  easContractAddress: t.Optional(t.Unknown({ description: "Ignored: the service's EAS contract is used" })),
  chainId: t.Optional(t.Unknown({ description: "Ignored: the service's chain is used" })),
  recipient: t.Optional(t.Unknown({ description: "Address; default the zero address" })),
  expirationTime: t.Optional(t.Unknown({ description: "uint64, base-10 string; default 0" })),
  revocable: t.Optional(t.Unknown({ description: "Boolean; default true; must match the schema" })),
  refUID: t.Optional(t.Unknown({ description: "bytes32; default all zero" })),
  data: t.Optional(t.Unknown({ description: "ABI-encoded attestation data, 0x-prefixed hex; default 0x" })),
  value: t.Optional(t.Unknown({ description: "Always 0" })),
  nonce: t.Optional(t.Unknown({ description: "The nonce signed; the server reads its own and uses this one only to report a moved nonce" })),
}, { description: "schema and deadline, and the attestation fields the signed message does not hold" });

const TypedDataModel = t.Object({
  domain: t.Optional(t.Unknown({ description: "EIP-712 domain signed (name EAS, version 1.4.0, chainId, verifyingContract); the server rebuilds it" })),
  types: t.Optional(t.Unknown()),
  primaryType: t.Optional(t.Unknown({ description: "Attest" })),
  message: t.Optional(t.Unknown({ description: "The Attest message signed; when an object, its fields take precedence over delegatedRequest" })),
}, { description: "Exactly what was signed" });

export const DelegatedAttestBody = t.Object({
  attester: Address,
  signature: t.String({
    minLength: 1,
    description:
      "65-byte EIP-712 signature, 0x-prefixed hex (a key's, or a smart-contract wallet's that its ERC-1271 isValidSignature accepts), or the ERC-6492 form of 65 such bytes for a wallet not deployed yet (the relay deploys it first); its format is checked after the schema allowlist and deadline (INVALID_SIGNATURE)",
  }),
  prepared: t.Intersect([
    t.Object({ delegatedRequest: DelegatedRequestModel, typedData: t.Optional(TypedDataModel) }),
    t.Union([
      t.Object({ delegatedRequest: t.Object({ schema: Bytes32 }) }),
      t.Object({ delegatedRequest: t.Object({ schema: t.Optional(t.Null()), schemaUid: Bytes32 }) }),
      t.Object({
        delegatedRequest: t.Object({ schema: t.Optional(t.Null()), schemaUid: t.Optional(t.Null()) }),
        typedData: t.Object({ message: t.Object({ schema: Bytes32 }) }),
      }),
    ], { description: "schema: delegatedRequest.schema, else delegatedRequest.schemaUid, else typedData.message.schema" }),
    t.Union([
      t.Object({ delegatedRequest: t.Object({ deadline: Uint64 }) }),
      t.Object({
        delegatedRequest: t.Object({ deadline: t.Optional(t.Null()) }),
        typedData: t.Object({ message: t.Object({ deadline: Uint64 }) }),
      }),
    ], { description: "deadline: delegatedRequest.deadline, else typedData.message.deadline" }),
    messageOrRequest("recipient", Address),
    messageOrRequest("expirationTime", Uint64),
    messageOrRequest("revocable", t.Boolean()),
    messageOrRequest("refUID", Bytes32),
    messageOrRequest("data", HexBytes),
    messageOrRequest("value", ZeroValue),
  ]),
});

export const DelegatedAttestSuccessModel = t.Object({
  success: t.Literal(true),
  txHash: Bytes32,
  uid: t.Union([Bytes32, t.Null()]),
  blockNumber: t.Integer(),
  chain: t.String(),
  submissionId: t.Optional(t.String({ description: "The submission's id: GET /v1/submissions/{id} (decisions §23)" })),
  elapsed: t.String(),
});

/** A batch's answer (decisions §23): one result per request, in order. */
export const DelegatedAttestBatchModel = t.Object({
  submissionId: t.Union([t.String(), t.Null()], { description: "The batch's one submission (GET /v1/submissions/{id}); null when no request was sent" }),
  txHash: t.Union([Bytes32, t.Null()], { description: "The one multiAttestByDelegation transaction; null when no request was sent" }),
  results: t.Array(t.Union([
    t.Object({ uid: t.Union([Bytes32, t.Null()]) }, { description: "Sent and mined: its own uid" }),
    t.Object({ status: t.Integer(), code: t.String(), error: t.String(), details: t.Optional(t.String()) }, {
      description: "Refused (nothing charged for it) or failed with the transaction: the status and error body the single route would have answered",
    }),
  ])),
  chain: t.String(),
  elapsed: t.Optional(t.String()),
});

/** A relay submission as GET /v1/submissions/{id} answers it (decisions §23). */
export const SubmissionModel = t.Object({
  submissionId: t.String({ description: "128 random bits, base64url: whoever holds it may read the submission" }),
  state: t.Union(["pending", "sent", "mined", "confirmed", "failed", "replaced"].map((s) => t.Literal(s)), {
    description:
      "pending: recorded, nothing signed yet; sent: its transaction may be at the node; replaced: a fee bump superseded the transaction first sent (txHash the newest), none mined yet; mined; confirmed: at least INDEX_CONFIRMATIONS blocks deep; failed: reverted, or given back with nothing on chain (error says why)",
  }),
  txHash: t.Union([Bytes32, t.Null()]),
  uid: t.Union([Bytes32, t.Null()]),
  blockNumber: t.Union([t.Integer(), t.Null()]),
  confirmations: t.Integer({ minimum: 0 }),
  feeBumps: t.Integer({ minimum: 0, description: "Replacements signed with higher fees for this submission" }),
  error: t.Optional(t.String({ description: "The failure's code, e.g. SUBMISSION_FAILED" })),
  items: t.Optional(t.Array(t.Union([
    t.Object({
      index: t.Integer({ minimum: 0 }),
      state: t.Union(["pending", "sent", "mined", "confirmed", "failed", "replaced"].map((s) => t.Literal(s))),
      uid: t.Union([Bytes32, t.Null()], { description: "Its own uid once mined" }),
    }, { description: "Sent in the batch's transaction: the submission's state" }),
    t.Object({
      index: t.Integer({ minimum: 0 }),
      state: t.Literal("refused"),
      uid: t.Null(),
      status: t.Integer(),
      error: t.String({ description: "The code" }),
      message: t.String(),
      details: t.Optional(t.String()),
    }, { description: "Refused by its checks before sending (nothing charged): the status and error the single route would have answered" }),
  ]), { description: "A batch's requests, in order (absent for a single send; uid above is then the first sent request's)" })),
  createdAt: t.String({ format: "date-time" }),
  updatedAt: t.String({ format: "date-time" }),
});

/** A page of the account's submissions, newest first. */
export const SubmissionPageModel = t.Object({
  submissions: t.Array(SubmissionModel),
  nextCursor: t.Union([t.String(), t.Null()], { description: "Pass as cursor for the next page; null on the last" }),
});

/** The query of the account's submission list (checked in the route's own code). */
export const SubmissionListQuery = t.Object({
  limit: t.Optional(t.String({ pattern: "^[0-9]{1,3}$", description: "Items per page, 1 to 100 (default 20)" })),
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "The nextCursor of the previous page" })),
});

/** The 202 of a write sent with `Prefer: respond-async` (decisions §23). */
export const SubmissionAcceptedModel = t.Object({
  submissionId: t.String(),
  state: t.Union([t.Literal("pending"), t.Literal("sent"), t.Literal("replaced")], { description: "pending, or where a resumed submission stands" }),
  elapsed: t.Optional(t.String()),
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

const EvidenceItemModel = t.Object({
  kind: t.Union([t.Literal("dns-txt"), t.Literal("did-json"), t.Literal("account-wallet")]),
  status: t.Union([t.Literal("found"), t.Literal("not-found"), t.Literal("unavailable"), t.Literal("unsupported")]),
  location: t.String(),
  keys: t.Array(t.String()),
  error: t.Optional(t.String()),
  records: t.Optional(t.Array(t.String(), { description: "DNS TXT: the records the name answered with, as published (strings joined; at most 16)" })),
  notes: t.Optional(t.Array(t.String(), { description: "Why a looked-up source gave no key, or which published values were ignored and why" })),
});
const ControllerKeyModel = t.Object({
  id: t.String(),
  canonicalId: t.String(),
  label: t.String(),
  sources: t.Array(t.String()),
  basic: t.Boolean({ description: "true when an endpoint source (DNS TXT or did.json) publishes the key" }),
});
const SubjectDid = NonBlank("Service DID; bare domains become did:web");
/** controller-endpoint-confirm: the subject only. */
export const ControllerEndpointConfirmQuery = t.Object({ subjectDid: SubjectDid });
/** controller-confirm: the subject and, optionally, the connected wallet. */
export const ControllerConfirmQuery = t.Object({
  subjectDid: SubjectDid,
  walletDid: t.Optional(NonBlank("The connected wallet DID, usually did:pkh:eip155:<chainId>:<address>")),
});
export const ControllerEndpointConfirmModel = t.Object({
  subject: IdentityRecordModel,
  domain: t.Union([t.String(), t.Null()]),
  controllerKeys: t.Array(ControllerKeyModel),
  evidence: t.Array(EvidenceItemModel),
  warnings: t.Array(t.String()),
});
export const ControllerConfirmModel = t.Intersect([
  ControllerEndpointConfirmModel,
  t.Object({
    approvedIssuer: t.Object({
      status: t.Union([t.Literal("approved"), t.Literal("not-approved"), t.Literal("unavailable"), t.Literal("not-configured")]),
      checkedIdentifiers: t.Array(t.String()),
      registryUrl: t.Union([t.String(), t.Null()]),
    }),
  }),
]);

export const HealthModel = t.Object({ status: t.Literal("ok") });
export const ReadyModel = t.Object({
  status: t.Union([t.Literal("ready"), t.Literal("not-ready")]),
  checks: t.Record(t.String(), t.Boolean()),
  index: t.Optional(t.Object({
    indexedBlock: t.Union([t.Integer(), t.Null()], { description: "The attestation index's checkpoint" }),
    head: t.Union([t.Integer(), t.Null()]),
    lagBlocks: t.Union([t.Integer(), t.Null()], { description: "head - indexedBlock" }),
    catchingUp: t.Boolean({ description: "More than 64 blocks short of head - INDEX_CONFIRMATIONS (still 200)" }),
  })),
});

/** artifact-trust: only `artifactDid` is read. */
export const ArtifactTrustQuery = t.Object({
  artifactDid: t.String({ minLength: 1, description: "Canonical did:artifact (CIDv1, raw codec, sha2-256, base32-lower), given once" }),
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

/** One attestation as the queries list it (decisions §11, §24). */
const ListedAttestationModel = t.Object({
  attestation: t.Object({
    uid: Bytes32,
    schema: Bytes32,
    schemaName: t.Union([t.String(), t.Null()], { description: "The schema's name in the trust anchors; null for another schema (its data is then {})" }),
    attester: Address,
    recipient: Address,
    time: Uint,
    expirationTime: Uint,
    revocationTime: Uint,
    data: t.Record(t.String(), t.Unknown(), { description: "Decoded payload; big integers as base-10 strings" }),
  }),
  revoked: t.Boolean(),
});

/** A page of the attestation list. */
export const AttestationPageModel = t.Object({
  asOf: AsOfModel,
  subject: t.Optional(t.String({ description: "The subject as normalized, when the query gave one" })),
  schema: t.Optional(t.String({ description: "The schema as the query gave it, when it did" })),
  items: t.Array(ListedAttestationModel, {
    description: "Newest (or oldest) first; with subject a page may hold fewer than limit items (attestations whose decoded subject is another DID are left out)",
  }),
  nextCursor: t.Union([t.String(), t.Null()], { description: "Give it back as cursor for the next page; null on the last one" }),
});

/** The count of the attestations matching the filters (decisions §24). */
export const AttestationCountModel = t.Object({ asOf: AsOfModel, count: t.Integer({ minimum: 0 }) });

/** One attestation by uid (decisions §24). */
export const AttestationItemModel = t.Composite([t.Object({ asOf: AsOfModel }), ListedAttestationModel]);

/** The artifact trust record (interface "Artifact trust record"). */
export const ArtifactTrustRecordModel = t.Object({
  asOf: AsOfModel,
  artifactDid: t.String(),
  chain: t.Object({ chainId: t.Integer(), caip2: t.String(), easContract: Address }),
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

/** The review widget's query (decisions §29); widgets/embed_params.ts checks it and names a bad parameter on the page. */
export const WidgetEmbedQuery = t.Object({
  url: t.String({ description: "The app's domain (a bare domain or a URL); the subject is did:web of it, www. stripped" }),
  contract: t.String({ description: "The app's contract users interact with (0x and 40 hex digits)" }),
  chainId: t.String({ description: "The contract's chain id, a positive whole number" }),
  name: t.Optional(t.String({ description: "The app's name, at most 100 characters" })),
  icon: t.Optional(t.String({ description: "The app's icon, an https URL" })),
  wallet: t.Optional(t.String({ description: "The user's wallet, when the host page knows it (integrated mode needs it)" })),
  explorer: t.Optional(t.String({ description: "An Etherscan-compatible explorer API (https), for proof of interaction" })),
});

/** `GET /v1/interactions` (decisions §29). */
export const InteractionsQuery = t.Object({
  chain: t.String({ description: "The contract's chain: a decimal id or eip155:<id>" }),
  wallet: t.String({ description: "The user's wallet (0x and 40 hex digits)" }),
  contract: t.String({ description: "The app's contract (0x and 40 hex digits)" }),
  explorer: t.Optional(t.String({ description: "An Etherscan-compatible explorer API (https), used when the operator configured none for the chain; fetched under the discovery SSRF policy" })),
});
export const InteractionStatusModel = t.Object({
  status: t.Union([t.Literal("verified"), t.Literal("none"), t.Literal("not-checked")]),
  txHash: t.Optional(t.String({ description: "verified: the transaction the chain confirmed" })),
  blockNumber: t.Optional(t.Integer({ minimum: 0 })),
  reason: t.Optional(t.Union([t.Literal("no-explorer"), t.Literal("chain-not-read"), t.Literal("explorer-failed"), t.Literal("chain-failed")], { description: "not-checked: why" })),
});
/** `GET /v1/tx-proofs` (decisions §29). */
export const TxProofsQuery = t.Object({
  chain: t.String({ description: "A chain the deployment reads: a decimal id or eip155:<id>" }),
  txHash: t.String({ description: "32 bytes of hex" }),
});
export const TxProofModel = t.Object({
  chain: t.String({ description: "eip155:<id>" }),
  txHash: t.String(),
  from: t.String(),
  to: t.Union([t.String(), t.Null()], { description: "null for a contract creation" }),
  status: t.Union([t.Literal("success"), t.Literal("reverted")]),
  blockNumber: t.Integer({ minimum: 0 }),
  blockTime: t.Integer({ minimum: 0, description: "Unix seconds of its block (a review's proof must not postdate the review)" }),
});

/** The trust policy (decisions §29): what the reference SDK's widget signing bridges read. */
export const TrustPolicyModel = t.Object({
  version: t.Integer({ minimum: 1 }),
  updatedAt: t.String(),
  widgetOrigins: t.Array(t.String(), { description: "Origins a host page trusts to ask for signatures: the service's own, then WIDGET_ORIGINS and the anchors' own" }),
  chains: t.Record(t.String({ pattern: "^[0-9]+$" }), t.Object({
    name: t.String(),
    easContract: t.String({ pattern: "^0x[0-9a-fA-F]{40}$" }),
    schemas: t.Array(t.String({ pattern: "^0x[0-9a-fA-F]{64}$" })),
  }), { description: "Keyed by decimal chain id" }),
});

const AccountModel = t.Object({
  id: t.String(),
  displayName: t.Union([t.String({ maxLength: 100 }), t.Null()]),
  address: Address,
  plan: t.Union([t.Literal("free"), t.Literal("paid")]),
});
const SubscriptionModel = t.Object({
  plan: t.Union([t.Literal("free"), t.Literal("paid")]),
  status: t.Literal("active"),
  annualSponsoredWriteLimit: t.Integer(),
  sponsoredWritesUsedCurrentYear: t.Integer(),
  annualPremiumReadLimit: t.Union([t.Integer(), t.Null()], { description: "Null until premium reads are metered" }),
  premiumReadsUsedCurrentYear: t.Union([t.Integer(), t.Null()]),
  entitlementPeriodStart: t.String({ format: "date-time" }),
  entitlementPeriodEnd: t.String({ format: "date-time" }),
});
/** `GET /api/private/subscriptions/current`. */
export const SubscriptionCurrentModel = t.Object({ subscription: SubscriptionModel });
/** `GET /api/private/accounts/me` (decisions §12). */
export const AccountMeModel = t.Object({
  account: t.Object({ id: t.String(), displayName: t.Union([t.String(), t.Null()]) }),
  subscription: SubscriptionModel,
  primarySubject: t.Union([
    t.Object({ id: t.String(), canonicalDid: t.String(), subjectDidHash: t.String(), displayName: t.Union([t.String(), t.Null()]) }),
    t.Null(),
  ]),
  wallets: t.Array(t.Object({ did: t.String(), address: Address })),
});
/** `POST /api/verify/subject-ownership` (decisions §12). */
export const SubjectOwnershipBody = t.Object({
  subjectDid: t.String({ minLength: 1, maxLength: 2_048, description: "did:web, or the did:pkh of the wallet or of a contract" }),
  connectedWalletDid: t.String({ minLength: 1, maxLength: 256, description: "The wallet's eip155 did:pkh" }),
  txHash: t.Optional(t.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "The contract's creation, or an ownership transfer to the wallet" })),
});
export const SubjectOwnershipModel = t.Object({
  ok: t.Boolean(),
  status: t.Union([t.Literal("verified"), t.Literal("failed")]),
  subjectDid: t.String(),
  connectedWalletDid: t.String(),
  method: t.Optional(t.Union(["dns", "did-document", "wallet", "contract", "minting-wallet", "transfer"].map((m) => t.Literal(m)))),
  error: t.Optional(t.String()),
  details: t.Optional(t.String({ description: "What would make the proof pass" })),
  controllingWalletDid: t.Optional(t.String()),
});

/** A subject of the signed-in account (decisions §12). */
export const SubjectModel = t.Object({
  id: t.String(),
  canonicalDid: t.String(),
  subjectDidHash: t.String({ description: "keccak256 of the UTF-8 canonical DID" }),
  displayName: t.Union([t.String(), t.Null()]),
  isDefault: t.Boolean(),
  ownership: t.Object({
    method: t.String({ description: "How it was proven: dns, did-document, wallet, contract, minting-wallet, transfer" }),
    walletDid: t.String(),
    verifiedAt: t.String({ description: "ISO 8601" }),
  }),
  createdAt: t.String({ description: "ISO 8601" }),
});
/** `GET /api/private/subjects`. */
export const SubjectListModel = t.Object({ subjects: t.Array(SubjectModel, { description: "Default first, then oldest first" }) });
/** `GET|POST|PATCH /api/private/subjects…`. */
export const SubjectAnswerModel = t.Object({ subject: SubjectModel });

/** `PATCH /api/private/accounts/me`. */
const SubjectDisplayName = t.Union([t.String({ maxLength: 100 }), t.Null()], { description: "Up to 100 characters (trimmed; empty or null: none)" });
const SubjectFields = {
  displayName: t.Optional(SubjectDisplayName),
  txHash: t.Optional(t.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "For a contract subject: its creation transaction, or an ownership transfer to the wallet" })),
};
const SubjectDidField = t.String({ minLength: 1, maxLength: 2_048, description: "The subject: did:web (or a bare domain), or the did:pkh of the wallet or of a contract" });
export const SubjectCreateBody = t.Union([
  t.Object({ did: SubjectDidField, subjectDid: t.Optional(t.String({ maxLength: 2_048 })), ...SubjectFields }),
  t.Object({ subjectDid: SubjectDidField, ...SubjectFields }),
], { description: "did (or its alias subjectDid) is required; displayName and txHash are optional" });
export const SubjectPatchBody = t.Object({
  displayName: t.Optional(SubjectDisplayName),
  isDefault: t.Optional(t.Literal(true, { description: "Makes this subject the default (only true)" })),
}, { minProperties: 1, description: "Give displayName or isDefault" });

export const AccountPatchBody = t.Object({
  displayName: t.Union([t.String({ maxLength: 100 }), t.Null()], { description: "Up to 100 characters; null or empty clears it" }),
});

const ChainId = t.Integer({ minimum: 1, maximum: SAFE_MAX });
export const ChallengeBody = t.Intersect([
  t.Object({
    chainId: t.Optional(ChainId),
    domain: t.String({
      minLength: 1,
      maxLength: 2_048,
      pattern: "^[^\\s/?#@]+$",
      description: "SIWE domain (host[:port]) shown by the wallet; must be in SIWE_DOMAINS",
    }),
    // The SIWE message's URI rule (no whitespace anywhere); the use case also wants it absolute and http(s).
    uri: t.String({
      minLength: 1,
      maxLength: 2_048,
      pattern: "^[A-Za-z][A-Za-z0-9+.-]*:\\S+$",
      description: "Absolute http(s) URI of the page asking for sign-in",
    }),
  }),
  t.Union([
    t.Object({ walletDid: Text("did:pkh:eip155:<chainId>:<address> of the signing wallet (address is then ignored)") }),
    t.Object({
      walletDid: t.Optional(t.Never()),
      address: t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "Instead of walletDid: the wallet address" }),
      chainId: ChainId,
    }),
  ], { description: "walletDid (or address with chainId) is required" }),
]);
export const ChallengeModel = t.Object({
  challengeId: t.String(),
  siweMessage: t.String({ description: "The exact EIP-4361 text to sign with personal_sign" }),
  nonce: t.String(),
  expiresAt: t.String({ format: "date-time" }),
});
export const VerifyBody = t.Object({
  challengeId: Text(),
  siweMessage: Text("The challenge's text, unchanged"),
  signature: t.String({
    minLength: 1,
    maxLength: 16_386,
    description: "personal_sign signature, 0x-prefixed hex: 65 bytes for a key; for a smart-contract wallet on the active chain, what its ERC-1271 isValidSignature accepts, or its ERC-6492 form when the wallet is not deployed yet",
  }),
  walletDid: t.Optional(t.String({ description: "When given, must be the challenge's wallet" })),
  walletProviderId: t.Optional(t.String({ pattern: "^[A-Za-z0-9._:-]{1,100}$", description: "The wallet provider the client used (e.g. metamask)" })),
  executionMode: t.Optional(t.Union([t.Literal("subscription"), t.Literal("native")], { description: "Who pays gas: the plan, or the user" })),
});
const WalletModel = t.Object({
  did: t.String({ description: "The wallet's did:pkh on the active chain" }),
  walletProviderId: t.Union([t.String(), t.Null()]),
  executionMode: t.Union([t.Literal("subscription"), t.Literal("native"), t.Null()]),
  isManagedWallet: t.Boolean(),
});
const SessionInfoModel = t.Object({ id: t.String({ description: "Public id of the session (never the token)" }), expiresAt: t.String({ format: "date-time" }) });
export const SignedInModel = t.Object({
  account: AccountModel,
  client: t.Object({ clientId: t.String() }),
  session: SessionInfoModel,
  wallet: WalletModel,
  created: t.Boolean({ description: "true on the first sign-in, which created the account" }),
});
export const SessionMeModel = t.Object({
  account: AccountModel,
  session: SessionInfoModel,
  wallet: t.Union([WalletModel, t.Null()]),
  credential: t.Union([t.Object({ id: t.String(), kind: t.String(), identifier: t.String() }), t.Null()]),
  subscription: t.Object({ plan: t.String(), status: t.String() }),
  client: t.Union([t.Object({ clientId: t.String(), authMode: t.String() }), t.Null()]),
  primarySubject: t.Union([t.Object({ canonicalDid: t.String(), subjectDidHash: Bytes32 }), t.Null()]),
  quota: t.Object({
    year: t.Integer({ description: "UTC calendar year the writes count against" }),
    limit: t.Integer(),
    used: t.Integer(),
    reserved: t.Integer({ description: "Writes held by requests in flight" }),
    remaining: t.Integer(),
    eligibleSchemas: t.Array(t.String()),
  }),
});
export const SuccessModel = t.Object({ success: t.Literal(true) });
const Legacy = () => t.String({ minLength: 1, maxLength: 2_048, deprecated: true });
/** The current body or the legacy one (decisions §8); the legacy extras are checked for type and ignored. */
export const ControllerWitnessBody = t.Intersect([
  t.Object({
    subjectDid: t.Optional(Text("did:web subject (legacy: subject)")),
    controllerDid: t.Optional(Text("did:pkh:eip155:<chainId>:<address> or did:jwk (legacy: controller)")),
    chainId: t.Optional(t.Integer({ minimum: 1, maximum: SAFE_MAX, description: "Must be the active chain when given" })),
    subject: t.Optional(Legacy()),
    controller: t.Optional(Legacy()),
    attestationUid: t.Optional(Legacy()),
    easContract: t.Optional(Legacy()),
    schemaUid: t.Optional(Legacy()),
    method: t.Optional(Legacy()),
  }),
  t.Union([t.Object({ subjectDid: t.String() }), t.Object({ subject: t.String() })], { description: "subjectDid (or subject) is required" }),
  t.Union([t.Object({ controllerDid: t.String() }), t.Object({ controller: t.String() })], {
    description: "controllerDid (or controller) is required",
  }),
]);
export const ControllerWitnessModel = t.Object({
  success: t.Literal(true),
  uid: t.Union([Bytes32, t.Null()]),
  txHash: Bytes32,
  blockNumber: t.Integer(),
  observedAt: t.Integer({ description: "Unix seconds of the observation" }),
  method: t.Union([t.Literal("dns-txt"), t.Literal("did-json")]),
});

/** One JSON-RPC 2.0 request of the premium proxy (decisions §12). */
export const JsonRpcRequestModel = t.Object({
  jsonrpc: t.Literal("2.0"),
  id: t.Optional(t.Union([t.String(), t.Number(), t.Null()], { description: "Echoed in the answer (absent: null)" })),
  method: t.String({ minLength: 1, description: `Forwarded: ${[...PREMIUM_METHODS].join(", ")}; any other is answered with a JSON-RPC error -32601` }),
  params: t.Optional(t.Array(t.Unknown())),
});
/** The body of `POST /api/private/rpc-premium`: one request, or a batch whose calls are each answered on their own. */
export const PremiumRpcBody = t.Union([
  JsonRpcRequestModel,
  t.Array(t.Unknown(), { minItems: 1, maxItems: MAX_BATCH, description: "A batch: a malformed call in it is answered with a JSON-RPC error -32600" }),
], { description: `A JSON-RPC 2.0 request object, or a batch (array) of 1 to ${MAX_BATCH}` });
/** One JSON-RPC 2.0 response: the node's result or error, or the proxy's refusal (-32600, -32601, -32602, -32603). */
export const JsonRpcResponseModel = t.Object({
  jsonrpc: t.Literal("2.0"),
  id: t.Union([t.String(), t.Number(), t.Null()]),
  result: t.Optional(t.Unknown()),
  error: t.Optional(t.Object({ code: t.Integer(), message: t.String(), data: t.Optional(t.Unknown()) })),
});
/** The answer of `POST /api/private/rpc-premium`: one response, or an array in the batch's order. */
export const PremiumRpcResponseModel = t.Union([JsonRpcResponseModel, t.Array(JsonRpcResponseModel)]);

// Signing keys and key status (decisions §17).
/** Body of `POST /api/private/signing-keys`. */
export const SigningKeyBody = t.Object({
  keyDid: t.String({ minLength: 1, maxLength: 2_048, description: "did:pkh (5 parts), did:key, did:jwk or did:ethr; stored canonical" }),
  keyType: t.String({ description: "attestation or service-signing (kept from the first registration on an update)" }),
  displayName: t.String({ description: "1 to 200 characters after trimming" }),
  tags: t.Optional(t.Array(t.String(), { description: "At most 10 tags, each a non-blank string of at most 50 characters (e.g. x402, mcp, software-release, generic-signing, other); default []" })),
  notes: t.Optional(t.Union([t.String(), t.Null()], { description: "At most 1,000 characters" })),
});

/** `GET /api/private/signing-keys`. */
export const SigningKeyListQuery = t.Object({
  keyType: t.Optional(t.String({ maxLength: 50, description: "Only keys of this type" })),
  tag: t.Optional(t.String({ maxLength: 50, description: "Only keys holding this tag" })),
});

/** `GET /v1/key-status`. */
export const KeyStatusQuery = t.Object({
  subjectDid: t.String({ minLength: 1, maxLength: 2_048, description: "The subject (did:web of a service, did:pkh, …)" }),
  keyDid: t.String({ minLength: 1, maxLength: 2_048, description: "The key: did:pkh, did:key, did:jwk or did:ethr" }),
  at: t.Optional(t.String({ pattern: "^[0-9]{1,12}$", description: "Unix seconds, not in the future; default now. The chain's records are judged as they stood then" })),
});

/** `GET /v1/controller-authorization` (decisions §25). */
export const ControllerAuthorizationQuery = t.Object({
  subjectDid: t.String({ minLength: 1, maxLength: 2_048, description: "The subject, a bare DID (a DID URL is 400 INVALID_DID: a key reference, not a subject)" }),
  controllerDid: t.String({ minLength: 1, maxLength: 2_048, description: "A durable controller: did:pkh or did:jwk (a DID URL is 400 INVALID_DID; resolve it with GET /v1/did-url/resolve)" }),
  purpose: t.Optional(t.String({ maxLength: 200, description: "Comma list of authentication, assertionMethod, keyAgreement; default authentication,assertionMethod" })),
  at: t.Optional(t.String({ pattern: "^[0-9]{1,12}$", description: "Unix seconds, not in the future; default now. Evidence written after at does not count; live evidence counts only when at is omitted or no older than DISCOVERY_CACHE_SECONDS" })),
});

/** `GET /v1/did-url/resolve` (decisions §25). */
export const DidUrlResolveQuery = t.Object({
  didUrl: t.String({ minLength: 1, maxLength: 2_048, description: "A DID URL naming a key, such as did:web:api.example.com#key-1 (URL-encode the #)" }),
});

/** The answer of `GET /v1/controller-authorization`: the reference's `getControllerAuthorization` shape plus `asOf`. */
export const ControllerAuthorizationModel = t.Object({
  subjectDid: t.String({ description: "As normalized" }),
  controllerDid: t.String({ description: "As normalized" }),
  at: t.Integer({ minimum: 0, description: "The time the evidence was judged at, Unix seconds" }),
  authorized: t.Boolean({ description: "No purpose mismatch, and a witness window open at at, or live evidence with no until, or a verified transfer proof with no until" }),
  requestedPurpose: t.Array(t.Union([t.Literal("authentication"), t.Literal("assertionMethod"), t.Literal("keyAgreement")])),
  keyPurposeStatus: t.Union([t.Literal("matched"), t.Literal("mismatch"), t.Literal("unknown")], { description: "From the newest matching key binding by at, revoked or not; unknown without one" }),
  anchoredFrom: t.Union([t.String({ pattern: "^[0-9]+$" }), t.Null()], { description: "Decimal Unix seconds: the first witness's EAS time (a contract subject: the verified transfer proof's binding)" }),
  until: t.Union([t.String({ pattern: "^[0-9]+$" }), t.Null()], { description: "Decimal Unix seconds: the newest matching binding's revocation, when made by at" }),
  currentlyVerified: t.Boolean({ description: "Live evidence names the controller now (only looked at when at is omitted or within DISCOVERY_CACHE_SECONDS)" }),
  liveMethod: t.Union([t.Literal("dns"), t.Literal("did-document"), t.Literal("jwks"), t.Literal("contract-ownership"), t.Null()]),
  controllerWitnesses: t.Array(t.Object({
    uid: t.String(),
    issuedAt: t.String({ pattern: "^[0-9]+$", description: "The witness's EAS time, decimal Unix seconds" }),
    attester: t.String(),
    method: t.String(),
    pinned: t.Optional(t.String({ description: "A key-pinning witness: the DID URL it ties to this did:jwk" })),
  }), { description: "Witnesses by approved controller-witness issuers naming this controller, standing at at, oldest first" }),
  keyBindingUid: t.Union([t.String(), t.Null()], { description: "The newest matching key binding by at" }),
  keyBindingUids: t.Array(t.String(), { description: "Every matching key binding by at, newest first" }),
  transferProofVerified: t.Optional(t.Boolean({ description: "did:pkh contract subjects: a binding's transfer proof shows the ownership moving to the controller" })),
  asOf: AsOfModel,
});

/** The answer of `GET /v1/did-url/resolve`. */
export const DidUrlResolutionModel = t.Object({
  didUrl: t.String({ description: "As normalized" }),
  did: t.String(),
  fragment: t.String(),
  publicKeyJwk: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: "The key's public members (null for a blockchainAccountId)" }),
  controllerDid: t.String({ description: "The durable controller the DID URL names now: the did:jwk of the key (or the did:pkh of the account)" }),
});

// Bodies the routes read but check in their own code (the domain's parsers, the OAuth form reader, the MCP
// endpoint) rather than with a compiled request model: published as they are read (RouteDoc.body), so a generated
// client can call these routes. Each states what the code behind it accepts; that code stays the authority.

/** The private relay and its paid alias: the public relay's body plus, optionally, the subject the write is for. */
export const PrivateRelayBody = t.Intersect([
  DelegatedAttestBody,
  t.Object({
    subjectDid: t.Optional(t.String({
      description: "The subject the attestation is about; when given it must be the subject inside the signed data (for a user-review-response, the subject of the review refUID names)",
    })),
  }),
]);

/** A space-separated OAuth scope (RFC 6749 §3.3) as `parseScope` reads it: known scopes only. */
const OAuthScope = t.Union([
  t.String({ maxLength: 1_000, description: `Space-separated, each of ${ALL_SCOPES.join(", ")}; absent, null or empty: all of them` }),
  t.Null(),
]);
/** A client name (RFC 7591 §2) as the service reads it: 1 to 200 characters, no control characters. */
const ClientName = t.Union([t.String({ minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$" }), t.Null()]);

/** `POST /oauth/register` (RFC 7591): a public client of the authorization code flow with PKCE; other members are ignored. */
export const OAuthRegisterBody = t.Object({
  redirect_uris: t.Array(t.String({ minLength: 1, maxLength: 2_000 }), {
    minItems: 1,
    maxItems: 10,
    description: "Absolute, without a fragment: HTTPS, HTTP on a loopback host (localhost, 127.0.0.1, [::1]) or a private-use scheme (com.example.app:/cb)",
  }),
  client_name: t.Optional(ClientName),
  scope: t.Optional(OAuthScope),
  grant_types: t.Optional(t.Array(t.Union([t.Literal("authorization_code"), t.Literal("refresh_token")]), {
    minItems: 1,
    maxItems: 2,
    description: "Must include authorization_code; default both",
  })),
  response_types: t.Optional(t.Array(t.Literal("code"), { minItems: 1, maxItems: 1, description: "Only [\"code\"]" })),
  token_endpoint_auth_method: t.Optional(t.String({ description: "Ignored: the client is registered with none (the answer says so)" })),
}, { description: "RFC 7591 client metadata" });

/** `POST /api/private/oauth/clients`: an API client of the account (client credentials). */
export const ApiClientBody = t.Object({
  client_name: t.Optional(ClientName),
  scope: t.Optional(OAuthScope),
  grant_types: t.Optional(t.Array(t.Literal("client_credentials"), { minItems: 1, maxItems: 1, description: "Only [\"client_credentials\"] (the default)" })),
  token_endpoint_auth_method: t.Optional(t.Union([t.Literal("client_secret_basic"), t.Literal("client_secret_post")], { description: "Default client_secret_basic" })),
  redirect_uris: t.Optional(t.Array(t.String(), { maxItems: 0, description: "An API client takes none (absent or empty)" })),
}, { description: "RFC 7591 client metadata" });

/** One parameter of an OAuth form body (RFC 6749 §3.1): given once; empty is as omitted; at most 4,096 characters. */
const FormParam = (description: string) => t.String({ maxLength: 4_096, description });
const ClientAuthParams = {
  client_id: t.Optional(FormParam("The client (client_secret_post, or a public client); with Basic, absent or the same")),
  client_secret: t.Optional(FormParam("client_secret_post; never together with Authorization: Basic")),
};

/** `POST /oauth/token` (application/x-www-form-urlencoded, at most 64 KiB). */
export const OAuthTokenForm = t.Object({
  grant_type: t.Union([t.Literal("authorization_code"), t.Literal("refresh_token"), t.Literal("client_credentials")]),
  code: t.Optional(FormParam("authorization_code: the code")),
  code_verifier: t.Optional(FormParam("authorization_code: the PKCE verifier (43 to 128 characters of [A-Za-z0-9-._~])")),
  redirect_uri: t.Optional(FormParam("authorization_code: required, and the same, when the authorization request named it")),
  refresh_token: t.Optional(FormParam("refresh_token: the refresh token (rotated)")),
  scope: t.Optional(FormParam("refresh_token, client_credentials: a subset of the grant's or the client's scopes")),
  resource: t.Optional(FormParam("RFC 8707: {base} or {base}/mcp")),
  ...ClientAuthParams,
}, { description: "Each parameter once" });

/** `POST /oauth/revoke` (RFC 7009; application/x-www-form-urlencoded, at most 64 KiB). */
export const OAuthRevokeForm = t.Object({
  token: FormParam("The refresh or access token"),
  token_type_hint: t.Optional(t.Union([t.Literal("refresh_token"), t.Literal("access_token")], { description: "Orders the search only" })),
  ...ClientAuthParams,
}, { description: "Each parameter once" });

/** The fields of an authorization request (RFC 6749 §4.1.1, PKCE S256, RFC 8707 resource), as `check` reads them. */
const AuthorizationRequestFields = {
  response_type: t.Literal("code"),
  client_id: t.String({ minLength: 1, maxLength: 200, description: "A client registered with POST /oauth/register" }),
  redirect_uri: t.Optional(t.String({ description: "Exactly one the client registered; may be left out when it registered only one" })),
  scope: t.Optional(t.String({ description: "Space-separated, within the client's; default the client's" })),
  state: t.Optional(t.String({ description: "Given back with the code or the error" })),
  code_challenge: t.String({ pattern: "^[A-Za-z0-9_-]{43}$", description: "PKCE S256 challenge (43 base64url characters)" }),
  code_challenge_method: t.Literal("S256"),
  resource: t.Optional(t.String({ description: "RFC 8707: {base} or {base}/mcp" })),
};
/**
 * `GET /oauth/authorize`: the authorization request; each parameter once, empty as omitted. Without a usable
 * client_id or redirect_uri the error page (400); any other fault goes back to the client (303).
 */
export const OAuthAuthorizeQuery = t.Object(AuthorizationRequestFields);
/** `POST /oauth/authorize`: the consent form the page posts back (application/x-www-form-urlencoded, at most 64 KiB). */
export const OAuthConsentForm = t.Object({
  ...AuthorizationRequestFields,
  csrf_token: t.String({ description: "The page's token for this session and client" }),
  decision: t.Union([t.Literal("approve"), t.Literal("deny")]),
}, { description: "The authorization request's fields as the page holds them, csrf_token and decision; each parameter once" });

/** One JSON-RPC 2.0 message of the MCP endpoint (a request, a notification or a response to the server). */
const McpMessage = t.Object({
  jsonrpc: t.Literal("2.0"),
  id: t.Optional(t.Union([t.String(), t.Integer()])),
  method: t.Optional(t.String({ description: "initialize, notifications/initialized, tools/list, tools/call, ping, …" })),
  params: t.Optional(t.Record(t.String(), t.Unknown())),
  result: t.Optional(t.Unknown()),
  error: t.Optional(t.Unknown()),
});
/** `POST /mcp`: one JSON-RPC 2.0 message or an array of them (Streamable HTTP). */
export const McpBody = t.Union([McpMessage, t.Array(McpMessage, { minItems: 1 })], {
  description: "A JSON-RPC 2.0 message, or an array of them; outside initialize the Mcp-Session-Id header names the session",
});

/**
 * A relay's batch (decisions §23): 1 to 50 of the single route's bodies. Each is checked as the single route checks
 * it and refused in its own result, so the batch's model holds them as any JSON value.
 */
function batchBody(single: string) {
  return t.Object({
    requests: t.Array(t.Unknown({ description: `A body of ${single}, checked as that route checks it; a bad one is refused in its own result` }), {
      minItems: 1,
      maxItems: 50,
      description: "In the order answered; the items of one attester signed for consecutive nonces in this order",
    }),
  }, { description: "{requests: [...]}: 1 to 50 of the single route's bodies" });
}
/** `POST /v1/delegated-attest/batch`. */
export const DelegatedAttestBatchBody = batchBody("POST /v1/delegated-attest");
/** `POST /api/private/relay/eas/delegated-attest/batch`. */
export const PrivateRelayBatchBody = batchBody("POST /api/private/relay/eas/delegated-attest");

/** `POST /api/private/subscriptions/x402`: the purchase takes no fields. */
export const PlanPurchaseBody = t.Object({}, { description: "No fields: send {} or an empty body (any JSON is read and ignored)" });
/** The logouts: the body is not read for anything; the private routes' guard wants Content-Type: application/json. */
export const IgnoredBody = t.Object({}, { description: "Ignored: send {} or an empty body, as application/json" });

/** The request models of one operation: a query object or a JSON body. */
export type RequestModels = { readonly query?: TSchema | undefined; readonly body?: TSchema | undefined };

/** Webhooks (decisions §22): the event types an endpoint may ask for. */
const WebhookEventTypeModel = t.Union(
  [t.Literal("attestation.created"), t.Literal("attestation.revoked"), t.Literal("key.status_changed"), t.Literal("submission.settled"), t.Literal("webhook.test")],
  { description: "An event type" },
);
const WebhookUrlField = t.String({ maxLength: 2048, description: "https:// (http:// on loopback only with ALLOW_PRIVATE_NETWORK); its host must resolve to addresses the service would fetch a did.json from" });
const WebhookSubjectsField = t.Array(t.String({ maxLength: 2048 }), { maxItems: 1000, description: "Subject DIDs watched (did:web, did:pkh, did:artifact…); at most 1,000 per account, all endpoints together" });
/** The body of `POST /api/private/webhooks` (checked in the use case's own code, which names the field). */
export const WebhookCreateBody = t.Object({
  url: WebhookUrlField,
  events: t.Array(WebhookEventTypeModel, { minItems: 1 }),
  subjects: t.Optional(WebhookSubjectsField),
  ownSubjects: t.Optional(t.Boolean({ description: "Also the account's proven subjects (default true)" })),
});
/** The body of `PATCH /api/private/webhooks/{id}`. */
export const WebhookPatchBody = t.Object({
  url: t.Optional(WebhookUrlField),
  events: t.Optional(t.Array(WebhookEventTypeModel, { minItems: 1 })),
  subjects: t.Optional(WebhookSubjectsField),
  ownSubjects: t.Optional(t.Boolean()),
  disabled: t.Optional(t.Boolean({ description: "false re-enables an endpoint the service disabled after 5 days of failures" })),
});
const WebhookFields = {
  id: t.String(),
  url: t.String(),
  events: t.Array(WebhookEventTypeModel),
  subjects: t.Array(t.String()),
  ownSubjects: t.Boolean(),
  createdAt: t.String({ description: "ISO 8601" }),
  disabled: t.Boolean(),
};
/** An endpoint (never its secret). */
export const WebhookModel = t.Object(WebhookFields);
/** A new endpoint, with its secret shown this once. */
export const WebhookCreatedModel = t.Object({ ...WebhookFields, secret: t.String({ description: "whsec_ + base64: shown this once" }) });
export const WebhookListModel = t.Object({ webhooks: t.Array(WebhookModel) });
export const WebhookSecretModel = t.Object({ secret: t.String({ description: "The new whsec_ secret; the old one keeps signing beside it for 24 h" }) });
export const WebhookTestModel = t.Object({ eventId: t.String(), type: t.Literal("webhook.test") });
export const WebhookDeliveryModel = t.Object({
  eventId: t.String({ description: "The event's id: the webhook-id header of every attempt" }),
  type: WebhookEventTypeModel,
  attempts: t.Integer(),
  lastStatus: t.Union([t.Integer(), t.Null()], { description: "The last answer's status; null: none (timeout, refused connection) or no attempt yet" }),
  nextAttemptAt: t.Union([t.String(), t.Null()]),
  deliveredAt: t.Union([t.String(), t.Null()]),
  failedAt: t.Union([t.String(), t.Null()]),
});
export const WebhookDeliveryPageModel = t.Object({
  items: t.Array(WebhookDeliveryModel),
  nextCursor: t.Union([t.String(), t.Null()], { description: "Pass as cursor for the next page; null on the last" }),
});
/** The query of an endpoint's deliveries (checked in the use case's own code). */
export const WebhookDeliveriesQuery = t.Object({
  limit: t.Optional(t.String({ pattern: "^[0-9]{1,3}$", description: "Items per page, 1 to 100 (default 25)" })),
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "The nextCursor of the previous page" })),
});

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
