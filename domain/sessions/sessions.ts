/**
 * Sign-in with an Ethereum wallet (EIP-4361): challenges, verification, server-side sessions.
 * A session token is 32 random bytes (base64url) given to the browser as an HttpOnly cookie; only
 * its SHA-256 is stored, and the stored hash is compared in constant time.
 */import type { Authenticated, SessionDeps } from "./_types.ts";
import { fail, ok, type Result } from "../result.ts";
import { challenge } from "./_challenge.ts";
import { verify } from "./_verify.ts";
import { constantTimeEqual, hashSessionToken } from "./_util.ts";

export { LIVE_CHALLENGES_PER_WALLET } from "./_challenge.ts";
export { clientKeyOf, constantTimeEqual, hashSessionToken, networkKeyOf } from "./_util.ts";
export type {
  Authenticated,
  ChallengeCaller,
  ChallengeFailure,
  ChallengeResponse,
  ContractWalletSignatures,
  SessionDeps,
  SessionPolicy,
  SignedIn,
} from "./_types.ts";

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** Builds the sign-in use cases. */
export function createSessions(deps: SessionDeps) {
  return {
    challenge: (body: unknown, caller: Parameters<typeof challenge>[2] = {}) => challenge(deps, body, caller),
    verify: (body: unknown, options: Parameters<typeof verify>[2] = {}) => verify(deps, body, options),
    authenticate: (token: string | undefined) => authenticate(deps, token),
    logout: (token: string | undefined) => logout(deps, token),
  };
}

/** The account behind a session cookie, or why there is none. */
async function authenticate(deps: SessionDeps, token: string | undefined): Promise<Result<Authenticated, "UNAUTHENTICATED">> {
  if (token === undefined || token === "") return fail("UNAUTHENTICATED", "Unauthenticated");
  if (!TOKEN.test(token)) return fail("UNAUTHENTICATED", "Invalid session");
  const hash = hashSessionToken(token);
  const found = await deps.accounts.findSession(hash);
  if (found === undefined || !constantTimeEqual(found.session.tokenHash, hash)) {
    return fail("UNAUTHENTICATED", "Invalid session");
  }
  if (found.session.revokedAtMs !== null) return fail("UNAUTHENTICATED", "Session revoked");
  if (deps.clock.nowMs() >= found.session.expiresAtMs) return fail("UNAUTHENTICATED", "Session expired");
  return ok(found);
}

/** Revokes the session of a token, if any; logging out twice is harmless. */
async function logout(deps: SessionDeps, token: string | undefined): Promise<void> {
  if (token === undefined || !TOKEN.test(token)) return;
  await deps.accounts.revokeSession(hashSessionToken(token), deps.clock.nowMs());
}

/** The sign-in use cases. */
export type Sessions = ReturnType<typeof createSessions>;
