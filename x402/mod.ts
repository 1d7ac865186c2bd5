/**
 * The x402 `offer-receipt` extension for resource servers: issuers (eip712, jws), the `@x402/core`
 * extension and its declare call, and the DID document. The package's main entry (`@ats/x402-offer-receipt`):
 * no Elysia, Bun or Node API is reached from here (architecture_test.ts), so it runs in any server on
 * `@x402/core`. The Elysia adapter (v1 and v2) is `elysia.ts` (`@ats/x402-offer-receipt/elysia`).
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
export {
  buildDidDocument,
  type BuildDidDocumentOptions,
  DID_DOCUMENT_PATH,
  DID_JSON_CONTENT_TYPE,
  type DidDocument,
  didDocumentResponse,
  type DidVerificationMethod,
} from "./did_document.ts";
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
