/** Exchanging a signed challenge for a session. */
import { hashMessage } from "viem/utils";
import type { Session } from "../../ports/accounts.ts";
import type { HexString } from "../../ports/eas.ts";
import { base64UrlEncode } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { verifySiweSignature } from "./siwe.ts";
import type { SessionDeps, SignedIn } from "./_types.ts";
import { hashSessionToken, randomHex, str, walletOf } from "./_util.ts";

const TOKEN_BYTES = 32;
/** A sign-in signature's longest text: a contract wallet's ERC-6492 form carries its factory call (8 KiB of bytes). */
const MAX_SIGNATURE = 16_386;

/**
 * Exchanges a signed challenge for a session: `{challengeId, siweMessage, signature, walletDid?}`.
 * The message must be the challenge's text exactly; the signature is checked before the challenge
 * is used up, so a forged request cannot burn someone's challenge. The first sign-in creates the
 * account on the `free` plan.
 */
export async function verify(
  deps: SessionDeps,
  body: unknown,
  options: { readonly register?: boolean } = {},
): Promise<Result<SignedIn, "INVALID_INPUT" | "INVALID_CHALLENGE" | "CHALLENGE_EXPIRED" | "INVALID_SIGNATURE" | "ACCOUNT_ALREADY_EXISTS" | "NETWORK_ERROR">> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fail("INVALID_INPUT", "Body must be a JSON object");
  const input = body as Record<string, unknown>;
  if (!str(input.challengeId)) return fail("INVALID_INPUT", "challengeId is required");
  if (!str(input.siweMessage)) return fail("INVALID_INPUT", "siweMessage is required");
  const signatureText = input.signature;
  if (typeof signatureText !== "string" || signatureText.length === 0 || signatureText.length > MAX_SIGNATURE) {
    return fail("INVALID_INPUT", "signature is required (0x-prefixed hex, at most 8192 bytes)");
  }
  const walletProviderId = input.walletProviderId;
  if (walletProviderId !== undefined && (typeof walletProviderId !== "string" || !/^[A-Za-z0-9._:-]{1,100}$/.test(walletProviderId))) {
    return fail("INVALID_INPUT", "walletProviderId must be 1 to 100 letters, digits or . _ : -");
  }
  const executionMode = input.executionMode;
  if (executionMode !== undefined && executionMode !== "subscription" && executionMode !== "native") {
    return fail("INVALID_INPUT", "executionMode must be subscription or native");
  }
  // A challenge id is visible ASCII, as every one given is: another names none (U+0000 answered 500 on PostgreSQL).
  const found = /^[\x21-\x7e]{1,200}$/.test(input.challengeId) ? await deps.accounts.findChallenge(input.challengeId) : undefined;
  if (found === undefined || found.usedAtMs !== null) return fail("INVALID_CHALLENGE", "Unknown or already used challenge");
  const now = deps.clock.nowMs();
  if (now >= found.expiresAtMs) return fail("CHALLENGE_EXPIRED", "Challenge expired");
  if (input.siweMessage !== found.message) return fail("INVALID_CHALLENGE", "siweMessage does not match the challenge");
  if (input.walletDid !== undefined) {
    const wallet = walletOf({ walletDid: input.walletDid });
    if (!wallet.ok || wallet.value.address.toLowerCase() !== found.address || wallet.value.chainId !== found.chainId) {
      return fail("INVALID_CHALLENGE", "walletDid does not match the challenge");
    }
  }
  const signed = await checkSignature(deps, found.message, signatureText, found.address, found.chainId);
  if (signed === "rpc-error") return fail("NETWORK_ERROR", "Could not ask the wallet contract about the signature; try again");
  if (signed === "invalid") return fail("INVALID_SIGNATURE", "Signature does not match the challenge's wallet");
  // Registering a wallet that has an account is refused before the challenge is used up: the client can verify instead.
  if (options.register && (await deps.accounts.findAccount(found.address)) !== undefined) {
    return fail("ACCOUNT_ALREADY_EXISTS", "This wallet already has an account: sign in with verify");
  }
  if (!(await deps.accounts.consumeChallenge(found.id, now))) return fail("INVALID_CHALLENGE", "Unknown or already used challenge");
  // Whether this request created the account is what the insert says, not a lookup: parallel sign-ins of one new
  // wallet (at any instance) all pass the check above and all find no account before they insert.
  const { account, created } = await deps.accounts.findOrCreateAccount(found.address, randomHex(deps, 16), now);
  // A register that lost that race is refused like one that came late, with no session. Its challenge stays used:
  // it was spent on the race, and verify with a new one signs the wallet in.
  if (options.register && !created) return fail("ACCOUNT_ALREADY_EXISTS", "This wallet already has an account: sign in with verify");
  const token = base64UrlEncode(deps.random.bytes(TOKEN_BYTES));
  const expiresAtMs = now + deps.policy.sessionTtlHours * 3_600_000;
  const session: Session = {
    tokenHash: hashSessionToken(token),
    accountId: account.id,
    createdAtMs: now,
    expiresAtMs,
    revokedAtMs: null,
    walletProviderId: (walletProviderId as string | undefined) ?? null,
    executionMode: (executionMode as Session["executionMode"]) ?? null,
  };
  await deps.accounts.saveSession(session);
  return ok({ token, expiresAtMs, account, created, session });
}

/**
 * An EOA's personal_sign is checked locally; anything else, for a wallet on the service's chain, is asked of the
 * wallet contract over the EIP-191 digest (deployed: ERC-1271; counterfactual: ERC-6492), as EAS would.
 */
async function checkSignature(deps: SessionDeps, message: string, signature: string, address: string, chainId: number): Promise<"valid" | "invalid" | "rpc-error"> {
  if (await verifySiweSignature(message, signature, address)) return "valid";
  const wallets = deps.contractWallets;
  if (wallets === undefined || chainId !== wallets.chainId) return "invalid";
  if (!/^0x(?:[0-9a-fA-F]{2}){1,8192}$/.test(signature)) return "invalid";
  return await wallets.check({ signer: address as HexString, digest: hashMessage(message), signature: signature as HexString });
}
