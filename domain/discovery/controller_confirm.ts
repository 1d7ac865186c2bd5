/** Controller confirm: discovery, the connected wallet as a candidate, and whether it is an approved issuer. */
import type { Clock } from "../../ports/clock.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { isListedIssuer } from "../identity/mod.ts";
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
  // The rule every verdict uses (domain/identity): an eip155 did:pkh entry on its own chain, an active status.
  const nowMs = deps.clock.nowMs();
  const approved = checkedIdentifiers.some((id) => isListedIssuer(deps.trustAnchors, id, nowMs));
  return { status: approved ? "approved" : "not-approved", checkedIdentifiers, registryUrl: deps.registryUrl };
}

const unique = (values: string[]) => [...new Set(values)];
