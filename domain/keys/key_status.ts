/**
 * Key status (decisions §17): is a key authorised for a subject, how strongly, and was it at a given time. The
 * evidence comes from the attestation index (controller witnesses and key bindings of the subject, pinned to the
 * head block) and from the subject's endpoints (DNS TXT and did.json of a did:web, through the shared cached
 * discovery); {@link evaluateKeyTrust} decides.
 *
 * Chain cost per lookup, whatever the chain's age: the head (1), the two schema strings (1, once per process), the
 * `Attested` logs of the subject (read from the index; 1 live `eth_getLogs` for the blocks after its checkpoint),
 * the witnesses (1 batched read) and then the bindings (1 batched read): at most 5 JSON-RPC calls. Only witnesses
 * whose attester is an approved issuer, and only bindings whose attester could control the subject (the subject
 * itself, a controller a witness names, or one the endpoints name), are read at all, so nobody can make a lookup
 * read their flood of attestations about someone else's subject.
 *
 * A lookup that cannot be made is `NETWORK_ERROR`, never a guess: a failed chain read, or endpoint evidence that
 * could not be read when it would have mattered (the key not found among the sources that answered, or a binding
 * that does not count without their word naming the key or an attester up the chain its verdict rests on:
 * `endpointsCouldChange` of key_rules.ts, controller authorization's rule too).
 */
import { isSameControllerId } from "../did/mod.ts";
import { liveControllerEvidence, type LookupClient } from "../discovery/mod.ts";
import { fail, ok } from "../result.ts";
import { bindingEnd, evaluateKeyTrust, type KeyStatusValue, type TrustLevel } from "./key_rules.ts";
import { readAt, readKeyDid, readSubjectDid } from "./key_inputs.ts";
import { readSubjectEvidence } from "./_subject_evidence.ts";
import type { KeyStatus, KeyStatusDeps, KeyTrustContext, KeyTrustMany, ReadSubjectEvidence, SubjectEvidence } from "./_types.ts";

export { KEY_DID_METHODS, MAX_DID_LENGTH, readAt, readKeyDid, readSubjectDid } from "./key_inputs.ts";
export type {
  KeyStatus,
  KeyStatusCode,
  KeyStatusDeps,
  KeyStatusRecord,
  KeyTrustMany,
  ReadSubjectEvidence,
  SubjectEvidence,
} from "./_types.ts";

const ENDPOINT_FAILED = "The subject's endpoint evidence could not be read; nothing can be said about this key now";

/** Builds the key-status use cases over the index, the trust anchors and endpoint discovery. */
export function createKeyTrust(deps: KeyStatusDeps): { readonly status: KeyStatus; readonly many: KeyTrustMany; readonly evidence: ReadSubjectEvidence } {
  const ctx: KeyTrustContext = { deps, index: deps.index, trustAnchors: deps.trustAnchors, chainId: deps.index.chainId, schemaStrings: new Map() };
  const evidence: ReadSubjectEvidence = (subjects, options = {}) => readSubjectEvidence(ctx, subjects, options);
  const status: KeyStatus = (subjectInput, keyInput, atInput, options) => keyStatus(ctx, evidence, [subjectInput, keyInput, atInput, options]);
  const many: KeyTrustMany = (subjectDids, keyDids) => keyTrustMany(ctx, evidence, [subjectDids, keyDids]);
  return { status, many, evidence };
}

/** The key-status use case alone (what a receipt verifier calls): `(subjectDid, keyDid, at?)`. */
export function createKeyStatus(deps: KeyStatusDeps): KeyStatus {
  return createKeyTrust(deps).status;
}

/** One key's status for one subject at a time. */
async function keyStatus(
  ctx: KeyTrustContext,
  evidence: ReadSubjectEvidence,
  [subjectInput, keyInput, atInput, options = {}]: Parameters<KeyStatus>,
): ReturnType<KeyStatus> {
  const subjectDid = readSubjectDid(subjectInput);
  if (!subjectDid.ok) return subjectDid;
  const keyDid = readKeyDid(keyInput);
  if (!keyDid.ok) return keyDid;
  const nowSeconds = Math.floor(ctx.deps.clock.nowMs() / 1000);
  const at = readAt(atInput, nowSeconds);
  if (!at.ok) return at;
  const lookup = { client: options.client };
  const read = await evidence([subjectDid.value], lookup);
  if (!read.ok) return read;
  const e = await withJwkEvidence(ctx, read.value.get(subjectDid.value)!, subjectDid.value, keyDid.value, lookup);
  if (!endpointDecided(e, keyDid.value)) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
  const trust = evaluateKeyTrust({ subjectDid: subjectDid.value, keyDid: keyDid.value, at: BigInt(at.value), chainId: ctx.chainId, ...e });
  if (trust.endpointsCouldChange) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
  const sources = [...new Set(e.endpointKeys.filter((k) => isSameControllerId(k, keyDid.value)).flatMap((k) => e.endpointSources.get(k) ?? []))];
  const w = trust.controllerWitness;
  const b = trust.keyBinding;
  return ok({
    subjectDid: subjectDid.value,
    keyDid: keyDid.value,
    at: at.value,
    status: trust.status,
    trustLevel: trust.trustLevel,
    endpointEvidence: { found: trust.endpointFound, sources, checkedAt: nowSeconds },
    controllerWitness: w === null ? null : { uid: w.uid, attester: w.attester, observedAt: Number(w.observedAt) },
    keyBinding: b === null ? null : {
      uid: b.uid,
      attester: b.attester,
      keyPurpose: [...b.keyPurpose],
      effectiveAt: Number(b.effectiveAt),
      expiresAt: Number(bindingEnd(b)),
      revocationTime: Number(b.revocationTime),
    },
  });
}

/** The verdict for each key of each subject, now. */
async function keyTrustMany(
  ctx: KeyTrustContext,
  evidence: ReadSubjectEvidence,
  [subjectDids, keyDids]: Parameters<KeyTrustMany>,
): ReturnType<KeyTrustMany> {
  const out = new Map<string, Map<string, { status: KeyStatusValue; trustLevel: TrustLevel }>>();
  if (subjectDids.length === 0 || keyDids.length === 0) return ok(out);
  const read = await evidence(subjectDids);
  if (!read.ok) return read;
  const at = BigInt(Math.floor(ctx.deps.clock.nowMs() / 1000));
  for (const subjectDid of subjectDids) {
    const e = read.value.get(subjectDid)!;
    const verdicts = new Map<string, { status: KeyStatusValue; trustLevel: TrustLevel }>();
    for (const keyDid of keyDids) {
      if (!endpointDecided(e, keyDid)) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
      const { status: s, trustLevel, endpointsCouldChange } = evaluateKeyTrust({ subjectDid, keyDid, at, chainId: ctx.chainId, ...e });
      if (endpointsCouldChange) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
      verdicts.set(keyDid, { status: s, trustLevel });
    }
    out.set(subjectDid, verdicts);
  }
  return ok(out);
}

/**
 * A did:jwk key named by the endpoints the ways only a did:jwk can be (decisions §25): a `jkt=` thumbprint in DNS TXT,
 * or the domain's JWK Set. The key then counts as an endpoint key with those sources; other keys are unchanged.
 */
async function withJwkEvidence(ctx: KeyTrustContext, e: SubjectEvidence, subjectDid: string, keyDid: string, lookup: LookupClient): Promise<SubjectEvidence> {
  if (!keyDid.startsWith("did:jwk:") || e.endpointRecord === undefined || e.endpointKeys.some((k) => isSameControllerId(k, keyDid))) return e;
  let live = liveControllerEvidence(keyDid, e.endpointRecord);
  let jwksUnavailable = false;
  if (live.methods.length === 0 && ctx.deps.jwks !== undefined) {
    const jwks = await ctx.deps.jwks(subjectDid, lookup);
    live = liveControllerEvidence(keyDid, undefined, jwks);
    // Any answer that is not a key set, lasting or not: the key status decides no cut on a guess (_subject_evidence.ts).
    jwksUnavailable = jwks.status === "unavailable";
  }
  const sources = live.methods.map((m) => (m === "dns" ? "dns-txt" : m));
  if (sources.length === 0) return jwksUnavailable ? { ...e, endpointUnavailable: true } : e;
  return { ...e, endpointKeys: [...e.endpointKeys, keyDid], endpointSources: new Map([...e.endpointSources, [keyDid, sources]]) };
}

/**
 * Whether the endpoint evidence could decide about `keyDid` (found, or every source answered). Found, the verdict may
 * still rest on a binding a cut by the endpoints' word would void: the verdict's `endpointsCouldChange` says so.
 */
const endpointDecided = (e: SubjectEvidence, keyDid: string) => !e.endpointUnavailable || e.endpointKeys.some((k) => isSameControllerId(k, keyDid));
