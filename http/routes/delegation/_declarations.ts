/** The declarations of the relay routes (http/routes/delegation/): the public relay, the private relay and its paid alias. */
import {
  DelegatedAttestBatchModel,
  DelegatedAttestSuccessModel,
  NonceRecordModel,
  PrivateRelayBatchBody,
  PrivateRelayBody,
  REQUEST_MODELS,
  type RouteDoc,
} from "../../models.ts";
import { CACHE } from "../../http_cache.ts";
import { easErr, err, NOT_JSON, TOO_LARGE, UNAUTHENTICATED_OFFERED, X402_PAID_REFUSALS, X402_REFUSALS } from "../../route_responses.ts";

/**
 * The 5xx answers of a relay's single write, the same use case's on the public relay, the private relay and its paid
 * alias (domain/delegation/): the route declares each it can give. The paid alias declared none (found in review), so
 * a client generated from the document had no type for a failed or unknown transaction it paid for.
 */
const RELAY_500 =
  "NO_DELEGATE_KEY, RPC_ERROR (the chain did not answer before anything was sent), SUBMISSION_FAILED (refused by the chain: retry with the same signature; or reverted, details: the transaction hash), INTERNAL_ERROR (also: with several instances, the delegate wallet's shared nonce could not be taken; nothing sent, not kept under an Idempotency-Key)";
const RELAY_501 = "MAINNET_NOT_SUPPORTED";
const RELAY_503 =
  "OUTCOME_UNKNOWN (details: the transaction hash; settled later, and the same signature then answers 409 DUPLICATE with its outcome), SUBMISSION_FAILED (the delegate wallet cannot pay; nothing recorded), SIGNER_UNAVAILABLE (the service's signer did not sign; nothing sent or charged, Retry-After)";
/** The private relay's 502, on its route and its paid alias. */
const PRIVATE_RELAY_502 =
  "FACILITATOR_UNAVAILABLE (nothing written or charged), NETWORK_ERROR (a paying agent's subject ownership, or the attestation a user-review-response's refUID names, could not be looked up; nothing written or charged, not kept under an Idempotency-Key)";
/**
 * A batch's own 503 (its requests' 5xx are results of its 200): a retry under the Idempotency-Key of a batch whose
 * request died after sending, when its submission is no longer known.
 */
const BATCH_503 = "OUTCOME_UNKNOWN: the submission of a batch whose first request died after sending is no longer known (a retry under its Idempotency-Key)";

/** The public relay: nonce, delegated attest and its batch: route declarations, gathered by http/route_docs.ts. */
export const EAS_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/api/eas/nonce", "/v1/nonce"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "The attester's current EAS nonce",
    request: REQUEST_MODELS.nonce,
    responses: {
      200: { description: "Nonce record", schema: NonceRecordModel },
      400: easErr("attester missing or invalid (INVALID_INPUT)"),
      405: easErr("METHOD_NOT_ALLOWED (Allow header)"),
      429: easErr("RATE_LIMITED: more than NONCE_RATE_PER_MINUTE reads from this address (Retry-After)"),
      500: easErr("RPC failure (RPC_ERROR), INTERNAL_ERROR"),
    },
  },
  {
    method: "post",
    paths: ["/api/eas/delegated-attest", "/v1/delegated-attest"],
    idempotent: true,
    respondAsync: true,
    auth: "public",
    cache: CACHE.noStore,
    summary: "Verify an EIP-712 Attest signature and submit it through attestByDelegation, paying gas",
    request: REQUEST_MODELS.delegatedAttest,
    responses: {
      200: { description: "Mined attestation", schema: DelegatedAttestSuccessModel },
      400: easErr("INVALID_JSON, INVALID_INPUT (also a simulation needing more gas than PUBLIC_RELAY_MAX_GAS_PER_TX, or call data over 120 KiB, the attestation's or an ERC-6492 factory call's, before anything is sent), SIGNATURE_EXPIRED, INVALID_SIGNATURE, ATTESTER_MISMATCH"),
      403: easErr("SCHEMA_NOT_SUBSIDIZED, PUBLIC_RELAY_DISABLED (PUBLIC_RELAY=off)"),
      429: easErr("RATE_LIMITED (per client address, per attester, the hourly gas budget, or the client address's or attester's share of it; Retry-After header)"),
      405: easErr("METHOD_NOT_ALLOWED (Allow header)"),
      409: easErr("DUPLICATE: details is the uid once mined, the transaction hash while it is on its way"),
      413: easErr("PAYLOAD_TOO_LARGE: body over 8 MiB"),
      500: easErr(RELAY_500),
      501: easErr(RELAY_501),
      503: easErr(RELAY_503),
    },
  },
  {
    method: "post",
    paths: ["/v1/delegated-attest/batch"],
    idempotent: true,
    respondAsync: true,
    auth: "public",
    cache: CACHE.noStore,
    summary:
      "1 to 50 delegated attestations in one multiAttestByDelegation transaction: each request checked as POST /v1/delegated-attest checks it (and counted by its rate limits), the valid ones sent together, one result per request in order; the requests of one attester signed for consecutive nonces in the order sent",
    request: REQUEST_MODELS.delegatedAttestBatch,
    responses: {
      200: {
        description:
          "The batch was processed: {submissionId, txHash, results}, each result {uid} or the single route's {status, code, error} (a 429's with retryAfter, its Retry-After in seconds). A retry with the Idempotency-Key of a request that died after sending answers the same from its submission once settled (the 202 before)",
        schema: DelegatedAttestBatchModel,
      },
      400: easErr("INVALID_JSON, INVALID_INPUT (not {requests: [...]}, or not 1 to 50 requests)"),
      404: easErr("NOT_FOUND: this deployment sends no batches"),
      405: easErr("METHOD_NOT_ALLOWED (Allow header)"),
      413: easErr("PAYLOAD_TOO_LARGE: body over 8 MiB"),
      500: easErr("INTERNAL_ERROR"),
      503: easErr(BATCH_503),
    },
  },
];

/** The private relay (decisions §12): route declarations, gathered by http/route_docs.ts. */
export const PRIVATE_RELAY_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/api/private/relay/eas/nonce"],
    auth: "session",
    cache: CACHE.private,
    scope: "relay:write",
    summary: "The attester's EAS nonce, for the signed-in account (private relay)",
    request: REQUEST_MODELS.nonce,
    responses: {
      200: { description: "{nonce, chainId, chain, easAddress}" },
      400: err("INVALID_INPUT: attester missing, repeated or not an address"),
      401: err("UNAUTHENTICATED"),
      429: err("RATE_LIMITED: more than NONCE_RATE_PER_MINUTE reads from this account (Retry-After)"),
      500: err("RPC_ERROR"),
    },
  },
  {
    method: "post",
    paths: ["/api/private/relay/eas/delegated-attest"],
    idempotent: true,
    respondAsync: true,
    auth: "session-or-x402",
    cache: CACHE.private,
    scope: "relay:write",
    summary: "Delegated attestation paid from the account's sponsored writes, or with x402 by an agent without a session (X402_RELAY_PRICE; the attester must be the payer, a subject-scoped subject the payer's own did:pkh or proven owned by its wallet): body as the public route plus optional subjectDid; subject-scoped schemas only for the subject's owner",
    body: { schema: PrivateRelayBody },
    responses: {
      200: { description: "{success, txHash, uid, blockNumber, chain}; paid: PAYMENT-RESPONSE header with the settlement and a signed receipt (success false and no receipt when settlement failed after the write)" },
      400: err("INVALID_JSON, INVALID_INPUT (also a subjectDid that differs from the signed data, or for a user-review-response from the subject of the review refUID names; a refUID naming no attestation, another schema than user-review or a revoked one; or more gas than MAX_GAS_PER_TX), SIGNATURE_EXPIRED, INVALID_SIGNATURE, ATTESTER_MISMATCH (signature), INVALID_INPUT also for call data over 120 KiB (the attestation's, or an ERC-6492 factory call's: more than a node takes)"),
      401: err(UNAUTHENTICATED_OFFERED),
      402: err(X402_PAID_REFUSALS),
      403: err("ATTESTER_MISMATCH (not the account's wallet, or not the payer), SCHEMA_NOT_ELIGIBLE, SUBJECT_OWNERSHIP_REQUIRED (for a user-review-response: the owner of the reviewed subject), SPONSORED_WRITE_LIMIT_EXCEEDED, ORIGIN_NOT_ALLOWED"),
      409: err("DUPLICATE, PAYMENT_ALREADY_USED"),
      413: TOO_LARGE,
      415: NOT_JSON,
      429: err("RATE_LIMITED: the private relay's hourly gas budget (PRIVATE_RELAY_GAS_BUDGET_PER_HOUR) is spent, or more than PRIVATE_RELAY_ACCOUNT_RATE_PER_MINUTE writes from this account; Retry-After header"),
      500: err(RELAY_500),
      501: err(RELAY_501),
      502: err(PRIVATE_RELAY_502),
      503: err(RELAY_503),
    },
  },
  {
    method: "post",
    paths: ["/api/private/relay/eas/delegated-attest/batch"],
    idempotent: true,
    respondAsync: true,
    auth: "session",
    cache: CACHE.private,
    scope: "relay:write",
    summary:
      "1 to 50 private relay writes in one multiAttestByDelegation transaction: each request checked as POST /api/private/relay/eas/delegated-attest checks it, a sponsored write reserved for each and charged only for those sent; one result per request in order",
    body: { schema: PrivateRelayBatchBody },
    responses: {
      200: {
        description:
          "{submissionId, txHash, results, chain}, each result {uid} or the single route's {status, code, error} (a 429's with retryAfter, its Retry-After in seconds). A retry with the Idempotency-Key of a request that died after sending answers the same from its submission once settled (the 202 before)",
        schema: DelegatedAttestBatchModel,
      },
      400: err("INVALID_JSON, INVALID_INPUT (not {requests: [...]}, or not 1 to 50 requests)"),
      401: err("UNAUTHENTICATED"),
      403: err("ORIGIN_NOT_ALLOWED"),
      404: err("NOT_FOUND: this deployment sends no batches"),
      413: TOO_LARGE,
      415: NOT_JSON,
      429: err("RATE_LIMITED: more than PRIVATE_RELAY_ACCOUNT_RATE_PER_MINUTE writes from this account (Retry-After)"),
      500: err("INTERNAL_ERROR"),
      503: err(BATCH_503),
    },
  },
];

/** The private relay's paid alias (decisions §13): route declarations, gathered by http/route_docs.ts. */
export const PAID_RELAY_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/v1/paid/delegated-attest"],
    idempotent: true,
    auth: "x402",
    cache: CACHE.private,
    summary: "The private relay for x402 clients that pay only on a 402 (decisions §13 amended): the private relay's rules with the payer as identity (the attester must be the payer); 402 until paid",
    body: { schema: PrivateRelayBody },
    responses: {
      200: { description: "{success, txHash, uid, blockNumber, chain}; PAYMENT-RESPONSE with the settlement and a signed receipt" },
      400: err("INVALID_JSON, INVALID_INPUT, SIGNATURE_EXPIRED, INVALID_SIGNATURE"),
      402: err(X402_REFUSALS),
      403: err("ATTESTER_MISMATCH (not the payer), SCHEMA_NOT_ELIGIBLE, SUBJECT_OWNERSHIP_REQUIRED, ORIGIN_NOT_ALLOWED"),
      404: err("NOT_FOUND: no X402_RELAY_PRICE is set"),
      409: err("DUPLICATE, PAYMENT_ALREADY_USED, PAYMENT_IN_PROGRESS"),
      413: TOO_LARGE,
      415: NOT_JSON,
      500: err(RELAY_500),
      501: err(RELAY_501),
      502: err(PRIVATE_RELAY_502),
      503: err(RELAY_503),
    },
  },
];
