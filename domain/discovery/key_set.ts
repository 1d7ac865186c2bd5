/** The controller keys of one answer: merged by controller id, their sources kept in order, endpoint keys first. */
import { controllerIdentity } from "../did/mod.ts";
import { resolveIdentity } from "../identity/mod.ts";
import type { ControllerKey, KeySource } from "./discovery_record.ts";

/** A key's identity (by `controllerIdentity`; a key that is no valid DID only matches itself) and display label. */
export type KeyFacts = (key: string) => { identity: string; label: string };

const KEY_FACTS_KEPT = 1_024;

/**
 * A key's identity and display label, remembered for the last {@link KEY_FACTS_KEPT} keys: a did:jwk is parsed for
 * both, and the same keys come back in every source, in controller confirm and in the next request for the domain.
 * The memory belongs to whoever creates it (one per discovery, one per controller confirm), not to the module; it
 * only saves work, since both facts depend on the key alone.
 */
export function createKeyFacts(): KeyFacts {
  const keyFacts = new Map<string, { identity: string; label: string }>();
  return function factsOf(key: string): { identity: string; label: string } {
    const known = keyFacts.get(key);
    if (known !== undefined) return known;
    const facts = { identity: controllerIdentity(key) ?? `invalid:${key}`, label: resolveIdentity(key).label };
    if (keyFacts.size >= KEY_FACTS_KEPT) keyFacts.clear();
    keyFacts.set(key, facts);
    return facts;
  };
}

/** A builder of controller keys; {@link createKeySet}'s answer. */
export type KeySet = ReturnType<typeof createKeySet>;

/** A builder of controller keys that merges by controller id and keeps their sources in order. */
export function createKeySet(factsOf: KeyFacts = createKeyFacts()) {
  const keys: ControllerKey[] = [];
  // By controllerIdentity (a key that is no valid DID only matches itself): one lookup per key, not a scan.
  const byIdentity = new Map<string, ControllerKey>();
  return {
    add(key: string, source: KeySource) {
      const { identity, label } = factsOf(key);
      let entry = byIdentity.get(identity);
      if (entry === undefined) {
        entry = { id: key, canonicalId: key, label, sources: [], basic: false };
        keys.push(entry);
        byIdentity.set(identity, entry);
      }
      if (!entry.sources.includes(source)) entry.sources.push(source);
      if (source !== "account-wallet") entry.basic = true;
    },
    sorted(): ControllerKey[] {
      return [...keys].sort((a, b) =>
        a.basic === b.basic ? (a.canonicalId < b.canonicalId ? -1 : a.canonicalId > b.canonicalId ? 1 : 0) : a.basic ? -1 : 1
      );
    },
  };
}
