/** Controller confirm: discovery, the connected wallet as a candidate, and whether it is an approved issuer. */
import type { Clock } from "../../ports/clock.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { extractAddressFromDid, isSameControllerId, normalizeDid } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { canonicalControllerKey } from "./controller_values.ts";
import type { DiscoverControllers, DiscoveryRateLimited, DiscoveryRecord } from "./discovery_record.ts";
import { createKeyFacts, createKeySet } from "./key_set.ts";

/** The approved-issuer block of controller confirm. */
export type ApprovedIssuerBlock = {
  status: "approved" | "not-approved" | "unavailable" | "not-configured";
  checkedIdentifiers: string[];
  registryUrl: string | null;
};

/** The controller-confirm record: discovery plus the wallet candidate and the approved-issuer check. */
export type ControllerConfirmRecord = DiscoveryRecord & { approvedIssuer: ApprovedIssuerBlock };

/** What controller confirm adds to discovery. */
export type ControllerConfirmDeps = {
  readonly discover: DiscoverControllers;
  readonly trustAnchors: TrustAnchors;
  readonly clock: Clock;
  /** Where the registry is published (the service's trust-anchors URL). */
  readonly registryUrl: string;
};

/**
 * Controller confirm: endpoint evidence, the connected wallet as an `account-wallet` candidate,
 * and whether the wallet is an active approved issuer in the configured registry.
 */
export function createControllerConfirm(deps: ControllerConfirmDeps) {
  const factsOf = createKeyFacts();
  return async function controllerConfirm(
    subjectDid: string | undefined,
    walletDid: string | undefined,
  ): Promise<Result<ControllerConfirmRecord, "INVALID_INPUT" | "INVALID_DID"> | DiscoveryRateLimited> {
    if (walletDid !== undefined && walletDid.trim() === "") return fail("INVALID_INPUT", "walletDid must not be empty");
    const discovered = await deps.discover(subjectDid ?? "");
    if (!discovered.ok) return discovered;
    const record = discovered.value;
    const approvedIssuer = approvedIssuerStatus(deps, walletDid);
    if (walletDid === undefined) return ok({ ...record, approvedIssuer });
    const wallet = canonicalControllerKey(walletDid);
    if (wallet === undefined) return ok({ ...record, approvedIssuer });
    const keySet = createKeySet(factsOf);
    for (const key of record.controllerKeys) for (const source of key.sources) keySet.add(key.canonicalId, source);
    keySet.add(wallet, "account-wallet");
    return ok({
      ...record,
      controllerKeys: keySet.sorted(),
      evidence: [
        { kind: "account-wallet", status: "found", location: "request.walletDid", keys: [wallet] },
        ...record.evidence,
      ],
      approvedIssuer,
    });
  };
}

function approvedIssuerStatus(deps: ControllerConfirmDeps, walletDid: string | undefined): ApprovedIssuerBlock {
  if (walletDid === undefined) return { status: "not-configured", checkedIdentifiers: [], registryUrl: null };
  const canonical = canonicalControllerKey(walletDid);
  const checkedIdentifiers = unique([walletDid, canonical ?? walletDid]);
  const issuers = deps.trustAnchors.registries.filter((r) => r.type === "approved-issuers").flatMap((r) => r.issuers);
  if (issuers.length === 0) return { status: "not-configured", checkedIdentifiers, registryUrl: null };
  const nowMs = deps.clock.nowMs();
  const forms = new Set<string>();
  for (const id of checkedIdentifiers) {
    forms.add(id.toLowerCase());
    const normalized = normalizeDid(id);
    if (normalized.ok) forms.add(normalized.value.toLowerCase());
    const address = extractAddressFromDid(id);
    if (address.ok) forms.add(address.value.toLowerCase());
  }
  const approved = issuers.some((issuer) => {
    if (!isActive(issuer, nowMs)) return false;
    const issuerForms = [issuer.address.toLowerCase()];
    const address = extractAddressFromDid(issuer.address);
    if (address.ok) issuerForms.push(address.value.toLowerCase());
    return issuerForms.some((f) => forms.has(f)) || checkedIdentifiers.some((id) => isSameControllerId(id, issuer.address));
  });
  return { status: approved ? "approved" : "not-approved", checkedIdentifiers, registryUrl: deps.registryUrl };
}

function isActive(issuer: { status?: string | undefined; validFrom?: string | undefined; revokedAt?: string | undefined }, nowMs: number) {
  if (issuer.status !== undefined && issuer.status !== "active" && issuer.revokedAt === undefined) return false;
  if (issuer.validFrom !== undefined) {
    const from = Date.parse(issuer.validFrom);
    if (Number.isNaN(from) || from > nowMs) return false;
  }
  if (issuer.revokedAt !== undefined) {
    const revoked = Date.parse(issuer.revokedAt);
    if (Number.isNaN(revoked) || revoked <= nowMs) return false;
  }
  return true;
}

const unique = (values: string[]) => [...new Set(values)];
