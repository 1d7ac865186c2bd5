import { type TSchema, Type as t } from "@sinclair/typebox";
import { TrustAnchorsModel } from "../domain/trust_anchors.ts";

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

export const NonceQuery = t.Object({ attester: Address });
export const NonceRecordModel = t.Object({
  nonce: Uint,
  chain: t.String(),
  chainId: t.Integer(),
  easAddress: Address,
  elapsed: t.String(),
});

const AttestMessageModel = t.Object({
  attester: Address,
  schema: Bytes32,
  recipient: Address,
  expirationTime: Uint,
  revocable: t.Boolean(),
  refUID: Bytes32,
  data: t.String({ pattern: "^0x([0-9a-fA-F]{2})*$" }),
  value: t.Literal("0"),
  nonce: Uint,
  deadline: Uint,
});

export const DelegatedAttestBody = t.Object({
  attester: Address,
  signature: t.String({ pattern: "^0x[0-9a-fA-F]{130}$", description: "65-byte EIP-712 signature" }),
  prepared: t.Object({
    delegatedRequest: t.Intersect([
      AttestMessageModel,
      t.Object({ easContractAddress: Address, chainId: t.Integer() }),
    ]),
    typedData: t.Object({
      domain: t.Object({ name: t.Literal("EAS"), version: t.Literal("1.4.0"), chainId: t.Integer(), verifyingContract: Address }),
      types: t.Record(t.String(), t.Array(t.Object({ name: t.String(), type: t.String() }))),
      primaryType: t.Optional(t.Literal("Attest")),
      message: AttestMessageModel,
    }),
  }),
});

export const DelegatedAttestSuccessModel = t.Object({
  success: t.Literal(true),
  txHash: Bytes32,
  uid: t.Union([Bytes32, t.Null()]),
  blockNumber: t.Integer(),
  chain: t.String(),
  elapsed: t.String(),
});

/** identity-resolve: at most 100 strings. */
export const IdentityResolveBody = t.Object({
  identifiers: t.Array(t.String(), { maxItems: 100 }),
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
});
const ControllerKeyModel = t.Object({
  id: t.String(),
  canonicalId: t.String(),
  label: t.String(),
  sources: t.Array(t.String()),
  basic: t.Boolean({ description: "true when an endpoint source (DNS TXT or did.json) publishes the key" }),
});
export const ControllerConfirmQuery = t.Object({
  subjectDid: t.String({ description: "Service DID; bare domains become did:web" }),
  walletDid: t.Optional(t.String({ description: "controller-confirm only: the connected wallet DID" })),
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
});

/** artifact-trust: only `artifactDid` is read. */
export const ArtifactTrustQuery = t.Object({
  artifactDid: t.String({ description: "Canonical did:artifact (CIDv1, raw codec, sha2-256, base32-lower)" }),
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

/** The artifact trust record (interface "Artifact trust record"). */
export const ArtifactTrustRecordModel = t.Object({
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

/** One documented operation: the paths it is served on and its models. */
const AccountModel = t.Object({ id: t.String(), address: Address, plan: t.Union([t.Literal("free"), t.Literal("paid")]) });

export const ChallengeBody = t.Object({
  walletDid: t.Optional(t.String({ description: "did:pkh:eip155:<chainId>:<address> of the signing wallet" })),
  address: t.Optional(t.String({ description: "Instead of walletDid: the wallet address (with chainId)" })),
  chainId: t.Optional(t.Integer({ minimum: 1 })),
  domain: t.String({ description: "SIWE domain (host[:port]) shown by the wallet; must be in SIWE_DOMAINS" }),
  uri: t.String({ description: "Absolute http(s) URI of the page asking for sign-in" }),
});
export const ChallengeModel = t.Object({
  challengeId: t.String(),
  siweMessage: t.String({ description: "The exact EIP-4361 text to sign with personal_sign" }),
  nonce: t.String(),
  expiresAt: t.String({ format: "date-time" }),
});
export const VerifyBody = t.Object({
  challengeId: t.String(),
  siweMessage: t.String({ description: "The challenge's text, unchanged" }),
  signature: t.String({ description: "65-byte personal_sign signature, 0x-prefixed hex" }),
  walletDid: t.Optional(t.String()),
});
export const SignedInModel = t.Object({
  account: AccountModel,
  session: t.Object({ expiresAt: t.String({ format: "date-time" }) }),
  created: t.Boolean({ description: "true on the first sign-in, which created the account" }),
});
export const SessionMeModel = t.Object({
  account: AccountModel,
  session: t.Object({ expiresAt: t.String({ format: "date-time" }) }),
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
export const ControllerWitnessBody = t.Object({
  subjectDid: t.Optional(t.String({ description: "did:web subject (legacy: subject)" })),
  controllerDid: t.Optional(t.String({ description: "did:pkh:eip155:<chainId>:<address> or did:jwk (legacy: controller)" })),
  chainId: t.Optional(t.Integer({ minimum: 1, description: "Must be the active chain when given" })),
  subject: t.Optional(t.String({ deprecated: true })),
  controller: t.Optional(t.String({ deprecated: true })),
  attestationUid: t.Optional(t.String({ deprecated: true })),
  easContract: t.Optional(t.String({ deprecated: true })),
  schemaUid: t.Optional(t.String({ deprecated: true })),
  method: t.Optional(t.String({ deprecated: true })),
});
export const ControllerWitnessModel = t.Object({
  success: t.Literal(true),
  uid: t.Union([Bytes32, t.Null()]),
  txHash: Bytes32,
  blockNumber: t.Integer(),
  observedAt: t.Integer({ description: "Unix seconds of the observation" }),
  method: t.Union([t.Literal("dns-txt"), t.Literal("did-json")]),
});

export type RouteDoc = {
  readonly method: "get" | "post";
  readonly paths: readonly string[];
  readonly summary: string;
  readonly query?: TSchema | undefined;
  readonly body?: TSchema | undefined;
  readonly responses: Readonly<Record<number, { description: string; schema?: TSchema | undefined }>>;
};
