/**
 * Client helpers for sign-in with an Ethereum wallet and the controller witness. In a browser the
 * session cookie is HttpOnly and travels by itself (`credentials: "include"`); outside a browser these
 * helpers hand the cookie back so the caller can send it on later requests.
 */
import { AtsClientError } from "./errors.ts";
import { requestJson } from "./http.ts";

/** Where the service is and how to reach it. */
export type SessionClientOptions = {
  /** Default `http://127.0.0.1:8080`. */
  readonly baseUrl?: string | undefined;
  readonly fetch?: typeof fetch | undefined;
  /** Sent as `Origin` (a browser sets it itself). */
  readonly origin?: string | undefined;
};

/** Signs a personal_sign message, e.g. a viem account's `signMessage({ message })`. */
export type MessageSigner = (message: string) => Promise<string>;

/** A signed-in session outside a browser. */
export type WalletSession = {
  /** `ats_session=<token>`: send as the `Cookie` header. Keep it secret. */
  readonly cookie: string;
  readonly account: { id: string; address: string; plan: string };
  readonly expiresAt: string;
};

/** The answer of a written controller witness. */
export type ControllerWitnessResult = {
  success: true;
  uid: string | null;
  txHash: string;
  blockNumber: number;
  observedAt: number;
  method: "dns-txt" | "did-json";
};

function call<T>(
  path: string,
  init: { method: "GET" | "POST"; body?: unknown; cookie?: string | undefined },
  options: SessionClientOptions,
): Promise<{ body: T; response: Response }> {
  const headers: Record<string, string> = {};
  if (init.cookie !== undefined) headers.cookie = init.cookie;
  if (options.origin !== undefined) headers.origin = options.origin;
  return requestJson<T>(path, {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: init.method,
    body: init.body,
    headers,
    credentials: "include",
  });
}

/**
 * Signs in: asks for a challenge for `walletDid` (a `did:pkh:eip155:<chainId>:<address>`), has the
 * wallet sign the exact message, and exchanges it for a session. `domain` and `uri` are what the
 * wallet shows the user (the page asking for sign-in); the service allows only configured domains.
 */
export async function signInWithWallet(
  input: { walletDid: string; domain: string; uri: string; sign: MessageSigner },
  options: SessionClientOptions = {},
): Promise<WalletSession> {
  // A walletDid that is no did:pkh:eip155 was sent with a null chainId and refused as "chainId is invalid".
  const pkh = /^did:pkh:eip155:([1-9][0-9]{0,15}):0x[0-9a-fA-F]{40}$/.exec(typeof input.walletDid === "string" ? input.walletDid : "");
  if (pkh === null) throw new AtsClientError("INVALID_DID", "walletDid must be did:pkh:eip155:<chainId>:<address>");
  const chainId = Number(pkh[1]);
  const challenge = await call<{ challengeId: string; siweMessage: string }>(
    "/v1/session/wallet/challenge",
    { method: "POST", body: { walletDid: input.walletDid, chainId, domain: input.domain, uri: input.uri } },
    options,
  );
  const signature = await input.sign(challenge.body.siweMessage);
  const verified = await call<{ account: WalletSession["account"]; session: { expiresAt: string } }>(
    "/v1/session/wallet/verify",
    { method: "POST", body: { challengeId: challenge.body.challengeId, siweMessage: challenge.body.siweMessage, signature } },
    options,
  );
  const setCookie = verified.response.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0] ?? "";
  if (!cookie.includes("=")) throw new AtsClientError("NETWORK_ERROR", "The service did not set a session cookie");
  return { cookie, account: verified.body.account, expiresAt: verified.body.session.expiresAt };
}

/** The signed-in account, its session expiry and its sponsored-write quota. */
export async function fetchSession(session: Pick<WalletSession, "cookie">, options: SessionClientOptions = {}) {
  const { body } = await call<{
    account: WalletSession["account"];
    session: { expiresAt: string };
    quota: { year: number; limit: number; used: number; reserved: number; remaining: number; eligibleSchemas: string[] };
  }>("/v1/session/me", { method: "GET", cookie: session.cookie }, options);
  return body;
}

/** Ends the session on the server. */
export async function signOut(session: Pick<WalletSession, "cookie">, options: SessionClientOptions = {}): Promise<void> {
  await call("/v1/session/logout", { method: "POST", body: {}, cookie: session.cookie }, options);
}

/**
 * Asks the service to witness that `controllerDid` controls the did:web `subjectDid` (DNS TXT or
 * did.json must publish it). Uses one sponsored write on success; throws an {@link AtsClientError}
 * with the server's code otherwise (`EVIDENCE_NOT_FOUND`, `SPONSORED_WRITE_LIMIT_EXCEEDED`, ...).
 */
export async function requestControllerWitness(
  input: { subjectDid: string; controllerDid: string },
  session: Pick<WalletSession, "cookie">,
  options: SessionClientOptions = {},
): Promise<ControllerWitnessResult> {
  const { body } = await call<ControllerWitnessResult>(
    "/v1/controller-witness",
    { method: "POST", body: { subjectDid: input.subjectDid, controllerDid: input.controllerDid }, cookie: session.cookie },
    options,
  );
  return body;
}
