/** Discovery with its answers kept a short while, for the read-only callers. */
import type { Clock } from "../../ports/clock.ts";
import { normalizeDid } from "../did/mod.ts";
import { registrableDomain } from "../rate_limit.ts";
import { ok } from "../result.ts";
import {
  type DiscoverControllers,
  type DiscoveryRateLimited,
  type DiscoveryRecord,
  type DiscoveryResult,
  rateLimitedLookupError,
} from "./discovery_record.ts";

/** How long {@link createCachedDiscovery} keeps answers. */
export type DiscoveryCacheOptions = {
  /** A complete answer (no source unavailable); default 60 s, about a typical DNS TTL. */
  readonly freshMs?: number | undefined;
  /** An answer with an unavailable source; default 10 s, so a broken endpoint is not asked on every request. */
  readonly failureMs?: number | undefined;
  /** How old an answer may be to stand in for one refused by the domain's lookup budget; default 10 min. */
  readonly staleMs?: number | undefined;
  /** Subjects kept at most; the oldest go first. Default 10,000. */
  readonly maxEntries?: number | undefined;
};

type CachedAnswer = { readonly record: DiscoveryRecord; readonly atMs: number; readonly complete: boolean };

/**
 * Discovery for the read-only callers (both confirm views, artifact trust): answers are kept per normalized
 * subject for a short while, and concurrent lookups of one subject share one. So the lookups a domain receives
 * through us are bounded per subject however much traffic a popular artifact or page draws, and the per-domain
 * budget only bites on floods of distinct subjects; when it does, the last real answer (up to `staleMs` old)
 * stands in for the confirm views, with a warning saying how old it is, rather than `unavailable` evidence (artifact
 * trust asks `freshOnly`: a verdict stands on today's evidence). An answer refused by the
 * budget is never kept. Not for the witness, which records what it observes and so always looks afresh.
 */
export function createCachedDiscovery(
  discover: DiscoverControllers,
  deps: { readonly clock: Clock },
  options: DiscoveryCacheOptions = {},
): DiscoverControllers {
  const freshMs = options.freshMs ?? 60_000;
  const failureMs = options.failureMs ?? 10_000;
  const staleMs = options.staleMs ?? 600_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const answers = new Map<string, CachedAnswer>();
  const inFlight = new Map<string, Promise<DiscoveryResult | DiscoveryRateLimited>>();

  const asSupplied = (record: DiscoveryRecord, input: string, warnings: string[] = record.warnings): DiscoveryRecord => ({
    ...record,
    subject: { ...record.subject, input },
    warnings,
  });

  return async function cachedDiscovery(subjectDid, callOptions = {}) {
    if (callOptions.refuseWhenRateLimited || typeof subjectDid !== "string") return await discover(subjectDid, callOptions);
    const normalized = normalizeDid(subjectDid);
    if (!normalized.ok) return await discover(subjectDid, callOptions);
    const key = normalized.value;
    const now = deps.clock.nowMs();
    const kept = answers.get(key);
    if (kept !== undefined && now - kept.atMs < (kept.complete ? freshMs : failureMs)) {
      return ok(asSupplied(kept.record, subjectDid));
    }
    let pending = inFlight.get(key);
    if (pending === undefined) {
      pending = discover(key, callOptions).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    const result = await pending;
    if (!result.ok) return result;
    const record = result.value;
    const refusal = rateLimitedLookupError(registrableDomain(record.domain ?? ""));
    if (record.evidence.some((e) => e.error === refusal)) {
      const previous = answers.get(key);
      if (callOptions.freshOnly || previous === undefined || now - previous.atMs >= staleMs) return ok(asSupplied(record, subjectDid));
      const ageSeconds = Math.round((now - previous.atMs) / 1000);
      const warning = `${refusal}: this evidence was observed ${ageSeconds} s ago`;
      return ok(asSupplied(previous.record, subjectDid, [...previous.record.warnings, warning]));
    }
    answers.delete(key);
    answers.set(key, { record, atMs: deps.clock.nowMs(), complete: !record.evidence.some((e) => e.status === "unavailable") });
    if (answers.size > maxEntries) answers.delete(answers.keys().next().value!);
    return ok(asSupplied(record, subjectDid));
  };
}
