/** The wallet the visitor signed in with: shared by the account and keys panels, which sign with it. */
import { AtsClientError, type WalletSigner } from "../client/mod.ts";
import { CHAIN_ID } from "./_dom.ts";

let signer: WalletSigner | undefined;

/** The wallet signed in with in this visit, if any (a session from an earlier visit has none: signing needs the wallet). */
export const currentSigner = (): WalletSigner | undefined => signer;

/** Records the wallet signed in with, or none after signing out. */
export function setSigner(next: WalletSigner | undefined): void {
  signer = next;
}

/** The session's wallet as the account says it (a session from an earlier visit has no signer, but has a wallet). */
let sessionWallet: string | undefined;

/** Records the account's wallet (from its overview), or none after signing out. */
export function setSessionWallet(address: string | undefined): void {
  sessionWallet = address;
}

/**
 * The signed-in wallet's did:pkh: the one signed in with during this visit, else the session's own (what needs no
 * signature, checking ownership or asking for a witness, works after a reload too); "" when neither is known.
 */
export const walletDid = () => {
  const address = signer?.address ?? sessionWallet;
  return address === undefined ? "" : `did:pkh:eip155:${CHAIN_ID}:${address.toLowerCase()}`;
};

export function needSigner(): WalletSigner {
  if (signer === undefined) throw new AtsClientError("UNAUTHENTICATED", "Sign in with a wallet first");
  return signer;
}
