/**
 * The x402 `offer-receipt` extension for resource servers: issuers (eip712, jws), the `@x402/core`
 * extension and its declare call, the DID document route, and the Elysia-on-Bun adapter (v1 and v2).
 */
export {
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
  type OfferReceiptSigning,
  offersExtension,
  receiptExtension,
  resolveResourceUrl,
  signOffers,
  signReceipt,
} from "./extension.ts";
export {
  createEip712Issuer,
  createJwsIssuer,
  createJwsIssuerFromJwk,
  didWebKid,
  evmAddressOfJwk,
  generateSigningJwk,
  type OfferReceiptIssuer,
  type PrivateJwk,
  type PublicJwk,
} from "./signers.ts";
export { buildDidDocument, DID_DOCUMENT_PATH, type DidDocument, didDocumentResponse, didDocumentRoutes } from "./did_document.ts";
export { createX402Fetch, withX402, type X402FetchOptions } from "./elysia_adapter.ts";
export { issuerFromEnv, type X402SigningEnv } from "./signing_config.ts";
/** did:key kids for JWS issuers (self-resolving, like did:jwk): `jwkToDidKey(issuer.publicJwk)`. */
export { didKeyToJwk, jwkToDidKey } from "../domain/payments/mod.ts";
export {
  OFFER_RECEIPT,
  type OfferPayload,
  type OfferReceiptDeclaration,
  type ReceiptPayload,
  resourceUrlToDidWeb,
  type SignedOffer,
  type SignedReceipt,
} from "../domain/payments/mod.ts";
