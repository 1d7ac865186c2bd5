/**
 * Sign-in with an Ethereum wallet (EIP-4361): challenges, verification, server-side sessions.
 * A session token is 32 random bytes (base64url) given to the browser as an HttpOnly cookie; only
 * its SHA-256 is stored, and the stored hash is compared in constant time.
 */
import { getAddress, hashMessage, sha256, stringToBytes } from "viem/utils";
import type { Account, AccountStore, ChallengeLimits, Session } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { Random } from "../../ports/random.ts";
import { base64UrlEncode, normalizeDid, parseDidPkh } from "../did/mod.ts";
import { classifyAddress } from "../discovery/mod.ts";
import { type Fail, fail, type Ok, ok, type Result } from "../result.ts";
import { buildSiweMessage, SIWE_STATEMENT, validateSiweMessage, verifySiweSignature } from "./siwe.ts";

/** How sign-in behaves; from configuration. */
export type SessionPolicy = {
  readonly sessionTtlHours: number;
  /** How long a challenge may be answered. */
  readonly challengeTtlMinutes: number;
  /** SIWE domains (host[:port]) a challenge may name; empty allows any. */
  readonly siweDomains: readonly string[];
  /**
   * Challenges one client address, and one wallet, may be given per minute (`SIWE_CHALLENGE_RATE_PER_MINUTE`,
   * decisions §15); absent: no rate (tests of other rules; the service always sets it).
   */
  readonly challengeRatePerMinute?: number | undefined;
};

/**
 * How many unanswered challenges one wallet may hold. A new challenge past it evicts the wallet's oldest
 * live one (marks it used) instead of being refused: a real user who lost a tab or reloaded the sign-in page
 * must still get a challenge, and a refusal would let anyone who knows a wallet's address keep it from
 * signing in for a whole challenge lifetime (10 minutes) with five requests (the per-wallet rate can be
 * spent by others too, but only for the minute it counts). Eviction does not free rate: an evicted row is
 * kept, counting against its client's and its wallet's creation rates, until it expires and is pruned, so
 * churn stays bounded by `challengeRatePerMinute` per wallet and per client, and each holds at most about
 * `challengeRatePerMinute × (challengeTtlMinutes + 1)` rows (the prune runs every minute).
 */
export const LIVE_CHALLENGES_PER_WALLET = 5;

/** The window of the challenge creation rates; shorter than a challenge's life, so pruning cannot shrink it. */
const CHALLENGE_RATE_WINDOW_MS = 60_000;

/** What sign-in needs. */
export type SessionDeps = {
  readonly accounts: AccountStore;
  readonly clock: Clock;
  readonly random: Random;
  readonly policy: SessionPolicy;
  /**
   * Smart-contract wallets of the service's chain: a signature that is not the wallet key's own is asked of the
   * wallet contract (ERC-1271), or of the contract its ERC-6492 factory call would deploy. Absent: EOAs only.
   */
  readonly contractWallets?: ContractWalletSignatures | undefined;
};

/** Checks a contract wallet's signature of a digest on one chain (see EasReader.checkContractSignature). */
export type ContractWalletSignatures = {
  readonly chainId: number;
  readonly check: (input: { readonly signer: HexString; readonly digest: HexString; readonly signature: HexString }) => Promise<"valid" | "invalid" | "rpc-error">;
};

/** The challenge a wallet must sign. */
export type ChallengeResponse = { challengeId: string; siweMessage: string; nonce: string; expiresAt: string };

/** Who asks for a challenge, as the transport knows it. */
export type ChallengeCaller = {
  /** The peer address of the connection; undefined when the transport does not know it. */
  readonly clientAddress?: string | undefined;
};

/** Why no challenge was issued; `retryAfterSeconds` is set on `RATE_LIMITED`. */
export type ChallengeFailure = Fail<"INVALID_INPUT" | "INVALID_DID" | "CLIENT_NOT_ALLOWED" | "RATE_LIMITED"> & {
  readonly retryAfterSeconds?: number | undefined;
};

/** A new session: the token goes into the cookie and nowhere else. */
export type SignedIn = { token: string; expiresAtMs: number; account: Account; created: boolean; session: Session };

/** An authenticated request's account and session. */
export type Authenticated = { account: Account; session: Session };

const MAX_FIELD = 2_048;
const TOKEN_BYTES = 32;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** A sign-in signature's longest text: a contract wallet's ERC-6492 form carries its factory call (8 KiB of bytes). */
const MAX_SIGNATURE = 16_386;
const str = (value: unknown): value is string => typeof value === "string" && value.length > 0 && value.length <= MAX_FIELD;
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** SHA-256 of a session token, lowercase hex without 0x: the only form that is stored. */
export function hashSessionToken(token: string): string {
  return sha256(stringToBytes(token)).slice(2);
}

/** Compares two strings without an early exit on the first difference. */
export function constantTimeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/**
 * The key a client's challenge rate is counted under: an IPv4 address (IPv4-mapped IPv6 included) as
 * itself, an IPv6 address by its /64 (one subscriber usually holds a whole /64, so per-address counting
 * would not bound it), anything else `unknown`.
 */
export function clientKeyOf(address: string | undefined): string {
  const parsed = address === undefined ? undefined : classifyAddress(address);
  if (parsed === undefined) return "unknown";
  if (parsed.kind === "ipv4") return parsed.address;
  const groups = ipv6Groups(parsed.address);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`;
}

/** The eight 16-bit groups of a canonical IPv6 address (as `classifyAddress` writes it). */
function ipv6Groups(address: string): number[] {
  const part = (text: string) =>
    text === "" ? [] : text.split(":").flatMap((g) => {
      if (!g.includes(".")) return [parseInt(g, 16)];
      const [a, b, c, d] = g.split(".").map(Number) as [number, number, number, number];
      return [(a << 8) | b, (c << 8) | d];
    });
  const gap = address.indexOf("::");
  if (gap === -1) return part(address);
  const head = part(address.slice(0, gap));
  const tail = part(address.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** Reads the wallet of a challenge request: a did:pkh (eip155) or an address with `chainId`. */
function walletOf(body: Record<string, unknown>): Result<{ address: string; chainId: number }, "INVALID_INPUT" | "INVALID_DID"> {
  const chainId = body.chainId;
  if (chainId !== undefined && (typeof chainId !== "number" || !Number.isSafeInteger(chainId) || chainId <= 0)) {
    return fail("INVALID_INPUT", "chainId must be a positive integer");
  }
  if (body.walletDid !== undefined) {
    if (!str(body.walletDid)) return fail("INVALID_INPUT", "walletDid must be a string");
    const normalized = normalizeDid(body.walletDid);
    const parts = normalized.ok ? parseDidPkh(normalized.value) : undefined;
    if (
      parts === undefined || !parts.ok || parts.value.namespace !== "eip155" ||
      !/^[1-9][0-9]{0,15}$/.test(parts.value.chainId) || !/^0x[0-9a-f]{40}$/.test(parts.value.address)
    ) {
      return fail("INVALID_DID", "walletDid must be a did:pkh:eip155 DID");
    }
    const didChain = Number(parts.value.chainId);
    if (chainId !== undefined && didChain !== chainId) return fail("INVALID_DID", "walletDid chain does not match chainId");
    return ok({ address: parts.value.address, chainId: didChain });
  }
  if (!str(body.address) || !/^0x[0-9a-fA-F]{40}$/.test(body.address)) {
    return fail("INVALID_INPUT", "walletDid (or address) is required");
  }
  if (chainId === undefined) return fail("INVALID_INPUT", "chainId is required with address");
  return ok({ address: body.address, chainId });
}

/** Builds the sign-in use cases. */
export function createSessions(deps: SessionDeps) {
  const { accounts, clock, random, policy } = deps;
  const randomHex = (bytes: number) => hex(random.bytes(bytes));

  const rate = policy.challengeRatePerMinute ?? Number.MAX_SAFE_INTEGER;

  /**
   * Issues a challenge: `{walletDid | address+chainId, domain, uri}`. Refused with `RATE_LIMITED` when the
   * caller's address or the wallet had `challengeRatePerMinute` challenges in the last minute; nothing is
   * stored then.
   */
  async function challenge(body: unknown, caller: ChallengeCaller = {}): Promise<Ok<ChallengeResponse> | ChallengeFailure> {
    if (typeof body !== "object" || body === null || Array.isArray(body)) return fail("INVALID_INPUT", "Body must be a JSON object");
    const input = body as Record<string, unknown>;
    const wallet = walletOf(input);
    if (!wallet.ok) return wallet;
    if (!str(input.domain) || !/^[^\s/?#@]+$/.test(input.domain)) return fail("INVALID_INPUT", "domain must be a host[:port]");
    if (!str(input.uri)) return fail("INVALID_INPUT", "uri is required");
    let uri: URL;
    try {
      uri = new URL(input.uri);
    } catch {
      return fail("INVALID_INPUT", "uri must be an absolute URL");
    }
    if (uri.protocol !== "https:" && uri.protocol !== "http:") return fail("INVALID_INPUT", "uri must be an http(s) URL");
    const domain = input.domain.toLowerCase();
    if (policy.siweDomains.length > 0 && !policy.siweDomains.some((d) => d.toLowerCase() === domain)) {
      return fail("CLIENT_NOT_ALLOWED", "Sign-in domain not allowed");
    }
    const now = clock.nowMs();
    const expiresAtMs = now + policy.challengeTtlMinutes * 60_000;
    const nonce = randomHex(12);
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
    const id = randomHex(16);
    const limits: ChallengeLimits = {
      client: clientKeyOf(caller.clientAddress),
      perClient: rate,
      perWallet: rate,
      windowMs: CHALLENGE_RATE_WINDOW_MS,
      livePerWallet: LIVE_CHALLENGES_PER_WALLET,
    };
    const created = await accounts.createChallenge({
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

  /**
   * Exchanges a signed challenge for a session: `{challengeId, siweMessage, signature, walletDid?}`.
   * The message must be the challenge's text exactly; the signature is checked before the challenge
   * is used up, so a forged request cannot burn someone's challenge. The first sign-in creates the
   * account on the `free` plan.
   */
  async function verify(
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
    const found = await accounts.findChallenge(input.challengeId);
    if (found === undefined || found.usedAtMs !== null) return fail("INVALID_CHALLENGE", "Unknown or already used challenge");
    const now = clock.nowMs();
    if (now >= found.expiresAtMs) return fail("CHALLENGE_EXPIRED", "Challenge expired");
    if (input.siweMessage !== found.message) return fail("INVALID_CHALLENGE", "siweMessage does not match the challenge");
    if (input.walletDid !== undefined) {
      const wallet = walletOf({ walletDid: input.walletDid });
      if (!wallet.ok || wallet.value.address.toLowerCase() !== found.address || wallet.value.chainId !== found.chainId) {
        return fail("INVALID_CHALLENGE", "walletDid does not match the challenge");
      }
    }
    const signed = await checkSignature(found.message, signatureText, found.address, found.chainId);
    if (signed === "rpc-error") return fail("NETWORK_ERROR", "Could not ask the wallet contract about the signature; try again");
    if (signed === "invalid") return fail("INVALID_SIGNATURE", "Signature does not match the challenge's wallet");
    // Registering a wallet that has an account is refused before the challenge is used up: the client can verify instead.
    if (options.register && (await accounts.findAccount(found.address)) !== undefined) {
      return fail("ACCOUNT_ALREADY_EXISTS", "This wallet already has an account: sign in with verify");
    }
    if (!(await accounts.consumeChallenge(found.id, now))) return fail("INVALID_CHALLENGE", "Unknown or already used challenge");
    const existing = await accounts.findAccount(found.address);
    const account = existing ?? await accounts.findOrCreateAccount(found.address, randomHex(16), now);
    const token = base64UrlEncode(random.bytes(TOKEN_BYTES));
    const expiresAtMs = now + policy.sessionTtlHours * 3_600_000;
    const session: Session = {
      tokenHash: hashSessionToken(token),
      accountId: account.id,
      createdAtMs: now,
      expiresAtMs,
      revokedAtMs: null,
      walletProviderId: (walletProviderId as string | undefined) ?? null,
      executionMode: (executionMode as Session["executionMode"]) ?? null,
    };
    await accounts.saveSession(session);
    return ok({ token, expiresAtMs, account, created: existing === undefined, session });
  }

  /**
   * An EOA's personal_sign is checked locally; anything else, for a wallet on the service's chain, is asked of the
   * wallet contract over the EIP-191 digest (deployed: ERC-1271; counterfactual: ERC-6492), as EAS would.
   */
  async function checkSignature(message: string, signature: string, address: string, chainId: number): Promise<"valid" | "invalid" | "rpc-error"> {
    if (await verifySiweSignature(message, signature, address)) return "valid";
    const wallets = deps.contractWallets;
    if (wallets === undefined || chainId !== wallets.chainId) return "invalid";
    if (!/^0x(?:[0-9a-fA-F]{2}){1,8192}$/.test(signature)) return "invalid";
    return await wallets.check({ signer: address as HexString, digest: hashMessage(message), signature: signature as HexString });
  }

  /** The account behind a session cookie, or why there is none. */
  async function authenticate(token: string | undefined): Promise<Result<Authenticated, "UNAUTHENTICATED">> {
    if (token === undefined || token === "") return fail("UNAUTHENTICATED", "Unauthenticated");
    if (!TOKEN.test(token)) return fail("UNAUTHENTICATED", "Invalid session");
    const hash = hashSessionToken(token);
    const found = await accounts.findSession(hash);
    if (found === undefined || !constantTimeEqual(found.session.tokenHash, hash)) {
      return fail("UNAUTHENTICATED", "Invalid session");
    }
    if (found.session.revokedAtMs !== null) return fail("UNAUTHENTICATED", "Session revoked");
    if (clock.nowMs() >= found.session.expiresAtMs) return fail("UNAUTHENTICATED", "Session expired");
    return ok(found);
  }

  /** Revokes the session of a token, if any; logging out twice is harmless. */
  async function logout(token: string | undefined): Promise<void> {
    if (token === undefined || !TOKEN.test(token)) return;
    await accounts.revokeSession(hashSessionToken(token), clock.nowMs());
  }

  return { challenge, verify, authenticate, logout };
}

/** The sign-in use cases. */
export type Sessions = ReturnType<typeof createSessions>;
