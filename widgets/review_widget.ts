/**
 * The review widget's script (decisions §29), bundled for browsers by widgets/assets.ts. It finds out who signs
 * (the host page through the signing bridge, else a wallet in the frame), builds the user review, shows it for
 * confirmation, gets it signed, checks the signer is the wallet it showed, and sends it to the service's public
 * relay. Every text that came from the query, the host, a wallet or the network is put on the page with
 * `textContent`, never as HTML. Messages are taken only from the parent window, and only the protocol's replies.
 */
import { recoverTypedDataAddress } from "viem";
import {
  fetchNonce,
  type PreparedDelegatedAttestation,
  prepareDelegatedAttestation,
  signableTypedData,
  submitDelegatedAttestation,
} from "../client/delegated_attest.ts";
import { AtsClientError } from "../client/errors.ts";
import { type Eip1193Provider, walletSigner } from "../client/wallet.ts";
import {
  HOST_READY_TIMEOUT_MS,
  OMATRUST_CLOSE,
  OMATRUST_HOST_READY,
  OMATRUST_READY,
  OMATRUST_SIGN_TYPED_DATA,
  OMATRUST_SIGNATURE,
  OMATRUST_SIGNATURE_ERROR,
  READY_SCHEDULE_MS,
} from "../client/widget_protocol.ts";
import { buildReviewData, transactionProof } from "../domain/reviews/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { startBuilder } from "./builder.ts";
import { type EmbedParams, parseEmbedParams } from "./embed_params.ts";

/** How long the host page has to answer a signing request (a person may take a while in their wallet). */
const HOST_SIGNATURE_TIMEOUT_MS = 120_000;

type Mode = "detecting" | "integrated" | "basic";

const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
const framed = window.parent !== window;

/** Tells the host page to close the widget; the one message the widget sends besides the protocol's requests. */
function close(): void {
  if (framed) window.parent.postMessage({ type: OMATRUST_CLOSE }, "*");
}

function show(view: string): void {
  document.querySelectorAll<HTMLElement>(".view").forEach((section) => (section.hidden = section.id !== view));
  document.documentElement.dataset.view = view;
}

function stars(rating: number): string {
  return `${"★".repeat(rating)}${"☆".repeat(5 - rating)} (${rating} of 5)`;
}

/** A refusal the widget itself raises, its message meant for the person. */
class WidgetError extends Error {}

/** A sentence for the person: a relay refusal with its code, a wallet's refusal, anything else without internals. */
function explain(error: unknown): string {
  if (error instanceof WidgetError) return error.message;
  if (error instanceof AtsClientError) {
    if (error.code === "WALLET_ERROR") return error.message;
    if (error.code === "NETWORK_ERROR" && error.status === undefined) return "The service could not be reached. Check the connection and try again.";
    return `${error.message} (${error.code})`;
  }
  const text = error instanceof Error ? error.message : String(error);
  if (/user (rejected|denied)|ACTION_REJECTED|4001/i.test(text)) return "The signature request was rejected.";
  return text === "" ? "Something went wrong." : text;
}

function start(params: EmbedParams): void {
  const settings = {
    chainId: Number(meta("ats-chain-id")),
    chainName: meta("ats-chain-name"),
    easAddress: meta("ats-eas") as `0x${string}`,
    reviewSchemaUid: meta("ats-review-schema") as `0x${string}`,
  };
  const reviewSchema = findSchemaByName("user-review")!;
  const root = byId("widget");
  let mode: Mode = "detecting";
  let wallet: `0x${string}` | undefined = params.wallet;
  let prepared: PreparedDelegatedAttestation | undefined;
  let busy = false;

  const form = byId<HTMLFormElement>("review-form");
  const body = byId<HTMLTextAreaElement>("review-body");
  const connect = byId<HTMLButtonElement>("connect");
  const rating = () => Number(form.querySelector<HTMLInputElement>("input[name=rating]:checked")?.value ?? 0);
  const provider = () => (window as unknown as { ethereum?: Eip1193Provider }).ethereum;

  // An icon that cannot load is removed rather than shown broken (it may have failed before this script ran).
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

  const setMode = (next: Mode) => {
    mode = next;
    root.dataset.mode = next;
    const text = byId("mode-text");
    if (next === "integrated") {
      connect.hidden = true;
      text.textContent = wallet === undefined
        ? "The host page signs, but did not name its wallet (the wallet parameter), so the widget cannot check the signer."
        : "Signed by the host page's wallet.";
    } else if (next === "basic") {
      connect.hidden = provider() === undefined || wallet !== undefined;
      text.textContent = provider() === undefined
        ? "No wallet found in this browser. Open this page with a wallet extension to sign."
        : "Signed by your browser wallet.";
    }
  };

  // Proof of interaction (decisions §29): asked of the service once the wallet is known; a verified transaction
  // goes into the review as a tx-interaction proof. Anything else is "not checked" or "none", and the review can
  // still be written.
  let interaction: { wallet: string; txHash?: string | undefined } | undefined;
  const checkInteraction = async (address: `0x${string}`) => {
    const text = byId("interaction-text");
    text.hidden = false;
    text.textContent = "Checking your use of this app…";
    const query = new URLSearchParams({ chain: String(params.chainId), wallet: address, contract: params.contract });
    if (params.explorer !== undefined) query.set("explorer", params.explorer);
    let answer: { status?: unknown; txHash?: unknown } = {};
    try {
      const response = await fetch(`/v1/interactions?${query}`, { headers: { accept: "application/json" } });
      if (response.ok) answer = await response.json() as typeof answer;
    } catch {
      // Not checked: the review can still be written.
    }
    if (wallet !== address) return;
    const verified = answer.status === "verified" && typeof answer.txHash === "string";
    interaction = { wallet: address, txHash: verified ? answer.txHash as string : undefined };
    byId("verified").hidden = !verified;
    root.dataset.interaction = verified ? "verified" : answer.status === "none" ? "none" : "not-checked";
    text.textContent = verified
      ? "Verified user: this wallet has used the app's contract; the review says so."
      : answer.status === "none"
      ? "No transaction of this wallet with the app's contract was found."
      : "Use of the app not checked.";
  };
  const showWallet = () => {
    byId("wallet-address").textContent = wallet ?? "No wallet connected";
    if (wallet !== undefined) void checkInteraction(wallet);
  };
  if (wallet !== undefined) void checkInteraction(wallet);

  const formError = (text: string | undefined) => {
    const p = byId("form-error");
    p.hidden = text === undefined;
    p.textContent = text ?? "";
  };

  // The stars: the chosen one and those below it lit.
  const paintStars = () => {
    const value = rating();
    form.querySelectorAll<HTMLElement>(".star").forEach((label) => label.classList.toggle("on", Number(label.dataset.star) <= value));
    byId("rating-text").textContent = value === 0 ? "Choose 1 to 5 stars" : stars(value);
  };
  form.addEventListener("change", () => {
    paintStars();
    if (rating() > 0) formError(undefined);
  });
  body.addEventListener("input", () => {
    byId("body-count").textContent = String(body.value.length);
  });

  connect.addEventListener("click", async () => {
    const injected = provider();
    if (injected === undefined) return;
    try {
      const accounts = await injected.request({ method: "eth_requestAccounts" });
      const first = Array.isArray(accounts) ? accounts[0] : undefined;
      if (typeof first !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(first)) throw new WidgetError("The wallet shared no account.");
      wallet = first as `0x${string}`;
      showWallet();
      connect.hidden = true;
      formError(undefined);
    } catch (error) {
      formError(explain(error));
    }
  });

  // ---- Who signs: the host page (integrated mode) or a wallet in the frame (basic mode) -------------------------
  const timers: number[] = [];
  if (framed) {
    for (const delay of READY_SCHEDULE_MS) timers.push(window.setTimeout(() => window.parent.postMessage({ type: OMATRUST_READY }, "*"), delay));
    timers.push(window.setTimeout(() => {
      if (mode === "detecting") setMode("basic");
    }, HOST_READY_TIMEOUT_MS));
  } else {
    setMode("basic");
  }
  // Signing requests waiting for the host's answer, by id.
  const pending = new Map<string, { resolve: (signature: string) => void; reject: (error: Error) => void }>();
  window.addEventListener("message", (event: MessageEvent) => {
    // Only the parent window speaks the protocol to the widget; anything else is ignored.
    if (!framed || event.source !== window.parent) return;
    const data = event.data as { type?: unknown; id?: unknown; signature?: unknown; error?: unknown } | null;
    if (typeof data !== "object" || data === null) return;
    if (data.type === OMATRUST_HOST_READY) {
      if (mode !== "integrated" && !busy) setMode("integrated");
      return;
    }
    if (typeof data.id !== "string") return;
    const waiting = pending.get(data.id);
    if (waiting === undefined) return;
    if (data.type === OMATRUST_SIGNATURE) {
      pending.delete(data.id);
      if (typeof data.signature === "string" && /^0x[0-9a-fA-F]{130}$/.test(data.signature)) waiting.resolve(data.signature);
      else waiting.reject(new WidgetError("The host page returned something that is not a signature."));
    } else if (data.type === OMATRUST_SIGNATURE_ERROR) {
      pending.delete(data.id);
      const reason = typeof data.error === "string" && data.error !== "" ? data.error.slice(0, 300) : "no reason given";
      waiting.reject(new WidgetError(`The host page did not sign: ${reason}`));
    }
  });

  const askHost = (typed: ReturnType<typeof signableTypedData>) =>
    new Promise<string>((resolve, reject) => {
      // getRandomValues, not randomUUID: a widget framed by an http page is not a secure context.
      const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
      const timer = window.setTimeout(() => {
        pending.delete(id);
        reject(new WidgetError("The host page did not answer the signing request."));
      }, HOST_SIGNATURE_TIMEOUT_MS);
      pending.set(id, {
        resolve: (signature) => (window.clearTimeout(timer), resolve(signature)),
        reject: (error) => (window.clearTimeout(timer), reject(error)),
      });
      window.parent.postMessage({ type: OMATRUST_SIGN_TYPED_DATA, id, domain: typed.domain, types: typed.types, message: typed.message }, "*");
    });

  const askWallet = async (typed: ReturnType<typeof signableTypedData>, signer: `0x${string}`) => {
    const injected = provider();
    if (injected === undefined) throw new WidgetError("No wallet found in this browser.");
    await injected.request({ method: "eth_requestAccounts" });
    try {
      await injected.request({ method: "wallet_switchEthereumChain", params: [{ chainId: `0x${settings.chainId.toString(16)}` }] });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 4001) throw new WidgetError(`The wallet must be on ${settings.chainName} to sign; the switch was rejected.`);
      throw new WidgetError(`The wallet could not switch to ${settings.chainName} (chain ${settings.chainId}).`);
    }
    return await walletSigner(injected, signer).signTypedData(typed);
  };

  // ---- Write: prepare and confirm, sign, check the signer, send --------------------------------------------------
  const progress = (text: string) => {
    show("progress-view");
    byId("progress-text").textContent = text;
  };
  const fail = (error: unknown) => {
    busy = false;
    byId("error-text").textContent = explain(error);
    show("error-view");
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) return;
    const value = rating();
    if (value < 1) return formError("Choose a rating from 1 to 5 stars.");
    if (mode === "detecting") return formError("Still looking for the host page's wallet; try again in a moment.");
    if (wallet === undefined) {
      return formError(mode === "integrated" ? "The host page did not name its wallet, so this review cannot be signed here." : "Connect a wallet first.");
    }
    formError(undefined);
    busy = true;
    try {
      progress("Preparing the review…");
      const txHash = interaction?.wallet === wallet ? interaction.txHash : undefined;
      const proof = txHash === undefined ? undefined : transactionProof({ chainId: params.chainId, txHash, proofType: "tx-interaction" });
      const proofs = proof !== undefined && proof.ok ? [proof.value] : [];
      const data = buildReviewData({ subject: params.subject, ratingValue: value, reviewBody: body.value, version: "1.0.0", proofs });
      if (!data.ok) throw new WidgetError(data.message);
      const nonce = await fetchNonce(wallet, { baseUrl: location.origin });
      if (nonce.chainId !== settings.chainId || nonce.easAddress.toLowerCase() !== settings.easAddress.toLowerCase()) {
        throw new WidgetError("The service answered for another chain; reload the widget.");
      }
      prepared = prepareDelegatedAttestation({
        schema: { uid: settings.reviewSchemaUid, schema: reviewSchema.schema, revocable: reviewSchema.revocable },
        data: data.value,
        attester: wallet,
        nonce: nonce.nonce,
        chainId: nonce.chainId,
        easAddress: nonce.easAddress,
      });
      byId("confirm-chain").textContent = `${settings.chainName} (chain ${settings.chainId})`;
      byId("confirm-contract").textContent = settings.easAddress;
      byId("confirm-subject").textContent = params.subject;
      byId("confirm-rating").textContent = stars(value);
      byId("confirm-body").textContent = body.value === "" ? "(no text)" : body.value;
      byId("confirm-proof").textContent = proofs.length === 0 ? "(none)" : `Use of the app: transaction ${txHash} on chain ${params.chainId}`;
      busy = false;
      show("confirm-view");
    } catch (error) {
      fail(error);
    }
  });

  byId("confirm-back").addEventListener("click", () => show("review-form"));
  byId("retry").addEventListener("click", () => show("review-form"));

  byId("confirm-sign").addEventListener("click", async () => {
    if (busy || prepared === undefined || wallet === undefined) return;
    busy = true;
    const shown = wallet;
    try {
      const typed = signableTypedData(prepared);
      progress(mode === "integrated" ? "Waiting for the host page's wallet to sign…" : "Sign the review in your wallet…");
      const signature = mode === "integrated" ? await askHost(typed) : await askWallet(typed, shown);
      progress("Checking the signature…");
      let signer: string;
      try {
        signer = await recoverTypedDataAddress({ ...typed, signature: signature as `0x${string}` });
      } catch {
        throw new WidgetError("The signature is not a valid signature of this review.");
      }
      if (signer.toLowerCase() !== shown.toLowerCase()) {
        throw new WidgetError(`The review was signed by ${signer}, not by the wallet shown (${shown}); nothing was sent.`);
      }
      progress("Sending the review…");
      const result = await submitDelegatedAttestation({ prepared, signature, attester: shown }, { baseUrl: location.origin });
      byId("success-rating").textContent = stars(rating());
      byId("success-body").textContent = body.value === "" ? "(no text)" : body.value;
      byId("success-wallet").textContent = shown;
      byId("success-uid").textContent = result.uid ?? "(not known yet)";
      byId("success-tx").textContent = result.txHash;
      busy = false;
      show("success-view");
    } catch (error) {
      fail(error);
    }
  });

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
