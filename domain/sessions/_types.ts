/** The types sign-in's files share. */
import type { Account, AccountStore, Session } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { Random } from "../../ports/random.ts";
import type { Fail } from "../result.ts";

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
