/**
 * The console's script, bundled for browsers at build time (console/assets.ts): the tabs, and one file per panel
 * (`*_panel.ts`). It uses only the browser-ready client helpers (client/mod.ts). Everything that came from the
 * network is put on the page as text (`textContent` through `h` in `_dom.ts`), never as HTML.
 */
import { setUpAccount } from "./account_panel.ts";
import { setUpChainPicker } from "./_chain.ts";
import { setUpArtifact } from "./artifact_panel.ts";
import { setUpAttestations } from "./attestations_panel.ts";
import { setUpConsent } from "./consent_panel.ts";
import { setUpDomain } from "./domain_panel.ts";
import { setUpKeys } from "./keys_panel.ts";
import { setUpWebhooks } from "./webhooks_panel.ts";

/** The tabs, each a `#name` in the address; any other shows the first. */
const VIEWS = ["domain", "artifact", "attestations", "account", "keys", "webhooks"] as const;

function showView(): void {
  const wanted = location.hash.slice(1);
  const view = (VIEWS as readonly string[]).includes(wanted) ? wanted : "domain";
  for (const section of Array.from(document.querySelectorAll<HTMLElement>("[data-view]"))) section.hidden = section.dataset.view !== view;
  for (const link of Array.from(document.querySelectorAll<HTMLAnchorElement>("nav a[data-tab]"))) {
    if (link.dataset.tab === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function start(): void {
  if (document.body.dataset.page === "oauth-consent") {
    setUpConsent();
    document.documentElement.dataset.ready = "true";
    return;
  }
  window.addEventListener("hashchange", showView);
  showView();
  setUpChainPicker();
  setUpDomain();
  setUpArtifact();
  setUpAttestations();
  setUpAccount();
  setUpKeys();
  setUpWebhooks();
  document.documentElement.dataset.ready = "true";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
