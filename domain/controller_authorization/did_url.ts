/**
 * DID URLs as mutable key references (decisions §25): `did:web:api.example.com#key-1` names whatever key the DID
 * document lists under that id today; `GET /v1/did-url/resolve` answers the durable controller it stands for now (the
 * `did:jwk` of its `publicKeyJwk`, or the did:pkh of its `blockchainAccountId`). The document is fetched with
 * discovery's fetcher (SSRF policy, byte cap, deadline), under the per-domain budget, and kept for
 * `DISCOVERY_CACHE_SECONDS`.
 */
import type { Clock } from "../../ports/clock.ts";
import type { DidDocumentFetch, DidDocumentFetcher } from "../../ports/discovery.ts";
import { buildDidPkhFromCaip10, DID_WEB_NO_LOCATION, didJwkToJwk, didWebLocation, jwkToDidJwk, normalizeDid, validatePublicJwk } from "../did/mod.ts";
import { type LookupClient, takeLookup } from "../discovery/mod.ts";
import { type RateLimiter, registrableDomain } from "../rate_limit.ts";
import { fail, ok, type Result } from "../result.ts";

/** The answer. */
export type DidUrlResolution = {
  readonly didUrl: string;
  readonly did: string;
  readonly fragment: string;
  /** The key's public members (null for a blockchain account). */
  readonly publicKeyJwk: Readonly<Record<string, unknown>> | null;
  /** The durable controller: the did:jwk of the key, or the did:pkh of the account. */
  readonly controllerDid: string;
};

/** Why a DID URL could not be resolved. */
export type DidUrlCode = "INVALID_INPUT" | "INVALID_DID" | "NOT_FOUND" | "NETWORK_ERROR";

/** Resolves a DID URL to the key it names now; `client`: whose share of the domain's budget a fetch also takes. */
export type ResolveDidUrl = (didUrl: unknown, options?: LookupClient) => Promise<Result<DidUrlResolution, DidUrlCode>>;

/** What resolution needs. */
export type DidUrlDeps = {
  readonly didDocuments: DidDocumentFetcher;
  readonly domainRate?: RateLimiter | undefined;
  /** Each client's share of `domainRate` (domain/discovery/lookup_budget.ts). */
  readonly clientShare?: RateLimiter | undefined;
  readonly clock: Clock;
  /** How long a fetched document is kept (ms); default 60 s; 0 keeps nothing. */
  readonly freshMs?: number | undefined;
};

const FRAGMENT = /^[A-Za-z0-9._~!$&'()*+,;=:@\/?%-]{1,256}$/;
const MAX_DID_URL = 2_048;
const JWK_PUBLIC = ["kty", "crv", "x", "y", "n", "e"];

/** Splits a DID URL into its DID and fragment, or says why it is not one. */
export function parseDidUrl(value: unknown): Result<{ did: string; fragment: string; didUrl: string }, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value !== "string" || value.trim() === "") return fail("INVALID_INPUT", "didUrl is required");
  if (value.length > MAX_DID_URL) return fail("INVALID_INPUT", `didUrl must be at most ${MAX_DID_URL} characters`);
  const text = value.trim();
  const hash = text.indexOf("#");
  if (!text.startsWith("did:") || hash === -1) return fail("INVALID_DID", "didUrl must be a DID URL with a fragment, such as did:web:api.example.com#key-1");
  const fragment = text.slice(hash + 1);
  if (!FRAGMENT.test(fragment)) return fail("INVALID_DID", "didUrl has an empty or malformed fragment");
  const did = normalizeDid(text.slice(0, hash));
  if (!did.ok) return fail("INVALID_DID", "didUrl does not start with a valid DID");
  if (!did.value.startsWith("did:web:") && !did.value.startsWith("did:jwk:")) return fail("INVALID_DID", "Only did:web and did:jwk DID URLs can be resolved");
  return ok({ did: did.value, fragment, didUrl: `${did.value}#${fragment}` });
}

/** The public members of a JWK (the key type's own, in sorted order). */
function publicMembers(jwk: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(jwk).filter((k) => JWK_PUBLIC.includes(k)).sort()) out[key] = jwk[key];
  return out;
}

/** Builds DID URL resolution. */
export function createDidUrlResolver(deps: DidUrlDeps): ResolveDidUrl {
  const freshMs = deps.freshMs ?? 60_000;
  const kept = new Map<string, { answer: DidDocumentFetch; atMs: number }>();

  async function documentOf(did: string, options: LookupClient): Promise<Result<unknown, "NOT_FOUND" | "NETWORK_ERROR" | "INVALID_DID">> {
    const location = didWebLocation(did);
    if (location === undefined) return fail("INVALID_DID", DID_WEB_NO_LOCATION);
    const now = deps.clock.nowMs();
    let answer = kept.get(did);
    if (answer === undefined || now - answer.atMs >= freshMs) {
      const turn = takeLookup(deps, registrableDomain(location.host), options);
      if (!turn.allowed) return fail("NETWORK_ERROR", `Lookups for ${registrableDomain(location.host)} are rate limited; try again later`);
      const authority = location.port === undefined ? location.host : `${location.host}:${location.port}`;
      answer = { answer: await deps.didDocuments.fetchDidDocument(authority, location.path), atMs: now };
      if (answer.answer.status !== "unavailable" && freshMs > 0) {
        kept.delete(did);
        kept.set(did, answer);
        if (kept.size > 10_000) kept.delete(kept.keys().next().value!);
      }
    }
    if (answer.answer.status === "not-found") return fail("NOT_FOUND", `${did} publishes no DID document`);
    if (answer.answer.status === "unavailable") return fail("NETWORK_ERROR", `The DID document of ${did} could not be read now`);
    return ok(answer.answer.document);
  }

  return async function resolveDidUrl(input, options = {}) {
    const parsed = parseDidUrl(input);
    if (!parsed.ok) return parsed;
    const { did, fragment, didUrl } = parsed.value;
    if (did.startsWith("did:jwk:")) {
      // A did:jwk's document holds its one key as `#0`.
      const jwk = didJwkToJwk(did);
      if (!jwk.ok) return fail("INVALID_DID", "didUrl does not start with a valid did:jwk");
      if (fragment !== "0") return fail("NOT_FOUND", "A did:jwk names its key as #0 only");
      return ok({ didUrl, did, fragment, publicKeyJwk: publicMembers(jwk.value), controllerDid: did });
    }
    const document = await documentOf(did, options);
    if (!document.ok) return document;
    const doc = document.value as Record<string, unknown> | null;
    const id = typeof doc === "object" && doc !== null && typeof doc.id === "string" ? normalizeDid(doc.id) : undefined;
    if (!id?.ok || id.value !== did) return fail("NOT_FOUND", `The document at ${did} does not describe ${did}`);
    const methods = Array.isArray(doc!.verificationMethod) ? doc!.verificationMethod as unknown[] : [];
    const method = methods.find((m): m is Record<string, unknown> => {
      if (typeof m !== "object" || m === null || typeof (m as Record<string, unknown>).id !== "string") return false;
      const mid = ((m as Record<string, unknown>).id as string).trim();
      if (mid === `#${fragment}`) return true;
      const base = normalizeDid(mid);
      return mid.includes("#") && mid.slice(mid.indexOf("#") + 1) === fragment && base.ok && base.value === did;
    });
    if (method === undefined) return fail("NOT_FOUND", `The DID document of ${did} lists no verification method #${fragment}`);
    if (typeof method.publicKeyJwk === "object" && method.publicKeyJwk !== null && !Array.isArray(method.publicKeyJwk)) {
      const jwk = method.publicKeyJwk as Record<string, unknown>;
      const checked = validatePublicJwk(jwk);
      if (!checked.ok) return fail("NOT_FOUND", `#${fragment} holds no usable public key: ${checked.message}`);
      const controller = jwkToDidJwk(jwk, { publicOnly: true });
      if (!controller.ok) return fail("NOT_FOUND", `#${fragment} holds no usable public key`);
      return ok({ didUrl, did, fragment, publicKeyJwk: publicMembers(jwk), controllerDid: controller.value });
    }
    if (typeof method.blockchainAccountId === "string") {
      const pkh = buildDidPkhFromCaip10(method.blockchainAccountId);
      if (pkh.ok) return ok({ didUrl, did, fragment, publicKeyJwk: null, controllerDid: pkh.value });
    }
    return fail("NOT_FOUND", `#${fragment} names neither a publicKeyJwk nor a blockchainAccountId`);
  };
}
