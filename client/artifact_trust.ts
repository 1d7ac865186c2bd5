/**
 * The plugin-loader policy over artifact trust (interface "Consumer policy", reference §5.5): warn
 * unless the service returned a responsibility claim or a security assessment from an approved
 * issuer; warn too when the lookup fails. Which claims count depends on the plugin:
 * - no `publisherDid` declared: any returned responsibility claim (the contract's rule: the service
 *   only returns claims whose attester is an authorized controller of their `responsibleParty`);
 * - a `publisherDid` declared: only a claim whose `responsibleParty`, normalized, is that DID (the
 *   reference's stricter rule); claims naming anybody else are counted as unqualified.
 * Linked identifiers and certifications are shown for information and never suppress the warning.
 *
 * Unlike the other client helpers this one never throws: a loader needs a verdict either way.
 */
import type { ArtifactTrustItem, ArtifactTrustRecord } from "../domain/artifact_trust/mod.ts";
import { parseChainParam } from "../domain/chains/mod.ts";
import { normalizeDid } from "../domain/did/mod.ts";
import type { ChainParam } from "./chain.ts";
import type { FetchLike } from "./trust_anchors.ts";
import { serviceUrl } from "./http.ts";

/** Where {@link checkArtifactTrust} asks when no URL is given: a local service. */
export const DEFAULT_ARTIFACT_TRUST_URL = "http://127.0.0.1:8080/v1/artifact-trust";

/** The chain a loader expects answers for; a record for another chain is refused. */
export type PinnedChain = {
  readonly chainId: number;
  readonly caip2?: string | undefined;
  readonly easContract?: string | undefined;
};

/** Options of {@link evaluateArtifactTrust}. */
export type ArtifactTrustPolicyOptions = {
  /**
   * The plugin's declared publisher DID. Declared: only responsibility claims naming it (normalized)
   * suppress the warning. Not declared (absent or blank): any returned responsibility claim does.
   */
  readonly publisherDid?: string | undefined;
  readonly pinnedChain?: PinnedChain | undefined;
  /** The artifact asked about: a record about another is refused (`INVALID_RESPONSE`). {@link checkArtifactTrust} sets it. */
  readonly artifactDid?: string | undefined;
};

/** Options of {@link checkArtifactTrust}. */
export type CheckArtifactTrustOptions = ArtifactTrustPolicyOptions & {
  /** The artifact-trust endpoint; default `<baseUrl>/v1/artifact-trust`. */
  readonly url?: string | undefined;
  /** The service, as every other helper names it (default the local service). */
  readonly baseUrl?: string | undefined;
  readonly fetch?: FetchLike | undefined;
  /** Default 10 s. */
  readonly timeoutMs?: number | undefined;
  /**
   * The chain to read on (decisions §30: CAIP-2 or a decimal chain id), sent as `chain`; default the service's default
   * chain. Without `pinnedChain`, an answer for another chain is refused (`CHAIN_MISMATCH`).
   */
  readonly chain?: ChainParam | undefined;
};

/** What the loader shows. */
export type ArtifactTrustVerdict = {
  /** True unless a qualifying responsibility claim or security assessment was returned. */
  readonly warn: boolean;
  /** Why it warns; empty when it does not. */
  readonly reasons: readonly string[];
  /** The records that suppress the warning. */
  readonly qualifyingClaims: {
    readonly responsibilityClaims: readonly ArtifactTrustItem[];
    readonly securityAssessments: readonly ArtifactTrustItem[];
  };
  /** Verified responsibility claims naming somebody other than the declared publisher (not shown in detail); 0 with none declared. */
  readonly unqualifiedResponsibilityClaims: number;
  /** Shown for information only. */
  readonly informational: {
    readonly linkedIdentifiers: readonly ArtifactTrustItem[];
    readonly certifications: readonly ArtifactTrustItem[];
  };
  /** The record, when one was loaded and accepted. */
  readonly record?: ArtifactTrustRecord | undefined;
  /** Why the record could not be used: the service's code, or NETWORK_ERROR / INVALID_RESPONSE / CHAIN_MISMATCH. */
  readonly failure?: { readonly code: string; readonly status?: number | undefined } | undefined;
};

/** The reason given when the lookup failed. */
export const COULD_NOT_LOAD = "Artifact trust could not be loaded";
/** The reason given when nothing qualifies. */
export const NO_QUALIFYING_EVIDENCE = "No verified responsibility claim (by the publisher, when one is declared) or security assessment from an approved issuer";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const GROUPS = ["responsibilityClaims", "securityAssessments", "certifications", "otherAttestations"] as const;

function failed(code: string, status?: number, reason = COULD_NOT_LOAD): ArtifactTrustVerdict {
  return {
    warn: true,
    reasons: [reason],
    qualifyingClaims: { responsibilityClaims: [], securityAssessments: [] },
    unqualifiedResponsibilityClaims: 0,
    informational: { linkedIdentifiers: [], certifications: [] },
    failure: status === undefined ? { code } : { code, status },
  };
}

/** An item as the service returns it: its attestation (a uid, not revoked) and `verification.valid`. */
function isReturnedItem(item: unknown): boolean {
  if (!isRecord(item) || !isRecord(item.attestation) || !isRecord(item.verification)) return false;
  const { attestation, verification } = item;
  return typeof attestation.uid === "string" && /^0x[0-9a-fA-F]{64}$/.test(attestation.uid) && attestation.revocationTime === "0" &&
    isRecord(attestation.data) && verification.valid === true && Array.isArray(verification.basis);
}

/** Applies the loader policy to an artifact trust record. */
export function evaluateArtifactTrust(record: unknown, options: ArtifactTrustPolicyOptions = {}): ArtifactTrustVerdict {
  if (!isRecord(record) || !GROUPS.every((g) => Array.isArray(record[g])) || !isRecord(record.chain)) {
    return failed("INVALID_RESPONSE");
  }
  const pinned = options.pinnedChain;
  const chain = record.chain;
  if (
    pinned !== undefined && (
      chain.chainId !== pinned.chainId ||
      (pinned.caip2 !== undefined && chain.caip2 !== pinned.caip2) ||
      (pinned.easContract !== undefined && String(chain.easContract).toLowerCase() !== pinned.easContract.toLowerCase())
    )
  ) {
    return failed("CHAIN_MISMATCH", undefined, "Artifact trust answered for another chain");
  }
  // An answer the service would never give is a broken service or cache in between, never "verified": a record about
  // another artifact, one not complete, or an item that is not a returned record (each `valid`, none revoked).
  const asked = options.artifactDid === undefined ? undefined : normalizeDid(options.artifactDid);
  const answered = typeof record.artifactDid === "string" ? normalizeDid(record.artifactDid) : undefined;
  if (asked !== undefined && (!asked.ok || answered === undefined || !answered.ok || answered.value !== asked.value)) {
    return failed("INVALID_RESPONSE");
  }
  if (!isRecord(record.summary) || record.summary.complete !== true) return failed("INVALID_RESPONSE");
  if (!GROUPS.every((g) => (record[g] as unknown[]).every(isReturnedItem))) return failed("INVALID_RESPONSE");
  const trust = record as ArtifactTrustRecord;
  const declared = options.publisherDid?.trim() ? options.publisherDid : undefined;
  const publisher = declared === undefined ? undefined : normalizeDid(declared);
  const qualifies = (item: ArtifactTrustItem) => {
    if (publisher === undefined) return true;
    const party = item?.attestation?.data?.responsibleParty;
    // A declared publisher that is not a DID matches nobody: the stricter rule, never the looser one.
    if (!publisher.ok || typeof party !== "string") return false;
    const normalized = normalizeDid(party);
    return normalized.ok && normalized.value === publisher.value;
  };
  const responsibilityClaims = trust.responsibilityClaims.filter(qualifies);
  const securityAssessments = trust.securityAssessments.filter((item) =>
    Array.isArray(item?.verification?.basis) && item.verification.basis.includes("approved-issuer")
  );
  const warn = responsibilityClaims.length === 0 && securityAssessments.length === 0;
  return {
    warn,
    reasons: warn ? [NO_QUALIFYING_EVIDENCE] : [],
    qualifyingClaims: { responsibilityClaims, securityAssessments },
    unqualifiedResponsibilityClaims: trust.responsibilityClaims.length - responsibilityClaims.length,
    informational: {
      linkedIdentifiers: trust.otherAttestations.filter((item) => typeof item?.attestation?.data?.linkedId === "string"),
      certifications: trust.certifications,
    },
    record: trust,
  };
}

/** Looks the artifact up once and applies the loader policy; any failure is a warning, never a throw. */
export async function checkArtifactTrust(
  artifactDid: string,
  options: CheckArtifactTrustOptions = {},
): Promise<ArtifactTrustVerdict> {
  const chainId = options.chain === undefined ? undefined : parseChainParam(String(options.chain));
  if (options.chain !== undefined && chainId === undefined) return failed("INVALID_INPUT");
  const chain = options.chain === undefined ? "" : `&chain=${encodeURIComponent(String(options.chain))}`;
  let endpoint: string;
  try {
    endpoint = options.url ?? (options.baseUrl === undefined ? DEFAULT_ARTIFACT_TRUST_URL : serviceUrl(options.baseUrl, "/v1/artifact-trust"));
  } catch {
    return failed("INVALID_INPUT");
  }
  const url = `${endpoint}?artifactDid=${encodeURIComponent(artifactDid)}${chain}`;
  let response: Response;
  let body: unknown;
  try {
    response = await (options.fetch ?? fetch)(url, {
      method: "GET",
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    body = await response.json();
  } catch {
    return failed("NETWORK_ERROR");
  }
  if (response.status !== 200) {
    const code = isRecord(body) && typeof body.code === "string" ? body.code : "NETWORK_ERROR";
    return failed(code, response.status);
  }
  const policy = { ...options, artifactDid };
  return evaluateArtifactTrust(body, chainId === undefined || options.pinnedChain !== undefined ? policy : { ...policy, pinnedChain: { chainId } });
}
