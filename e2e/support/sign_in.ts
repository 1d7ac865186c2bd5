/** Signing a wallet in over HTTP for tests and benches that need a session, not for tests of sign-in itself. */
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

/**
 * Signs `key`'s wallet in at `baseUrl` (challenge, personal_sign, verify) and returns the session cookie
 * (`ats_session=…`). `origin` is sent as the browser would (omit it for a non-browser client); the SIWE domain is
 * the origin's host unless given.
 */
export async function signInCookie(
  baseUrl: string,
  key: Hex,
  options: { origin?: string | undefined; domain?: string | undefined; chainId?: number | undefined } = {},
): Promise<string> {
  const wallet = privateKeyToAccount(key);
  const domain = options.domain ?? (options.origin === undefined ? "app.test" : new URL(options.origin).host);
  const headers = { "content-type": "application/json", ...(options.origin === undefined ? {} : { origin: options.origin }) };
  const challenge = await (await fetch(`${baseUrl}/v1/session/wallet/challenge`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      walletDid: `did:pkh:eip155:${options.chainId ?? 31337}:${wallet.address}`,
      domain,
      uri: `${options.origin ?? `https://${domain}`}/login`,
    }),
  })).json() as { challengeId: string; siweMessage: string };
  const verified = await fetch(`${baseUrl}/v1/session/wallet/verify`, {
    method: "POST",
    headers,
    body: JSON.stringify({ ...challenge, signature: await wallet.signMessage({ message: challenge.siweMessage }) }),
  });
  if (verified.status !== 200) throw new Error(`sign-in failed with ${verified.status}: ${await verified.text()}`);
  return verified.headers.get("set-cookie")!.split(";")[0]!;
}
