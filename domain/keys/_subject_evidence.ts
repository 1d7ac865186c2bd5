/**
 * The evidence of each subject a key-status lookup reads: controller witnesses and key bindings from the index,
 * pinned to its head, and the subject's endpoint keys.
 */
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { didToAddress, isSameControllerId, normalizeDid } from "../did/mod.ts";
import { caip2, findApprovedIssuer } from "../identity/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { decodeSchemaData } from "../schema_data.ts";
import type { KeyTrustContext, ReadSubjectEvidence, SubjectEvidence } from "./_types.ts";
import { endpointEvidenceOf } from "./key_rules.ts";

/** Subjects whose endpoint evidence one request reads at the same time. */
const DISCOVERY_CONCURRENCY = 8;
const CHAIN_FAILED = "The chain could not be read; nothing can be said about this key now";

const schemaUids = (ctx: KeyTrustContext): Result<{ witness: HexString; binding: HexString }, "UNSUPPORTED_CHAIN"> => {
  const chain = Object.hasOwn(ctx.trustAnchors.chains, caip2(ctx.chainId)) ? ctx.trustAnchors.chains[caip2(ctx.chainId)] : undefined;
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

const approvedWitnessIssuers = (ctx: KeyTrustContext): Set<string> => {
  const out = new Set<string>();
  for (const registry of ctx.trustAnchors.registries) {
    if (registry.type !== "approved-issuers") continue;
    for (const issuer of registry.issuers) {
      if (issuer.schemas.includes("controller-witness") && /^0x[0-9a-fA-F]{40}$/.test(issuer.address)) out.add(issuer.address.toLowerCase());
    }
  }
  return out;
};

async function read(ctx: KeyTrustContext, uids: readonly string[], block: bigint): Promise<IndexedAttestation[] | undefined> {
  if (uids.length === 0) return [];
  const answer = await ctx.index.attestations(uids as HexString[], block);
  if (!answer.ok || answer.value.length !== uids.length) return undefined;
  return answer.value.some((a, i) => a.uid.toLowerCase() !== uids[i]) ? undefined : answer.value;
}

const decode = (ctx: KeyTrustContext, a: IndexedAttestation): Record<string, unknown> | undefined => {
  const schema = ctx.schemaStrings.get(a.schema.toLowerCase());
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
async function endpoints(ctx: KeyTrustContext, subjects: readonly string[], client: string | undefined): Promise<Result<Map<string, Endpoints>, "INVALID_DID">> {
  const web = subjects.filter((s) => s.startsWith("did:web:"));
  const out = new Map<string, Endpoints>();
  for (const s of subjects) out.set(s, { endpointKeys: [], endpointSources: new Map(), endpointUnavailable: false });
  let next = 0;
  let invalid: string | undefined;
  const worker = async () => {
    while (next < web.length) {
      const subject = web[next++]!;
      // Today's evidence only: an older answer standing in for a spent lookup budget is not what the endpoints say now.
      // The caller's share of the domain's budget too: one client cannot spend it all (domain/discovery/lookup_budget.ts).
      const found = await ctx.deps.discover(subject, { freshOnly: true, client });
      if (!found.ok) {
        invalid = subject;
        continue;
      }
      const keys = found.value.controllerKeys;
      // Any source that gave no answer counts as unavailable, `lasting` ones too (endpointEvidenceOf): never a guess.
      const { endpointKeys, endpointUnavailable } = endpointEvidenceOf(found.value);
      out.set(subject, {
        endpointKeys: [...endpointKeys],
        endpointSources: new Map(keys.map((k) => [k.canonicalId, k.sources.filter((s) => s !== "account-wallet")])),
        endpointUnavailable,
        endpointRecord: found.value,
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(DISCOVERY_CONCURRENCY, web.length) }, worker));
  return invalid === undefined ? ok(out) : fail("INVALID_DID", `${invalid} is not a usable did:web`);
}

/** The evidence of every subject, now: one log read, one witness read, one binding read, and the endpoints. */
export async function readSubjectEvidence(
  ctx: KeyTrustContext,
  subjects: Parameters<ReadSubjectEvidence>[0],
  options: Parameters<ReadSubjectEvidence>[1] = {},
): ReturnType<ReadSubjectEvidence> {
  const alsoFrom = new Set((options.alsoBindingsFrom ?? []).map((a) => a.toLowerCase()));
  const uids = schemaUids(ctx);
  if (!uids.ok) return uids;
  const bySubjectAddress = new Map<string, string>();
  for (const s of subjects) {
    const address = didToAddress(s);
    if (!address.ok) return fail("INVALID_DID", `${s} is not a valid DID`);
    bySubjectAddress.set(address.value.toLowerCase(), s);
  }
  const endpointRead = endpoints(ctx, subjects, options.client);
  const head = await ctx.index.latestBlock();
  if (!head.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
  const block = head.value;
  const missing = [uids.value.witness, uids.value.binding].filter((u) => !ctx.schemaStrings.has(u));
  const [schemas, logs] = await Promise.all([
    missing.length === 0 ? Promise.resolve(undefined) : ctx.index.schemaRecords(missing, block),
    ctx.index.attestedUids({ recipients: [...bySubjectAddress.keys()] as HexString[], schemaUids: [uids.value.witness, uids.value.binding], toBlock: block }),
  ]);
  if (schemas !== undefined) {
    if (!schemas.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
    for (const record of schemas.value) {
      if (!record.registered) return fail("UNSUPPORTED_CHAIN", "The key-binding or controller-witness schema is not registered on the active chain");
      ctx.schemaStrings.set(record.uid.toLowerCase(), record.schema);
    }
  }
  if (!logs.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
  const issuers = approvedWitnessIssuers(ctx);
  const witnessUids = [...new Set(logs.value
    .filter((l) => l.schemaUid.toLowerCase() === uids.value.witness && issuers.has(l.attester.toLowerCase()))
    .map((l) => l.uid.toLowerCase()))];
  const [witnessRead, endpointAnswer] = await Promise.all([read(ctx, witnessUids, block), endpointRead]);
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
    const data = decode(ctx, a);
    if (data === undefined || typeof data.controller !== "string") continue;
    const target = subjectOf(a, data);
    if (target === undefined) continue;
    if (findApprovedIssuer(ctx.trustAnchors, a.attester, "controller-witness", Number(a.time) * 1000, ctx.chainId) === undefined) continue;
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

  // Bindings are read only from attesters that could control their subject (the rules check when). With an endpoint that
  // did not answer, any attester could be one the endpoints name: every binding is read, so a caller can tell a binding
  // that would count by the endpoints' word (an owner's cut) from none, and not guess (controller authorization).
  const couldControl = (subject: string, attester: string) => {
    const pkh = `did:pkh:eip155:${ctx.chainId}:${attester.toLowerCase()}`;
    const e = out.get(subject)!;
    return e.endpointUnavailable || alsoFrom.has(attester.toLowerCase()) || isSameControllerId(subject, pkh) ||
      e.witnesses.some((w) => isSameControllerId(w.controller, pkh)) || e.endpointKeys.some((k) => isSameControllerId(k, pkh));
  };
  const bindingUids = [...new Set(logs.value
    .filter((l) => {
      const subject = bySubjectAddress.get(l.recipient.toLowerCase());
      return l.schemaUid.toLowerCase() === uids.value.binding && subject !== undefined && couldControl(subject, l.attester);
    })
    .map((l) => l.uid.toLowerCase()))];
  const blockOf = new Map(logs.value.map((l) => [l.uid.toLowerCase(), l.blockNumber]));
  const bindingRead = await read(ctx, bindingUids, block);
  if (bindingRead === undefined) return fail("NETWORK_ERROR", CHAIN_FAILED);
  for (const a of bindingRead) {
    const data = decode(ctx, a);
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
}
