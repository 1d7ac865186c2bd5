/**
 * One paragraph a model can read beside each tool's JSON (decisions §20): what the answer says, in words, with
 * the counts and verdicts that matter; the JSON stays the source of truth.
 */
type Json = Record<string, any>;

const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;
const list = (items: readonly string[], max = 5) =>
  items.length === 0 ? "none" : items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} and ${items.length - max} more`;

const SUMMARIES: Readonly<Record<string, (v: Json) => string>> = {
  check_artifact_trust(v) {
    const count = (key: string) => (v[key] as unknown[] | undefined)?.length ?? 0;
    const s = v.summary ?? {};
    return `Artifact ${v.artifactDid} on chain ${v.chain?.caip2}: ${plural(count("responsibilityClaims"), "verified responsibility claim")}, ` +
      `${plural(count("securityAssessments"), "security assessment")}, ${plural(count("certifications"), "certification")} and ` +
      `${plural(count("otherAttestations"), "other attestation")}; ${s.totalVerified ?? 0} of ${s.totalQueried ?? 0} attestations found were verified, ` +
      `${s.totalExcluded ?? 0} excluded (revoked, expired, wrong subject or schema).` +
      (count("responsibilityClaims") === 0 ? " No verified responsibility claim: nobody on this chain stands behind the artifact." : "");
  },
  check_domain_controllers(v) {
    const keys = ((v.controllerKeys ?? []) as Json[]).map((k) => `${k.canonicalId} (${(k.sources as string[]).join(" and ")})`);
    const found = ((v.evidence ?? []) as Json[]).map((e) => `${e.kind} ${e.location} ${e.status}`);
    const issuer = v.approvedIssuer?.status === undefined ? "" : ` The issuer registry check is ${v.approvedIssuer.status}.`;
    const warnings = (v.warnings as string[] | undefined)?.length ? ` Warnings: ${list(v.warnings)}.` : "";
    return `${v.subject?.canonical ?? "The subject"}${v.domain ? ` (domain ${v.domain})` : ""} names ${plural(keys.length, "controller key")}: ${list(keys)}. ` +
      `Evidence read now: ${list(found)}.${issuer}${warnings} This is current endpoint evidence; it can change at any time.`;
  },
  resolve_identities(v) {
    const identities = (v.identities ?? []) as Json[];
    return `Resolved ${plural(identities.length, "identifier")}: ${list(identities.map((i) => `${i.input} is ${i.type} "${i.label}"`))}. ` +
      "Labels are for display only, never for trust decisions.";
  },
  get_trust_anchors(v) {
    const chains = Object.entries((v.chains ?? {}) as Record<string, Json>);
    const described = chains.map(([id, c]) => `${id} (${c.name}, EAS ${c.easContract}, ${plural(Object.keys(c.schemas ?? {}).length, "schema")})`);
    return `Trust anchors version ${v.version}, updated ${v.updatedAt}: ${plural(chains.length, "chain")}, ${list(described)}; ` +
      `${plural((v.registries ?? []).length, "issuer registry", "issuer registries")}, ${plural((v.widgetOrigins ?? []).length, "widget origin")}.`;
  },
  list_attestations(v) {
    const items = (v.items ?? []) as Json[];
    const revoked = items.filter((i) => i.revoked).length;
    const attesters = [...new Set(items.map((i) => i.attestation?.attester as string))];
    const what = v.schema === undefined ? "attestation" : `${v.schema} attestation`;
    const about = v.subject === undefined ? "" : ` about ${v.subject}`;
    return `${plural(items.length, what)}${about} on this page (${revoked} revoked) from ${plural(attesters.length, "attester")}: ${list(attesters, 3)}. ` +
      (v.nextCursor === null ? "This is the last page." : `More pages follow: call again with cursor ${v.nextCursor}.`);
  },
  key_status(v) {
    const witness = v.controllerWitness ? `a controller witness (${v.controllerWitness.uid})` : "no controller witness";
    const binding = v.keyBinding ? `a key binding (${v.keyBinding.uid}${v.keyBinding.revocationTime ? ", revoked" : ""})` : "no key binding";
    return `As of ${new Date(Number(v.at) * 1000).toISOString()}, key ${v.keyDid} for ${v.subjectDid} is ${v.status} with trust level ${v.trustLevel}: ` +
      `the subject's endpoints ${v.endpointEvidence?.found ? `name it today (${list(v.endpointEvidence.sources)})` : "do not name it today"}, ${witness}, ${binding}.`;
  },
  controller_authorization(v) {
    const window = v.anchoredFrom ? `witnessed from ${new Date(Number(v.anchoredFrom) * 1000).toISOString()}` : "no witness window";
    const until = v.until ? `, revoked at ${new Date(Number(v.until) * 1000).toISOString()}` : "";
    const live = v.currentlyVerified ? `confirmed live by ${v.liveMethod}` : "not confirmed live";
    return `As of ${new Date(Number(v.at) * 1000).toISOString()}, ${v.controllerDid} is ${v.authorized ? "" : "not "}authorized for ${v.subjectDid} ` +
      `(${list(v.requestedPurpose ?? [])}): ${window}${until}, key purposes ${v.keyPurposeStatus}, ${live}.`;
  },
  request_controller_witness(v) {
    return `Witness written on the chain: attestation ${v.uid} in transaction ${v.txHash} (block ${v.blockNumber}), observed through ${v.method} at ${new Date(Number(v.observedAt) * 1000).toISOString()}. ` +
      "It records that the domain named the controller at that time; it counts as one sponsored write of the account.";
  },
  get_account_usage(v) {
    const s = v.subscription ?? {};
    const reads = s.annualPremiumReadLimit === null || s.annualPremiumReadLimit === undefined ? "" : ` and ${s.premiumReadsUsedCurrentYear} of ${s.annualPremiumReadLimit} premium reads`;
    return `The account is on the ${s.plan} plan (${s.status}) for ${s.entitlementPeriodStart} to ${s.entitlementPeriodEnd}; it used ${s.sponsoredWritesUsedCurrentYear} of ${s.annualSponsoredWriteLimit} sponsored writes${reads} this year.`;
  },
};

/** The paragraph of a tool's answer. */
export function summarize(tool: string, value: Record<string, unknown>): string {
  return SUMMARIES[tool]?.(value as Json) ?? "Done.";
}

/** The paragraph of a tool's error: the route's code and message, and what to do. */
export function summarizeError(code: string, message: string, details?: string | undefined): string {
  const hint = code === "RATE_LIMITED" ? " Wait and call again." : code.startsWith("INVALID") ? " Correct the input and call again." : "";
  return `${code}: ${message}${details ? ` (${details})` : ""}.${hint}`;
}
