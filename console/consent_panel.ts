/** The consent page of /oauth/authorize (decisions §19): wallet sign-in when no session is present, then the page again. */
import { type AnnouncedWallet, requestWalletAddress, signInWithEthereum, walletSigner, watchWallets } from "../client/mod.ts";
import { h, CHAIN_ID, api, setStatus, busy } from "./_dom.ts";

export function setUpConsent(): void {
  const list = document.getElementById("wallet-list");
  if (list === null) return;
  const render = (wallets: readonly AnnouncedWallet[]) => {
    if (wallets.length === 0) {
      list.replaceChildren(h("p", { class: "help", id: "no-wallet" }, "No wallet found in this browser. Install a browser wallet and reload."));
      return;
    }
    list.replaceChildren(...wallets.map((wallet) => {
      const button = h("button", { type: "button", "data-wallet": wallet.info.rdns || wallet.info.uuid }, `Sign in with ${wallet.info.name}`);
      button.addEventListener("click", () =>
        void busy(null, "account-status", `Asking ${wallet.info.name} for an account…`, async () => {
          const address = await requestWalletAddress(wallet.provider);
          const next = walletSigner(wallet.provider, address);
          setStatus("account-status", "progress", "Sign the sign-in message in your wallet…");
          await signInWithEthereum({ walletDid: `did:pkh:eip155:${CHAIN_ID}:${address}`, domain: location.host, uri: `${location.origin}/`, signMessage: next.signMessage }, api);
          location.reload();
          return `Signed in as ${address}`;
        }));
      return button;
    }));
  };
  render([]);
  watchWallets(window, render);
}
