/**
 * Controller authorization of a claim's attester for its party: witnesses and key bindings on chain, live
 * endpoint evidence for did:web parties with neither, and the window they open.
 */
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { type BindingAuthority, createBindingAuthority } from "../bindings/mod.ts";
import { bindingNames } from "../keys/mod.ts";
import { didToAddress, isSameControllerId, normalizeDid } from "../did/mod.ts";
import { type DiscoverControllers, type DiscoveryRecord, liveControllerEvidence } from "../discovery/mod.ts";
import { findApprovedIssuer } from "../identity/mod.ts";
import { ok, type Result } from "../result.ts";
import { readUint } from "./proofs.ts";
import type { Verdicts } from "./_claims.ts";
import type { ArtifactTrustContext, PendingClaim, Policy } from "./_types.ts";
import { decodePayload, networkError, pkhOf, readAttestations, unique } from "./_util.ts";

/** Live controller discoveries one artifact-trust request runs at the same time. */
export const LIVE_DISCOVERY_CONCURRENCY = 8;
const AUTHORIZATION_LOOKUP_FAILED = "Required controller authorization lookup failed";
/** The key purpose a controller needs to sign claims for its party. */
const SIGNING_PURPOSE = "assertionMethod";

type Witness = { readonly controller: string; readonly time: bigint };
type KeyBinding = {
  readonly uid: string;
  readonly keyId: string;
  readonly keyPurpose: readonly string[];
  readonly attester: string;
  readonly time: bigint;
  readonly until: bigint | null;
  /** When it was revoked; 0n for never. */
  readonly revokedAt: bigint;
};
type PartyEvidence = { readonly witnesses: Witness[]; readonly bindings: KeyBinding[] };

type Authorization =
  | { readonly kind: "authorized"; readonly anchoredFrom: bigint | null; readonly until: bigint | null }
  | { readonly kind: "needs-live"; readonly until: bigint | null }
  | { readonly kind: "unauthorized" };

type LiveEvidence = DiscoveryRecord | undefined;

/**
 * Decides each pending claim (step 7, second half): controller authorization from chain evidence, then live
 * evidence for the did:web parties that need it, and the claim's times inside the window.
 */
export async function authorizeClaims(
  ctx: ArtifactTrustContext,
  pending: readonly PendingClaim[],
  step: Verdicts & { readonly block: bigint; readonly nowSeconds: bigint; readonly policy: Policy; readonly client?: string | undefined },
): Promise<Result<void, "NETWORK_ERROR">> {
  const { exclude, accept, block, nowSeconds, policy, client } = step;
  if (pending.length === 0) return ok(undefined);
  const evidence = await loadPartyEvidence(ctx, unique(pending.map((c) => c.party)), block, nowSeconds, policy);
  if (!evidence.ok) return evidence;
  const decided = pending.map((claim) => ({
    claim,
    authorization: onChainAuthorization(ctx, evidence.value.get(claim.party)!, claim.party, claim.controller, nowSeconds),
  }));
  const live = await liveEvidence(ctx, unique(decided.filter((d) => d.authorization.kind === "needs-live").map((d) => d.claim.party)), client);
  const byRoute = await contractPartyAuthorizations(ctx, decided, client);
  if (!byRoute.ok) return byRoute;
  for (const { claim, authorization } of decided) {
    let outcome = byRoute.value.get(pairKey(claim)) ?? authorization;
    if (outcome.kind === "needs-live") {
      // Controller authorization's reading of live evidence (decisions §25), shared with key status.
      const found = live.get(claim.party);
      const evidence = found === undefined ? undefined : liveControllerEvidence(claim.controller, found);
      if (evidence !== undefined && evidence.methods.length > 0) {
        outcome = { kind: "authorized", anchoredFrom: null, until: outcome.until };
      } else if (evidence?.unavailable) {
        return networkError(AUTHORIZATION_LOOKUP_FAILED);
      } else outcome = { kind: "unauthorized" };
    }
    if (outcome.kind !== "authorized") exclude(claim.attestation.uid, "not-authorized");
    else if (!inWindow(outcome, claim.issuedAt) || !inWindow(outcome, claim.attestation.time)) {
      exclude(claim.attestation.uid, "outside-authorization-window");
    } else accept(claim, claim.basis);
  }
  return ok(undefined);
}

/** Witnesses and key bindings of every party, read with one log query and one attestation read. */
async function loadPartyEvidence(
  ctx: ArtifactTrustContext,
  parties: readonly string[],
  block: bigint,
  nowSeconds: bigint,
  policy: Policy,
): Promise<Result<Map<string, PartyEvidence>, "NETWORK_ERROR">> {
  const out = new Map<string, PartyEvidence>(parties.map((party) => [party, { witnesses: [], bindings: [] }]));
  const schemaUids = [policy.witnessUid, policy.keyBindingUid].filter((u) => u !== undefined);
  const byAddress = new Map<string, string>();
  for (const party of parties) {
    const address = didToAddress(party);
    if (address.ok) byAddress.set(address.value, party);
  }
  if (schemaUids.length === 0 || byAddress.size === 0) return ok(out);
  const logs = await ctx.index.attestedUids({
    recipients: [...byAddress.keys()] as HexString[],
    schemaUids,
    toBlock: block,
  });
  if (!logs.ok) return networkError(AUTHORIZATION_LOOKUP_FAILED);
  const attestations = await readAttestations(ctx, unique(logs.value.map((l) => l.uid.toLowerCase())), block);
  if (attestations === undefined) return networkError(AUTHORIZATION_LOOKUP_FAILED);
  const witnessUid = policy.witnessUid;
  for (const a of attestations) {
    const party = byAddress.get(a.recipient.toLowerCase());
    const schema = ctx.schemaStrings.get(a.schema.toLowerCase());
    if (party === undefined || schema === undefined) continue;
    const decoded = decodePayload(schema, a.data);
    if (!decoded.ok) continue;
    const data = decoded.value;
    const subject = typeof data.subject === "string" ? normalizeDid(data.subject) : undefined;
    if (!subject?.ok || subject.value !== party) continue;
    const evidence = out.get(party)!;
    if (a.schema.toLowerCase() === witnessUid) {
      if (a.revocationTime !== 0n || typeof data.controller !== "string") continue;
      if (a.expirationTime !== 0n && a.expirationTime <= nowSeconds) continue;
      if (findApprovedIssuer(ctx.trustAnchors, a.attester, "controller-witness", Number(a.time) * 1000, ctx.chainId) === undefined) continue;
      evidence.witnesses.push({ controller: data.controller, time: a.time });
    } else if (a.schema.toLowerCase() === policy.keyBindingUid) {
      // Registry expiry, like revocation, only ends the binding's window (keyBindingOf): claims made
      // while it was in force keep their authorization.
      const binding = keyBindingOf(a, data, nowSeconds);
      if (binding !== undefined) evidence.bindings.push(binding);
    }
  }
  return ok(out);
}

/** Authorization from chain evidence alone, or the need for live evidence (did:web parties only). */
function onChainAuthorization(ctx: ArtifactTrustContext, evidence: PartyEvidence, party: string, controller: string, nowSeconds: bigint): Authorization {
  const counts = bindingAuthority(ctx, evidence, party);
  const accepted = evidence.bindings.filter((b) => bindingNames(b, controller) && counts(b))
    .sort((a, b) => (a.time === b.time ? (a.uid < b.uid ? 1 : -1) : a.time < b.time ? 1 : -1));
  const newest = accepted[0];
  if (newest !== undefined && newest.keyPurpose.length > 0 && !newest.keyPurpose.includes(SIGNING_PURPOSE)) {
    return { kind: "unauthorized" };
  }
  // A binding the controller wrote of itself before another's binding of it ended ends then too (domain/bindings).
  const cut = newest === undefined ? undefined : counts.selfCuts(accepted, nowSeconds).get(newest);
  const until = cut !== undefined && (newest?.until == null || cut < newest.until) ? cut : newest?.until ?? null;
  // Controller authorization's rules (decisions §25, the same computation as /v1/controller-authorization): a witness
  // window, or live evidence. Before, a party that was the attester itself (any wallet's claim for its own did:pkh, on
  // any chain) and a key binding alone (with no witness or evidence of the key) were authorized here, where the route
  // said not: one transaction made a malicious artifact's claim "verified".
  let firstWitness: bigint | null = null;
  for (const w of evidence.witnesses) {
    if (isSameControllerId(w.controller, controller) && (firstWitness === null || w.time < firstWitness)) {
      firstWitness = w.time;
    }
  }
  if (firstWitness !== null) return { kind: "authorized", anchoredFrom: firstWitness, until };
  if (party.startsWith("did:web:") && ctx.deps.discover !== undefined) return { kind: "needs-live", until };
  return { kind: "unauthorized" };
}

/**
 * Whether a key binding counts: an approved witness issuer (or the party itself) wrote it, or a controller witnessed
 * before it whose authority no revoked or expired binding had cut off by then (domain/bindings): a stolen controller
 * key whose binding was revoked cannot bind itself, or another key, again.
 */
function bindingAuthority(ctx: ArtifactTrustContext, evidence: PartyEvidence, party: string): BindingAuthority<KeyBinding> {
  const byIssuer = (binding: KeyBinding) =>
    findApprovedIssuer(ctx.trustAnchors, binding.attester, "controller-witness", Number(binding.time) * 1000, ctx.chainId) !== undefined;
  return createBindingAuthority({
    bindings: evidence.bindings,
    chainId: ctx.chainId,
    controlled: (binding) => {
      const attester = pkhOf(ctx.chainId, binding.attester);
      return byIssuer(binding) || isSameControllerId(party, attester) ||
        evidence.witnesses.some((w) => w.time <= binding.time && isSameControllerId(w.controller, attester));
    },
    lasting: (binding) => byIssuer(binding) || isSameControllerId(party, pkhOf(ctx.chainId, binding.attester)),
    names: bindingNames,
    endOf: (binding) => binding.until ?? 0n,
    revokedAt: (binding) => binding.revokedAt,
  });
}

const pairKey = (claim: PendingClaim) => `${claim.party} ${claim.controller}`;

/**
 * Controller authorization's own verdict (decisions §25, the same computation as `/v1/controller-authorization`, for
 * the signing purpose) for each eip155 did:pkh party and controller that chain evidence here did not authorize: a
 * contract party's live `owner()` or a verified transfer proof counts as the route counts it. Asked at most
 * {@link LIVE_DISCOVERY_CONCURRENCY} at a time; an answer that could not be read is NETWORK_ERROR, never an exclusion.
 */
async function contractPartyAuthorizations(
  ctx: ArtifactTrustContext,
  decided: readonly { readonly claim: PendingClaim; readonly authorization: Authorization }[],
  client: string | undefined,
): Promise<Result<Map<string, Authorization>, "NETWORK_ERROR">> {
  const out = new Map<string, Authorization>();
  const ask = ctx.deps.controllerAuthorization;
  if (ask === undefined) return ok(out);
  const pairs = new Map<string, PendingClaim>();
  for (const { claim, authorization } of decided) {
    if (authorization.kind === "unauthorized" && claim.party.startsWith("did:pkh:eip155:")) pairs.set(pairKey(claim), claim);
  }
  const todo = [...pairs.values()];
  let failed = false;
  let next = 0;
  const worker = async () => {
    while (next < todo.length && !failed) {
      const claim = todo[next++]!;
      const answer = await ask({ subjectDid: claim.party, controllerDid: claim.controller, purpose: SIGNING_PURPOSE }, { client });
      if (!answer.ok) {
        // A party or controller the route refuses (not a usable DID) is not authorized; a read that failed is an outage.
        if (answer.code === "NETWORK_ERROR" || answer.code === "INDEX_STALE") failed = true;
        continue;
      }
      if (!answer.value.authorized) continue;
      out.set(pairKey(claim), {
        kind: "authorized",
        anchoredFrom: answer.value.anchoredFrom === null ? null : BigInt(answer.value.anchoredFrom),
        until: answer.value.until === null ? null : BigInt(answer.value.until),
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(LIVE_DISCOVERY_CONCURRENCY, todo.length) }, worker));
  return failed ? networkError(AUTHORIZATION_LOOKUP_FAILED) : ok(out);
}

/** Live endpoint evidence of did:web parties, looked up at once. */
async function liveEvidence(ctx: ArtifactTrustContext, parties: readonly string[], client: string | undefined): Promise<Map<string, LiveEvidence>> {
  const out = new Map<string, LiveEvidence>();
  if (ctx.deps.discover === undefined || parties.length === 0) return out;
  const discover = ctx.deps.discover;
  // At most LIVE_DISCOVERY_CONCURRENCY at once: claims naming many domains cannot fan one request out into
  // hundreds of simultaneous outbound lookups. Fresh only, as key status and controller authorization ask: when the
  // domain's lookup budget was spent (by anyone: the budget is per registrable domain, and a tenant of a shared host
  // can spend it), the discovery cache gave the last answer up to ten minutes old, so a controller removed from the
  // domain's records kept its claims "verified" that long. Now that is unavailable evidence: NETWORK_ERROR. The caller's
  // share of each domain's budget too, so one client cannot spend it all (domain/discovery/lookup_budget.ts).
  const results: Awaited<ReturnType<DiscoverControllers>>[] = new Array(parties.length);
  let next = 0;
  const worker = async () => {
    while (next < parties.length) {
      const i = next++;
      results[i] = await discover(parties[i]!, { freshOnly: true, client });
    }
  };
  await Promise.all(Array.from({ length: Math.min(LIVE_DISCOVERY_CONCURRENCY, parties.length) }, worker));
  parties.forEach((party, i) => {
    const result = results[i]!;
    // A party that is not a usable did:web cannot be confirmed live: not authorized, not a failure.
    out.set(party, result.ok ? result.value : undefined);
  });
  return out;
}

/** A key binding that is in effect now, with the end of its authority (revocation or expiry), or undefined. */
function keyBindingOf(a: IndexedAttestation, data: Record<string, unknown>, nowSeconds: bigint): KeyBinding | undefined {
  if (typeof data.keyId !== "string") return undefined;
  const purposes = data.keyPurpose ?? [];
  if (!Array.isArray(purposes) || !purposes.every((x) => typeof x === "string")) return undefined;
  const effectiveAt = readUint(data.effectiveAt ?? "0");
  if (effectiveAt === undefined || (effectiveAt !== 0n && effectiveAt > nowSeconds)) return undefined;
  const expiresAt = readUint(data.expiresAt ?? "0");
  if (expiresAt === undefined) return undefined;
  let until: bigint | null = null;
  for (const end of [a.revocationTime, a.expirationTime, expiresAt]) {
    if (end !== 0n && (until === null || end < until)) until = end;
  }
  return { uid: a.uid.toLowerCase(), keyId: data.keyId, keyPurpose: purposes, attester: a.attester, time: a.time, until,
    revokedAt: a.revocationTime };
}

/**
 * `anchoredFrom ≤ at < until`, controller authorization's window (decisions §25: the same computation). The reference's
 * artifact check reads `at ≤ until`; with it, a claim mined in the second of the revocation that cut its controller off
 * (the same block: a thief who saw the revocation coming) stayed verified for good, while controller authorization at
 * that time said not authorized.
 */
function inWindow(authorization: { anchoredFrom: bigint | null; until: bigint | null }, at: bigint): boolean {
  if (authorization.anchoredFrom !== null && at < authorization.anchoredFrom) return false;
  return authorization.until === null || at < authorization.until;
}
