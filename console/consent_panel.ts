/** The consent page of /oauth/authorize (decisions §19): wallet sign-in when no session is present, then the page again. */
import { type AnnouncedWallet, requestWalletAddress, signInWithEthereum, walletSigner, watchWallets } from "../client/mod.ts";
import { h, CHAIN_ID, api, setStatus, busy } from "./_dom.ts";

/** How long the consent page must have been visible and focused, uninterrupted, before Allow can be pressed. */
export const ALLOW_DELAY_MS = 1_000;

/**
 * Allow is enabled only once the page has been visible and focused for {@link ALLOW_DELAY_MS}, and disabled again
 * whenever it loses either. Another site could open this page behind a window of its own and close that window on
 * the first click of a double-click, so the second click landed on Allow, a spot it could predict: the application
 * then held every scope it asked for.
 */
function armAllow(): void {
  const allow = document.getElementById("consent-approve") as HTMLButtonElement | null;
  if (allow === null) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const disarm = () => {
    allow.disabled = true;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const arm = () => {
    disarm();
    if (document.visibilityState !== "visible" || !document.hasFocus()) return;
    timer = setTimeout(() => {
      allow.disabled = false;
    }, ALLOW_DELAY_MS);
  };
  document.addEventListener("visibilitychange", arm);
  window.addEventListener("focus", arm);
  window.addEventListener("blur", disarm);
  arm();
}

export function setUpConsent(): void {
  armAllow();
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
