/**
 * Public reads at scale (issue 34, decisions §21), with the service as an operator runs it: `bun main.ts` processes
 * (`RPC_URL` on one Anvil with EAS deployed, mining a block a second; `DATABASE_URL` on one throwaway PostgreSQL; the
 * index follower on, `INDEX_POLL_MS=1000`), each JSON-RPC call counted by a proxy in front of Anvil. For
 * `GET /v1/artifact-trust` (an artifact with four assessments, one approved auditor), `GET /v1/key-status` (a key bound
 * by its did:pkh subject), `GET /v1/attestations` (a subject with ten reviews) and `GET /v1/trust-anchors` it prints:
 *
 * - reads per second of one instance, loaded directly, against a raw `Bun.serve` answering the exact bytes the
 *   service answered for the same request (fetched once), measured in the same run, and the ratio;
 * - JSON-RPC calls per read over that window (the follower's polls included), and the calls per second with no reads;
 * - one and then three instances behind HAProxy (Debian's `haproxy`, installed with apt-get when missing, which needs
 *   root; started here on loopback with a configuration written here): reads per second and the CPU per read of the
 *   service processes plus the PostgreSQL server processes (utime + stime from /proc/<pid>/stat, before and after
 *   each window), and the ratio three instances / one. HAProxy's own CPU is printed apart (the same proxy in both).
 *
 * The load: 32 keep-alive `fetch` loops, each window bounded in time and in count; every answer must be 200.
 * Everything (client, proxy, servers, database, chain) shares this machine's cores: read the ratios. Nothing is
 * read from the answers but the status and the bytes, so the bench runs on any version of the reads.
 *
 * Each instance keeps whole answers per poll generation of the index (http/index_answer_cache.ts); the direct table
 * also measures, in the same run, one more instance with that cache off (`INDEX_ANSWER_CACHE_MB=0`, started for that
 * table only). `--no-answer-cache` turns it off everywhere (the reads as they were before it).
 *
 * `--two-chains` (issue 48 item 6, decisions §30) runs the devnet's two attestation chains instead (`DEVNET_CHAINS=2`'s
 * 31337 and 31338, EAS on each, the same data written on both, each behind its own counting proxy) and prints, in place
 * of the tables above, one table per read: one instance started with a `CHAINS_FILE` naming both chains (it follows
 * both) read on chain A (no `chain` parameter, the default) and on chain B (`chain=eip155:31338`), beside one instance
 * serving chain A alone (`RPC_URL`; not following, on the same PostgreSQL: the two-chain instance follows), each as a
 * ratio to a raw `Bun.serve` answering that setting's own bytes, measured in the same run, with the JSON-RPC calls per
 * read on each chain and each chain's calls per second with no reads. No HAProxy and no cache-off instance there.
 *
 * The code: bench/_reads_setup.ts (chains, database, data), _reads_load.ts (the load, the counts), _reads_raw.ts (the
 * raw floor), _reads_balanced.ts (HAProxy, CPU per read), _reads_one_chain.ts and _reads_two_chains.ts (each mode's
 * measurements), _reads_report.ts (what is printed), _reads_run.ts (what was started and how it stops).
 *
 *   bun run bench/reads.ts [seconds per window, default 3] [--no-answer-cache] [--two-chains]
 */
import { postgresUnavailableReason } from "../e2e/support/postgres.ts";
import { haproxyBinary } from "./_reads_balanced.ts";
import { WARMUP_SECONDS } from "./_reads_load.ts";
import { measureOneChain } from "./_reads_one_chain.ts";
import { cleanup, guardRun, stopping } from "./_reads_run.ts";
import { setUp } from "./_reads_setup.ts";
import { measureTwoChains } from "./_reads_two_chains.ts";

const ARGS = process.argv.slice(2);
const NO_ANSWER_CACHE = ARGS.includes("--no-answer-cache");
const TWO_CHAINS = ARGS.includes("--two-chains");
const SECONDS = Number(ARGS.find((a) => !a.startsWith("--")) ?? 3);
/** The whole run's bound: start-up, 24 windows with their warm-ups, the waits. */
const RUN_LIMIT_MS = 120_000 + 24 * (SECONDS + WARMUP_SECONDS) * 1000;

if (!(SECONDS > 0 && SECONDS <= 60)) {
  console.error("usage: bun run bench/reads.ts [seconds per window, 0 < s ≤ 60] [--no-answer-cache] [--two-chains]");
  process.exit(2);
}
const unavailable = postgresUnavailableReason();
if (unavailable !== undefined) {
  console.error(unavailable);
  process.exit(1);
}
const haproxy = TWO_CHAINS ? undefined : haproxyBinary();
if (!TWO_CHAINS && haproxy === undefined) {
  console.error("HAProxy is not installed and cannot be installed here (apt-get install haproxy, as root)");
  process.exit(1);
}

const watchdog = guardRun(RUN_LIMIT_MS);
let failed = false;
try {
  const bench = await setUp({ seconds: SECONDS, noAnswerCache: NO_ANSWER_CACHE, twoChains: TWO_CHAINS });
  if (TWO_CHAINS) await measureTwoChains(bench);
  else await measureOneChain(bench, haproxy!);
} catch (error) {
  failed = true;
  // Once stopping began (a signal, the run's bound), the loads fail on the stopped servers: not worth printing.
  if (!stopping()) console.error(error);
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(failed ? 1 : 0);
