/**
 * The answers several capabilities declare alike (the shared refusals, the x402 texts), for the route declarations
 * each capability keeps beside its routes (http/route_docs.ts gathers them).
 */
import { EasErrorModel, ErrorModel } from "./models.ts";

/** An answer with the one error body. */
export const err = (description: string) => ({ description, schema: ErrorModel });
/** An answer with the EAS routes' error body (with `elapsed`). */
export const easErr = (description: string) => ({ description, schema: EasErrorModel });

/** The 402 answers of the x402-paid routes (decisions §13); each carries a PAYMENT-REQUIRED header (x402 v2). */
export const X402_REFUSALS =
  "PAYMENT_REQUIRED: no session and no PAYMENT-SIGNATURE; the PAYMENT-REQUIRED header (base64 JSON, x402 v2) carries the exact-scheme terms (asset, network, payTo, amount) and a signed offer (extensions.offer-receipt); PAYMENT_INVALID (details: the protocol reason, e.g. an underpaid, expired or badly signed authorization) with fresh terms";

/** The 401 of a route that takes a session, a bearer token or an x402 payment (decisions §13 amended, §19). */
export const UNAUTHENTICATED_OFFERED =
  "UNAUTHENTICATED: no session, bearer token or payment; WWW-Authenticate names the protected-resource metadata (an invalid, expired or revoked token: error=\"invalid_token\"), and where an x402 price is set the PAYMENT-REQUIRED header carries the terms and signed offer a 402 would";

/** The 402 of a request that sent a payment the service refused (the unpaid request is 401; the paid aliases answer 402). */
export const X402_PAID_REFUSALS =
  "PAYMENT_INVALID (details: the protocol reason, e.g. an underpaid, expired or badly signed authorization) with fresh terms in PAYMENT-REQUIRED";

/** The app's 413 of any request but a GET that declares a body over the limit (a DELETE's body is never read). */
export const TOO_LARGE = err("PAYLOAD_TOO_LARGE: a body over 8 MiB");
/** The private routes' guard (decisions §1): a browser origin not allowlisted, a body that is not JSON. */
export const ORIGIN = err("ORIGIN_NOT_ALLOWED");
/** A route for a signed-in person only (http/credentials.ts `sessionOnly`): an access token is refused. */
const TOKEN_REFUSED = "insufficient_scope: an access token (the route is for a signed-in person; no scope grants it)";
/** The 403 of a session-only read. */
export const SESSION_ONLY = err(TOKEN_REFUSED);
/** The 403 of a session-only change: another site's origin, or an access token. */
export const SESSION_ONLY_CHANGE = err(`ORIGIN_NOT_ALLOWED; ${TOKEN_REFUSED}`);
/** The private routes' guard: a body that is not JSON. */
export const NOT_JSON = err("UNSUPPORTED_MEDIA_TYPE: the body must be application/json");
/** An OAuth page (text/html) answered with a status. */
export const page = (description: string) => ({ description, mediaType: "text/html" as const });
