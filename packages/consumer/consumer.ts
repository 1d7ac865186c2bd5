// A consumer's TypeScript, type-checked with `tsc --strict` against the packed packages' declarations
// (scripts/packages_test.sh; tsconfig.json beside it). Never run: the types are what it tests.
import { x402ResourceServer, type FacilitatorClient } from "@x402/core/server";
import { privateKeyToAccount } from "viem/accounts";
import {
  type ArtifactTrustVerdict,
  attestDelegated,
  checkArtifactTrust,
  type DelegatedAttestResult,
  fetchKeyStatus,
  type KeyStatusRecord,
} from "@ats/client";
import { extractOffers, verifyOffer } from "@ats/client/x402";
import { createWebCryptoJwsVerifier } from "@ats/client/jws";
import {
  buildDidDocument,
  createEip712Issuer,
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
  type OfferReceiptIssuer,
  type SignedOffer,
} from "@ats/x402-offer-receipt";
import { testSchemeServer } from "@ats/x402-offer-receipt/testing";

export async function loaderCheck(artifactDid: string): Promise<boolean> {
  const verdict: ArtifactTrustVerdict = await checkArtifactTrust(artifactDid, { url: "https://ats.example/v1/artifact-trust", pinnedChain: { chainId: 1 } });
  return !verdict.warn;
}

export async function review(key: `0x${string}`): Promise<string> {
  const account = privateKeyToAccount(key);
  const result: DelegatedAttestResult = await attestDelegated({
    schemaName: "user-review",
    data: { subject: "did:web:example.com", version: "1.0.0", ratingValue: 5, reviewBody: "Good", screenshotUrls: [], proofs: [] },
    attester: account.address,
    sign: (typedData) => account.signTypedData(typedData),
  }, { baseUrl: "https://ats.example" });
  const status: KeyStatusRecord = await fetchKeyStatus({ subjectDid: "did:web:example.com", keyDid: `did:pkh:eip155:1:${account.address}` });
  return `${result.uid} ${status.trustLevel}`;
}

export function resourceServer(facilitator: FacilitatorClient, key: `0x${string}`) {
  const issuer: OfferReceiptIssuer = createEip712Issuer({ privateKey: key });
  const document = buildDidDocument({ did: "did:web:api.example.com", issuers: [issuer] });
  const server = new x402ResourceServer(facilitator)
    .register("eip155:8453", testSchemeServer())
    .registerExtension(createOfferReceiptExtension({ issuer, publicBaseUrl: "https://api.example.com" }));
  const extensions = declareOfferReceiptExtension({ includeTxHash: true });
  return { server, extensions, document };
}

export const verifier = createWebCryptoJwsVerifier();
export type Offer = SignedOffer;

/** The resource URL the first offer of a 402 signs, when its signature verifies. */
export async function firstOfferResource(response: Response): Promise<string | undefined> {
  const [offer] = await extractOffers(response);
  if (offer === undefined) return undefined;
  const verified = await verifyOffer(offer);
  return verified.ok ? verified.value.payload.resourceUrl : undefined;
}
