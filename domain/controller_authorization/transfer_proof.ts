/**
 * Transfer proofs of key bindings for did:pkh contract subjects (decisions §25): a binding's `proofs` may name the
 * transaction (`proofTxHash`, or a `tx-interaction`/`tx-encoded-value` proof's `proofObject.txHash`) in which the
 * contract's ownership moved to the controller. And the cached contract reads that keep such answers off the JSON-RPC
 * provider in steady state.
 */
import type { HexString } from "../../ports/eas.ts";
import type { Clock } from "../../ports/clock.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";

/** topic0 of `OwnershipTransferred(address,address)` (OpenZeppelin Ownable), as subject ownership reads it (§12). */
export const OWNERSHIP_TRANSFERRED_TOPIC = "0x8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e0";

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** Transactions read per binding at most. */
const MAX_HASHES = 4;
/**
 * Transactions looked at per lookup at most, over all the controller's bindings, oldest binding first: a controller
 * writing many bindings full of hashes must not turn one lookup into as many JSON-RPC calls. Those past it do not verify.
 */
export const MAX_PROOF_TRANSACTIONS = 8;

/** The transaction hashes a binding's proofs (JSON strings) name as transfer proofs, lowercased. */
export function transferProofHashes(proofs: readonly string[]): HexString[] {
  const out: HexString[] = [];
  const add = (value: unknown) => {
    if (typeof value === "string" && TX_HASH.test(value) && !out.includes(value.toLowerCase() as HexString) && out.length < MAX_HASHES) {
      out.push(value.toLowerCase() as HexString);
    }
  };
  for (const text of proofs) {
    let proof: unknown;
    try {
      proof = JSON.parse(text);
    } catch {
      continue;
    }
    if (typeof proof !== "object" || proof === null || Array.isArray(proof)) continue;
    const p = proof as Record<string, unknown>;
    add(p.proofTxHash);
    const object = p.proofObject;
    if (typeof object === "object" && object !== null && !Array.isArray(object)) {
      const o = object as Record<string, unknown>;
      add(o.proofTxHash);
      if (p.proofType === "tx-interaction" || p.proofType === "tx-encoded-value") add(o.txHash);
    }
  }
  return out;
}

/**
 * Contract reads kept in memory: a mined transaction never changes (kept until `maxEntries` push it out), an
 * `owner()` for `ownerMs` (`DISCOVERY_CACHE_SECONDS`, as other live evidence), and so is a transaction the chain does
 * not have: anyone can write a binding naming a hash never mined, which must not cost a read per request (§21's no
 * JSON-RPC call in steady state), yet a hash may be mined later. Failures are never kept.
 */
export function createCachedOwnershipReads(
  chain: OwnershipChain,
  deps: { readonly clock: Clock },
  options: { readonly ownerMs: number; readonly maxEntries?: number | undefined },
): OwnershipChain {
  const maxEntries = options.maxEntries ?? 10_000;
  const transactions = new Map<string, Awaited<ReturnType<OwnershipChain["transaction"]>>>();
  const unmined = new Map<string, number>();
  const owners = new Map<string, { answer: Awaited<ReturnType<OwnershipChain["owner"]>>; atMs: number }>();
  const bound = (map: Map<string, unknown>) => {
    if (map.size > maxEntries) map.delete(map.keys().next().value!);
  };
  // Reads under way, by key: concurrent misses of one contract or transaction share one JSON-RPC call.
  const readingOwners = new Map<string, ReturnType<OwnershipChain["owner"]>>();
  const readingTransactions = new Map<string, ReturnType<OwnershipChain["transaction"]>>();
  const once = <T>(reading: Map<string, Promise<T>>, key: string, read: () => Promise<T>): Promise<T> => {
    const under = reading.get(key);
    if (under !== undefined) return under;
    const started = read().finally(() => reading.delete(key));
    reading.set(key, started);
    return started;
  };
  return {
    chainId: chain.chainId,
    hasCode: (address) => chain.hasCode(address),
    async owner(contract, blockNumber) {
      // As of a block, the answer never changes: kept (bounded) as long as the head's is.
      const key = blockNumber === undefined ? contract.toLowerCase() : `${contract.toLowerCase()}@${blockNumber}`;
      const kept = owners.get(key);
      const now = deps.clock.nowMs();
      if (kept !== undefined && (blockNumber !== undefined || now - kept.atMs < options.ownerMs)) return kept.answer;
      const answer = await once(readingOwners, key, () => chain.owner(contract, blockNumber));
      if (answer.ok) {
        owners.set(key, { answer, atMs: now });
        bound(owners);
      }
      return answer;
    },
    async transaction(hash) {
      const key = hash.toLowerCase();
      const kept = transactions.get(key);
      if (kept !== undefined) return kept;
      const now = deps.clock.nowMs();
      const missedAt = unmined.get(key);
      if (missedAt !== undefined && now - missedAt < options.ownerMs) return { ok: true, value: null };
      const answer = await once(readingTransactions, key, () => chain.transaction(hash));
      if (answer.ok && answer.value !== null) {
        unmined.delete(key);
        transactions.set(key, answer);
        bound(transactions);
      } else if (answer.ok) {
        // Not mined (yet): asked again once ownerMs has passed.
        unmined.delete(key);
        unmined.set(key, now);
        bound(unmined);
      }
      return answer;
    },
  };
}
