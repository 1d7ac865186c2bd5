/** The types artifact trust's files share: the public record and the request's working values. */
import type { AttestationIndex, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { AsOf } from "../index/mod.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { JwsVerifier } from "../../ports/jws_verifier.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import type { ControllerAuthorization } from "../controller_authorization/mod.ts";
import type { DiscoverControllers, LookupClient } from "../discovery/mod.ts";
import type { Result } from "../result.ts";

/** The four schemas artifact trust reads, by trust-anchor name. */
export const ARTIFACT_POLICY_SCHEMAS = [
  "responsibility-claim",
  "security-assessment",
  "certification",
  "linked-identifier",
] as const;

/** One of {@link ARTIFACT_POLICY_SCHEMAS}. */
export type ArtifactPolicySchema = (typeof ARTIFACT_POLICY_SCHEMAS)[number];

/** What qualified a returned record. */
export type VerificationBasis = "approved-issuer" | "proof" | "controller-authorization" | "authorization-window";

/** One returned record. Big integers are base-10 strings. */
export type ArtifactTrustItem = {
  readonly attestation: {
    readonly uid: string;
    readonly schema: string;
    readonly schemaName: ArtifactPolicySchema;
    readonly attester: string;
    readonly attesterLabel?: string;
    readonly recipient: string;
    readonly time: string;
    readonly expirationTime: string;
    readonly revocationTime: string;
    readonly data: Readonly<Record<string, unknown>>;
  };
  readonly verification: { readonly valid: true; readonly basis: readonly VerificationBasis[] };
};

/** The artifact trust record (interface "Artifact trust record"). */
export type ArtifactTrustRecord = {
  readonly artifactDid: string;
  /** The index head the answer was computed at, set by the reads over the index (decisions §21). */
  readonly asOf?: AsOf | undefined;
  readonly chain: { readonly chainId: number; readonly caip2: string; readonly easContract: string };
  readonly trustAnchorsVersion: number;
  readonly responsibilityClaims: readonly ArtifactTrustItem[];
  readonly securityAssessments: readonly ArtifactTrustItem[];
  readonly certifications: readonly ArtifactTrustItem[];
  readonly otherAttestations: readonly ArtifactTrustItem[];
  readonly summary: {
    readonly totalQueried: number;
    readonly totalVerified: number;
    readonly totalExcluded: number;
    readonly complete: true;
  };
};

/** The expected failures of artifact trust. */
/** INDEX_STALE: the index the answer would come from is not kept up (decisions §21). */
export type ArtifactTrustError = "INVALID_DID" | "UNSUPPORTED_CHAIN" | "NETWORK_ERROR" | "INDEX_STALE";

/** Looks up the verified evidence of a did:artifact; `client`: whose share of each party domain's lookup budget the live check also takes. */
export type ArtifactTrust = (artifactDid: string | undefined, options?: LookupClient) => Promise<Result<ArtifactTrustRecord, ArtifactTrustError>>;

/** Why a candidate was excluded (for diagnostics; the response only counts them). */
export type ExclusionReason =
  | "schema-not-anchored"
  | "wrong-recipient"
  | "revoked"
  | "expired"
  | "undecodable"
  | "wrong-subject"
  | "not-yet-effective"
  | "payload-expired"
  | "invalid-payload"
  | "issuer-not-approved"
  | "invalid-proofs"
  | "not-authorized"
  | "outside-authorization-window";

/** What artifact trust needs. */
export type ArtifactTrustDeps = {
  readonly index: AttestationIndex;
  readonly trustAnchors: TrustAnchors;
  readonly clock: Clock;
  readonly jws: JwsVerifier;
  /**
   * Live DNS/did.json evidence for did:web parties; absent: only on-chain authorization counts, and a claim whose
   * verdict the endpoints' word could change (a binding that counts only if they name its writer) is not verified.
   */
  readonly discover?: DiscoverControllers | undefined;
  /**
   * Controller authorization (decisions §25) over the same pinned reads, asked for an eip155 did:pkh party that no
   * witness window authorizes: a contract party's `owner()` (live `contract-ownership`) or a transfer proof in the
   * controller's binding, as `/v1/controller-authorization` counts them. Absent: a did:pkh party needs a witness.
   */
  readonly controllerAuthorization?: ControllerAuthorization | undefined;
  /** Told about every excluded candidate. */
  readonly onExcluded?: ((uid: string, reason: ExclusionReason) => void) | undefined;
};

/** The anchors of the active chain artifact trust reads. */
export type Policy = {
  readonly caip2: string;
  readonly easContract: string;
  readonly policyUids: readonly HexString[];
  readonly names: ReadonlyMap<string, ArtifactPolicySchema>;
  readonly witnessUid: HexString | undefined;
  readonly keyBindingUid: HexString | undefined;
  /** Every UID whose schema string the request needs. */
  readonly allUids: readonly HexString[];
};

/** A candidate that passed the generic rules. */
export type Screened = {
  readonly attestation: IndexedAttestation;
  readonly name: ArtifactPolicySchema;
  readonly data: Record<string, unknown>;
};

/** A responsibility claim or linked identifier waiting for its controller authorization. */
export type PendingClaim = Screened & {
  readonly party: string;
  readonly controller: string;
  readonly issuedAt: bigint;
  readonly basis: readonly VerificationBasis[];
};

/** What one artifact trust keeps across requests, and reads every request through. */
export type ArtifactTrustContext = {
  readonly deps: ArtifactTrustDeps;
  readonly index: AttestationIndex;
  readonly trustAnchors: TrustAnchors;
  readonly chainId: number;
  /** Registered schema strings by lowercase UID; registration is immutable, so they are read once. */
  readonly schemaStrings: Map<string, string>;
};
