/** Wiring of sign-in, accounts, plans, subjects with their ownership proofs, and premium reads (decisions §8, §12). */
import { createFetchRawRpc } from "../adapters/chain/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { createPremiumRpc, createSubjectOwnership, createSubjects, type PlanPolicy } from "../domain/accounts/mod.ts";
import type { DiscoverControllers } from "../domain/discovery/mod.ts";
import { withPaidPlans } from "../domain/payments/mod.ts";
import { createSessions } from "../domain/sessions/mod.ts";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import type { Config } from "./config.ts";
import type { WiredDiscovery } from "./discovery.ts";
import type { Foundation } from "./foundation.ts";
import { proofChainsOf } from "./interactions.ts";

/** What the account routes and the relays need. */
export type WiredAccounts = {
  readonly plans: PlanPolicy;
  readonly sessions: ReturnType<typeof createSessions>;
  readonly subjects: ReturnType<typeof createSubjects>;
  /** The ownership a signed-in account's subjects and relay writes are proven by (its own discovery budget). */
  readonly subjectOwnership: ReturnType<typeof createSubjectOwnership>;
  /** `POST /api/verify/subject-ownership`: anyone's proof, under the public views' discovery budget. */
  readonly publicSubjectOwnership: ReturnType<typeof createSubjectOwnership>;
  /** `POST /api/verify/subject-ownership`'s per-client bound (`SUBJECT_OWNERSHIP_RATE_PER_MINUTE`). */
  readonly subjectOwnershipRate: RateLimiter;
  readonly premiumRpc: ReturnType<typeof createPremiumRpc>;
  /** Ends the premium reads still waiting on the node (a read spent, 502): stopping never waits on a slow node. */
  readonly abortPremiumReads: () => void;
  /** Stops the pruning of expired challenges and sessions. */
  readonly stop: () => void;
};

/** Prunes what expired, then builds sessions (paid plans from x402 purchases), subjects and premium reads. */
export async function wireAccounts(
  config: Pick<Config, "accounts" | "chains" | "x402">,
  f: Foundation,
  discovery: WiredDiscovery,
  options: { pruneIntervalMs?: number | undefined },
): Promise<WiredAccounts> {
  const { storage, eas, log } = f;
  await storage.accounts.prune(systemClock.nowMs());
  // Expired challenges and sessions go every minute as well, not only at start (decisions §15).
  const pruneTimer = setInterval(() => {
    storage.accounts.prune(systemClock.nowMs()).catch((error) =>
      log.warn("prune_failed", { error: error instanceof Error ? error.message : String(error) }));
  }, options.pruneIntervalMs ?? 60_000);
  pruneTimer.unref?.();
  const plans: PlanPolicy = {
    free: { annualWrites: config.accounts.freePlanAnnualWrites, schemas: config.accounts.freePlanSchemas },
    paid: { annualWrites: config.accounts.paidPlanAnnualWrites, schemas: config.accounts.paidPlanSchemas },
  };
  const sessions = withPaidPlans(createSessions({
    accounts: storage.accounts,
    clock: systemClock,
    random: cryptoRandom,
    policy: {
      sessionTtlHours: config.accounts.sessionTtlHours,
      challengeTtlMinutes: 10,
      siweDomains: config.accounts.siweDomains,
      challengeRatePerMinute: config.accounts.siweChallengePerMinute,
    },
    contractWallets: eas.reader.checkContractSignature === undefined
      ? undefined
      : { chainId: eas.reader.chainId, check: boundedChecks(eas.reader.checkContractSignature) },
  }), { payments: storage.payments, clock: systemClock });
  // A contract subject is proven on its own chain, any chain the deployment reads (decisions §30); others not checked.
  const proofChains = proofChainsOf(config, f);
  // The signed-in account's proofs (subjects, relay writes) and the public proof route look under budgets of their own:
  // nobody's anonymous lookups spend what an owner's own proof needs (app/discovery.ts).
  const ownershipOver = (discover: DiscoverControllers) => createSubjectOwnership({ discover, chain: proofChains.ownership(f.chainId)!, chains: proofChains });
  const subjectOwnership = ownershipOver(discovery.ownershipDiscover);
  const subjects = createSubjects({
    store: storage.subjects,
    ownership: subjectOwnership,
    clock: systemClock,
    random: cryptoRandom,
    chainId: f.chainId,
    maxPerAccount: config.accounts.subjectsPerAccount,
    // The chains a did:pkh subject may name (issue 33): the trust anchors' chains, the chains read (the active one and
    // CHAINS_FILE's proof chains, decisions §30) and the x402 network.
    knownChains: [
      ...Object.keys(f.trustAnchors.chains),
      ...proofChains.chainIds.map((id) => `eip155:${id}`),
      ...(config.x402.network === undefined ? [] : [config.x402.network]),
    ],
  });
  // Aborted first thing at shutdown (issue 23).
  const premiumStop = new AbortController();
  const premiumRpc = createPremiumRpc({
    ledger: storage.premiumReads,
    rpc: createFetchRawRpc({ rpcUrl: f.rpcUrl, fetchFn: f.rpcFetch, timeoutMs: config.accounts.premiumRpc.timeoutMs, signal: premiumStop.signal }),
    clock: systemClock,
    limits: { free: config.accounts.premiumReads.free, paid: config.accounts.premiumReads.paid },
    maxLogRange: BigInt(config.accounts.premiumReads.maxLogRange),
    maxCallGas: BigInt(config.accounts.premiumRpc.maxCallGas),
    maxInFlightPerAccount: config.accounts.premiumRpc.maxInFlightPerAccount,
    maxInFlight: config.accounts.premiumRpc.maxInFlight,
  });
  return {
    plans,
    sessions,
    subjects,
    subjectOwnership,
    publicSubjectOwnership: ownershipOver(discovery.confirmDiscover),
    subjectOwnershipRate: createRateLimiter(systemClock, { capacity: config.accounts.subjectOwnershipPerMinute, perMinute: config.accounts.subjectOwnershipPerMinute }),
    premiumRpc,
    abortPremiumReads: () => premiumStop.abort(),
    stop: () => clearInterval(pruneTimer),
  };
}

/** The contract signature checks one sign-in challenge may ask the chain for (its 10 minutes; each a capped eth_call). */
export const CONTRACT_CHECKS_PER_CHALLENGE = 5;

/**
 * A sign-in's contract-wallet check, at most {@link CONTRACT_CHECKS_PER_CHALLENGE} a challenge (the digest is the
 * challenge's message's: one per challenge), then "invalid" with no call. Found by attacking sign-in: one challenge
 * took any number of verify attempts, each running the ERC-6492 factory call a request named on the node (the
 * challenges are bounded per client address, the attempts were not). A wallet whose check failed five times asks a
 * new challenge.
 */
function boundedChecks<I extends { readonly digest: string }>(
  check: (input: I) => Promise<"valid" | "invalid" | "rpc-error">,
): (input: I) => Promise<"valid" | "invalid" | "rpc-error"> {
  const turns = createRateLimiter(systemClock, { capacity: CONTRACT_CHECKS_PER_CHALLENGE, perMinute: CONTRACT_CHECKS_PER_CHALLENGE / 10 });
  return async (input) => (turns.take(input.digest).allowed ? await check(input) : "invalid");
}
