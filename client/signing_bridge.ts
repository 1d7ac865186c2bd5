/**
 * The host side of the widget signing protocol (decisions §29): a page that frames the review widget lets its own
 * connected wallet sign for it. `createSigningBridge` follows the reference SDK's bridge (`omatrust-sdk` widgets):
 * the trust policy is fetched once at creation (none, or one allowing nothing: it throws, so no bridge runs without
 * one), and every request must pass every rule before the wallet is asked:
 *
 * - the message's origin is the service's own, one of the policy's `widgetOrigins`, or the dev override (else it is
 *   ignored: there is no trusted window to answer);
 * - its `source` is the framed widget's window, the iframe looked up by id on each message (a remounted iframe
 *   works; another frame is ignored);
 * - `id` is a non-empty string; `domain`, `types` and `message` are objects; `domain.name` is `EAS`, its `version`
 *   `1.4.0`, its `chainId` a positive integer naming a chain of the policy, its `verifyingContract` that chain's EAS
 *   contract; `message.schema` one of that chain's schema UIDs, `message.attester` an address, `message.deadline` a
 *   positive integer in the future;
 * - `types` is EAS's `Attest` type, field for field (and, if given, the standard `EIP712Domain` of those four domain
 *   fields), and nothing else. This rule is ours, beyond the reference's list (decisions §29): EAS also honours a
 *   delegated `Revoke` signed under the same domain, so a host that signed any struct a trusted widget named could
 *   be made to sign away the user's revocable attestations (the reference's widget plan: "never sign arbitrary typed
 *   data"). The reference SDK's typed data and this service's widget ask for exactly `{Attest: [...]}`.
 *
 * A request that fails a rule is answered `omatrust:signatureError` with the reason and the wallet is never called;
 * a wallet that refuses or fails is answered the same way with its message.
 */
import { ATTEST_TYPES } from "../domain/delegation/mod.ts";
import { DOMAIN_FIELDS } from "./_eip712_domain.ts";
import { policyAllowlists, type TrustPolicy } from "../domain/identity/mod.ts";
import { AtsClientError } from "./errors.ts";
import { DEFAULT_BASE_URL, serviceUrl } from "./http.ts";
import type { FetchLike } from "./trust_anchors.ts";
import {
  OMATRUST_HOST_READY,
  OMATRUST_READY,
  OMATRUST_SIGN_TYPED_DATA,
  OMATRUST_SIGNATURE,
  OMATRUST_SIGNATURE_ERROR,
} from "./widget_protocol.ts";

export type { ChainPolicy, TrustPolicy } from "../domain/identity/mod.ts";

/** The EIP-712 domain name and version of the EAS contracts the bridge signs for. */
export const EAS_DOMAIN_NAME = "EAS";
export const EAS_DOMAIN_VERSION = "1.4.0";

/** Signs typed data with the host's wallet: (domain, types, message) as ethers' `signTypedData` takes them. */
export type BridgeSignTypedData = (
  domain: Record<string, unknown>,
  types: Record<string, unknown>,
  message: Record<string, unknown>,
) => Promise<string>;

/** The window and document the bridge listens on (the page's own by default; tests give their own). */
export type BridgeEnvironment = {
  readonly window: Pick<Window, "addEventListener" | "removeEventListener">;
  readonly document: { getElementById(id: string): unknown };
};

/** Options of {@link createSigningBridge}. */
export type SigningBridgeOptions = {
  /** The id of the `<iframe>` that frames the widget. */
  readonly iframeId: string;
  readonly signTypedData: BridgeSignTypedData;
  /** The service; default `http://127.0.0.1:8080`. Its origin is trusted, and its `/v1/trust-policy` is read. */
  readonly baseUrl?: string | undefined;
  /** One more origin trusted to ask (a widget served from a development server). */
  readonly devOriginOverride?: string | undefined;
  readonly fetch?: FetchLike | undefined;
  /** Milliseconds since the epoch, for deadlines; default `Date.now`. */
  readonly now?: (() => number) | undefined;
  readonly environment?: BridgeEnvironment | undefined;
};

/** A running bridge. */
export type SigningBridge = {
  /** The policy it checks requests against. */
  readonly policy: TrustPolicy;
  /** Stops listening. */
  readonly destroy: () => void;
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Reads the service's trust policy (`GET /v1/trust-policy`); throws {@link AtsClientError} when there is none to read. */
export async function fetchTrustPolicy(
  options: ({ readonly url: string; readonly baseUrl?: undefined } | { readonly baseUrl: string; readonly url?: undefined }) & { readonly fetch?: FetchLike | undefined },
): Promise<TrustPolicy> {
  const url = options.url ?? serviceUrl(options.baseUrl, "/v1/trust-policy");
  let response: Response;
  let text: string;
  try {
    response = await (options.fetch ?? fetch)(url, { method: "GET", headers: { accept: "application/json" } });
    text = await response.text();
  } catch (cause) {
    throw new AtsClientError("NETWORK_ERROR", "Failed to fetch the trust policy", { cause });
  }
  if (!response.ok) throw new AtsClientError("NETWORK_ERROR", `Failed to fetch the trust policy: HTTP ${response.status}`, { status: response.status });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AtsClientError("INVALID_INPUT", "The trust policy is not JSON");
  }
  return readTrustPolicy(body);
}

/** Checks a trust-policy document's shape; throws {@link AtsClientError} `INVALID_INPUT` naming the bad field. */
export function readTrustPolicy(body: unknown): TrustPolicy {
  const bad = (field: string) => new AtsClientError("INVALID_INPUT", `Trust policy: ${field} is missing or malformed`);
  if (!isRecord(body)) throw bad("the document");
  if (typeof body.version !== "number") throw bad("version");
  if (!Array.isArray(body.widgetOrigins) || !body.widgetOrigins.every((o) => typeof o === "string")) throw bad("widgetOrigins");
  if (!isRecord(body.chains)) throw bad("chains");
  for (const [id, chain] of Object.entries(body.chains)) {
    if (!/^[0-9]+$/.test(id) || !isRecord(chain)) throw bad(`chains.${id}`);
    if (typeof chain.easContract !== "string" || !ADDRESS.test(chain.easContract)) throw bad(`chains.${id}.easContract`);
    if (!Array.isArray(chain.schemas) || !chain.schemas.every((s) => typeof s === "string")) throw bad(`chains.${id}.schemas`);
  }
  return body as TrustPolicy;
}

/**
 * The contracts and schema UIDs a trust policy allows on any chain, lowercase (what the reference SDK's widget
 * `extractAllowlists` reads from a policy; this package's `extractAllowlists` reads the trust anchors).
 */
export function extractPolicyAllowlists(policy: TrustPolicy): { allowedContracts: string[]; allowedSchemas: string[] } {
  return policyAllowlists(policy);
}

/** An origin as `MessageEvent.origin` spells it; undefined for something that is not a URL. */
function originOf(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === "null" ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** A positive whole number given as a number, a bigint or decimal digits; undefined otherwise. */
function positiveInteger(value: unknown): bigint | undefined {
  if (typeof value === "number") return Number.isSafeInteger(value) && value > 0 ? BigInt(value) : undefined;
  if (typeof value === "bigint") return value > 0n ? value : undefined;
  if (typeof value === "string" && /^[0-9]{1,78}$/.test(value)) return BigInt(value) > 0n ? BigInt(value) : undefined;
  return undefined;
}

/**
 * The rules of one signing request against the policy (see the module's comment): undefined when it may be signed,
 * else the reason sent back to the widget.
 */
export function signingRequestRefusal(data: Record<string, unknown>, policy: TrustPolicy, nowMs: number): string | undefined {
  if (typeof data.id !== "string" || data.id === "") return "Missing or invalid request id";
  const { domain, types, message } = data;
  if (!isRecord(domain)) return "Missing domain object";
  if (!isRecord(types)) return "Missing types object";
  if (!isRecord(message)) return "Missing message object";
  const typesRefused = attestTypesRefusal(types);
  if (typesRefused !== undefined) return typesRefused;
  if (domain.name !== EAS_DOMAIN_NAME) return `Signing request rejected: unexpected domain name (expected ${EAS_DOMAIN_NAME})`;
  if (domain.version !== EAS_DOMAIN_VERSION) return `Unexpected domain version (expected ${EAS_DOMAIN_VERSION})`;
  const chainId = positiveInteger(domain.chainId);
  if (chainId === undefined) return "Invalid domain chainId";
  if (typeof domain.verifyingContract !== "string" || !ADDRESS.test(domain.verifyingContract)) return "Invalid verifyingContract";
  const chain = policy.chains[chainId.toString()];
  if (chain === undefined) return `Chain ${chainId} is not in the trust policy`;
  if (chain.easContract.toLowerCase() !== domain.verifyingContract.toLowerCase()) {
    return `Contract ${domain.verifyingContract} is not in the trust policy for chain ${chainId}`;
  }
  if (typeof message.schema !== "string" || !BYTES32.test(message.schema)) return "Invalid schema UID";
  const schema = message.schema.toLowerCase();
  if (!chain.schemas.some((uid) => uid.toLowerCase() === schema)) return `Schema ${message.schema} is not in the trust policy for chain ${chainId}`;
  if (typeof message.attester !== "string" || !ADDRESS.test(message.attester)) return "Invalid attester address";
  const deadline = positiveInteger(message.deadline);
  if (deadline === undefined) return "Invalid deadline";
  if (deadline <= BigInt(Math.floor(nowMs / 1000))) return "Deadline has passed";
  return undefined;
}

/** The standard `EIP712Domain` of a domain with a name, a version, a chain id and a verifying contract (EAS's). */
const EIP712_DOMAIN_FIELDS = DOMAIN_FIELDS.filter((field) => field.name !== "salt");

/** Whether `fields` is exactly `expected`: the same names and types, in the same order, nothing more on any entry. */
function sameFields(fields: unknown, expected: readonly { readonly name: string; readonly type: string }[]): boolean {
  return Array.isArray(fields) && fields.length === expected.length && fields.every((field, i) =>
    isRecord(field) && Object.keys(field).length === 2 && field.name === expected[i]!.name && field.type === expected[i]!.type
  );
}

/** Undefined when `types` is EAS's `Attest` (with, at most, the standard `EIP712Domain`); else the reason. */
function attestTypesRefusal(types: Record<string, unknown>): string | undefined {
  const names = Object.keys(types);
  if (!names.includes("Attest") || names.some((name) => name !== "Attest" && name !== "EIP712Domain")) {
    return "Signing request rejected: only EAS's Attest type may be signed";
  }
  if (!sameFields(types.Attest, ATTEST_TYPES.Attest)) return "Signing request rejected: the Attest type is not EAS's";
  if ("EIP712Domain" in types && !sameFields(types.EIP712Domain, EIP712_DOMAIN_FIELDS)) {
    return "Signing request rejected: unexpected EIP712Domain type";
  }
  return undefined;
}

type Reply = { postMessage(message: unknown, targetOrigin: string): void };

/**
 * Starts answering the framed widget's signing requests with `signTypedData` (see the module's comment for the
 * rules). Throws when the trust policy cannot be read or allows nothing: no policy, no bridge.
 */
export async function createSigningBridge(options: SigningBridgeOptions): Promise<SigningBridge> {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
  const policy = await fetchTrustPolicy({ url: serviceUrl(baseUrl, "/v1/trust-policy"), fetch: options.fetch });
  const lists = extractPolicyAllowlists(policy);
  if (lists.allowedContracts.length === 0 || lists.allowedSchemas.length === 0) {
    throw new AtsClientError("UNSUPPORTED_CHAIN", "Trust policy contains no allowed contracts or schemas");
  }
  const trusted = new Set<string>();
  for (const candidate of [baseUrl, ...policy.widgetOrigins, ...(options.devOriginOverride === undefined ? [] : [options.devOriginOverride])]) {
    const origin = originOf(candidate);
    if (origin !== undefined) trusted.add(origin);
  }
  const environment = options.environment ?? { window: globalThis.window, document: globalThis.document };
  const now = options.now ?? Date.now;

  const onMessage = (event: MessageEvent) => {
    if (!trusted.has(event.origin)) return;
    const frame = environment.document.getElementById(options.iframeId) as { contentWindow?: unknown } | null;
    const source = frame?.contentWindow;
    if (source === undefined || source === null || event.source !== source) return;
    const data = event.data as unknown;
    if (!isRecord(data) || typeof data.type !== "string") return;
    const reply = (message: unknown) => (source as Reply).postMessage(message, event.origin);
    if (data.type === OMATRUST_READY) return reply({ type: OMATRUST_HOST_READY });
    if (data.type !== OMATRUST_SIGN_TYPED_DATA) return;
    const refusal = signingRequestRefusal(data, policy, now());
    if (refusal !== undefined) return reply({ type: OMATRUST_SIGNATURE_ERROR, id: data.id, error: refusal });
    const id = data.id as string;
    // A wallet that throws at once is answered like one that rejects.
    Promise.resolve()
      .then(() => options.signTypedData(data.domain as Record<string, unknown>, data.types as Record<string, unknown>, data.message as Record<string, unknown>))
      .then(
        (signature) => reply({ type: OMATRUST_SIGNATURE, id, signature }),
        (error: unknown) => reply({ type: OMATRUST_SIGNATURE_ERROR, id, error: error instanceof Error ? error.message : "Signing failed" }),
      );
  };
  environment.window.addEventListener("message", onMessage as EventListener);
  return { policy, destroy: () => environment.window.removeEventListener("message", onMessage as EventListener) };
}
