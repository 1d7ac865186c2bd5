/**
 * The approved-issuer registry of the trust anchors, asked "was this attester approved for this
 * schema at that time?". One rule, used by every verdict (artifact trust's assessments and certifications, the
 * controller witnesses that key status, controller authorization and artifact trust rely on, controller confirm)
 * and by the client helper `isApprovedIssuer`, which calls this module:
 * - a `status` other than "active" ("revoked", or anything else) never counts, whatever `revokedAt` says: an
 *   operator marks a compromised key "revoked", and the compromise may predate the date written (reference §5.3
 *   step 7, decisions §7: a witness counts only when its attester is an active approved issuer);
 * - a missing `status` counts as active (decisions §5: issuers "may carry" status, validFrom, revokedAt);
 * - approved from `validFrom` when given (a missing one sets no lower bound);
 * - an active issuer with a `revokedAt` is approved only for attestations made before it: an issuer retired in
 *   good standing keeps its earlier attestations;
 * - a `validFrom` or `revokedAt` that does not parse as a date excludes.
 *
 * An issuer listed as an eip155 did:pkh is approved on the chain it names only (decisions §30: one deployment, several
 * chains): a contract wallet's address on one chain can belong to someone else on another, so the same address
 * attesting on a chain its entry does not name is not approved. When the attestation's chain is given (`chainId`), a
 * did:pkh entry must name it; a did:pkh asked about must name the entry's chain. A bare address (the reference's form)
 * or a did:ethr entry is approved on every chain, as the operator wrote it.
 */
import type { TrustAnchors, TrustedIssuer } from "../../ports/trust_anchors.ts";
import { isSameControllerId, parseDidPkh } from "../did/mod.ts";

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const DID_ETHR = /^did:ethr:(?:[^:]+:)?(0x[0-9a-fA-F]{40})$/;

/** The issuer entry approving `address` for `schemaName` at `atMs` (milliseconds since the epoch), if any. */
export function findApprovedIssuer(
  anchors: TrustAnchors,
  address: string,
  schemaName: string,
  atMs: number,
  chainId?: number,
): TrustedIssuer | undefined {
  return findIssuer(anchors, address, atMs, chainId, schemaName);
}

/**
 * Whether `id` is an approved issuer of any schema at `atMs`, by the same rule (the controller confirm view's
 * `approvedIssuer`, which the reference reports whatever the schema): before, that view had a rule of its own, and
 * said "approved" for an entry this rule refuses (a did:pkh of another chain, a status other than active).
 */
export function isListedIssuer(anchors: TrustAnchors, id: string, atMs: number): boolean {
  return findIssuer(anchors, id, atMs, undefined, undefined) !== undefined;
}

function findIssuer(
  anchors: TrustAnchors,
  address: string,
  atMs: number,
  chainId: number | undefined,
  schemaName: string | undefined,
): TrustedIssuer | undefined {
  if (!Number.isFinite(atMs) || typeof address !== "string") return undefined;
  // Client helpers pass anchors fetched from a server: every level is checked before use.
  const registries: unknown = anchors?.registries;
  for (const registry of Array.isArray(registries) ? registries : []) {
    if (!isRecord(registry) || registry.type !== "approved-issuers" || !Array.isArray(registry.issuers)) continue;
    for (const issuer of registry.issuers as unknown[]) {
      if (!isRecord(issuer) || typeof issuer.address !== "string" || !Array.isArray(issuer.schemas)) continue;
      if (schemaName !== undefined && !issuer.schemas.includes(schemaName)) continue;
      if (!sameIssuer(issuer.address, address, chainId)) continue;
      if (isActiveAt(issuer as TrustedIssuer, atMs)) return issuer as TrustedIssuer;
    }
  }
  return undefined;
}

function isActiveAt(issuer: TrustedIssuer, atMs: number): boolean {
  const status: unknown = issuer.status;
  if (status !== undefined && status !== "active") return false;
  if (issuer.validFrom !== undefined) {
    const from = Date.parse(issuer.validFrom);
    if (Number.isNaN(from) || atMs < from) return false;
  }
  if (issuer.revokedAt !== undefined) {
    const revoked = Date.parse(issuer.revokedAt);
    if (Number.isNaN(revoked) || atMs >= revoked) return false;
  }
  return true;
}

function sameIssuer(listed: string, given: string, chainId: number | undefined): boolean {
  const a = evmAddressOf(listed);
  const b = evmAddressOf(given);
  if (a !== undefined || b !== undefined) {
    if (a !== b) return false;
    const listedChain = eip155ChainOf(listed);
    if (listedChain === undefined) return !listed.trim().startsWith("did:pkh:");
    const givenChain = eip155ChainOf(given);
    return (chainId === undefined || String(chainId) === listedChain) && (givenChain === undefined || givenChain === listedChain);
  }
  return isSameControllerId(listed, given);
}

/** The decimal chain reference of an eip155 did:pkh (`did:pkh:eip155:<chain>:<address>`), else undefined. */
function eip155ChainOf(id: string): string | undefined {
  const value = id.trim();
  if (!value.startsWith("did:pkh:")) return undefined;
  const pkh = parseDidPkh(value);
  if (!pkh.ok || pkh.value.namespace !== "eip155") return undefined;
  return /^[0-9]{1,20}$/.test(pkh.value.chainId) ? String(BigInt(pkh.value.chainId)) : undefined;
}

/** The lowercase EVM address an issuer id names (address, eip155 did:pkh, did:ethr). */
function evmAddressOf(id: string): string | undefined {
  const value = id.trim();
  if (EVM_ADDRESS.test(value)) return value.toLowerCase();
  const ethr = DID_ETHR.exec(value)?.[1];
  if (ethr !== undefined) return ethr.toLowerCase();
  const pkh = value.startsWith("did:pkh:") ? parseDidPkh(value) : undefined;
  if (pkh?.ok && pkh.value.namespace === "eip155" && EVM_ADDRESS.test(pkh.value.address)) return pkh.value.address;
  return undefined;
}
