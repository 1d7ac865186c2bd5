/**
 * Artifact trust (interface "Artifact trust record", reference §5.3 with decisions §7): every
 * verified claim about a did:artifact, and nothing else.
 *
 * Pipeline: DID check (before any RPC) → anchors of the active chain → head block, to which every
 * chain read of the request is pinned → schema strings (once per process: a registered schema never
 * changes) and the `Attested` logs to the artifact's DID address over the four policy schemas (one
 * OR-list query) → the attestations → generic exclusion rules → the schema's policy. Responsibility
 * claims and linked identifiers need the controller relationship of their party, which is one more
 * logs → attestations level over every party at once, then live DNS/did.json evidence only for
 * did:web parties that have no on-chain authorization at all.
 *
 * Controller authorization of an attester `A` (as `did:pkh:eip155:<chainId>:<a>`) for a party `P`:
 * - `P` is `A` itself (an EVM account controls itself);
 * - a controller witness of `(P, A)` whose attester is an active approved `controller-witness` issuer
 *   at the witness's time (decisions §7: anyone else's witness is ignored); the window opens at the
 *   first such witness;
 * - a key binding of `A` for `P` written by an approved witness issuer, or by a controller of `P`
 *   witnessed (as above) before the binding; the window opens at the binding;
 * - for a did:web `P` with neither: live endpoint evidence publishing `A` (no lower bound).
 * The newest accepted key binding of `A` closes the window at its revocation or expiry (registry
 * `expirationTime` or payload `expiresAt`; claims made before stay valid), and a binding whose
 * purposes exclude `assertionMethod` refuses `A`. A claim is inside the window when both its payload
 * `issuedAt` and its chain `time` are.
 *
 * A linked identifier also needs proofs from both sides of the link: see {@link linkedIdentifier}.
 *
 * Any failed lookup the answer depends on is NETWORK_ERROR: never a partial or empty result.
 */
import type { AbiParameter } from "viem";
import type { AttestationIndex, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { AsOf } from "../index/mod.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { JwsVerifier } from "../../ports/jws_verifier.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { findApprovedIssuer } from "../identity/mod.ts";
import { type DiscoverControllers, type DiscoveryRecord, liveControllerEvidence } from "../discovery/mod.ts";
import { bindingNames } from "../controller_authorization/mod.ts";
import { didToAddress, isSameControllerId, normalizeDid, parseArtifactDid } from "../did/mod.ts";
import { isEvidencePointer, parseProofWrappers, readUint, verifyProofWrapper } from "./proofs.ts";
import { type Fail, fail, ok, type Result } from "../result.ts";
import { decodeSchemaFields, parseSchemaFields, type SchemaField } from "../schema_data.ts";
import { parseAbiParameters } from "viem/utils";
import { caip2 } from "../identity/mod.ts";

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

/** Looks up the verified evidence of a did:artifact. */
export type ArtifactTrust = (artifactDid: string | undefined) => Promise<Result<ArtifactTrustRecord, ArtifactTrustError>>;

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
  /** Live DNS/did.json evidence for did:web parties; absent: only on-chain authorization counts. */
  readonly discover?: DiscoverControllers | undefined;
  /** Told about every excluded candidate. */
  readonly onExcluded?: ((uid: string, reason: ExclusionReason) => void) | undefined;
};

export const INVALID_ARTIFACT_DID_MESSAGE = "artifactDid must be a valid did:artifact DID";
const NO_ANCHORS = "The active chain does not have usable artifact trust anchors";
const NO_SCHEMA_SUPPORT = "The active chain does not support artifact trust lookup";
/** Live controller discoveries one artifact-trust request runs at the same time. */
export const LIVE_DISCOVERY_CONCURRENCY = 8;
const SCHEMA_LOOKUP_FAILED = "Artifact trust schema lookup is temporarily unavailable";
const CHAIN_QUERY_FAILED = "Artifact trust chain query is temporarily unavailable";
const AUTHORIZATION_LOOKUP_FAILED = "Required controller authorization lookup failed";

const GROUP: Readonly<Record<ArtifactPolicySchema, GroupName>> = {
  "responsibility-claim": "responsibilityClaims",
  "security-assessment": "securityAssessments",
  certification: "certifications",
  "linked-identifier": "otherAttestations",
};
type GroupName = "responsibilityClaims" | "securityAssessments" | "certifications" | "otherAttestations";

const RESPONSIBILITY_BASIS: readonly VerificationBasis[] = ["controller-authorization", "authorization-window"];
const LINKED_BASIS: readonly VerificationBasis[] = ["proof", "controller-authorization", "authorization-window"];
const ISSUER_BASIS: readonly VerificationBasis[] = ["approved-issuer"];
const UID = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** The key purpose a controller needs to sign claims for its party. */
const SIGNING_PURPOSE = "assertionMethod";

type Policy = {
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
type Screened = {
  readonly attestation: IndexedAttestation;
  readonly name: ArtifactPolicySchema;
  readonly data: Record<string, unknown>;
};

/** A responsibility claim or linked identifier waiting for its controller authorization. */
type PendingClaim = Screened & {
  readonly party: string;
  readonly controller: string;
  readonly issuedAt: bigint;
  readonly basis: readonly VerificationBasis[];
};

type Witness = { readonly controller: string; readonly time: bigint };
type KeyBinding = {
  readonly uid: string;
  readonly keyId: string;
  readonly keyPurpose: readonly string[];
  readonly attester: string;
  readonly time: bigint;
  readonly until: bigint | null;
};
type PartyEvidence = { readonly witnesses: Witness[]; readonly bindings: KeyBinding[] };

type Authorization =
  | { readonly kind: "authorized"; readonly anchoredFrom: bigint | null; readonly until: bigint | null }
  | { readonly kind: "needs-live"; readonly until: bigint | null }
  | { readonly kind: "unauthorized" };

type LiveEvidence = DiscoveryRecord | undefined;

const networkError = (message: string): Fail<"NETWORK_ERROR"> => fail("NETWORK_ERROR", message);
const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];
const pkhOf = (chainId: number, address: string) => `did:pkh:eip155:${chainId}:${address.toLowerCase()}`;

/** Builds artifact trust over a pinned chain index, the trust anchors and live controller discovery. */
export function createArtifactTrust(deps: ArtifactTrustDeps): ArtifactTrust {
  const { index, trustAnchors } = deps;
  const chainId = index.chainId;
  /** Registered schema strings by lowercase UID; registration is immutable, so they are read once. */
  const schemaStrings = new Map<string, string>();

  async function loadSchemas(uids: readonly HexString[], block: bigint): Promise<Result<void, ArtifactTrustError>> {
    const missing = uids.filter((uid) => !schemaStrings.has(uid.toLowerCase()));
    if (missing.length === 0) return ok(undefined);
    const read = await index.schemaRecords(missing, block);
    if (!read.ok || read.value.length !== missing.length) return networkError(SCHEMA_LOOKUP_FAILED);
    for (const [i, record] of read.value.entries()) {
      if (record.uid.toLowerCase() !== missing[i]!.toLowerCase()) return networkError(SCHEMA_LOOKUP_FAILED);
      if (!record.registered) return fail("UNSUPPORTED_CHAIN", NO_SCHEMA_SUPPORT);
    }
    for (const record of read.value) if (record.registered) schemaStrings.set(record.uid.toLowerCase(), record.schema);
    return ok(undefined);
  }

  /** Reads the attestations of logged uids, which must all exist at the pinned block. */
  async function readAttestations(
    uids: readonly string[],
    block: bigint,
  ): Promise<IndexedAttestation[] | undefined> {
    if (uids.length === 0) return [];
    const read = await index.attestations(uids as HexString[], block);
    if (!read.ok || read.value.length !== uids.length) return undefined;
    if (read.value.some((a, i) => a.uid.toLowerCase() !== uids[i])) return undefined;
    return read.value;
  }

  return async function artifactTrust(input) {
    // 1. The DID, before anything touches the network.
    if (typeof input !== "string" || input === "") {
      return fail("INVALID_DID", INVALID_ARTIFACT_DID_MESSAGE, "artifactDid is required");
    }
    const parsed = parseArtifactDid(input);
    if (!parsed.ok) return fail("INVALID_DID", INVALID_ARTIFACT_DID_MESSAGE, parsed.message);
    const artifactDid = parsed.value.did;
    const recipient = didToAddress(artifactDid);
    if (!recipient.ok) return fail("INVALID_DID", INVALID_ARTIFACT_DID_MESSAGE, recipient.message);

    // 2-3. Anchors of the active chain.
    const policy = policyOf(trustAnchors, index);
    if (!policy.ok) return policy;
    const { value: p } = policy;
    const nowSeconds = BigInt(Math.floor(deps.clock.nowMs() / 1000));

    // 4-5. Pin the block, then schema strings and candidates in one go.
    const head = await index.latestBlock();
    if (!head.ok) return networkError(CHAIN_QUERY_FAILED);
    const block = head.value;
    const [schemas, logs] = await Promise.all([
      loadSchemas(p.allUids, block),
      index.attestedUids({ recipients: [recipient.value as HexString], schemaUids: p.policyUids, toBlock: block }),
    ]);
    if (!schemas.ok) return schemas;
    if (!logs.ok) return networkError(CHAIN_QUERY_FAILED);
    const uids = unique(logs.value.map((log) => log.uid.toLowerCase()));
    const candidates = await readAttestations(uids, block);
    if (candidates === undefined) return networkError(CHAIN_QUERY_FAILED);

    const exclude = (uid: string, reason: ExclusionReason) => deps.onExcluded?.(uid, reason);
    const groups: Record<GroupName, ArtifactTrustItem[]> = {
      responsibilityClaims: [],
      securityAssessments: [],
      certifications: [],
      otherAttestations: [],
    };
    const accept = (s: Screened, basis: readonly VerificationBasis[], label?: string) =>
      groups[GROUP[s.name]].push(toItem(s, basis, label));

    // 6. Generic rules.
    const screened: Screened[] = [];
    for (const attestation of candidates) {
      const outcome = screen(attestation, p, recipient.value, artifactDid, nowSeconds, schemaStrings);
      if (typeof outcome === "string") exclude(attestation.uid, outcome);
      else screened.push(outcome);
    }

    // 7. Schema policies: approved issuers now, claims that need a controller relationship after.
    const pending: PendingClaim[] = [];
    const linkedChecks: Promise<PendingClaim | ExclusionReason>[] = [];
    const linkedOf: Screened[] = [];
    for (const s of screened) {
      if (s.name === "security-assessment" || s.name === "certification") {
        const issuer = findApprovedIssuer(trustAnchors, s.attestation.attester, s.name, Number(s.attestation.time) * 1000);
        if (issuer === undefined) exclude(s.attestation.uid, "issuer-not-approved");
        else accept(s, ISSUER_BASIS, issuer.label);
      } else if (s.name === "responsibility-claim") {
        const claim = responsibilityClaim(s, chainId);
        if (typeof claim === "string") exclude(s.attestation.uid, claim);
        else pending.push(claim);
      } else {
        linkedOf.push(s);
        linkedChecks.push(linkedIdentifier(s, artifactDid, chainId, nowSeconds, deps.jws));
      }
    }
    const linked = await Promise.all(linkedChecks);
    linked.forEach((claim, i) => {
      if (typeof claim === "string") exclude(linkedOf[i]!.attestation.uid, claim);
      else pending.push(claim);
    });

    if (pending.length > 0) {
      const evidence = await loadPartyEvidence(unique(pending.map((c) => c.party)), block, nowSeconds, p);
      if (!evidence.ok) return evidence;
      const decided = pending.map((claim) => ({
        claim,
        authorization: onChainAuthorization(evidence.value.get(claim.party)!, claim.party, claim.controller),
      }));
      const live = await liveEvidence(unique(decided.filter((d) => d.authorization.kind === "needs-live").map((d) => d.claim.party)));
      for (const { claim, authorization } of decided) {
        let outcome = authorization;
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
    }

    for (const group of Object.values(groups)) group.sort(byTimeThenUid);
    const totalVerified = Object.values(groups).reduce((n, g) => n + g.length, 0);
    return ok({
      artifactDid,
      chain: { chainId, caip2: p.caip2, easContract: p.easContract },
      trustAnchorsVersion: trustAnchors.version,
      ...groups,
      summary: { totalQueried: uids.length, totalVerified, totalExcluded: uids.length - totalVerified, complete: true },
    });
  };

  /** Witnesses and key bindings of every party, read with one log query and one attestation read. */
  async function loadPartyEvidence(
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
    const logs = await index.attestedUids({
      recipients: [...byAddress.keys()] as HexString[],
      schemaUids,
      toBlock: block,
    });
    if (!logs.ok) return networkError(AUTHORIZATION_LOOKUP_FAILED);
    const attestations = await readAttestations(unique(logs.value.map((l) => l.uid.toLowerCase())), block);
    if (attestations === undefined) return networkError(AUTHORIZATION_LOOKUP_FAILED);
    const witnessUid = policy.witnessUid;
    for (const a of attestations) {
      const party = byAddress.get(a.recipient.toLowerCase());
      const schema = schemaStrings.get(a.schema.toLowerCase());
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
        if (findApprovedIssuer(trustAnchors, a.attester, "controller-witness", Number(a.time) * 1000) === undefined) continue;
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
  function onChainAuthorization(evidence: PartyEvidence, party: string, controller: string): Authorization {
    const accepted = evidence.bindings
      .filter((b) => bindingNames(b, controller) && bindingAccepted(b, evidence))
      .sort((a, b) => (a.time === b.time ? (a.uid < b.uid ? 1 : -1) : a.time < b.time ? 1 : -1));
    const newest = accepted[0];
    if (newest !== undefined && newest.keyPurpose.length > 0 && !newest.keyPurpose.includes(SIGNING_PURPOSE)) {
      return { kind: "unauthorized" };
    }
    const until = newest?.until ?? null;
    if (isSameControllerId(party, controller)) return { kind: "authorized", anchoredFrom: null, until };
    let firstWitness: bigint | null = null;
    for (const w of evidence.witnesses) {
      if (isSameControllerId(w.controller, controller) && (firstWitness === null || w.time < firstWitness)) {
        firstWitness = w.time;
      }
    }
    if (firstWitness !== null) return { kind: "authorized", anchoredFrom: firstWitness, until };
    if (newest !== undefined) return { kind: "authorized", anchoredFrom: newest.time, until };
    if (party.startsWith("did:web:") && deps.discover !== undefined) return { kind: "needs-live", until };
    return { kind: "unauthorized" };
  }

  /** A key binding counts when an approved witness issuer wrote it, or a controller witnessed before it. */
  function bindingAccepted(binding: KeyBinding, evidence: PartyEvidence): boolean {
    if (findApprovedIssuer(trustAnchors, binding.attester, "controller-witness", Number(binding.time) * 1000)) return true;
    const attester = pkhOf(chainId, binding.attester);
    return evidence.witnesses.some((w) => w.time <= binding.time && isSameControllerId(w.controller, attester));
  }

  /** Live endpoint evidence of did:web parties, looked up at once. */
  async function liveEvidence(parties: readonly string[]): Promise<Map<string, LiveEvidence>> {
    const out = new Map<string, LiveEvidence>();
    if (deps.discover === undefined || parties.length === 0) return out;
    const discover = deps.discover;
    // At most LIVE_DISCOVERY_CONCURRENCY at once: claims naming many domains cannot fan one request out into
    // hundreds of simultaneous outbound lookups.
    const results: Awaited<ReturnType<DiscoverControllers>>[] = new Array(parties.length);
    let next = 0;
    const worker = async () => {
      while (next < parties.length) {
        const i = next++;
        results[i] = await discover(parties[i]!);
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
}

/** The anchors artifact trust needs on the active chain, or UNSUPPORTED_CHAIN. */
function policyOf(anchors: TrustAnchors, index: AttestationIndex): Result<Policy, "UNSUPPORTED_CHAIN"> {
  const id = caip2(index.chainId);
  const chain = Object.hasOwn(anchors.chains, id) ? anchors.chains[id] : undefined;
  if (
    chain === undefined || typeof chain.easContract !== "string" || !ADDRESS.test(chain.easContract) ||
    chain.easContract.toLowerCase() !== index.easAddress.toLowerCase()
  ) {
    return fail("UNSUPPORTED_CHAIN", NO_ANCHORS);
  }
  const names = new Map<string, ArtifactPolicySchema>();
  const policyUids: HexString[] = [];
  for (const name of ARTIFACT_POLICY_SCHEMAS) {
    const uid = Object.hasOwn(chain.schemas, name) ? chain.schemas[name] : undefined;
    if (typeof uid !== "string" || !UID.test(uid)) {
      return fail("UNSUPPORTED_CHAIN", `The active chain is missing the ${name} artifact trust schema`);
    }
    names.set(uid.toLowerCase(), name);
    policyUids.push(uid.toLowerCase() as HexString);
  }
  const optional = (name: string) => {
    const uid = Object.hasOwn(chain.schemas, name) ? chain.schemas[name] : undefined;
    return typeof uid === "string" && UID.test(uid) ? (uid.toLowerCase() as HexString) : undefined;
  };
  const witnessUid = optional("controller-witness");
  const keyBindingUid = optional("key-binding");
  const allUids = unique([...policyUids, ...[witnessUid, keyBindingUid].filter((u) => u !== undefined)]);
  return ok({ caip2: id, easContract: chain.easContract, policyUids, names, witnessUid, keyBindingUid, allUids });
}

/** The generic rules of reference §5.3 step 6; the subject must be present and exactly the artifact DID. */
function screen(
  a: IndexedAttestation,
  policy: Policy,
  recipient: string,
  artifactDid: string,
  nowSeconds: bigint,
  schemaStrings: ReadonlyMap<string, string>,
): Screened | ExclusionReason {
  const name = policy.names.get(a.schema.toLowerCase());
  const schema = schemaStrings.get(a.schema.toLowerCase());
  if (name === undefined || schema === undefined) return "schema-not-anchored";
  if (a.recipient.toLowerCase() !== recipient) return "wrong-recipient";
  if (a.revocationTime !== 0n) return "revoked";
  if (a.expirationTime !== 0n && a.expirationTime <= nowSeconds) return "expired";
  const decoded = decodePayload(schema, a.data);
  if (!decoded.ok) return "undecodable";
  const data = decoded.value;
  if (data.subject !== artifactDid) return "wrong-subject";
  if (Object.hasOwn(data, "effectiveAt")) {
    const effectiveAt = readUint(data.effectiveAt);
    if (effectiveAt === undefined || (effectiveAt !== 0n && effectiveAt > nowSeconds)) return "not-yet-effective";
  }
  if (Object.hasOwn(data, "expiresAt")) {
    const expiresAt = readUint(data.expiresAt);
    if (expiresAt === undefined || (expiresAt !== 0n && expiresAt <= nowSeconds)) return "payload-expired";
  }
  return { attestation: a, name, data };
}

/** The party DID of a claim: a DID (not a bare domain), normalized. */
function partyOf(value: unknown): string | undefined {
  if (typeof value !== "string" || !value.trim().startsWith("did:")) return undefined;
  const normalized = normalizeDid(value);
  return normalized.ok ? normalized.value : undefined;
}

/** Responsibility-claim payload rules (reference §5.3, SDK `verifyResponsibilityClaim`). */
function responsibilityClaim(s: Screened, chainId: number): PendingClaim | ExclusionReason {
  const party = partyOf(s.data.responsibleParty);
  const types = s.data.responsibilityType;
  const issuedAt = readUint(s.data.issuedAt);
  if (party === undefined || !Array.isArray(types) || types.length === 0 || issuedAt === undefined || issuedAt === 0n) {
    return "invalid-payload";
  }
  return { ...s, party, controller: pkhOf(chainId, s.attestation.attester), issuedAt, basis: RESPONSIBILITY_BASIS };
}

/**
 * Linked-identifier rules: a linkedId DID and proofs from both sides of the link (reference §5.3, SDK
 * `verifyLinkedIdentifierProofs`), two distinct entries of `proofs`, purpose `shared-control`:
 * - the linkedId side: a valid pop-eip712 or pop-jws that names the artifact DID as the authorized
 *   entity (`aud`) and whose signer is the same controller as linkedId. The attester's signature does
 *   not do here: the attestation already is the attester's word, and the proof must show that the
 *   holder of linkedId itself agreed to be linked to this artifact.
 * - the artifact side: a did:artifact is content-addressed and has no key, so nobody can sign for it.
 *   As in the reference, an `evidence-pointer` counts without being fetched; so does a valid
 *   pop-eip712 or pop-jws naming the artifact signed by the attester, whose control of linkedId
 *   (controller authorization and window) is checked next in any case.
 * One proof never stands for both sides, even when the attester is linkedId itself.
 */
async function linkedIdentifier(
  s: Screened,
  artifactDid: string,
  chainId: number,
  nowSeconds: bigint,
  jws: JwsVerifier,
): Promise<PendingClaim | ExclusionReason> {
  const party = partyOf(s.data.linkedId);
  if (party === undefined) return "invalid-payload";
  const wrappers = parseProofWrappers(s.data.proofs);
  if (wrappers.length === 0) return "invalid-proofs";
  const controller = pkhOf(chainId, s.attestation.attester);
  const context = { nowSeconds, purpose: "shared-control", chainId, jws };
  const proofs = await Promise.all(wrappers.map((w) => verifyProofWrapper(w, context)));
  const namesArtifact = proofs.map((proof) => proof !== undefined && proof.audiences.includes(artifactDid));
  const signedBy = (i: number, did: string) => namesArtifact[i]! && proofs[i]!.signers.some((signer) => isSameControllerId(signer, did));
  const linkedSide = wrappers.flatMap((_, i) => (signedBy(i, party) ? [i] : []));
  const artifactSide = wrappers.flatMap((w, i) => (isEvidencePointer(w, context) || signedBy(i, controller) ? [i] : []));
  const bothSides = linkedSide.some((i) => artifactSide.some((j) => j !== i));
  if (!bothSides) return "invalid-proofs";
  const issuedAt = readUint(s.data.issuedAt);
  if (issuedAt === undefined) return "invalid-payload";
  return { ...s, party, controller, issuedAt: issuedAt === 0n ? s.attestation.time : issuedAt, basis: LINKED_BASIS };
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
  return { uid: a.uid.toLowerCase(), keyId: data.keyId, keyPurpose: purposes, attester: a.attester, time: a.time, until };
}

type ParsedSchema = { readonly params: readonly AbiParameter[]; readonly fields: readonly SchemaField[] } | null;
const parsedSchemas = new Map<string, ParsedSchema>();

/**
 * `decodeSchemaData` with each schema string parsed once per process: a request decodes hundreds of
 * payloads of the same few schemas, and parsing costs about as much as decoding. Big integers come
 * back as base-10 strings, as there.
 */
function decodePayload(schema: string, data: HexString): Result<Record<string, unknown>, "INVALID_INPUT"> {
  let parsed = parsedSchemas.get(schema);
  if (parsed === undefined) {
    const fields = parseSchemaFields(schema);
    try {
      parsed = fields.ok ? { params: parseAbiParameters(schema) as readonly AbiParameter[], fields: fields.value } : null;
    } catch {
      parsed = null;
    }
    parsedSchemas.set(schema, parsed);
  }
  if (parsed === null) return fail("INVALID_INPUT", "Unsupported schema");
  return decodeSchemaFields(parsed.params, parsed.fields, data);
}

function inWindow(authorization: { anchoredFrom: bigint | null; until: bigint | null }, at: bigint): boolean {
  if (authorization.anchoredFrom !== null && at < authorization.anchoredFrom) return false;
  return authorization.until === null || at <= authorization.until;
}

function toItem(s: Screened, basis: readonly VerificationBasis[], label?: string): ArtifactTrustItem {
  const a = s.attestation;
  return {
    attestation: {
      uid: a.uid,
      schema: a.schema,
      schemaName: s.name,
      attester: a.attester,
      ...(label === undefined ? {} : { attesterLabel: label }),
      recipient: a.recipient,
      time: a.time.toString(),
      expirationTime: a.expirationTime.toString(),
      revocationTime: a.revocationTime.toString(),
      data: s.data,
    },
    verification: { valid: true, basis: [...basis] },
  };
}

function byTimeThenUid(x: ArtifactTrustItem, y: ArtifactTrustItem): number {
  const tx = BigInt(x.attestation.time);
  const ty = BigInt(y.attestation.time);
  if (tx !== ty) return tx > ty ? -1 : 1;
  return x.attestation.uid.localeCompare(y.attestation.uid);
}
