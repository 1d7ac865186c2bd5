/**
 * What one lookup of a domain's endpoints draws on: the registrable domain's budget (`DISCOVERY_DOMAIN_RATE_PER_MINUTE`)
 * and, for a lookup made for a client, that client's share of it. Answers are cached, so only distinct hosts cost a
 * token; before the share, one anonymous client spent the whole verification budget with key-status reads of made-up
 * subdomains (`did:web:x0.victim.test` … `x29.victim.test`), and the domain's own key status and controller
 * authorization then answered 502 to everyone.
 */
import type { RateDecision, RateLimiter } from "../rate_limit.ts";

/** The limiters a lookup takes its turn from. */
export type LookupBudget = {
  /** Lookups per registrable domain, every caller's together; absent: unlimited. */
  readonly domainRate?: RateLimiter | undefined;
  /** Lookups per registrable domain and client (a share of `domainRate`: {@link clientShareOf}); absent: no share. */
  readonly clientShare?: RateLimiter | undefined;
};

/** Who a lookup is made for. */
export type LookupClient = {
  /**
   * The key the client is counted under (its address as the routes count it, `clientKeyFor`): the lookup needs this
   * client's share of the domain's budget as well as the budget. Absent (an internal call): the domain's budget alone.
   */
  readonly client?: string | undefined;
};

/** A client's share of a domain's budget, per minute and as a burst: a third, rounded up (10 of the default 30). */
export function clientShareOf(domainPerMinute: number): number {
  return Math.ceil(domainPerMinute / 3);
}

/**
 * Takes one lookup of registrable domain `domain`: the client's share first, so a client past its share spends
 * nothing of the domain's budget (it is refused, as a spent budget is, and nobody else); then the domain's budget. A
 * share token taken for a lookup the domain's budget then refuses stays spent: the client asked.
 */
export function takeLookup(budget: LookupBudget, domain: string, options: LookupClient = {}): RateDecision {
  if (options.client !== undefined && budget.clientShare !== undefined) {
    const share = budget.clientShare.take(`${domain} ${options.client}`);
    if (!share.allowed) return share;
  }
  return budget.domainRate?.take(domain) ?? { allowed: true };
}
