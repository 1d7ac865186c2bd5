/**
 * Whether a subject's endpoints name a controller now (decisions §25), from what discovery read (DNS TXT `controller=`
 * and `jkt=`, did.json) and, for did:jwk controllers, the domain's JWK Set. The one reading of live evidence that
 * controller authorization, key status and artifact trust share.
 */
import { isSameControllerId } from "../did/mod.ts";
import { type DiscoveryRecord, unreadableNow } from "./discovery_record.ts";
import { plainDidJwkThumbprint } from "./jwk_keys.ts";
import type { JwksEvidence } from "./jwks_lookup.ts";

/** How a controller was confirmed live, in the reference's words. */
export type LiveMethod = "dns" | "did-document" | "jwks" | "contract-ownership";

/** What the endpoints say about one controller now. */
export type LiveControllerEvidence = {
  /** The methods that name the controller, in the order dns, did-document, jwks. */
  readonly methods: readonly LiveMethod[];
  /**
   * A source that could not be read now (a transient failure, {@link unreadableNow}), while none named the controller:
   * nothing can be said. A source read and unusable for good (`lasting`) leaves nothing open: not named.
   */
  readonly unavailable: boolean;
};

/** What the endpoints (discovery's record, and the JWK Set when read) say about `controllerDid` now. */
export function liveControllerEvidence(
  controllerDid: string,
  record: DiscoveryRecord | undefined,
  jwks?: JwksEvidence | undefined,
): LiveControllerEvidence {
  const methods = new Set<LiveMethod>();
  let unavailable = false;
  if (record !== undefined) {
    for (const key of record.controllerKeys) {
      if (!key.basic || !isSameControllerId(key.canonicalId, controllerDid)) continue;
      if (key.sources.includes("dns-txt")) methods.add("dns");
      if (key.sources.includes("did-json")) methods.add("did-document");
    }
    const thumbprint = controllerDid.startsWith("did:jwk:") ? plainDidJwkThumbprint(controllerDid) : undefined;
    for (const item of record.evidence) {
      if (unreadableNow(item)) unavailable = true;
      if (thumbprint !== undefined && item.kind === "dns-txt" && item.thumbprints?.includes(thumbprint)) methods.add("dns");
    }
  }
  if (jwks !== undefined) {
    if (unreadableNow(jwks)) unavailable = true;
    if (jwks.keys.some((k) => isSameControllerId(k, controllerDid))) methods.add("jwks");
  }
  const ordered = (["dns", "did-document", "jwks"] as const).filter((m) => methods.has(m));
  return { methods: ordered, unavailable: ordered.length === 0 && unavailable };
}
