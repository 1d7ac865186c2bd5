/** The models of the account routes (decisions §12, §13, §17, §19): sign-in, the account, its subjects, premium reads, signing keys, the witness body and OAuth registrations. */
import { Type as t } from "@sinclair/typebox";
import { Address, SAFE_MAX, Text, ChainId, Legacy } from "./model_fields.ts";
import { MAX_BATCH, PREMIUM_METHODS } from "../domain/accounts/mod.ts";
import { ALL_SCOPES } from "../domain/oauth/mod.ts";

export const AccountModel = t.Object({
  id: t.String(),
  displayName: t.Union([t.String({ maxLength: 100 }), t.Null()]),
  address: Address,
  plan: t.Union([t.Literal("free"), t.Literal("paid")]),
});

export const SubscriptionModel = t.Object({
  plan: t.Union([t.Literal("free"), t.Literal("paid")]),
  status: t.Literal("active"),
  annualSponsoredWriteLimit: t.Integer(),
  sponsoredWritesUsedCurrentYear: t.Integer(),
  annualPremiumReadLimit: t.Union([t.Integer(), t.Null()], { description: "Null until premium reads are metered" }),
  premiumReadsUsedCurrentYear: t.Union([t.Integer(), t.Null()]),
  entitlementPeriodStart: t.String({ format: "date-time" }),
  entitlementPeriodEnd: t.String({ format: "date-time" }),
  eligibleSchemas: t.Array(t.String(), { description: "The schemas the plan's sponsored writes may write, names or UIDs as configured; * for every schema" }),
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

/** `PATCH /api/private/accounts/me`. */
export const SubjectDisplayName = t.Union([t.String({ maxLength: 100 }), t.Null()], { description: "Up to 100 characters (trimmed; empty or null: none)" });

export const SubjectFields = {
  displayName: t.Optional(SubjectDisplayName),
  txHash: t.Optional(t.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "For a contract subject: its creation transaction, or an ownership transfer to the wallet" })),
};

export const SubjectDidField = t.String({ minLength: 1, maxLength: 2_048, description: "The subject: did:web (or a bare domain), or the did:pkh of the wallet or of a contract" });

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

export const SuccessModel = t.Object({ success: t.Literal(true) });

/** The current body or the legacy one (decisions §8); the legacy extras are checked for type and ignored. */
export const ControllerWitnessBody = t.Intersect([
  t.Object({
    subjectDid: t.Optional(Text("did:web subject (legacy: subject)")),
    controllerDid: t.Optional(Text("did:pkh:eip155:<chainId>:<address> or did:jwk (legacy: controller)")),
    chainId: t.Optional(t.Integer({ minimum: 1, maximum: SAFE_MAX, description: "Older spelling of chain" })),
    chain: t.Optional(t.Union([t.String(), t.Integer({ minimum: 1, maximum: SAFE_MAX })], {
      description: "The chain to write on: a served attestation chain's id (8453) or CAIP-2 (eip155:8453); default the default chain; another 400 UNSUPPORTED_CHAIN (decisions §30)",
    })),
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

/** A space-separated OAuth scope (RFC 6749 §3.3) as `parseScope` reads it: known scopes only. */
export const OAuthScope = t.Union([
  t.String({ maxLength: 1_000, description: `Space-separated, each of ${ALL_SCOPES.join(", ")}; absent, null or empty: all of them` }),
  t.Null(),
]);

/** A client name (RFC 7591 §2) as the service reads it: 1 to 200 characters, no control characters. */
export const ClientName = t.Union([t.String({ minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$" }), t.Null()]);

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

/** `POST /api/private/subscriptions/x402`: the purchase takes no fields. */
export const PlanPurchaseBody = t.Object({}, { description: "No fields: send {} or an empty body (any JSON is read and ignored)" });

/** The logouts: the body is not read for anything; the private routes' guard wants Content-Type: application/json. */
export const IgnoredBody = t.Object({}, { description: "Ignored: send {} or an empty body, as application/json" });
