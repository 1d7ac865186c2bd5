import { Elysia } from "elysia";
import type { ControllerWitness, createWitnessResume } from "../../domain/witness/mod.ts";
import { type PlanPolicy, quotaYear } from "../../domain/accounts/mod.ts";
import type { Sessions } from "../../domain/sessions/mod.ts";
import type { Account, Session, SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { Logger } from "../../ports/logger.ts";
import type { Metrics } from "../../ports/metrics.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import type { PaymentGate } from "../x402_gate.ts";
import { REQUEST_MODELS } from "../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "./request.ts";
import { bootstrapSubject, DEFAULT_CLIENT_ID, sessionId, walletDid } from "../../domain/accounts/mod.ts";
import type { ClientAddressOf } from "../../ports/request_context.ts";
import { authenticateRequest, type BearerAccess, type Caller, carriesBearer, sessionOnlyRefusal } from "../credentials.ts";
import type { Idempotency } from "../../domain/idempotency/mod.ts";

/** The session cookie's name. */
export const SESSION_COOKIE = "ats_session";

/** What the session and witness routes need. */
export type SessionRoutesDeps = {
  readonly sessions: Sessions;
  readonly witness: ControllerWitness;
  /** The witness write a request that died noted under its key (decisions §23); absent: such a retry runs again. */
  readonly witnessResume?: ReturnType<typeof createWitnessResume> | undefined;
  readonly ledger: SponsoredWriteLedger;
  readonly plans: PlanPolicy;
  readonly clock: Clock;
  readonly log: Logger;
  /** `Secure` on the cookie; off only when the service is served from loopback. */
  readonly secureCookies: boolean;
  /** x402 payments instead of a session (decisions §13); absent: none taken. */
  readonly payments?: PaymentGate | undefined;
  /** Counts sponsored writes by outcome (`ats_sponsored_writes_total`). */
  readonly metrics?: Metrics | undefined;
  /**
   * The peer address a request came from, for the sign-in challenge rate per client (decisions §15);
   * absent or undefined: the one key `unknown`.
   */
  readonly clientAddress?: ClientAddressOf | undefined;
  /** The account's default subject; absent: the wallet's own did:pkh. */
  readonly primarySubject?: ((account: Account) => Promise<{ canonicalDid: string; subjectDidHash: string }>) | undefined;
  /** The active chain: the wallet DIDs the answers show are did:pkh on it. */
  readonly chainId?: number | undefined;
  /** OAuth access tokens (decisions §19); absent: sessions (and x402) only. */
  readonly bearer?: BearerAccess | undefined;
  /** Idempotency keys of the witness (decisions §23); absent: `Idempotency-Key` is ignored. */
  readonly idempotency?: Idempotency | undefined;
};

/** Sign-in errors whose status differs from the shared table (a bad wallet signature is 401 here). */
const SESSION_STATUS: Readonly<Record<string, number>> = {
  INVALID_SIGNATURE: 401,
  INVALID_CHALLENGE: 400,
  CHALLENGE_EXPIRED: 400,
  CLIENT_NOT_ALLOWED: 403,
};

/** The session token a request carries in its cookie. */
export function tokenOf(request: Request): string | undefined {
  return readCookie(request.headers.get("cookie"), SESSION_COOKIE);
}

/** Reads one cookie from a Cookie header. */
export function readCookie(header: string | null, name: string): string | undefined {
  if (header === null) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const challengeBody = compileRequestCheck(REQUEST_MODELS.walletChallenge.body);
const verifyBody = compileRequestCheck(REQUEST_MODELS.walletVerify.body);
/** A refusal of the session or witness routes; `unavailable`: the service's own wallet cannot pay, 503 rather than 500 (decisions §15). */
export function sessionFailure(
  result: { code: string; message: string; details?: string | undefined; unavailable?: true },
  headers: Record<string, string> = {},
): Response {
  return json(
    errorBody(result.code, result.message, result.details),
    result.unavailable ? 503 : SESSION_STATUS[result.code] ?? statusOf(result.code),
    headers,
  );
}

/** The JSON body checked against the operation's model, or the 4xx answer (decisions §2). */
export function readCheckedBody<T>(body: unknown, check: { readJson: (body: unknown) => { ok: true; value: T } | { ok: false; code: string; message: string } }) {
  const parsed = check.readJson(body);
  if (parsed.ok) return parsed;
  const response = json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
  return { ok: false as const, response, invalid: parsed.code === "INVALID_INPUT" };
}

/**
 * Sign-in with Ethereum (challenge, verify, me, logout), under the gateway (`/v1/session/...`) and backend
 * (`/api/private/session/...`) paths; the controller witness is http/routes/witness.ts.
 * CORS and the CSRF guard of these paths live in the app (origin allowlist, JSON bodies only).
 */
export function sessionRoutes(deps: SessionRoutesDeps) {
  const cookieAttributes = (expires: string, maxAge?: number) =>
    [
      "Path=/",
      "HttpOnly",
      "SameSite=Lax",
      ...(deps.secureCookies ? ["Secure"] : []),
      `Expires=${expires}`,
      ...(maxAge === undefined ? [] : [`Max-Age=${maxAge}`]),
    ].join("; ");

  const quotaOf = async (accountId: string, plan: keyof PlanPolicy) => {
    const nowMs = deps.clock.nowMs();
    const year = quotaYear(nowMs);
    const usage = await deps.ledger.usage(accountId, year, { nowMs });
    const limit = deps.plans[plan].annualWrites;
    return {
      year,
      limit,
      used: usage.used,
      reserved: usage.reserved,
      remaining: Math.max(0, limit - usage.used - usage.reserved),
      eligibleSchemas: [...deps.plans[plan].schemas],
    };
  };

  const challenge = async ({ body, request }: { body: unknown; request: Request }) => {
    const parsed = readCheckedBody(body, challengeBody);
    if (!parsed.ok) return parsed.response;
    const result = await deps.sessions.challenge(parsed.value, { clientAddress: deps.clientAddress?.(request) });
    if (result.ok) return json(result.value);
    return sessionFailure(result, result.retryAfterSeconds === undefined ? {} : { "retry-after": String(result.retryAfterSeconds) });
  };

  const chainId = deps.chainId ?? 31337;
  /**
   * The wallet a session signed in with, as the reference client reads it (decisions §12). Its `executionMode` is
   * never null there: a sign-in that named none is `subscription`, which is what it gets (the plan pays gas through
   * the relays; a `native` wallet pays its own).
   */
  const walletView = (account: Account, session: Session) => ({
    did: walletDid(account, chainId),
    walletProviderId: session.walletProviderId ?? null,
    executionMode: session.executionMode ?? "subscription",
    isManagedWallet: false,
  });
  const accountView = (account: Account) => ({
    id: account.id,
    displayName: account.displayName ?? null,
    address: account.address,
    plan: account.plan,
  });

  /** verify and register: the same exchange; register refuses a wallet that already has an account (409). */
  const signIn = (register: boolean) => async ({ body }: { body: unknown }) => {
    const parsed = readCheckedBody(body, verifyBody);
    if (!parsed.ok) return parsed.response;
    const result = await deps.sessions.verify(parsed.value, { register });
    if (!result.ok) return sessionFailure(result);
    const { token, expiresAtMs, account, created, session } = result.value;
    const expiresAt = new Date(expiresAtMs).toISOString();
    deps.log.info("signed_in", { accountId: account.id, created });
    return json(
      {
        account: accountView(account),
        client: { clientId: DEFAULT_CLIENT_ID },
        session: { id: sessionId(session), expiresAt },
        wallet: walletView(account, session),
        created,
      },
      200,
      { "set-cookie": `${SESSION_COOKIE}=${token}; ${cookieAttributes(new Date(expiresAtMs).toUTCString())}` },
    );
  };
  const verify = signIn(false);
  const register = signIn(true);

  const me = async ({ request }: { request: Request }) => {
    const auth = await authenticateRequest(request, deps, "account:read");
    if (!auth.ok) return auth.response();
    const caller = auth.caller;
    const { account } = caller;
    // A token has no session row: its own id and expiry stand in, and the client is the token's (decisions §19).
    const session: Session = caller.via === "session" ? caller.session : {
      tokenHash: "",
      accountId: account.id,
      createdAtMs: caller.claims.iat * 1000,
      expiresAtMs: caller.claims.exp * 1000,
      revokedAtMs: null,
    };
    const wallet = walletView(account, session);
    const primary = deps.primarySubject ? await deps.primarySubject(account) : bootstrapSubject(account, chainId);
    return json({
      account: accountView(account),
      session: { id: caller.via === "session" ? sessionId(session) : `oauth:${caller.claims.jti}`, expiresAt: new Date(session.expiresAtMs).toISOString() },
      quota: await quotaOf(account.id, account.plan),
      wallet,
      credential: { id: `wallet:${account.address}`, kind: "wallet", identifier: wallet.did },
      subscription: { plan: account.plan, status: "active" },
      client: caller.via === "session" ? { clientId: DEFAULT_CLIENT_ID, authMode: "session" } : { clientId: caller.clientId, authMode: "oauth" },
      primarySubject: { canonicalDid: primary.canonicalDid, subjectDidHash: primary.subjectDidHash },
    });
  };

  // Signing out ends a session (the cookie's); an access token is ended by its client at /oauth/revoke, or by deleting
  // the API client: a request carrying one is refused as on every session-only route, never answered a success that
  // revoked nothing (decisions §19).
  const logout = async ({ request }: { request: Request }) => {
    if (carriesBearer(request)) return sessionOnlyRefusal(deps.bearer?.resource);
    await deps.sessions.logout(tokenOf(request));
    return json({ success: true }, 200, {
      "set-cookie": `${SESSION_COOKIE}=; ${cookieAttributes(new Date(0).toUTCString(), 0)}`,
    });
  };

  const app = new Elysia({ name: "session-routes" });
  for (const prefix of ["/v1/session", "/api/private/session"]) {
    app
      .post(`${prefix}/wallet/challenge`, challenge, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.walletChallenge) })
      .post(`${prefix}/wallet/verify`, verify, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.walletVerify) })
      .post(`${prefix}/wallet/register`, register, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.walletVerify) })
      .get(`${prefix}/me`, me)
      .post(`${prefix}/logout`, logout, { parse: readBodyText });
  }
  return app;
}
