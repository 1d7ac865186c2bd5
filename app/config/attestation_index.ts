/** The attestation index (decisions §11, §21, issue 43): the `index` section. */
import { type Static, Type } from "@sinclair/typebox";
import { bool, int, readSection, type ReadContext } from "./_declare.ts";

/** The `index` section's variables (each chain's confirmations and WebSocket are in `chains`). */
export const IndexSection = Type.Object({
  pollMs: int("INDEX_POLL_MS", { default: 1_000, minimum: 50, maximum: 86_400_000, description: "how often the follower polls the chain's head" }),
  stallSeconds: int("INDEX_STALL_SECONDS", { default: 120, minimum: 1, description: "with no completed poll this long, reads are 503 INDEX_STALE" }),
  behindGraceSeconds: int("INDEX_BEHIND_GRACE_SECONDS", {
    default: 30,
    maximum: 86_400,
    description: "how long the chain's head may stay below the index before reads are 503 INDEX_STALE (0: at once)",
  }),
  leaseSeconds: int("INDEX_LEASE_SECONDS", { default: 15, minimum: 1, maximum: 3_600, description: "how long a follower's lease lasts" }),
  stepBlocks: int("INDEX_STEP_BLOCKS", { default: 10_000, minimum: 1, maximum: 10_000_000, description: "the widest range one follower step ingests" }),
  follow: bool("INDEX_FOLLOW", { default: true, description: "false: this instance runs no follower" }),
  answerCacheMb: int("INDEX_ANSWER_CACHE_MB", { default: 32, maximum: 4_096, description: "the bound of kept answers of index reads, in MiB (0: none)" }),
  headReuseMs: int("INDEX_HEAD_REUSE_MS", { default: 100, maximum: 1_000, description: "how long one head read serves the answer cache" }),
  queryPerMinute: int("INDEX_QUERY_RATE_PER_MINUTE", { default: 300, minimum: 1, maximum: 1_000_000, description: "list and count answers one client address may have computed a minute" }),
}, { title: "index" });

/** The attestation index's follower and reads. */
export type IndexConfig = Static<typeof IndexSection>;

/** Reads the `index` section. */
export function readIndex(ctx: Omit<ReadContext, "values">): IndexConfig {
  return readSection(IndexSection, ctx);
}
