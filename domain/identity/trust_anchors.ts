import { type Static, Type as t } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { ChainAnchors, TrustAnchors } from "../../ports/trust_anchors.ts";
import { fail, ok, type Result } from "../result.ts";
import { computeSchemaUid, KNOWN_SCHEMAS } from "../schemas.ts";

const Address = t.String({ pattern: "^0x[0-9a-fA-F]{40}$" });
const Uid = t.String({ pattern: "^0x[0-9a-fA-F]{64}$" });

/** The trust-anchors record (interface "Trust anchors record"), the model the file is checked against. */
export const TrustAnchorsModel = t.Object({
  version: t.Integer({ minimum: 1 }),
  updatedAt: t.String(),
  widgetOrigins: t.Array(t.String()),
  chains: t.Record(
    t.String({ pattern: "^eip155:[0-9]+$" }),
    t.Object({ name: t.String({ minLength: 1 }), easContract: Address, schemas: t.Record(t.String(), Uid) }),
  ),
  registries: t.Array(t.Object({
    type: t.Literal("approved-issuers"),
    issuers: t.Array(t.Object({
      address: t.String({ minLength: 1 }),
      label: t.String(),
      schemas: t.Array(t.String()),
      status: t.Optional(t.Union([t.Literal("active"), t.Literal("revoked")])),
      validFrom: t.Optional(t.String()),
      revokedAt: t.Optional(t.String()),
    })),
  })),
});

/**
 * Checks a parsed trust-anchors document, naming the first bad field. Its `widgetOrigins` are held to the rule of
 * `WIDGET_ORIGINS` ({@link browserOrigin}) and published in that form: before, the file's were served as written, so
 * `"null"`, `"*"` or `https://cdn.example/` reached `/v1/trust-policy`, where a host on the reference's bridge (which
 * compares origins as strings) never matched the last, and would have taken a sandboxed frame's messages for the first.
 */
export function validateTrustAnchors(value: unknown): Result<TrustAnchors, "INVALID_INPUT"> {
  if (!Value.Check(TrustAnchorsModel, value)) {
    const first = Value.Errors(TrustAnchorsModel, value).First();
    return fail("INVALID_INPUT", `Trust anchors ${first?.path || "document"}: ${first?.message ?? "invalid"}`);
  }
  const anchors = value as Static<typeof TrustAnchorsModel>;
  const origins: string[] = [];
  for (const [i, written] of anchors.widgetOrigins.entries()) {
    const origin = browserOrigin(written);
    if (origin === undefined) {
      return fail("INVALID_INPUT", `Trust anchors /widgetOrigins/${i}: expected an origin such as https://cdn.example (scheme, host and port only), got "${written}"`);
    }
    origins.push(origin);
  }
  return ok({ ...anchors, widgetOrigins: origins });
}

/**
 * An http(s) origin as a browser writes `event.origin` (`https://cdn.example`: lower case, no default port, no trailing
 * slash), since the reference's bridge compares origins as strings; undefined for anything else (a path, a query, a
 * fragment, a user, `*`, `null`). A trailing slash alone is dropped.
 */
export function browserOrigin(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  const bare = (url.protocol === "https:" || url.protocol === "http:") && url.pathname === "/" && url.search === "" &&
    url.hash === "" && url.username === "" && url.password === "" && !/[?#]/.test(value);
  return bare ? url.origin : undefined;
}

/** The CAIP-2 key of an EVM chain in `chains`. */
export function caip2(chainId: number): string {
  return `eip155:${chainId}`;
}

/** The anchors of the active chain, or UNSUPPORTED_CHAIN. */
export function activeChainAnchors(
  anchors: TrustAnchors,
  chainId: number,
): Result<ChainAnchors, "UNSUPPORTED_CHAIN"> {
  const entry = anchors.chains[caip2(chainId)];
  if (entry === undefined) return fail("UNSUPPORTED_CHAIN", `Chain ${caip2(chainId)} is not in the trust anchors`);
  return ok(entry);
}

/**
 * Resolves subsidised schema names to their anchored UIDs (lowercase), with revocability from the
 * known schema list when the anchored UID is one the service knows. A name missing from the
 * anchors is reported so a misconfiguration is visible at start.
 */
export function subsidizedSchemaMap(
  chain: ChainAnchors,
  names: readonly string[],
): Result<Map<string, { name: string; revocable?: boolean | undefined }>, "INVALID_INPUT"> {
  const byUid = new Map(KNOWN_SCHEMAS.map((s) => [computeSchemaUid(s).toLowerCase(), s]));
  const map = new Map<string, { name: string; revocable?: boolean | undefined }>();
  for (const name of names) {
    const uid = chain.schemas[name];
    if (uid === undefined) return fail("INVALID_INPUT", `Subsidized schema ${name} is not in the trust anchors`);
    map.set(uid.toLowerCase(), { name, revocable: byUid.get(uid.toLowerCase())?.revocable });
  }
  return ok(map);
}
