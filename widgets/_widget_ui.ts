/** The review widget's state, its text-only page helpers and the sentences it shows a person. */
import type { PreparedDelegatedAttestation } from "../client/delegated_attest.ts";
import { AtsClientError } from "../client/errors.ts";
import type { Eip1193Provider } from "../client/wallet.ts";
import { OMATRUST_CLOSE } from "../client/widget_protocol.ts";
import type { EmbedParams } from "./embed_params.ts";

/** Who signs: not known yet, the host page (integrated), or a wallet in the frame (basic). */
export type Mode = "detecting" | "integrated" | "basic";

/** What the service told the page about its chain (the `<meta>` tags). */
export type WidgetSettings = {
  readonly chainId: number;
  readonly chainName: string;
  readonly easAddress: `0x${string}`;
  readonly reviewSchemaUid: `0x${string}`;
};

/** A signed review as sent: the body, its `Idempotency-Key`, its submission once named, and what the person wrote. */
export type SentReview = {
  readonly body: { readonly prepared: PreparedDelegatedAttestation; readonly signature: string; readonly attester: `0x${string}` };
  readonly key: string;
  submissionId?: string | undefined;
  readonly rating: number;
  readonly text: string;
};

/** One widget on its page: the parameters it was served for, its elements, and what the person has done so far. */
export type WidgetState = {
  readonly params: EmbedParams;
  readonly settings: WidgetSettings;
  readonly root: HTMLElement;
  readonly form: HTMLFormElement;
  readonly body: HTMLTextAreaElement;
  readonly connect: HTMLButtonElement;
  mode: Mode;
  wallet: `0x${string}` | undefined;
  prepared: PreparedDelegatedAttestation | undefined;
  busy: boolean;
  /** The service's answer about the wallet's use of the app (decisions §29), for the wallet it was asked about. */
  interaction: { wallet: string; txHash?: string | undefined } | undefined;
  /**
   * The signed review whose send's outcome is not known (widgets/send_outcome.ts): sent again under its key, or its
   * submission read, by "Check again"; never signed again. Undefined once its outcome is known.
   */
  sent: SentReview | undefined;
  /** Signing requests waiting for the host's answer, by id. */
  readonly pending: Map<string, { resolve: (signature: string) => void; reject: (error: Error) => void }>;
};

export const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
export const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
export const framed = window.parent !== window;

/** The wallet the browser injects into the frame, if any. */
export const provider = () => (window as unknown as { ethereum?: Eip1193Provider }).ethereum;

/** The stars chosen, 0 when none. */
export const rating = (state: WidgetState) => Number(state.form.querySelector<HTMLInputElement>("input[name=rating]:checked")?.value ?? 0);

/** Tells the host page to close the widget; the one message the widget sends besides the protocol's requests. */
export function close(): void {
  if (framed) window.parent.postMessage({ type: OMATRUST_CLOSE }, "*");
}

/** Shows one view of the widget and hides the others. */
export function show(view: string): void {
  document.querySelectorAll<HTMLElement>(".view").forEach((section) => (section.hidden = section.id !== view));
  document.documentElement.dataset.view = view;
}

/** A rating as stars and words. */
export function stars(rating: number): string {
  return `${"★".repeat(rating)}${"☆".repeat(5 - rating)} (${rating} of 5)`;
}

/** A refusal the widget itself raises, its message meant for the person. */
export class WidgetError extends Error {}

/** A sentence for the person: a relay refusal with its code, a wallet's refusal, anything else without internals. */
export function explain(error: unknown): string {
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

/** The form's error line: shown with `text`, hidden without. */
export function formError(text: string | undefined): void {
  const p = byId("form-error");
  p.hidden = text === undefined;
  p.textContent = text ?? "";
}

/** The progress view with what is happening now. */
export function progress(text: string): void {
  show("progress-view");
  byId("progress-text").textContent = text;
}

/** The error view with the failure as a sentence; the widget is free again. */
export function fail(state: WidgetState, error: unknown): void {
  state.busy = false;
  byId("error-text").textContent = explain(error);
  show("error-view");
}

/** Switches who signs and says so under the form. */
export function setMode(state: WidgetState, next: Mode): void {
  state.mode = next;
  state.root.dataset.mode = next;
  const text = byId("mode-text");
  if (next === "integrated") {
    state.connect.hidden = true;
    text.textContent = state.wallet === undefined
      ? "The host page signs, but did not name its wallet (the wallet parameter), so the widget cannot check the signer."
      : "Signed by the host page's wallet.";
  } else if (next === "basic") {
    state.connect.hidden = provider() === undefined || state.wallet !== undefined;
    text.textContent = provider() === undefined
      ? "No wallet found in this browser. Open this page with a wallet extension to sign."
      : "Signed by your browser wallet.";
  }
}
