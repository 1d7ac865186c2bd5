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

/** The signed-in wallet's did:pkh, or "" when no wallet signed in during this visit. */
export const walletDid = () => (signer ? `did:pkh:eip155:${CHAIN_ID}:${signer.address.toLowerCase()}` : "");

export function needSigner(): WalletSigner {
  if (signer === undefined) throw new AtsClientError("UNAUTHENTICATED", "Sign in with a wallet first");
  return signer;
}
