/**
 * The review widget's script (decisions §29), bundled for browsers by widgets/assets.ts. It finds out who signs
 * (the host page through the signing bridge, else a wallet in the frame: host_signing.ts), builds the user review,
 * shows it for confirmation, gets it signed, checks the signer is the wallet it showed, and sends it to the service's
 * public relay (review_write.ts). Every text that came from the query, the host, a wallet or the network is put on
 * the page with `textContent`, never as HTML. Messages are taken only from the parent window, and only the protocol's
 * replies.
 */
import { startBuilder } from "./builder.ts";
import { type EmbedParams, parseEmbedParams } from "./embed_params.ts";
import { byId, close, explain, formError, meta, provider, rating, show, stars, WidgetError, type WidgetState } from "./_widget_ui.ts";
import { announceToHost, onHostMessage } from "./host_signing.ts";
import { checkAgain, prepareReview, signAndSend } from "./review_write.ts";

/** An icon that cannot load is removed rather than shown broken (it may have failed before this script ran). */
function guardIcon(): void {
  const icon = document.getElementById("app-icon") as HTMLImageElement | null;
  const replaceIcon = () => {
    const fallback = document.createElement("span");
    fallback.className = "icon fallback";
    fallback.setAttribute("aria-hidden", "true");
    fallback.textContent = "★";
    icon?.replaceWith(fallback);
  };
  if (icon !== null) {
    if (icon.complete && icon.naturalWidth === 0) replaceIcon();
    else icon.addEventListener("error", replaceIcon);
  }
}

/**
 * Proof of interaction (decisions §29): asked of the service once the wallet is known; a verified transaction goes
 * into the review as a tx-interaction proof. Anything else is "not checked" or "none", and the review can still be
 * written.
 *
 * The embed's `explorer` goes along only for a wallet the embedding page gave (its `wallet` parameter): it knows that
 * one already. A wallet connected in the frame (basic mode) is the user's secret from the page, and the service asks
 * the explorer named with the wallet's address in the URL, so a hostile page naming an explorer of its own (a path per
 * visitor) learned every address connected in it. That wallet is checked with the operator's explorers only.
 */
async function checkInteraction(state: WidgetState, address: `0x${string}`, pageKnowsWallet: boolean): Promise<void> {
  const { params } = state;
  const text = byId("interaction-text");
  text.hidden = false;
  text.textContent = "Checking your use of this app…";
  const query = new URLSearchParams({ chain: String(params.chainId), wallet: address, contract: params.contract });
  if (params.explorer !== undefined && pageKnowsWallet) query.set("explorer", params.explorer);
  let answer: { status?: unknown; txHash?: unknown } = {};
  try {
    const response = await fetch(`/v1/interactions?${query}`, { headers: { accept: "application/json" } });
    if (response.ok) answer = await response.json() as typeof answer;
  } catch {
    // Not checked: the review can still be written.
  }
  if (state.wallet !== address) return;
  const verified = answer.status === "verified" && typeof answer.txHash === "string";
  state.interaction = { wallet: address, txHash: verified ? answer.txHash as string : undefined };
  byId("verified").hidden = !verified;
  state.root.dataset.interaction = verified ? "verified" : answer.status === "none" ? "none" : "not-checked";
  text.textContent = verified
    ? "Verified user: this wallet has used the app's contract; the review says so."
    : answer.status === "none"
    ? "No transaction of this wallet with the app's contract was found."
    : "Use of the app not checked.";
}

/** The stars: the chosen one and those below it lit. */
function paintStars(state: WidgetState): void {
  const value = rating(state);
  state.form.querySelectorAll<HTMLElement>(".star").forEach((label) => label.classList.toggle("on", Number(label.dataset.star) <= value));
  byId("rating-text").textContent = value === 0 ? "Choose 1 to 5 stars" : stars(value);
}

/** Basic mode's Connect button: the wallet's first account becomes the one that signs. */
async function connectWallet(state: WidgetState): Promise<void> {
  const injected = provider();
  if (injected === undefined) return;
  try {
    const accounts = await injected.request({ method: "eth_requestAccounts" });
    const first = Array.isArray(accounts) ? accounts[0] : undefined;
    if (typeof first !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(first)) throw new WidgetError("The wallet shared no account.");
    state.wallet = first as `0x${string}`;
    byId("wallet-address").textContent = state.wallet;
    void checkInteraction(state, state.wallet, false);
    state.connect.hidden = true;
    formError(undefined);
  } catch (error) {
    formError(explain(error));
  }
}

function start(params: EmbedParams): void {
  const state: WidgetState = {
    params,
    settings: {
      chainId: Number(meta("ats-chain-id")),
      chainName: meta("ats-chain-name"),
      easAddress: meta("ats-eas") as `0x${string}`,
      reviewSchemaUid: meta("ats-review-schema") as `0x${string}`,
    },
    root: byId("widget"),
    form: byId<HTMLFormElement>("review-form"),
    body: byId<HTMLTextAreaElement>("review-body"),
    connect: byId<HTMLButtonElement>("connect"),
    mode: "detecting",
    wallet: params.wallet,
    prepared: undefined,
    busy: false,
    interaction: undefined,
    sent: undefined,
    pending: new Map(),
  };
  guardIcon();
  if (state.wallet !== undefined) void checkInteraction(state, state.wallet, true);
  state.form.addEventListener("change", () => {
    paintStars(state);
    if (rating(state) > 0) formError(undefined);
  });
  state.body.addEventListener("input", () => {
    byId("body-count").textContent = String(state.body.value.length);
  });
  state.connect.addEventListener("click", () => void connectWallet(state));
  announceToHost(state);
  window.addEventListener("message", (event: MessageEvent) => onHostMessage(state, event));
  state.form.addEventListener("submit", (event) => {
    event.preventDefault();
    void prepareReview(state);
  });
  byId("confirm-back").addEventListener("click", () => show("review-form"));
  byId("retry").addEventListener("click", () => show("review-form"));
  byId("confirm-sign").addEventListener("click", () => void signAndSend(state));
  byId("check-again").addEventListener("click", () => void checkAgain(state));
  show("review-form");
}

function main(): void {
  document.querySelectorAll<HTMLButtonElement>("[data-close]").forEach((button) => button.addEventListener("click", close));
  if (document.getElementById("widget") !== null) {
    const parsed = parseEmbedParams(new URLSearchParams(location.search));
    // The service rendered the widget for these very parameters; a mismatch is a page not served by it.
    if (parsed.ok) start(parsed.value);
  }
  if (document.getElementById("builder") !== null) startBuilder();
  document.documentElement.dataset.ready = "true";
}

main();
