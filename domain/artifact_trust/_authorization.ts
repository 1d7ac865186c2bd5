/**
 * Controller authorization of a claim's attester for its party: witnesses and key bindings on chain, live
 * endpoint evidence for did:web parties with neither, and the window they open.
 */
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import type { BindingAuthority } from "../bindings/mod.ts";
import { type BindingEvidence, bindingNames, countingBindings, endpointEvidenceOf, endpointsCouldChange, type KeyTrustInput, type WitnessEvidence } from "../keys/mod.ts";
import { didToAddress, isSameControllerId, normalizeDid } from "../did/mod.ts";
import { type DiscoverControllers, type DiscoveryRecord, liveControllerEvidence } from "../discovery/mod.ts";
import { findApprovedIssuer } from "../identity/mod.ts";
import { ok, type Result } from "../result.ts";
import { readUint } from "./proofs.ts";
import type { Verdicts } from "./_claims.ts";
import type { ArtifactTrustContext, PendingClaim, Policy } from "./_types.ts";
import { decodePayload, networkError, readAttestations, unique } from "./_util.ts";

/** Live controller discoveries one artifact-trust request runs at the same time. */
export const LIVE_DISCOVERY_CONCURRENCY = 8;
const AUTHORIZATION_LOOKUP_FAILED = "Required controller authorization lookup failed";
/** The key purpose a controller needs to sign claims for its party. */
const SIGNING_PURPOSE = "assertionMethod";

/** A key binding as key status reads it (domain/keys), with the end of its authority: revocation or expiry. */
type KeyBinding = BindingEvidence & { readonly until: bigint | null };
type PartyEvidence = { readonly witnesses: WitnessEvidence[]; readonly bindings: KeyBinding[] };
/** What the party's endpoints name now, as key status reads them (for §17's rule on who may bind a key). */
type Endpoints = Pick<KeyTrustInput, "endpointKeys" | "endpointUnavailable">;
/** Nothing read yet: a did:web party's endpoints may name any attester; other parties have none. */
const unread = (party: string): Endpoints => ({ endpointKeys: [], endpointUnavailable: party.startsWith("did:web:") });

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
  const first = pending.map((claim) => ({
    claim,
    ...onChainAuthorization(ctx, evidence.value.get(claim.party)!, claim.party, claim.controller, nowSeconds, unread(claim.party)),
  }));
  // The endpoints are read for a did:web party when live evidence must decide, or when their word could change the
  // chain's verdict (key status's `endpointsCouldChange`: a binding naming the controller, or an attester up the chain,
  // that counts only if the endpoints name its attester, who is then never cut off). Decisions §25: one computation.
  const live = await liveEvidence(ctx, unique(first.filter((d) => d.authorization.kind === "needs-live" || d.open).map((d) => d.claim.party)), client);
  const decided: { claim: PendingClaim; authorization: Authorization }[] = [];
  for (const { claim, authorization, open } of first) {
    if (!open) {
      decided.push({ claim, authorization });
      continue;
    }
    // Without discovery nothing can be read: a verdict the endpoints could change is not verified (never a guess).
    if (ctx.deps.discover === undefined) {
      decided.push({ claim, authorization: { kind: "unauthorized" } });
      continue;
    }
    const found = live.get(claim.party);
    // A party that is not a usable did:web has no endpoints to name anyone.
    const endpoints = found === undefined ? { endpointKeys: [], endpointUnavailable: false } : endpointEvidenceOf(found);
    const read = onChainAuthorization(ctx, evidence.value.get(claim.party)!, claim.party, claim.controller, nowSeconds, endpoints);
    if (read.open) return networkError(AUTHORIZATION_LOOKUP_FAILED);
    decided.push({ claim, authorization: read.authorization });
  }
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
      // Standing now (revoked and expired ones were skipped above), as key status reads a witness.
      evidence.witnesses.push({ uid: a.uid, attester: a.attester, controller: data.controller, observedAt: 0n, time: a.time, revocationTime: 0n, expirationTime: 0n });
    } else if (a.schema.toLowerCase() === policy.keyBindingUid) {
      // Registry expiry, like revocation, only ends the binding's window (keyBindingOf): claims made
      // while it was in force keep their authorization.
      const binding = keyBindingOf(a, data, nowSeconds);
      if (binding !== undefined) evidence.bindings.push(binding);
    }
  }
  return ok(out);
}

/**
 * Authorization from chain evidence and the endpoints' word on who may bind (`endpoints`), or the need for live
 * evidence (did:web parties only); `open`: the endpoints did not answer and their word could change it.
 */
function onChainAuthorization(
  ctx: ArtifactTrustContext,
  evidence: PartyEvidence,
  party: string,
  controller: string,
  nowSeconds: bigint,
  endpoints: Endpoints,
): { readonly authorization: Authorization; readonly open: boolean } {
  // Key status's rule on who may bind a key and who is cut off (domain/bindings `countingBindings`, decisions §25): the
  // attester is the party itself, a controller witnessed before it wrote the binding, or one the endpoints name now;
  // the party and a controller the endpoints name are never cut off. Before, artifact trust had its own: an approved
  // witness issuer's binding counted (and was never cut off) where the route ignores it, and a controller the endpoints
  // name was neither: an owner's revocation of a key's binding went unseen, and its later claims stayed "verified"
  // where /v1/controller-authorization said not authorized.
  const rules = { subjectDid: party, chainId: ctx.chainId, at: nowSeconds, witnesses: evidence.witnesses, bindings: evidence.bindings, ...endpoints };
  const counts = countingBindings(rules);
  const open = endpoints.endpointUnavailable === true && endpointsCouldChange(rules, counts, controller);
  return { authorization: authorizationOf(evidence, counts, party, controller, nowSeconds, ctx.deps.discover !== undefined), open };
}

/** The verdict over the counting bindings: a witness window, or live evidence to ask for; the newest binding's end and purposes narrow it. */
function authorizationOf(
  evidence: PartyEvidence,
  counts: BindingAuthority<KeyBinding>,
  party: string,
  controller: string,
  nowSeconds: bigint,
  canDiscover: boolean,
): Authorization {
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
  if (party.startsWith("did:web:") && canDiscover) return { kind: "needs-live", until };
  return { kind: "unauthorized" };
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
  return {
    uid: a.uid.toLowerCase(),
    keyId: data.keyId,
    keyPurpose: purposes,
    attester: a.attester,
    time: a.time,
    effectiveAt,
    expiresAt,
    revocationTime: a.revocationTime,
    expirationTime: a.expirationTime,
    ...(typeof data.publicKeyJwk === "string" && data.publicKeyJwk !== "" ? { publicKeyJwk: data.publicKeyJwk } : {}),
    until,
  };
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
