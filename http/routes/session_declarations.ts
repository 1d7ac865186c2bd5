/** The declarations of the session routes (sign-in, the session, signing out) and the controller witness with its paid alias, beside http/routes/session.ts. */
import { IgnoredBody, REQUEST_MODELS, SuccessModel, type RouteDoc, Bytes32, AccountModel } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err, NOT_JSON, ORIGIN, SESSION_ONLY_CHANGE, TOO_LARGE, UNAUTHENTICATED_OFFERED, X402_PAID_REFUSALS, X402_REFUSALS } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

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

export const ChallengeModel = t.Object({
  challengeId: t.String(),
  siweMessage: t.String({ description: "The exact EIP-4361 text to sign with personal_sign" }),
  nonce: t.String(),
  expiresAt: t.String({ format: "date-time" }),
});

export const ControllerWitnessModel = t.Object({
  success: t.Literal(true),
  uid: t.Union([Bytes32, t.Null()]),
  txHash: Bytes32,
  blockNumber: t.Integer(),
  observedAt: t.Integer({ description: "Unix seconds of the observation" }),
  method: t.Union([t.Literal("dns-txt"), t.Literal("did-json")]),
});

/** Sign-in with a wallet: route declarations, gathered by http/route_docs.ts. */
export const SIGN_IN_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/v1/session/wallet/challenge", "/api/private/session/wallet/challenge"],
    auth: "public",
    cache: CACHE.private,
    summary: "Sign-in with Ethereum: a single-use EIP-4361 challenge for the wallet (expires in 10 minutes)",
    request: REQUEST_MODELS.walletChallenge,
    responses: {
      200: { description: "Challenge", schema: ChallengeModel },
      400: err("INVALID_JSON, INVALID_INPUT (field named), INVALID_DID (walletDid not did:pkh:eip155, or its chain not the body's chainId; an EOA may sign in from any chain, a contract wallet only from the active one)"),
      403: err("CLIENT_NOT_ALLOWED (domain not in SIWE_DOMAINS), ORIGIN_NOT_ALLOWED"),
      413: err("PAYLOAD_TOO_LARGE"),
      415: err("UNSUPPORTED_MEDIA_TYPE: the body must be application/json"),
      429: err("RATE_LIMITED (per client address, or per wallet for an address that already has one of the minute's, SIWE_CHALLENGE_RATE_PER_MINUTE; Retry-After header)"),
    },
  },
  {
    method: "post",
    paths: ["/v1/session/wallet/verify", "/api/private/session/wallet/verify"],
    auth: "public",
    cache: CACHE.private,
    summary: "Exchanges the signed challenge for an HttpOnly session cookie; the first sign-in creates the account (free plan)",
    request: REQUEST_MODELS.walletVerify,
    responses: {
      200: { description: "Signed in; Set-Cookie: ats_session", schema: SignedInModel },
      400: err("INVALID_JSON, INVALID_INPUT, INVALID_CHALLENGE (unknown, used, message changed), CHALLENGE_EXPIRED"),
      401: err("INVALID_SIGNATURE: not signed by the challenge's wallet (its key, or its contract by ERC-1271/ERC-6492 on the active chain)"),
      403: err("ORIGIN_NOT_ALLOWED"),
      413: err("PAYLOAD_TOO_LARGE"),
      415: err("UNSUPPORTED_MEDIA_TYPE"),
      502: err("NETWORK_ERROR: a smart-contract wallet's signature could not be checked on chain (nothing used up)"),
    },
  },
  {
    method: "post",
    paths: ["/v1/session/wallet/register", "/api/private/session/wallet/register"],
    auth: "public",
    cache: CACHE.private,
    summary: "As verify, for a wallet without an account: creates the account and signs in (decisions §12)",
    request: REQUEST_MODELS.walletVerify,
    responses: {
      200: { description: "Signed in; the session cookie is set", schema: SignedInModel },
      400: err("INVALID_JSON, INVALID_INPUT, INVALID_CHALLENGE, CHALLENGE_EXPIRED"),
      401: err("INVALID_SIGNATURE"),
      403: ORIGIN,
      409: err("ACCOUNT_ALREADY_EXISTS: the wallet has an account (the challenge is not used up: call verify)"),
      413: TOO_LARGE,
      415: NOT_JSON,
      502: err("NETWORK_ERROR: a smart-contract wallet's signature could not be checked on chain"),
    },
  },
];

/** The session: route declarations, gathered by http/route_docs.ts. */
export const SESSION_ME_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/v1/session/me", "/api/private/session/me"],
    auth: "session",
    cache: CACHE.private,
    scope: "account:read",
    summary: "The signed-in account, its session and its sponsored-write quota",
    responses: { 200: { description: "Session", schema: SessionMeModel }, 401: err("UNAUTHENTICATED") },
  },
];

/** Signing out: route declarations, gathered by http/route_docs.ts. */
export const LOGOUT_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/v1/session/logout", "/api/private/session/logout"],
    auth: "session-optional",
    cache: CACHE.private,
    summary: "Revokes the session and clears the cookie; a request carrying an access token is refused (an access token ends at /oauth/revoke)",
    body: { schema: IgnoredBody, required: false },
    responses: { 200: { description: "Signed out", schema: SuccessModel }, 403: SESSION_ONLY_CHANGE, 413: TOO_LARGE, 415: err("UNSUPPORTED_MEDIA_TYPE") },
  },
];

/** The witness's 500 answers, on its route and its paid alias. */
const WITNESS_500 =
  "SCHEMA_NOT_DEPLOYED, SERVER_ERROR (no witness wallet, or the transaction reverted), SUBMISSION_FAILED (refused by the chain; not charged), RPC_ERROR (the chain did not answer before anything was sent), INTERNAL_ERROR (with several instances, the witness wallet's shared nonce could not be taken: nothing written or charged, not kept under an Idempotency-Key)";
/** The witness's 503 answers, on its route and its paid alias. */
const WITNESS_503 =
  "OUTCOME_UNKNOWN (details: the transaction hash; the write stays reserved until settled), SUBMISSION_FAILED (the witness wallet cannot pay; nothing reserved), SIGNER_UNAVAILABLE (the service's signer did not sign; nothing written or charged, Retry-After)";

/** The controller witness (decisions §8): route declarations, gathered by http/route_docs.ts. */
export const WITNESS_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/v1/controller-witness", "/api/private/controller-witness"],
    idempotent: true,
    auth: "session-or-x402",
    cache: CACHE.private,
    scope: "witness:write",
    summary: "Session or x402 payment: when DNS TXT or did.json of the did:web subject publishes the controller, the service writes a controller-witness attestation (one sponsored write, or one paid with x402 by an agent without a session: X402_WITNESS_PRICE; send PAYMENT-SIGNATURE, the answer carries PAYMENT-RESPONSE with a signed receipt)",
    request: REQUEST_MODELS.controllerWitness,
    responses: {
      200: { description: "Witness written (legacy body: with a Deprecation header)", schema: ControllerWitnessModel },
      400: err("INVALID_JSON, INVALID_INPUT, INVALID_DID, UNSUPPORTED_SUBJECT_TYPE, UNSUPPORTED_CHAIN"),
      401: err(UNAUTHENTICATED_OFFERED),
      402: err(X402_PAID_REFUSALS),
      403: err("SPONSORED_WRITE_LIMIT_EXCEEDED, SCHEMA_NOT_ELIGIBLE, ORIGIN_NOT_ALLOWED"),
      409: err("PAYMENT_ALREADY_USED: the x402 authorization was spent (or is in flight); nothing done"),
      413: err("PAYLOAD_TOO_LARGE"),
      415: err("UNSUPPORTED_MEDIA_TYPE"),
      422: err("EVIDENCE_NOT_FOUND: the message lists each source checked and its status (and why, for a source read and unusable for good: a did.json that is not JSON or not the subject's document, too large, a redirect)"),
      429: err("RATE_LIMITED (per user or per subject domain; Retry-After header)"),
      502: err("NETWORK_ERROR: no source confirmed the controller and one (DNS, did.json) could not be read now (SERVFAIL, a timeout, a refused connection, an HTTP status other than 200 and 404, an address the policy refuses); nothing written or charged, not kept under an Idempotency-Key. FACILITATOR_UNAVAILABLE: the x402 facilitator could not verify the payment; nothing written or charged"),
      500: err(WITNESS_500),
      503: err(WITNESS_503),
    },
  },
];

/** The witness's paid alias (decisions §13): route declarations, gathered by http/route_docs.ts. */
export const PAID_WITNESS_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/v1/paid/controller-witness"],
    idempotent: true,
    auth: "x402",
    cache: CACHE.private,
    summary: "The controller witness for x402 clients that pay only on a 402 (decisions §13 amended), body as POST /v1/controller-witness: no session or token is read; without PAYMENT-SIGNATURE 402 PAYMENT_REQUIRED with the terms and a signed offer in PAYMENT-REQUIRED, with it the witness as on /v1/controller-witness",
    request: REQUEST_MODELS.controllerWitness,
    responses: {
      200: { description: "Witness written; PAYMENT-RESPONSE with the settlement and a signed receipt", schema: ControllerWitnessModel },
      400: err("INVALID_JSON, INVALID_INPUT, INVALID_DID, UNSUPPORTED_SUBJECT_TYPE"),
      402: err(X402_REFUSALS),
      403: ORIGIN,
      404: err("NOT_FOUND: no X402_WITNESS_PRICE is set"),
      409: err("PAYMENT_ALREADY_USED, PAYMENT_IN_PROGRESS"),
      413: TOO_LARGE,
      415: NOT_JSON,
      422: err("EVIDENCE_NOT_FOUND"),
      500: err(WITNESS_500),
      502: err("NETWORK_ERROR (the endpoint evidence could not be read now; not settled), FACILITATOR_UNAVAILABLE: nothing written or charged"),
      503: err(WITNESS_503),
    },
  },
];
