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
 * could not be read when it would have mattered (the key not found among the sources that answered).
 */
import type { AttestationIndex, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { AsOf } from "../index/mod.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { type DiscoverControllers, type DiscoveryRecord, type LookupJwks, liveControllerEvidence } from "../discovery/mod.ts";
import { didToAddress, isSameControllerId, normalizeDid, normalizeSubjectDid } from "../did/mod.ts";
import { caip2, findApprovedIssuer } from "../identity/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { decodeSchemaData } from "../schema_data.ts";
import {
  type BindingEvidence,
  bindingEnd,
  evaluateKeyTrust,
  type KeyStatusValue,
  type TrustLevel,
  type WitnessEvidence,
} from "./key_rules.ts";

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
 * use case other code calls, e.g. a receipt verifier asking about the receipt's `issuedAt`.
 */
export type KeyStatus = (subjectDid: string, keyDid: string, at?: number | string | undefined) => Promise<Result<KeyStatusRecord, KeyStatusCode>>;

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

/** The key DID methods a signing key may use (decisions §17). */
export const KEY_DID_METHODS = ["pkh", "key", "jwk", "ethr"] as const;
/** Longest DID accepted as a key or subject (a did:jwk of an RSA-4096 key is about 950 characters). */
export const MAX_DID_LENGTH = 2_048;
/** Subjects whose endpoint evidence one request reads at the same time. */
const DISCOVERY_CONCURRENCY = 8;
const CHAIN_FAILED = "The chain could not be read; nothing can be said about this key now";
const ENDPOINT_FAILED = "The subject's endpoint evidence could not be read; nothing can be said about this key now";

/** A key DID made canonical (fragment dropped, did:pkh lowercased), or why it is not one. */
export function readKeyDid(value: unknown, field = "keyDid"): Result<string, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value !== "string" || value.trim() === "") return fail("INVALID_INPUT", `${field} is required`);
  if (value.length > MAX_DID_LENGTH) return fail("INVALID_INPUT", `${field} must be at most ${MAX_DID_LENGTH} characters`);
  const method = /^did:([a-z0-9]+):/.exec(value.trim())?.[1];
  if (method === undefined || !(KEY_DID_METHODS as readonly string[]).includes(method)) {
    return fail("INVALID_DID", `${field} must be a did:pkh, did:key, did:jwk or did:ethr`);
  }
  const normalized = normalizeDid(value);
  if (!normalized.ok) return fail("INVALID_DID", `${field} is not a valid did:${method}`);
  if (method === "pkh" && normalized.value.split(":").length < 5) return fail("INVALID_DID", `${field}: a did:pkh has at least 5 colon-separated parts`);
  if (normalized.value.split(":").length < 3 || normalized.value.endsWith(":")) return fail("INVALID_DID", `${field} is not a valid did:${method}`);
  return ok(normalized.value);
}

/** A subject DID made canonical, or why it is not one. */
export function readSubjectDid(value: unknown, field = "subjectDid"): Result<string, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value !== "string" || value.trim() === "") return fail("INVALID_INPUT", `${field} is required`);
  if (value.length > MAX_DID_LENGTH) return fail("INVALID_INPUT", `${field} must be at most ${MAX_DID_LENGTH} characters`);
  if (!value.trim().startsWith("did:")) return fail("INVALID_DID", `${field} must be a DID`);
  // The one subject rule (issue 43): no whitespace or control character, a did:web naming a domain.
  const normalized = normalizeSubjectDid(value);
  return normalized.ok ? ok(normalized.value) : fail("INVALID_DID", `${field} is not a valid DID: ${normalized.message}`);
}

/** `at` as Unix seconds: absent = now; a whole number of seconds, not after now. */
export function readAt(value: unknown, nowSeconds: number): Result<number, "INVALID_INPUT"> {
  if (value === undefined || value === "") return ok(nowSeconds);
  const n = typeof value === "number" ? value : typeof value === "string" && /^\d{1,12}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 0) return fail("INVALID_INPUT", "at must be Unix seconds (a whole number)");
  if (n > nowSeconds) return fail("INVALID_INPUT", "at must not be in the future");
  return ok(n);
}

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
  options?: {
    /** Also read the bindings these attesters wrote (addresses), for rules that can show their control otherwise (§25's transfer proofs). */
    readonly alsoBindingsFrom?: readonly string[] | undefined;
  },
) => Promise<Result<Map<string, SubjectEvidence>, KeyStatusCode>>;

/** Builds the key-status use cases over the index, the trust anchors and endpoint discovery. */
export function createKeyTrust(deps: KeyStatusDeps): { readonly status: KeyStatus; readonly many: KeyTrustMany; readonly evidence: ReadSubjectEvidence } {
  const { index, trustAnchors } = deps;
  const chainId = index.chainId;
  const schemaStrings = new Map<string, string>();

  const schemaUids = (): Result<{ witness: HexString; binding: HexString }, "UNSUPPORTED_CHAIN"> => {
    const chain = Object.hasOwn(trustAnchors.chains, caip2(chainId)) ? trustAnchors.chains[caip2(chainId)] : undefined;
    const uid = (name: string) => {
      const value = chain !== undefined && Object.hasOwn(chain.schemas, name) ? chain.schemas[name] : undefined;
      return typeof value === "string" && /^0x[0-9a-fA-F]{64}$/.test(value) ? (value.toLowerCase() as HexString) : undefined;
    };
    const witness = uid("controller-witness");
    const binding = uid("key-binding");
    if (witness === undefined || binding === undefined) {
      return fail("UNSUPPORTED_CHAIN", "The active chain has no controller-witness and key-binding schemas in the trust anchors");
    }
    return ok({ witness, binding });
  };

  const approvedWitnessIssuers = (): Set<string> => {
    const out = new Set<string>();
    for (const registry of trustAnchors.registries) {
      if (registry.type !== "approved-issuers") continue;
      for (const issuer of registry.issuers) {
        if (issuer.schemas.includes("controller-witness") && /^0x[0-9a-fA-F]{40}$/.test(issuer.address)) out.add(issuer.address.toLowerCase());
      }
    }
    return out;
  };

  async function read(uids: readonly string[], block: bigint): Promise<IndexedAttestation[] | undefined> {
    if (uids.length === 0) return [];
    const answer = await index.attestations(uids as HexString[], block);
    if (!answer.ok || answer.value.length !== uids.length) return undefined;
    return answer.value.some((a, i) => a.uid.toLowerCase() !== uids[i]) ? undefined : answer.value;
  }

  const decode = (a: IndexedAttestation): Record<string, unknown> | undefined => {
    const schema = schemaStrings.get(a.schema.toLowerCase());
    if (schema === undefined) return undefined;
    const decoded = decodeSchemaData(schema, a.data);
    return decoded.ok ? decoded.value as Record<string, unknown> : undefined;
  };
  const uint = (value: unknown): bigint | undefined => {
    try {
      return typeof value === "bigint" ? value : typeof value === "string" || typeof value === "number" ? BigInt(value) : undefined;
    } catch {
      return undefined;
    }
  };

  /** Endpoint evidence of each did:web subject, at most {@link DISCOVERY_CONCURRENCY} at once. */
  type Endpoints = Pick<SubjectEvidence, "endpointKeys" | "endpointSources" | "endpointUnavailable" | "endpointRecord">;
  async function endpoints(subjects: readonly string[]): Promise<Result<Map<string, Endpoints>, "INVALID_DID">> {
    const web = subjects.filter((s) => s.startsWith("did:web:"));
    const out = new Map<string, Endpoints>();
    for (const s of subjects) out.set(s, { endpointKeys: [], endpointSources: new Map(), endpointUnavailable: false });
    let next = 0;
    let invalid: string | undefined;
    const worker = async () => {
      while (next < web.length) {
        const subject = web[next++]!;
        const found = await deps.discover(subject);
        if (!found.ok) {
          invalid = subject;
          continue;
        }
        const keys = found.value.controllerKeys;
        out.set(subject, {
          endpointKeys: keys.map((k) => k.canonicalId),
          endpointSources: new Map(keys.map((k) => [k.canonicalId, k.sources.filter((s) => s !== "account-wallet")])),
          endpointUnavailable: found.value.evidence.some((e) => e.status === "unavailable"),
          endpointRecord: found.value,
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(DISCOVERY_CONCURRENCY, web.length) }, worker));
    return invalid === undefined ? ok(out) : fail("INVALID_DID", `${invalid} is not a usable did:web`);
  }

  /** The evidence of every subject, now: one log read, one witness read, one binding read, and the endpoints. */
  const evidence: ReadSubjectEvidence = async (subjects, options = {}) => {
    const alsoFrom = new Set((options.alsoBindingsFrom ?? []).map((a) => a.toLowerCase()));
    const uids = schemaUids();
    if (!uids.ok) return uids;
    const bySubjectAddress = new Map<string, string>();
    for (const s of subjects) {
      const address = didToAddress(s);
      if (!address.ok) return fail("INVALID_DID", `${s} is not a valid DID`);
      bySubjectAddress.set(address.value.toLowerCase(), s);
    }
    const endpointRead = endpoints(subjects);
    const head = await index.latestBlock();
    if (!head.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
    const block = head.value;
    const missing = [uids.value.witness, uids.value.binding].filter((u) => !schemaStrings.has(u));
    const [schemas, logs] = await Promise.all([
      missing.length === 0 ? Promise.resolve(undefined) : index.schemaRecords(missing, block),
      index.attestedUids({ recipients: [...bySubjectAddress.keys()] as HexString[], schemaUids: [uids.value.witness, uids.value.binding], toBlock: block }),
    ]);
    if (schemas !== undefined) {
      if (!schemas.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
      for (const record of schemas.value) {
        if (!record.registered) return fail("UNSUPPORTED_CHAIN", "The key-binding or controller-witness schema is not registered on the active chain");
        schemaStrings.set(record.uid.toLowerCase(), record.schema);
      }
    }
    if (!logs.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
    const issuers = approvedWitnessIssuers();
    const witnessUids = [...new Set(logs.value
      .filter((l) => l.schemaUid.toLowerCase() === uids.value.witness && issuers.has(l.attester.toLowerCase()))
      .map((l) => l.uid.toLowerCase()))];
    const [witnessRead, endpointAnswer] = await Promise.all([read(witnessUids, block), endpointRead]);
    if (witnessRead === undefined) return fail("NETWORK_ERROR", CHAIN_FAILED);
    if (!endpointAnswer.ok) return endpointAnswer;

    const out = new Map<string, SubjectEvidence>();
    for (const s of subjects) out.set(s, { witnesses: [], bindings: [], ...endpointAnswer.value.get(s)! });
    const subjectOf = (a: IndexedAttestation, data: Record<string, unknown>) => {
      const subject = bySubjectAddress.get(a.recipient.toLowerCase());
      const named = typeof data.subject === "string" ? normalizeDid(data.subject) : undefined;
      return subject !== undefined && named?.ok && named.value === subject ? out.get(subject) : undefined;
    };
    for (const a of witnessRead) {
      const data = decode(a);
      if (data === undefined || typeof data.controller !== "string") continue;
      const target = subjectOf(a, data);
      if (target === undefined) continue;
      if (findApprovedIssuer(trustAnchors, a.attester, "controller-witness", Number(a.time) * 1000) === undefined) continue;
      target.witnesses.push({
        uid: a.uid,
        attester: a.attester,
        controller: data.controller,
        observedAt: uint(data.observedAt) ?? 0n,
        time: a.time,
        revocationTime: a.revocationTime,
        expirationTime: a.expirationTime,
        subject: data.subject as string,
        ...(typeof data.method === "string" ? { method: data.method } : {}),
      });
    }

    // Bindings are read only from attesters that could control their subject (the rules check when).
    const couldControl = (subject: string, attester: string) => {
      const pkh = `did:pkh:eip155:${chainId}:${attester.toLowerCase()}`;
      const e = out.get(subject)!;
      return alsoFrom.has(attester.toLowerCase()) || isSameControllerId(subject, pkh) || e.witnesses.some((w) => isSameControllerId(w.controller, pkh)) ||
        e.endpointKeys.some((k) => isSameControllerId(k, pkh));
    };
    const bindingUids = [...new Set(logs.value
      .filter((l) => {
        const subject = bySubjectAddress.get(l.recipient.toLowerCase());
        return l.schemaUid.toLowerCase() === uids.value.binding && subject !== undefined && couldControl(subject, l.attester);
      })
      .map((l) => l.uid.toLowerCase()))];
    const blockOf = new Map(logs.value.map((l) => [l.uid.toLowerCase(), l.blockNumber]));
    const bindingRead = await read(bindingUids, block);
    if (bindingRead === undefined) return fail("NETWORK_ERROR", CHAIN_FAILED);
    for (const a of bindingRead) {
      const data = decode(a);
      if (data === undefined || typeof data.keyId !== "string") continue;
      const target = subjectOf(a, data);
      const purposes = data.keyPurpose ?? [];
      if (target === undefined || !Array.isArray(purposes) || !purposes.every((p) => typeof p === "string")) continue;
      const effectiveAt = uint(data.effectiveAt ?? 0);
      const expiresAt = uint(data.expiresAt ?? 0);
      if (effectiveAt === undefined || expiresAt === undefined) continue;
      target.bindings.push({
        uid: a.uid,
        attester: a.attester,
        keyId: data.keyId,
        keyPurpose: purposes as string[],
        effectiveAt,
        expiresAt,
        time: a.time,
        revocationTime: a.revocationTime,
        expirationTime: a.expirationTime,
        ...(typeof data.publicKeyJwk === "string" && data.publicKeyJwk !== "" ? { publicKeyJwk: data.publicKeyJwk } : {}),
        ...(Array.isArray(data.proofs) ? { proofs: (data.proofs as unknown[]).filter((p) => typeof p === "string") as string[] } : {}),
        ...(blockOf.has(a.uid.toLowerCase()) ? { blockNumber: blockOf.get(a.uid.toLowerCase())! } : {}),
      });
    }
    return ok(out);
  };

  /**
   * A did:jwk key named by the endpoints the ways only a did:jwk can be (decisions §25): a `jkt=` thumbprint in DNS TXT,
   * or the domain's JWK Set. The key then counts as an endpoint key with those sources; other keys are unchanged.
   */
  async function withJwkEvidence(e: SubjectEvidence, subjectDid: string, keyDid: string): Promise<SubjectEvidence> {
    if (!keyDid.startsWith("did:jwk:") || e.endpointRecord === undefined || e.endpointKeys.some((k) => isSameControllerId(k, keyDid))) return e;
    let live = liveControllerEvidence(keyDid, e.endpointRecord);
    let jwksUnavailable = false;
    if (live.methods.length === 0 && deps.jwks !== undefined) {
      const jwks = await deps.jwks(subjectDid);
      live = liveControllerEvidence(keyDid, undefined, jwks);
      jwksUnavailable = jwks.status === "unavailable";
    }
    const sources = live.methods.map((m) => (m === "dns" ? "dns-txt" : m));
    if (sources.length === 0) return jwksUnavailable ? { ...e, endpointUnavailable: true } : e;
    return { ...e, endpointKeys: [...e.endpointKeys, keyDid], endpointSources: new Map([...e.endpointSources, [keyDid, sources]]) };
  }

  /** Whether the endpoint evidence could decide about `keyDid` (found, or every source answered). */
  const endpointDecided = (e: SubjectEvidence, keyDid: string) => !e.endpointUnavailable || e.endpointKeys.some((k) => isSameControllerId(k, keyDid));

  const status: KeyStatus = async (subjectInput, keyInput, atInput) => {
    const subjectDid = readSubjectDid(subjectInput);
    if (!subjectDid.ok) return subjectDid;
    const keyDid = readKeyDid(keyInput);
    if (!keyDid.ok) return keyDid;
    const nowSeconds = Math.floor(deps.clock.nowMs() / 1000);
    const at = readAt(atInput, nowSeconds);
    if (!at.ok) return at;
    const read = await evidence([subjectDid.value]);
    if (!read.ok) return read;
    const e = await withJwkEvidence(read.value.get(subjectDid.value)!, subjectDid.value, keyDid.value);
    if (!endpointDecided(e, keyDid.value)) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
    const trust = evaluateKeyTrust({ subjectDid: subjectDid.value, keyDid: keyDid.value, at: BigInt(at.value), chainId, ...e });
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
  };

  const many: KeyTrustMany = async (subjectDids, keyDids) => {
    const out = new Map<string, Map<string, { status: KeyStatusValue; trustLevel: TrustLevel }>>();
    if (subjectDids.length === 0 || keyDids.length === 0) return ok(out);
    const read = await evidence(subjectDids);
    if (!read.ok) return read;
    const at = BigInt(Math.floor(deps.clock.nowMs() / 1000));
    for (const subjectDid of subjectDids) {
      const e = read.value.get(subjectDid)!;
      const verdicts = new Map<string, { status: KeyStatusValue; trustLevel: TrustLevel }>();
      for (const keyDid of keyDids) {
        if (!endpointDecided(e, keyDid)) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
        const { status: s, trustLevel } = evaluateKeyTrust({ subjectDid, keyDid, at, chainId, ...e });
        verdicts.set(keyDid, { status: s, trustLevel });
      }
      out.set(subjectDid, verdicts);
    }
    return ok(out);
  };

  return { status, many, evidence };
}

/** The key-status use case alone (what a receipt verifier calls): `(subjectDid, keyDid, at?)`. */
export function createKeyStatus(deps: KeyStatusDeps): KeyStatus {
  return createKeyTrust(deps).status;
}
