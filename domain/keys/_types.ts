/** The types key status's files share. */
import type { AttestationIndex } from "../../ports/attestation_index.ts";
import type { Clock } from "../../ports/clock.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import type { DiscoverControllers, DiscoveryRecord, LookupClient, LookupJwks } from "../discovery/mod.ts";
import type { AsOf } from "../index/mod.ts";
import type { Result } from "../result.ts";
import type { BindingEvidence, KeyStatusValue, TrustLevel, WitnessEvidence } from "./key_rules.ts";

/** The public key-status record (decisions §17). Times are Unix seconds; 0 = none. */
export type KeyStatusRecord = {
  /** The index head the answer was computed at, set by the reads over the index (decisions §21). */
  readonly asOf?: AsOf | undefined;
  readonly subjectDid: string;
  readonly keyDid: string;
  readonly at: number;
  readonly status: KeyStatusValue;
  readonly trustLevel: TrustLevel;
  /** Today's endpoint evidence, whatever `at` is: `checkedAt` says when it was read. */
  readonly endpointEvidence: { readonly found: boolean; readonly sources: readonly string[]; readonly checkedAt: number };
  readonly controllerWitness: { readonly uid: string; readonly attester: string; readonly observedAt: number } | null;
  readonly keyBinding: {
    readonly uid: string;
    readonly attester: string;
    readonly keyPurpose: readonly string[];
    readonly effectiveAt: number;
    /** The earlier of the payload's `expiresAt` and the attestation's EAS `expirationTime`. */
    readonly expiresAt: number;
    readonly revocationTime: number;
  } | null;
};

/** Why a key status could not be given. */
/** INDEX_STALE: the index the answer would come from is not kept up (decisions §21). */
export type KeyStatusCode = "INVALID_INPUT" | "INVALID_DID" | "UNSUPPORTED_CHAIN" | "NETWORK_ERROR" | "INDEX_STALE";

/**
 * Key status of one key for one subject, `at` in Unix seconds (a number or a decimal string; default now). The
 * use case other code calls, e.g. a receipt verifier asking about the receipt's `issuedAt`. `client`: whose share of
 * the subject domain's lookup budget the endpoint evidence also takes (the route's and the MCP tool's caller).
 */
export type KeyStatus = (
  subjectDid: string,
  keyDid: string,
  at?: number | string | undefined,
  options?: LookupClient,
) => Promise<Result<KeyStatusRecord, KeyStatusCode>>;

/** The verdict for each key of each subject, now (the account's key list). */
export type KeyTrustMany = (
  subjectDids: readonly string[],
  keyDids: readonly string[],
) => Promise<Result<ReadonlyMap<string, ReadonlyMap<string, { status: KeyStatusValue; trustLevel: TrustLevel }>>, KeyStatusCode>>;

/** What key status needs. */
export type KeyStatusDeps = {
  readonly index: AttestationIndex;
  readonly trustAnchors: TrustAnchors;
  readonly clock: Clock;
  /** Endpoint evidence of did:web subjects (the cached discovery of the read-only views). */
  readonly discover: DiscoverControllers;
  /** The subject domain's JWK Set, read for did:jwk keys only (decisions §25); absent: not read. */
  readonly jwks?: LookupJwks | undefined;
};

/** What the index and the endpoints say about one subject (decisions §17, shared with controller authorization §25). */
export type SubjectEvidence = {
  witnesses: WitnessEvidence[];
  bindings: BindingEvidence[];
  endpointKeys: string[];
  /** The sources that published each endpoint key (by key id). */
  endpointSources: Map<string, string[]>;
  endpointUnavailable: boolean;
  /** Discovery's record of a did:web subject (DNS TXT, `jkt=` thumbprints, did.json); undefined for others. */
  endpointRecord?: DiscoveryRecord | undefined;
};

/** The evidence of each subject, read from the index (pinned to its head) and the endpoints. */
export type ReadSubjectEvidence = (
  subjects: readonly string[],
  options?: LookupClient & {
    /** Also read the bindings these attesters wrote (addresses), for rules that can show their control otherwise (§25's transfer proofs). */
    readonly alsoBindingsFrom?: readonly string[] | undefined;
  },
) => Promise<Result<Map<string, SubjectEvidence>, KeyStatusCode>>;

/** What one key trust keeps across requests, and reads every request through. */
export type KeyTrustContext = {
  readonly deps: KeyStatusDeps;
  readonly index: AttestationIndex;
  readonly trustAnchors: TrustAnchors;
  readonly chainId: number;
  /** Registered schema strings by lowercase UID; registration is immutable, so they are read once. */
  readonly schemaStrings: Map<string, string>;
};
