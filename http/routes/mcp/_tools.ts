/**
 * The MCP tools (decisions §20). Each calls the use case its HTTP route calls, checks its input as the route does
 * (the same codes: `INVALID_DID`, `INVALID_INPUT`), and answers the route's JSON or its `{error, code}`; the caller
 * adds the one-paragraph summary. Input schemas are TypeBox, i.e. JSON Schema, published as they are in
 * `tools/list`.
 */
import { type Static, type TSchema, Type as t } from "@sinclair/typebox";
import { type ArtifactTrust, INVALID_ARTIFACT_DID_MESSAGE } from "../../../domain/artifact_trust/mod.ts";
import type { createControllerConfirm } from "../../../domain/discovery/mod.ts";
import { type ControllerWitness, WITNESS_GIVEN_BACK_MESSAGE, WITNESS_UNKNOWN_MESSAGE, type WitnessResumed } from "../../../domain/witness/mod.ts";
import { type Idempotency, MAX_IDEMPOTENCY_KEY_LENGTH } from "../../../domain/idempotency/mod.ts";
import { IdentifierList, identifierListRefusal, resolveIdentity } from "../../../domain/identity/mod.ts";
import type { ListAttestations } from "../../../domain/index/mod.ts";
import type { KeyStatus } from "../../../domain/keys/mod.ts";
import type { ControllerAuthorization } from "../../../domain/controller_authorization/mod.ts";
import type { Scope } from "../../../domain/oauth/mod.ts";
import type { RateLimiter } from "../../../domain/rate_limit.ts";
import type { Account } from "../../../ports/accounts.ts";
import type { Logger } from "../../../ports/logger.ts";
import type { Metrics } from "../../../ports/metrics.ts";
import type { TrustAnchors } from "../../../ports/trust_anchors.ts";
import { stringify } from "../../errors.ts";
import { ArtifactTrustRecordModel, ControllerConfirmQuery, IdentityResolveResponse, SubscriptionCurrentModel, TrustAnchorsModel } from "../../models.ts";
import { KeyStatusModel } from "../keys/mod.ts";
import { compileRequestCheck } from "../request.ts";
import { AttestationPageModel } from "../attestation_list.ts";
import { ControllerAuthorizationModel } from "../controller_authorization.ts";
import { ControllerConfirmModel } from "../controller.ts";
import { ControllerWitnessModel } from "../session_declarations.ts";
import { withChain } from "../../chain_reads.ts";
import { ChainArg, chainReads, type ToolChains } from "./_chain.ts";
import { ServedTrustAnchorsModel, withServedChains } from "../trust_anchors.ts";
import { idempotentTool, type ToolOutcome } from "./_tool_outcome.ts";

export type { ToolOutcome } from "./_tool_outcome.ts";

/** Who calls a tool: the key its client's address is counted under (`clientKeyFor`), and its account when signed in. */
export type ToolCaller = { readonly clientKey: string; readonly account?: Account | undefined };

/** What the tools need: the use cases of their routes. */
export type McpToolDeps = {
  readonly artifactTrust: ArtifactTrust;
  readonly confirm: ReturnType<typeof createControllerConfirm>;
  readonly trustAnchors: TrustAnchors;
  readonly attestationList: ListAttestations;
  readonly keyStatus: KeyStatus;
  /** The key-status route's lookups per client address: a tool call takes from the same bucket. */
  readonly keyStatusRate: RateLimiter;
  /** The list routes' computations per client address (issue 43); each tool call takes a turn. Absent: none. */
  readonly attestationQueryRate?: RateLimiter | undefined;
  readonly witness: ControllerWitness;
  /** What a retried witness call whose first run died answers (domain/witness createWitnessResume); absent: run again. */
  readonly witnessResume?: ((noted: string) => Promise<WitnessResumed>) | undefined;
  /** Controller authorization (decisions §25), sharing key status's rate per client; absent: no such tool. */
  readonly controllerAuthorization?: ControllerAuthorization | undefined;
  /** The `subscription` of `GET /api/private/subscriptions/current` for an account. */
  readonly subscription: (account: Account) => Promise<Record<string, unknown>>;
  readonly metrics?: Metrics | undefined;
  readonly log: Logger;
  /** The writes' idempotency keys (decisions §23), shared with the HTTP routes' store; absent: `idempotencyKey` ignored. */
  readonly idempotency?: Idempotency | undefined;
  /**
   * The chains served (decisions §30): a read tool's `chain` picks one (absent, the default, whose reads are the ones
   * above); another attestation chain's reads in `reads`. Absent: the one chain, answers without `chain`.
   */
  readonly chains?: ToolChains | undefined;
};

/** One tool: its published definition, the scope it needs (none: public), and what it runs. */
export type ToolDefinition = {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: TSchema;
  /** The route's response model (the one `/openapi.json` publishes): clients check the structured content against it. */
  readonly outputSchema: TSchema;
  readonly readOnly: boolean;
  readonly scope?: Scope | undefined;
  /**
   * Answered from memory alone (`get_trust_anchors`, `resolve_identities`): it holds no slot of `MCP_MAX_IN_FLIGHT`
   * nor of its caller's share (`_server.ts`). Every other tool reads the chain, the index, DNS, did.json or storage.
   */
  readonly memoryOnly?: boolean | undefined;
  readonly run: (args: unknown, caller: ToolCaller) => Promise<ToolOutcome>;
};

const Did = (description: string) => t.String({ minLength: 1, maxLength: 2_048, description });

const ArtifactInput = t.Object({
  artifactDid: t.String({ minLength: 1, description: "The artifact: a canonical did:artifact (CIDv1, raw codec, sha2-256, base32-lower)" }),
  chain: ChainArg,
}, { additionalProperties: false });
/** The route's own fields (`ControllerConfirmQuery`), so that the tool refuses what the route refuses, with its codes. */
const ControllersInput = t.Object({
  subjectDid: ControllerConfirmQuery.properties.subjectDid,
  walletDid: ControllerConfirmQuery.properties.walletDid,
}, { additionalProperties: false });
/** The route's list (domain/identity's IdentifierList): one bound, one answer (decisions §20). */
const IdentitiesInput = t.Object({ identifiers: IdentifierList }, { additionalProperties: false });
const NoInput = t.Object({}, { additionalProperties: false });
const Address = (description: string) => t.String({ pattern: "^0x[0-9a-fA-F]{40}$", description });
const ListInput = t.Object({
  subject: t.Optional(Did("The subject DID: attestations sent to its DID address that name it")),
  attester: t.Optional(Address("The attester's 0x address")),
  recipient: t.Optional(Address("The recipient's 0x address")),
  schema: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "A schema name of the trust anchors (e.g. user-review, controller-witness) or a schema UID" })),
  revoked: t.Optional(t.Boolean({ description: "true: only revoked; false: only unrevoked; default either" })),
  since: t.Optional(t.Integer({ minimum: 0, maximum: 999_999_999_999, description: "Unix seconds, inclusive, on the attestation's time" })),
  until: t.Optional(t.Integer({ minimum: 0, maximum: 999_999_999_999, description: "Unix seconds, exclusive, on the attestation's time" })),
  order: t.Optional(t.Union([t.Literal("newest"), t.Literal("oldest")], { description: "newest (default) or oldest first" })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: "Items per page (default 25)" })),
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "The nextCursor of the previous page of the same query" })),
  chain: ChainArg,
}, { additionalProperties: false, description: "At least one of subject, attester, recipient and schema" });
const KeyStatusInput = t.Object({
  subjectDid: Did("The subject the key would act for: the did:web of a service, a did:pkh, …"),
  keyDid: Did("The key: did:pkh, did:key, did:jwk or did:ethr"),
  at: t.Optional(t.Integer({ minimum: 0, maximum: 999_999_999_999, description: "Unix seconds, not in the future (default now): judge the chain's records as they stood then, e.g. a receipt's issuedAt" })),
  chain: ChainArg,
}, { additionalProperties: false });
const ControllerAuthorizationInput = t.Object({
  subjectDid: Did("The subject, a bare DID (not a DID URL): the did:web of a service, a did:pkh, …"),
  controllerDid: Did("A durable controller: did:pkh:eip155:<chainId>:<address> or a did:jwk (resolve a DID URL such as did:web:x#key-1 first)"),
  purpose: t.Optional(t.Array(t.Union([t.Literal("authentication"), t.Literal("assertionMethod"), t.Literal("keyAgreement")]), { minItems: 1, maxItems: 3, description: "Key purposes asked for (default authentication and assertionMethod)" })),
  at: t.Optional(t.Integer({ minimum: 0, maximum: 999_999_999_999, description: "Unix seconds, not in the future (default now): evidence written after at does not count" })),
  chain: ChainArg,
}, { additionalProperties: false });
const WitnessInput = t.Object({
  subjectDid: Did("The did:web subject whose DNS TXT or did.json names the controller"),
  controllerDid: Did("The controller: did:pkh:eip155:<chainId>:<address> or did:jwk"),
  chain: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Integer({ minimum: 1 })], {
    description: "The attestation chain to write on: CAIP-2 (eip155:8453) or a chain id (8453); default the deployment's default chain (get_trust_anchors lists servedChains)",
  })),
  chainId: t.Optional(t.Integer({ minimum: 1, description: "The older spelling of chain (a chain id); both given must name the same chain" })),
  idempotencyKey: t.Optional(t.String({
    minLength: 1,
    maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
    pattern: "^[\\x20-\\x7e]+$",
    description:
      "A fresh UUID for this witness, the same on every retry of it (decisions §23): a retry with the same key and arguments gets the first answer and writes nothing twice; the same key with other arguments is IDEMPOTENCY_KEY_REUSED, while the first still runs IDEMPOTENCY_KEY_IN_USE. Kept 24 h per account",
  })),
}, { additionalProperties: false });

/** Checks `args` against `schema`; a refusal carries `code` and the first problem's wording. */
function checked<T extends TSchema>(schema: T, code: string, explain?: (value: unknown) => string | undefined) {
  const check = compileRequestCheck(schema, explain === undefined ? {} : { explain });
  return (args: unknown): { ok: true; value: Static<T> } | { ok: false; code: string; message: string } => {
    const value = args ?? {};
    return check.check(value) ? { ok: true, value: value as Static<T> } : { ok: false, code, message: check.explain(value) };
  };
}

/** The route's failure as a tool's. */
const failed = (result: { code: string; message: string; details?: string | undefined }): ToolOutcome =>
  ({ ok: false, code: result.code, message: result.message, details: result.details });

/** A use case's success as a JSON object (bigints written as the routes write them). */
const answered = (value: unknown): ToolOutcome => ({ ok: true, value: JSON.parse(stringify(value)) as Record<string, unknown> });

// The tools' argument checks, compiled once.
const artifactArgs = checked(ArtifactInput, "INVALID_INPUT");
const controllerArgs = checked(ControllersInput, "INVALID_INPUT");
const identityArgs = checked(IdentitiesInput, "INVALID_INPUT", identifierListRefusal);
const noArgs = checked(NoInput, "INVALID_INPUT");
const listArgs = checked(ListInput, "INVALID_INPUT");
const keyArgs = checked(KeyStatusInput, "INVALID_INPUT");
const authorizationArgs = checked(ControllerAuthorizationInput, "INVALID_INPUT");
const witnessArgs = checked(WitnessInput, "INVALID_INPUT");

/** The six public read tools, in the order `tools/list` shows them. */
function readTools(deps: McpToolDeps): ToolDefinition[] {
  return [
    {
      name: "check_artifact_trust",
      title: "Check an artifact's trust",
      description: "Before loading a plugin, model, package or other file identified by its did:artifact (a content hash), ask which verified attestations on the chain speak for it: responsibility claims (who stands behind it), security assessments, certifications and others, each checked against the trust anchors (schema, recipient, not revoked, not expired). Same answer as GET /v1/artifact-trust.",
      inputSchema: ArtifactInput,
      outputSchema: ArtifactTrustRecordModel,
      readOnly: true,
      async run(args, caller) {
        // The route's codes: no artifactDid is INVALID_DID, a bad chain or another argument INVALID_INPUT (was INVALID_DID).
        const did = (args as { artifactDid?: unknown } | null)?.artifactDid;
        if (typeof did !== "string" || did === "") return { ok: false, code: "INVALID_DID", message: INVALID_ARTIFACT_DID_MESSAGE, details: "artifactDid is required" };
        const input = artifactArgs(args);
        if (!input.ok) return input;
        const on = chainReads(deps, input.value.chain, "artifactTrust");
        if (!on.ok) return on;
        // The record names its chain itself; the caller's share of each domain's lookup budget is spent (lookup_budget.ts).
        const result = await on.reads.artifactTrust!(input.value.artifactDid, { client: caller.clientKey });
        return result.ok ? answered(result.value) : failed(result);
      },
    },
    {
      name: "check_domain_controllers",
      title: "Check who controls a service",
      description: "Before paying or trusting a service, read which keys its domain names as controllers today: DNS TXT (_controllers.<domain>) and /.well-known/did.json, with the evidence of each source, whether the issuer registry approves it, and, when walletDid is given, whether that wallet is one of them. Current, mutable evidence, read fresh (shared for a short cache time). Same answer as GET /v1/controller-confirm.",
      inputSchema: ControllersInput,
      outputSchema: ControllerConfirmModel,
      readOnly: true,
      async run(args) {
        const input = controllerArgs(args);
        if (!input.ok) return input;
        const result = await deps.confirm(input.value.subjectDid, input.value.walletDid);
        return result.ok ? answered(result.value) : failed(result);
      },
    },
    {
      name: "resolve_identities",
      title: "Resolve identifiers to display labels",
      description: "Turn up to 100 identifiers (DIDs, CAIP-10 accounts, EVM addresses, domains) into their canonical form, type and a short display label. Labels are for showing to people only, never for deciding trust. Same answer as POST /v1/identity-resolve.",
      inputSchema: IdentitiesInput,
      outputSchema: IdentityResolveResponse,
      readOnly: true,
      memoryOnly: true,
      run(args) {
        const input = identityArgs(args);
        if (!input.ok) return Promise.resolve(input);
        return Promise.resolve(answered({ identities: input.value.identifiers.map(resolveIdentity) }));
      },
    },
    {
      name: "get_trust_anchors",
      title: "Read the trust anchors",
      description: "Read the trust anchors this service judges by: for each chain, the EAS contract and the schema UIDs by name, the approved issuers' registries and the widget origins. Same answer as GET /v1/trust-anchors.",
      inputSchema: NoInput,
      // With the chains served (decisions §30), the route's answer: the anchors plus servedChains and defaultChain.
      outputSchema: deps.chains === undefined ? TrustAnchorsModel : ServedTrustAnchorsModel,
      readOnly: true,
      memoryOnly: true,
      run(args) {
        const input = noArgs(args);
        if (!input.ok) return Promise.resolve(input);
        const served = deps.chains?.served;
        return Promise.resolve(answered(served === undefined ? deps.trustAnchors : withServedChains(deps.trustAnchors, served)));
      },
    },
    {
      name: "list_attestations",
      title: "List attestations",
      description: "List attestations by any combination of subject DID, attester, recipient and schema (a trust-anchor name such as user-review, controller-witness, key-binding, or a schema UID), at least one of them; optionally only revoked or unrevoked ones, within a time range (since inclusive, until exclusive, Unix seconds), newest or oldest first, a page at a time (pass nextCursor back as cursor with the same filters), with whether each is revoked. Same answer as GET /v1/attestations.",
      inputSchema: ListInput,
      outputSchema: AttestationPageModel,
      readOnly: true,
      async run(args, caller) {
        const input = listArgs(args);
        if (!input.ok) return input;
        // The route's query, as strings: the same use case answers both.
        const turn = deps.attestationQueryRate?.take(caller.clientKey);
        if (turn !== undefined && !turn.allowed) return { ok: false, code: "RATE_LIMITED", message: `Too many attestation queries; try again in ${turn.retryAfterSeconds} s` };
        const { chain, ...filters } = input.value;
        const on = chainReads(deps, chain, "attestationList");
        if (!on.ok) return on;
        const query = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
        const result = await on.reads.attestationList!(query);
        return result.ok ? answered(withChain(result.value, on.answer)) : failed(result);
      },
    },
    {
      name: "key_status",
      title: "Check a signing key's status for a subject",
      description: "Ask whether a key (did:pkh, did:key, did:jwk, did:ethr) was authorised to act for a subject at a time (default now; pass a receipt's issuedAt): its status (registered, active, revoked, expired) and trust level (none, basic: the domain names it; intermediate: a controller witness; advanced: a witness and an active key binding), with the evidence. Same answer as GET /v1/key-status; shares its rate per client.",
      inputSchema: KeyStatusInput,
      outputSchema: KeyStatusModel,
      readOnly: true,
      async run(args, caller) {
        const input = keyArgs(args);
        if (!input.ok) return input;
        const turn = deps.keyStatusRate.take(caller.clientKey);
        if (!turn.allowed) return { ok: false, code: "RATE_LIMITED", message: `Too many key-status lookups; try again in ${turn.retryAfterSeconds} s` };
        const on = chainReads(deps, input.value.chain, "keyStatus");
        if (!on.ok) return on;
        const result = await on.reads.keyStatus!(input.value.subjectDid, input.value.keyDid, input.value.at, { client: caller.clientKey });
        return result.ok ? answered(withChain(result.value, on.answer)) : failed(result);
      },
    },
  ];
}

/** `controller_authorization` (decisions §25), sharing key status's rate per client. */
function authorizationTool(deps: McpToolDeps, authorize: NonNullable<McpToolDeps["controllerAuthorization"]>): ToolDefinition {
  return {
    name: "controller_authorization",
    title: "Check a controller's authorization for a subject",
    description: "Ask whether a durable controller (a did:pkh wallet or a did:jwk key) is authorized to act for a subject for given key purposes at a time, as the reference SDK's getControllerAuthorization answers it: controller witnesses of approved issuers, the newest key binding's purposes (matched, mismatch, unknown) and revocation (until), and live evidence (DNS TXT controller= or jkt=, did.json, the domain's JWK Set, contract ownership). Same answer as GET /v1/controller-authorization; shares key status's rate per client.",
    inputSchema: ControllerAuthorizationInput,
    outputSchema: ControllerAuthorizationModel,
    readOnly: true,
    async run(args, caller) {
      const input = authorizationArgs(args);
      if (!input.ok) return input;
      const turn = deps.keyStatusRate.take(caller.clientKey);
      if (!turn.allowed) return { ok: false, code: "RATE_LIMITED", message: `Too many controller-authorization lookups; try again in ${turn.retryAfterSeconds} s` };
      const { subjectDid, controllerDid, purpose, at, chain } = input.value;
      const on = chainReads({ ...deps, controllerAuthorization: authorize }, chain, "controllerAuthorization");
      if (!on.ok) return on;
      const result = await on.reads.controllerAuthorization!({ subjectDid, controllerDid, purpose: purpose?.join(","), at: at === undefined ? undefined : String(at) }, { client: caller.clientKey });
      return result.ok ? answered(withChain(result.value, on.answer)) : failed(result);
    },
  };
}

/** The two tools that act for an account and need an OAuth access token (decisions §19, §20). */
function accountTools(deps: McpToolDeps): ToolDefinition[] {
  return [
    {
      name: "request_controller_witness",
      title: "Write a controller witness",
      description: "Have the service observe that a domain names a controller (DNS TXT or did.json, read now) and record that observation on the chain as a controller-witness attestation signed by the service. Needs an OAuth access token with the scope witness:write for this endpoint (resource {base}/mcp); counts against the account's annual sponsored writes. Same answer as POST /v1/controller-witness.",
      inputSchema: WitnessInput,
      outputSchema: ControllerWitnessModel,
      readOnly: false,
      scope: "witness:write",
      async run(args, caller) {
        const input = witnessArgs(args);
        if (!input.ok) {
          deps.metrics?.increment("ats_sponsored_writes_total", { outcome: "invalid_input" });
          return input;
        }
        const account = caller.account;
        if (account === undefined) return { ok: false, code: "UNAUTHENTICATED", message: "A bearer token is required" };
        const { idempotencyKey, ...witnessInput } = input.value;
        const request = { scope: `account:${account.id}`, key: idempotencyKey, tool: "request_controller_witness", args: witnessInput };
        // The write's id is noted under the key once reserved; a retry after a crash answers from it (decisions §23).
        const resume = async (noted: string): Promise<ToolOutcome | undefined> => {
          const found = await deps.witnessResume?.(noted);
          if (found === undefined || found.kind === "nothing") return undefined;
          if (found.kind === "written") return answered(found.value);
          // Signed and given back on a proven cause: failed, and kept so (never written twice under the key), as on the
          // route; on a cause that proves nothing (no word of it), not known: it may still land.
          if (found.kind === "given-back") return { ok: false, code: "SUBMISSION_FAILED", message: WITNESS_GIVEN_BACK_MESSAGE, details: found.txHash ?? undefined };
          if (found.kind === "unknown") return { ok: false, code: "OUTCOME_UNKNOWN", message: WITNESS_UNKNOWN_MESSAGE, details: found.txHash ?? undefined };
          return { ok: false, code: "OUTCOME_UNKNOWN", message: "The witness transaction was sent but its outcome is not known yet; it will be settled" };
        };
        return await idempotentTool(deps.idempotency, request, async (onReserved) => {
          const { result } = await deps.witness(witnessInput, { ok: true, value: account }, { onReserved });
          deps.metrics?.increment("ats_sponsored_writes_total", { outcome: result.ok ? "committed" : result.code.toLowerCase() });
          if (result.ok) {
            deps.log.info("controller_witness", { uid: result.value.uid, txHash: result.value.txHash, method: result.value.method, via: "mcp" });
            return answered(result.value);
          }
          return failed(result);
        }, resume);
      },
    },
    {
      name: "get_account_usage",
      title: "Read the account's plan and usage",
      description: "Read the plan of the account the access token acts for and what it used this year: sponsored writes (witnesses, private-relay attestations) against the plan's annual limit, premium reads, and the entitlement period. Needs an OAuth access token with the scope account:read for this endpoint. Same answer as GET /api/private/subscriptions/current.",
      inputSchema: NoInput,
      outputSchema: SubscriptionCurrentModel,
      readOnly: true,
      scope: "account:read",
      async run(args, caller) {
        const input = noArgs(args);
        if (!input.ok) return input;
        if (caller.account === undefined) return { ok: false, code: "UNAUTHENTICATED", message: "A bearer token is required" };
        return answered({ subscription: await deps.subscription(caller.account) });
      },
    },
  ];
}

/** The tools, in the order `tools/list` shows them; `withAccountTools` false leaves out the two that need a token. */
export function createTools(deps: McpToolDeps, options: { readonly withAccountTools: boolean }): readonly ToolDefinition[] {
  const authorize = deps.controllerAuthorization;
  return [
    ...readTools(deps),
    ...(authorize === undefined ? [] : [authorizationTool(deps, authorize)]),
    ...(options.withAccountTools ? accountTools(deps) : []),
  ];
}
