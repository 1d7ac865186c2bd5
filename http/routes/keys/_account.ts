/**
 * Who is asking, on the signing-key routes: the one place their credential is checked. Today the session cookie;
 * bearer tokens with the `account:read` and `keys:write` scopes (decisions §19) plug in here.
 */
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Account } from "../../../ports/accounts.ts";
import type { Fail, Result } from "../../../domain/result.ts";
import { authenticateRequest, type BearerAccess } from "../../credentials.ts";
import { tokenOf } from "../session.ts";

/** What a signing-key route needs from its caller: reading the account's keys, or writing them. */
export type KeysScope = "account:read" | "keys:write";

/**
 * The account a request acts as, for `scope`; `UNAUTHENTICATED` without a valid credential, with the answer to give
 * when the credential check wrote one (a bearer token's 401 with its challenge, or 403 `insufficient_scope`).
 */
export type KeysCaller = (request: Request, scope: KeysScope) => Promise<Result<Account, "UNAUTHENTICATED"> | (Fail<"UNAUTHENTICATED"> & { readonly response: Response })>;

/** The caller of the signing-key routes: the session cookie, or an OAuth access token with the scope (decisions §19). */
export function credentialCaller(sessions: Sessions, bearer: BearerAccess | undefined): KeysCaller {
  return async (request, scope) => {
    const auth = await authenticateRequest(request, { sessions, bearer }, scope);
    if (auth.ok) return { ok: true, value: auth.caller.account };
    return { ok: false, code: "UNAUTHENTICATED", message: "Unauthenticated", response: auth.response() };
  };
}

/** The caller of the signing-key routes, from the session cookie. */
export function sessionCaller(sessions: Sessions): KeysCaller {
  return async (request, _scope) => {
    const auth = await sessions.authenticate(tokenOf(request));
    return auth.ok ? { ok: true, value: auth.value.account } : auth;
  };
}
