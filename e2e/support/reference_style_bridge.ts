/**
 * A host-side signing bridge that behaves as the reference SDK's bridges (`@oma3/omatrust/widgets`, decisions §29)
 * are documented to behave, for e2e/widget_reference_host_browser_test.ts. The reference package is not published on
 * npm and its source is not in this repository, so this is NOT its code: it is written here, in this project's words,
 * from the reference's published rules, so that the service's widget and documents are tested against a host that
 * follows those rules rather than against this project's own `createSigningBridge` (client/signing_bridge.ts, which
 * adds a rule of its own on `types`; this one, like the reference, passes `types` to the wallet unchecked).
 *
 * Two variants, as the reference has had two:
 * - `trust-policy` (its older bridge): `GET <service>/v1/trust-policy`, chains keyed by decimal chain id, each chain's
 *   `schemas` an array of UIDs;
 * - `trust-anchors` (its newer bridge): `GET <service>/v1/trust-anchors`, chains keyed by CAIP-2, each chain's
 *   `schemas` an object from name to UID.
 * The reference reads a fixed omatrust.org address; this host reads the service it is given (`serviceUrl`), which is
 * also where its "base domain" comes from.
 */

export type ReferenceVariant = "trust-policy" | "trust-anchors";

export type ReferenceStyleBridgeOptions = {
  readonly variant: ReferenceVariant;
  /** The service's base URL (the reference: a fixed omatrust.org address). */
  readonly serviceUrl: string;
  /** The id of the iframe framing the widget, looked up on every message. */
  readonly iframeId: string;
  /** The host's wallet: given domain, types and message exactly as the widget sent them. */
  readonly signTypedData: (domain: Record<string, unknown>, types: Record<string, unknown>, message: Record<string, unknown>) => Promise<string>;
  /** An origin trusted besides the document's (a widget on a development server); replies then go to it. */
  readonly devOriginOverride?: string | undefined;
  /** Told why a protocol message was dropped without an answer (the reference drops them silently; the tests count them). */
  readonly onIgnored?: ((reason: string) => void) | undefined;
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UID = /^0x[0-9a-fA-F]{64}$/;
const PREFIX = "omatrust:";

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;

/** The allowlists of one document: every chain's EAS contract and schema UIDs, lowercase. */
type Allowlists = { contracts: Set<string>; schemas: Set<string>; widgetOrigins: string[] };

function allowlistsOf(variant: ReferenceVariant, document: unknown): Allowlists {
  if (!isObject(document)) throw new Error("The trust document is not an object");
  // Both of the reference's readers refuse a document without a version, the newer one as the older.
  if (!document.version) throw new Error("The trust document has no version");
  if (!isObject(document.chains)) throw new Error("The trust document has no chains");
  const contracts = new Set<string>();
  const schemas = new Set<string>();
  for (const chain of Object.values(document.chains)) {
    if (!isObject(chain)) continue;
    if (typeof chain.easContract === "string") contracts.add(chain.easContract.toLowerCase());
    for (const uid of schemaUidsOf(variant, chain.schemas)) if (typeof uid === "string") schemas.add(uid.toLowerCase());
  }
  const widgetOrigins = Array.isArray(document.widgetOrigins) ? document.widgetOrigins.filter((o): o is string => typeof o === "string") : [];
  return { contracts, schemas, widgetOrigins };
}

/**
 * A chain's schema UIDs: the older document lists them, the newer one names them. The older reader spreads the list,
 * so a name→UID map there (the trust anchors served as the trust policy) throws rather than allowing nothing.
 */
function schemaUidsOf(variant: ReferenceVariant, schemas: unknown): unknown[] {
  if (schemas === undefined || schemas === null) return [];
  if (variant === "trust-anchors") return isObject(schemas) ? Object.values(schemas) : [];
  if (!Array.isArray(schemas)) throw new Error("A chain's schemas in the trust policy are not a list");
  return schemas;
}

/** The last two labels of a hostname: `widgets.omatrust.org` → `omatrust.org` (and, for `127.0.0.1`, `0.1`). */
function baseDomainOf(hostname: string): string {
  return hostname.split(".").slice(-2).join(".");
}

/** Why a signing request may not go to the wallet, or undefined when it may (the reference's checks, in its order). */
function refusalOf(data: Json, lists: Allowlists, nowSeconds: number): string | undefined {
  const { id, domain, types, message } = data;
  if (typeof id !== "string" || id === "") return "the request has no id";
  if (!isObject(domain)) return "domain is not an object";
  if (domain.name !== "EAS") return "domain name is not EAS";
  if (domain.version !== "1.4.0") return "domain version is not 1.4.0";
  const chainId = Number(domain.chainId);
  if (!Number.isInteger(chainId) || chainId <= 0) return "chainId is not a positive integer";
  const contract = domain.verifyingContract;
  if (typeof contract !== "string" || !ADDRESS.test(contract)) return "verifyingContract is not an address";
  if (!lists.contracts.has(contract.toLowerCase())) return `contract ${contract} is not allowed`;
  if (!isObject(types)) return "types is not an object";
  if (!isObject(message)) return "message is not an object";
  const schema = message.schema;
  if (typeof schema !== "string" || !UID.test(schema)) return "schema is not a UID";
  if (!lists.schemas.has(schema.toLowerCase())) return `schema ${schema} is not allowed`;
  if (typeof message.attester !== "string" || !ADDRESS.test(message.attester)) return "attester is not an address";
  const deadline = Number(message.deadline);
  if (!Number.isFinite(deadline) || deadline <= 0 || deadline <= nowSeconds) return "the deadline has passed or is invalid";
  return undefined;
}

/**
 * Reads the variant's document once and starts answering the framed widget; throws (no bridge) when the document
 * cannot be read or allows no contract or no schema. Returns the function that stops it.
 */
export async function startReferenceStyleBridge(options: ReferenceStyleBridgeOptions): Promise<() => void> {
  const path = options.variant === "trust-policy" ? "/v1/trust-policy" : "/v1/trust-anchors";
  const documentUrl = `${options.serviceUrl.replace(/\/+$/, "")}${path}`;
  const response = await fetch(documentUrl);
  if (!response.ok) throw new Error(`Could not read ${path}: HTTP ${response.status}`);
  const lists = allowlistsOf(options.variant, await response.json());
  if (lists.contracts.size === 0 || lists.schemas.size === 0) throw new Error(`${path} allows no contract or no schema`);
  const baseDomain = baseDomainOf(new URL(documentUrl).hostname);
  const dev = options.devOriginOverride;
  const ignored = (reason: string) => options.onIgnored?.(reason);

  const trusts = (origin: string): boolean => {
    if (dev !== undefined && origin === dev) return true;
    let hostname: string;
    try {
      hostname = new URL(origin).hostname;
    } catch {
      return false;
    }
    if (hostname === baseDomain || hostname.endsWith(`.${baseDomain}`)) return true;
    return lists.widgetOrigins.includes(origin);
  };

  const onMessage = (event: MessageEvent) => {
    // The reference's order: anything but the protocol is not its business; then the origin, then the frame.
    const data: unknown = event.data;
    if (!isObject(data) || typeof data.type !== "string" || !data.type.startsWith(PREFIX)) return;
    if (!trusts(event.origin)) return ignored(`untrusted origin ${event.origin}`);
    const frame = document.getElementById(options.iframeId) as HTMLIFrameElement | null;
    const widget = frame?.contentWindow;
    if (frame === null || widget === null || widget === undefined || event.source !== widget) return ignored("not from the widget's frame");
    const target = dev ?? new URL(frame.src).origin;
    const reply = (answer: Json) => widget.postMessage(answer, target);
    if (data.type === "omatrust:ready") return reply({ type: "omatrust:hostReady" });
    if (data.type !== "omatrust:signTypedData") return;
    const refusal = refusalOf(data, lists, Math.floor(Date.now() / 1000));
    if (refusal !== undefined) {
      return reply({ type: "omatrust:signatureError", id: data.id ?? "unknown", error: `Signing request rejected: ${refusal}` });
    }
    const id = data.id as string;
    options.signTypedData(data.domain as Json, data.types as Json, data.message as Json).then(
      (signature) => reply({ type: "omatrust:signature", id, signature }),
      (error: unknown) => reply({ type: "omatrust:signatureError", id, error: (error instanceof Error && error.message) || "Signing failed" }),
    );
  };
  window.addEventListener("message", onMessage);
  return () => window.removeEventListener("message", onMessage);
}
