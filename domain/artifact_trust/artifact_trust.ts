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
 */import type { HexString } from "../../ports/eas.ts";
import { didToAddress, parseArtifactDid } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { authorizeClaims } from "./_authorization.ts";
import { applyPolicies, screen } from "./_claims.ts";
import { policyOf } from "./_policy.ts";
import type {
  ArtifactPolicySchema,
  ArtifactTrust,
  ArtifactTrustContext,
  ArtifactTrustDeps,
  ArtifactTrustError,
  ArtifactTrustItem,
  ArtifactTrustRecord,
  ExclusionReason,
  Screened,
  VerificationBasis,
} from "./_types.ts";
import { networkError, readAttestations, unique } from "./_util.ts";

export { LIVE_DISCOVERY_CONCURRENCY } from "./_authorization.ts";
export {
  ARTIFACT_POLICY_SCHEMAS,
  type ArtifactPolicySchema,
  type ArtifactTrust,
  type ArtifactTrustDeps,
  type ArtifactTrustError,
  type ArtifactTrustItem,
  type ArtifactTrustRecord,
  type ExclusionReason,
  type VerificationBasis,
} from "./_types.ts";

export const INVALID_ARTIFACT_DID_MESSAGE = "artifactDid must be a valid did:artifact DID";
const NO_SCHEMA_SUPPORT = "The active chain does not support artifact trust lookup";
const SCHEMA_LOOKUP_FAILED = "Artifact trust schema lookup is temporarily unavailable";
const CHAIN_QUERY_FAILED = "Artifact trust chain query is temporarily unavailable";

const GROUP: Readonly<Record<ArtifactPolicySchema, GroupName>> = {
  "responsibility-claim": "responsibilityClaims",
  "security-assessment": "securityAssessments",
  certification: "certifications",
  "linked-identifier": "otherAttestations",
};
type GroupName = "responsibilityClaims" | "securityAssessments" | "certifications" | "otherAttestations";

/** Builds artifact trust over a pinned chain index, the trust anchors and live controller discovery. */
export function createArtifactTrust(deps: ArtifactTrustDeps): ArtifactTrust {
  const ctx: ArtifactTrustContext = {
    deps,
    index: deps.index,
    trustAnchors: deps.trustAnchors,
    chainId: deps.index.chainId,
    schemaStrings: new Map<string, string>(),
  };
  return (input, options = {}) => artifactTrust(ctx, input, options.client);
}

/** One lookup: the DID, the anchors, the pinned candidates, the generic rules, then the schema policies. */
async function artifactTrust(ctx: ArtifactTrustContext, input: string | undefined, client: string | undefined): Promise<Result<ArtifactTrustRecord, ArtifactTrustError>> {
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
  const policy = policyOf(ctx.trustAnchors, ctx.index);
  if (!policy.ok) return policy;
  const { value: p } = policy;
  const nowSeconds = BigInt(Math.floor(ctx.deps.clock.nowMs() / 1000));

  // 4-5. Pin the block, then schema strings and candidates in one go.
  const head = await ctx.index.latestBlock();
  if (!head.ok) return networkError(CHAIN_QUERY_FAILED);
  const block = head.value;
  const [schemas, logs] = await Promise.all([
    loadSchemas(ctx, p.allUids, block),
    ctx.index.attestedUids({ recipients: [recipient.value as HexString], schemaUids: p.policyUids, toBlock: block }),
  ]);
  if (!schemas.ok) return schemas;
  if (!logs.ok) return networkError(CHAIN_QUERY_FAILED);
  const uids = unique(logs.value.map((log) => log.uid.toLowerCase()));
  const candidates = await readAttestations(ctx, uids, block);
  if (candidates === undefined) return networkError(CHAIN_QUERY_FAILED);

  const exclude = (uid: string, reason: ExclusionReason) => ctx.deps.onExcluded?.(uid, reason);
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
    const outcome = screen(attestation, p, recipient.value, artifactDid, nowSeconds, ctx.schemaStrings);
    if (typeof outcome === "string") exclude(attestation.uid, outcome);
    else screened.push(outcome);
  }

  // 7. Schema policies: approved issuers now, claims that need a controller relationship after.
  const pending = await applyPolicies(ctx, screened, { artifactDid, nowSeconds, exclude, accept });
  const authorized = await authorizeClaims(ctx, pending, { block, nowSeconds, policy: p, exclude, accept, client });
  if (!authorized.ok) return authorized;

  for (const group of Object.values(groups)) group.sort(byTimeThenUid);
  const totalVerified = Object.values(groups).reduce((n, g) => n + g.length, 0);
  return ok({
    artifactDid,
    chain: { chainId: ctx.chainId, caip2: p.caip2, easContract: p.easContract },
    trustAnchorsVersion: ctx.trustAnchors.version,
    ...groups,
    summary: { totalQueried: uids.length, totalVerified, totalExcluded: uids.length - totalVerified, complete: true },
  });
}

/** Reads the schema strings not read yet; an anchored schema that is not registered is UNSUPPORTED_CHAIN. */
async function loadSchemas(ctx: ArtifactTrustContext, uids: readonly HexString[], block: bigint): Promise<Result<void, ArtifactTrustError>> {
  const missing = uids.filter((uid) => !ctx.schemaStrings.has(uid.toLowerCase()));
  if (missing.length === 0) return ok(undefined);
  const read = await ctx.index.schemaRecords(missing, block);
  if (!read.ok || read.value.length !== missing.length) return networkError(SCHEMA_LOOKUP_FAILED);
  for (const [i, record] of read.value.entries()) {
    if (record.uid.toLowerCase() !== missing[i]!.toLowerCase()) return networkError(SCHEMA_LOOKUP_FAILED);
    if (!record.registered) return fail("UNSUPPORTED_CHAIN", NO_SCHEMA_SUPPORT);
  }
  for (const record of read.value) if (record.registered) ctx.schemaStrings.set(record.uid.toLowerCase(), record.schema);
  return ok(undefined);
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
