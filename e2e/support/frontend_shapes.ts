/**
 * What the real frontend client reads from our answers (decisions §12): the response types of its backend client
 * (public, spring 2026), written down as shapes, one per route. A shape is checked against a live answer by
 * {@link shapeErrors}: every field the client reads must be present with its type; our own extra fields are allowed.
 *
 * Notation: "string" | "number" | "boolean", a union with "|" (e.g. "string|null"), a literal set as
 * "subscription|native", a nested object, `[shape]` for an array of it, and a key ending in "?" for a field the
 * client treats as optional. `nullable(shape)` is an object or null.
 */

/** A field's type, a nested object, an array of one shape, or an object-or-null. */
export type Shape = string | { readonly [key: string]: Shape } | readonly [Shape] | { readonly nullable: Shape };

const nullable = (shape: Shape): Shape => ({ nullable: shape });

const ACCOUNT = { id: "string", displayName: "string|null" };
const USAGE = {
  plan: "string",
  status: "string",
  annualSponsoredWriteLimit: "number",
  sponsoredWritesUsedCurrentYear: "number",
  annualPremiumReadLimit: "number",
  premiumReadsUsedCurrentYear: "number",
};
const SUBJECT = { id: "string", canonicalDid: "string", subjectDidHash: "string", displayName: "string|null", isDefault: "boolean" };

/** The frontend's view of each answer, by route. */
export const FRONTEND_SHAPES = {
  "POST /api/private/session/wallet/challenge": { challengeId: "string", siweMessage: "string", nonce: "string", expiresAt: "string" },
  "POST /api/private/session/wallet/verify": { account: ACCOUNT, client: { clientId: "string|null" }, session: { id: "string", expiresAt: "string" } },
  "POST /api/private/session/wallet/register": { account: ACCOUNT, client: { clientId: "string|null" }, session: { id: "string", expiresAt: "string" } },
  "GET /api/private/session/me": {
    account: ACCOUNT,
    wallet: nullable({ did: "string", walletProviderId: "string|null", executionMode: "subscription|native", isManagedWallet: "boolean" }),
    credential: nullable({ id: "string", kind: "string", identifier: "string" }),
    subscription: { plan: "string", status: "string" },
    client: nullable({ clientId: "string", authMode: "string" }),
    primarySubject: nullable({ canonicalDid: "string", subjectDidHash: "string" }),
  },
  "POST /api/private/session/logout": { success: "boolean" },
  "GET /api/private/accounts/me": {
    account: ACCOUNT,
    subscription: USAGE,
    primarySubject: nullable({ id: "string", canonicalDid: "string", subjectDidHash: "string", displayName: "string|null" }),
  },
  "PATCH /api/private/accounts/me": { account: ACCOUNT },
  "GET /api/private/subscriptions/current": {
    subscription: { ...USAGE, entitlementPeriodStart: "string|null", entitlementPeriodEnd: "string|null" },
  },
  "GET /api/private/subjects": { subjects: [SUBJECT] },
  "POST /api/private/subjects": { subject: SUBJECT },
  "POST /api/verify/subject-ownership": {
    ok: "boolean",
    status: "verified|failed",
    subjectDid: "string",
    connectedWalletDid: "string",
    "method?": "dns|did-document|wallet|contract|minting-wallet|transfer|null",
    "error?": "string|null",
    "details?": "string|null",
    "controllingWalletDid?": "string|null",
  },
  "GET /api/private/relay/eas/nonce": { nonce: "string", chainId: "number", chain: "string", easAddress: "string" },
  "POST /api/private/relay/eas/delegated-attest": {
    success: "boolean",
    "txHash?": "string|null",
    "uid?": "string|null",
    "blockNumber?": "number",
    "chain?": "string",
  },
  /** Every error answer: the client reads `error`, `code` and `details`. */
  error: { "error?": "string", "code?": "string", "details?": "string" },
} as const satisfies Record<string, Shape>;

/** The paths at which `value` does not match `shape`, each with what was expected; empty when it matches. */
export function shapeErrors(shape: Shape, value: unknown, path = "$"): string[] {
  if (typeof shape === "string") {
    const allowed = shape.split("|");
    const kind = value === null ? "null" : typeof value;
    const fits = allowed.some((t) => t === kind || (!["string", "number", "boolean", "null"].includes(t) && value === t));
    return fits ? [] : [`${path}: expected ${shape}, got ${value === undefined ? "nothing" : JSON.stringify(value)}`];
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [`${path}: expected an array`];
    return value.flatMap((item, i) => shapeErrors(shape[0], item, `${path}[${i}]`));
  }
  if ("nullable" in shape && Object.keys(shape).length === 1) {
    return value === null ? [] : shapeErrors((shape as { nullable: Shape }).nullable, value, path);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [`${path}: expected an object`];
  const record = value as Record<string, unknown>;
  return Object.entries(shape as Record<string, Shape>).flatMap(([key, field]) => {
    const optional = key.endsWith("?");
    const name = optional ? key.slice(0, -1) : key;
    if (!(name in record) || record[name] === undefined) return optional ? [] : [`${path}.${name}: missing`];
    return shapeErrors(field, record[name], `${path}.${name}`);
  });
}
