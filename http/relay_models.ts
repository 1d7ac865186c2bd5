/** The relay's models (decisions §2, §12, §23), shared by the public relay, the private relay, its paid alias and `/openapi.json`: the nonce, the delegated-attest body and answers, the batches. */
import { type TSchema, Type as t } from "@sinclair/typebox";
import { Address, Bytes32, Uint, Uint64, ZeroValue, HexBytes, NotNull, Legacy } from "./model_fields.ts";

/** nonce: the attester whose EAS nonce is read (a mixed-case address must also pass its checksum). */
export const NonceQuery = t.Object({
  attester: Address,
  chainId: t.Optional(t.String({ description: "The chain to read the nonce on: a served attestation chain's id (8453) or CAIP-2 (eip155:8453); default the default chain; another 400 UNSUPPORTED_CHAIN" })),
  chain: t.Optional(t.String({ description: "Another name for chainId, as every other public read names the chain; with chainId it must name the same chain, else 400 INVALID_INPUT" })),
});

export const NonceRecordModel = t.Object({
  nonce: Uint,
  chain: t.String(),
  chainId: t.Integer(),
  easAddress: Address,
  elapsed: t.String(),
});

/** One attestation field: from the signed message when it holds it, else from `delegatedRequest` (or the default). */
export function messageOrRequest(name: string, value: TSchema) {
  return t.Union([
    t.Object({ typedData: t.Object({ message: t.Object({ [name]: value }) }) }),
    t.Object({
      typedData: t.Optional(t.Object({ message: t.Optional(t.Not(t.Object({ [name]: NotNull }))) })),
      delegatedRequest: t.Object({ [name]: t.Optional(t.Union([value, t.Null()])) }),
    }),
  ], { description: `${name}: typedData.message.${name}, else delegatedRequest.${name}, else the EAS default` });
}

export const DelegatedRequestModel = t.Object({
  schema: t.Optional(t.Unknown({ description: "Schema UID, bytes32 (alias: schemaUid)" })),
  schemaUid: t.Optional(t.Unknown({ description: "Legacy alias of schema", deprecated: true })),
  deadline: t.Optional(t.Unknown({ description: "uint64 Unix seconds, base-10 string (else typedData.message.deadline)" })),
  attester: t.Optional(t.Unknown({ description: "Ignored: the top-level attester counts" })),
  easContractAddress: t.Optional(t.Unknown({ description: "The EAS signed for, when typedData.domain does not name it: with chainId, the chain written on (decisions §30)" })),
  chainId: t.Optional(t.Unknown({ description: "The chain signed for, when typedData.domain does not name it; neither: the default chain" })),
  recipient: t.Optional(t.Unknown({ description: "Address; default the zero address" })),
  expirationTime: t.Optional(t.Unknown({ description: "uint64, base-10 string; default 0" })),
  revocable: t.Optional(t.Unknown({ description: "Boolean; default true; must match the schema" })),
  refUID: t.Optional(t.Unknown({ description: "bytes32; default all zero" })),
  data: t.Optional(t.Unknown({ description: "ABI-encoded attestation data, 0x-prefixed hex; default 0x" })),
  value: t.Optional(t.Unknown({ description: "Always 0" })),
  nonce: t.Optional(t.Unknown({ description: "The nonce signed; the server reads its own and uses this one only to report a moved nonce" })),
}, { description: "schema and deadline, and the attestation fields the signed message does not hold" });

export const TypedDataModel = t.Object({
  domain: t.Optional(t.Unknown({ description: "EIP-712 domain signed (name EAS, version 1.4.0, chainId, verifyingContract): chainId and verifyingContract choose the chain written on, a served attestation chain and its EAS, else 400 UNSUPPORTED_CHAIN (decisions §30); the server rebuilds the rest" })),
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
    t.Object({
      status: t.Integer(),
      code: t.String(),
      error: t.String(),
      details: t.Optional(t.String()),
      retryAfter: t.Optional(t.Integer({ minimum: 1, description: "A 429's: the seconds the single route's Retry-After would say" })),
    }, {
      description: "Refused (nothing charged for it) or failed with the transaction: the status and error body the single route would have answered",
    }),
  ])),
  chain: t.String(),
  elapsed: t.Optional(t.String()),
});

/** The 202 of a write sent with `Prefer: respond-async` (decisions §23). */
export const SubmissionAcceptedModel = t.Object({
  submissionId: t.String(),
  state: t.Union([t.Literal("pending"), t.Literal("sent"), t.Literal("replaced")], { description: "pending, or where a resumed submission stands" }),
  chain: t.String({ description: "The chain the write goes to (decisions §30): the signed domain's" }),
  elapsed: t.Optional(t.String()),
});

/** The private relay and its paid alias: the public relay's body plus, optionally, the subject the write is for. */
export const PrivateRelayBody = t.Intersect([
  DelegatedAttestBody,
  t.Object({
    subjectDid: t.Optional(t.String({
      description: "The subject the attestation is about; when given it must be the subject inside the signed data (for a user-review-response, the subject of the review refUID names)",
    })),
  }),
]);

/**
 * A relay's batch (decisions §23): 1 to 50 of the single route's bodies. Each is checked as the single route checks
 * it and refused in its own result, so the batch's model holds them as any JSON value.
 */
export function batchBody(single: string) {
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
