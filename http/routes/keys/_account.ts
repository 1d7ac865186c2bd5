/**
 * Who is asking, on the signing-key routes: the one place their credential is checked. Today the session cookie;
 * bearer tokens with the `account:read` and `keys:write` scopes (decisions §19) plug in here.
 */
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Account } from "../../../ports/accounts.ts";
import type { Result } from "../../../domain/result.ts";
import { tokenOf } from "../session.ts";

/** What a signing-key route needs from its caller: reading the account's keys, or writing them. */
export type KeysScope = "account:read" | "keys:write";

/** The account a request acts as, for `scope`; `UNAUTHENTICATED` without a valid credential. */
export type KeysCaller = (request: Request, scope: KeysScope) => Promise<Result<Account, "UNAUTHENTICATED">>;

/** The caller of the signing-key routes, from the session cookie. */
export function sessionCaller(sessions: Sessions): KeysCaller {
  return async (request, _scope) => {
    const auth = await sessions.authenticate(tokenOf(request));
    return auth.ok ? { ok: true, value: auth.value.account } : auth;
  };
}
