/**
 * The resource server's DID document, served at `/.well-known/did.json` as `application/did+json`
 * (x402_offer_receipt.md §3.5): the JWS key as a JsonWebKey2020 method with `alg` (jose in Bun and
 * browsers refuses a JWK without it), listed in `assertionMethod`; an eip712 key as an
 * `EcdsaSecp256k1RecoveryMethod2020` with its `blockchainAccountId`, which is the tier-1 did.json
 * evidence for that format. Absolute method ids, because the official resolver matches the whole kid.
 * No framework here (the package's main entry loads on plain Node): the Elysia route is in `elysia.ts`.
 */
import type { OfferReceiptIssuer, PublicJwk } from "./signers.ts";

/** The path a did:web without a path resolves to. */
export const DID_DOCUMENT_PATH = "/.well-known/did.json";
/** The DID document media type. */
export const DID_JSON_CONTENT_TYPE = "application/did+json";

/** A verification method of the document. */
export type DidVerificationMethod = {
  id: string;
  type: "JsonWebKey2020" | "EcdsaSecp256k1RecoveryMethod2020";
  controller: string;
  publicKeyJwk?: PublicJwk | undefined;
  blockchainAccountId?: string | undefined;
};

/** A DID document with assertion methods only. */
export type DidDocument = {
  "@context": string[];
  id: string;
  verificationMethod: DidVerificationMethod[];
  assertionMethod: string[];
};

/** Options of {@link buildDidDocument}. */
export type BuildDidDocumentOptions = {
  /** The server's did:web, e.g. `didWebKid(publicBaseUrl).split("#")[0]` (a string starting `did:`). */
  readonly did: string;
  /** Issuers whose keys the document publishes. */
  readonly issuers: readonly OfferReceiptIssuer[];
  /** The chain of an eip712 key's `blockchainAccountId`; default 1. */
  readonly chainId?: number | undefined;
};

/** Builds the DID document naming the issuers' keys. */
export function buildDidDocument(options: BuildDidDocumentOptions): DidDocument {
  const { did } = options;
  // Before, anything passed: `resourceUrlToDidWeb`'s `{ok, value}` gave a document whose id was an object, which
  // verifiers refused ("DID document has no id") with no hint why.
  if (typeof did !== "string" || !/^did:[a-z0-9]+:\S+$/.test(did) || did.includes("#")) {
    throw new TypeError("buildDidDocument: did must be a DID string without a fragment, e.g. did:web:api.example.com");
  }
  const methods: DidVerificationMethod[] = [];
  options.issuers.forEach((issuer, i) => {
    const fragment = i === 0 ? "key-1" : `key-${i + 1}`;
    if (issuer.format === "jws") {
      if (issuer.publicJwk === undefined) throw new Error("A jws issuer needs its public JWK for the DID document");
      // The kid the issuer signs with must be the method id, or verifiers will not find the key.
      const id = issuer.kid.startsWith(`${did}#`) ? issuer.kid : `${did}#${fragment}`;
      methods.push({ id, type: "JsonWebKey2020", controller: did, publicKeyJwk: issuer.publicJwk });
    } else if (issuer.address !== undefined) {
      methods.push({
        id: `${did}#eip712-${i + 1}`,
        type: "EcdsaSecp256k1RecoveryMethod2020",
        controller: did,
        blockchainAccountId: `eip155:${options.chainId ?? 1}:${issuer.address}`,
      });
    }
  });
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
    id: did,
    verificationMethod: methods,
    assertionMethod: methods.map((m) => m.id),
  };
}

/** The HTTP answer for the document: `application/did+json`, cacheable for five minutes, any origin. */
export function didDocumentResponse(document: DidDocument): Response {
  return new Response(JSON.stringify(document), {
    headers: {
      "content-type": DID_JSON_CONTENT_TYPE,
      "cache-control": "public, max-age=300",
      "access-control-allow-origin": "*",
    },
  });
}
