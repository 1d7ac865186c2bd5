/** Issuing a sign-in challenge (EIP-4361), rate-limited per client address and per wallet. */
import { getAddress } from "viem/utils";
import type { ChallengeLimits } from "../../ports/accounts.ts";
import { fail, type Ok, ok } from "../result.ts";
import { buildSiweMessage, SIWE_STATEMENT, validateSiweMessage } from "./siwe.ts";
import type { ChallengeCaller, ChallengeFailure, ChallengeResponse, SessionDeps } from "./_types.ts";
import { clientKeyOf, randomHex, str, walletOf } from "./_util.ts";

/**
 * How many unanswered challenges one client may hold for one wallet. A new challenge past it evicts that client's
 * oldest live one for the wallet (marks it used) instead of being refused: a real user who lost a tab or reloaded the
 * sign-in page must still get a challenge. Another client's challenges are never evicted: counted over every asker,
 * anyone who knew a wallet's address voided the challenge its owner was signing, minute after minute.
 *
 * The wallet's creation rate (decisions §15: "rate-limited per client address and per wallet") counts every client's
 * challenges for the wallet, but refuses only a client that already holds one of them created in the window: a
 * client's first challenge for a wallet in a window is always given (within its own address rate). Counted over every
 * asker and refusing everyone, a stranger who asked `challengeRatePerMinute` challenges for a wallet each minute (no
 * signature needed, only the address) kept its owner from getting any, so from signing in at all, for as long as the
 * stranger repeated it. Now the rate bounds how often any one client asks again for a wallet others also ask for, and
 * still cannot lock the owner out. What remains: one stranger asking the rate's worth for the wallet each minute (or
 * several, each within its address rate) keeps the wallet's rate spent, and then the owner gets one challenge a minute
 * from its address, not more (a reload within the minute waits at most the
 * minute, as `Retry-After` says). One is enough: it lives `challengeTtlMinutes`, and another client's challenges never
 * evict it. Each client's rows stay bounded by its address rate and its live cap; the work of a creation is the
 * wallet's count (at most `challengeRatePerMinute` rows, by index) and one client's rows of one wallet. Eviction does
 * not free rate: an evicted row is kept, counting against its client's and its wallet's rates, until it expires and is
 * pruned, so a client holds at most about `challengeRatePerMinute × (challengeTtlMinutes + 1)` rows (the prune runs
 * every minute).
 */
export const LIVE_CHALLENGES_PER_WALLET = 5;

/** The window of the challenge creation rates; shorter than a challenge's life, so pruning cannot shrink it. */
const CHALLENGE_RATE_WINDOW_MS = 60_000;

/**
 * Issues a challenge: `{walletDid | address+chainId, domain, uri}`. Refused with `RATE_LIMITED` when the
 * caller's address had `challengeRatePerMinute` challenges in the last minute, or when the wallet had that many (from
 * any address) and the caller's address already had one of them; nothing is stored then. The caller's first challenge
 * for the wallet in a minute is never refused by other addresses' asking.
 */
export async function challenge(deps: SessionDeps, body: unknown, caller: ChallengeCaller = {}): Promise<Ok<ChallengeResponse> | ChallengeFailure> {
  const rate = deps.policy.challengeRatePerMinute ?? Number.MAX_SAFE_INTEGER;
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fail("INVALID_INPUT", "Body must be a JSON object");
  const input = body as Record<string, unknown>;
  const wallet = walletOf(input);
  if (!wallet.ok) return wallet;
  if (!str(input.domain) || !/^[^\s/?#@]+$/.test(input.domain)) return fail("INVALID_INPUT", "domain must be a host[:port]");
  if (!str(input.uri)) return fail("INVALID_INPUT", "uri is required");
  // `new URL` drops trailing control characters that the message would keep (U+0000 answered 500 on PostgreSQL).
  if (/[\s\p{Cc}]/u.test(input.uri)) return fail("INVALID_INPUT", "uri must be an absolute URL");
  let uri: URL;
  try {
    uri = new URL(input.uri);
  } catch {
    return fail("INVALID_INPUT", "uri must be an absolute URL");
  }
  if (uri.protocol !== "https:" && uri.protocol !== "http:") return fail("INVALID_INPUT", "uri must be an http(s) URL");
  const domain = input.domain.toLowerCase();
  if (deps.policy.siweDomains.length > 0 && !deps.policy.siweDomains.some((d) => d.toLowerCase() === domain)) {
    return fail("CLIENT_NOT_ALLOWED", "Sign-in domain not allowed");
  }
  const now = deps.clock.nowMs();
  const expiresAtMs = now + deps.policy.challengeTtlMinutes * 60_000;
  const nonce = randomHex(deps, 12);
  const fields = {
    domain,
    address: getAddress(wallet.value.address),
    statement: SIWE_STATEMENT,
    uri: input.uri,
    version: "1" as const,
    chainId: wallet.value.chainId,
    nonce,
    issuedAt: new Date(now).toISOString(),
    expirationTime: new Date(expiresAtMs).toISOString(),
  };
  // EIP-4361 is stricter than the URL parser (no spaces, no bare non-ASCII, a host-only authority): what
  // cannot be written into the message is the caller's input error, never a thrown 500.
  const checked = validateSiweMessage(fields);
  if (!checked.ok) {
    return fail("INVALID_INPUT", checked.message === "Invalid SIWE domain" ? "domain must be a host[:port]" : "uri must be an absolute URL");
  }
  const message = buildSiweMessage(checked.value);
  const id = randomHex(deps, 16);
  const limits: ChallengeLimits = {
    client: clientKeyOf(caller.clientAddress),
    perClient: rate,
    // Counted over every client's challenges for the wallet; refuses only a client holding one of them (see above).
    perWallet: rate,
    windowMs: CHALLENGE_RATE_WINDOW_MS,
    livePerWallet: LIVE_CHALLENGES_PER_WALLET,
  };
  const created = await deps.accounts.createChallenge({
    id,
    address: wallet.value.address.toLowerCase(),
    chainId: wallet.value.chainId,
    nonce,
    message,
    createdAtMs: now,
    expiresAtMs,
    usedAtMs: null,
  }, limits);
  if (!created.ok) {
    const message = created.limit === "client"
      ? "Too many sign-in challenges from this address; try again later"
      : "Too many sign-in challenges for this wallet; try again later";
    return { ...fail("RATE_LIMITED" as const, message), retryAfterSeconds: Math.max(1, Math.ceil(created.retryAfterMs / 1000)) };
  }
  return ok({ challengeId: id, siweMessage: message, nonce, expiresAt: new Date(expiresAtMs).toISOString() });
}
