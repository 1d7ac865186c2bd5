/**
 * Who signs the review: the host page through the signing bridge (integrated mode), else a wallet in the frame
 * (basic mode). Messages are taken only from the parent window, and only the protocol's replies.
 */
import type { signableTypedData } from "../client/delegated_attest.ts";
import { walletSigner } from "../client/wallet.ts";
import {
  HOST_READY_TIMEOUT_MS,
  OMATRUST_HOST_READY,
  OMATRUST_READY,
  OMATRUST_SIGN_TYPED_DATA,
  OMATRUST_SIGNATURE,
  OMATRUST_SIGNATURE_ERROR,
  READY_SCHEDULE_MS,
} from "../client/widget_protocol.ts";
import { framed, provider, setMode, WidgetError, type WidgetState } from "./_widget_ui.ts";

/** How long the host page has to answer a signing request (a person may take a while in their wallet). */
const HOST_SIGNATURE_TIMEOUT_MS = 120_000;

type TypedData = ReturnType<typeof signableTypedData>;

/** Tells the host page the widget is ready, on the protocol's schedule, and falls back to basic mode when it stays silent. */
export function announceToHost(state: WidgetState): void {
  if (!framed) {
    setMode(state, "basic");
    return;
  }
  for (const delay of READY_SCHEDULE_MS) window.setTimeout(() => window.parent.postMessage({ type: OMATRUST_READY }, "*"), delay);
  window.setTimeout(() => {
    if (state.mode === "detecting") setMode(state, "basic");
  }, HOST_READY_TIMEOUT_MS);
}

/** The host page's messages: its readiness (integrated mode), and its answers to the widget's signing requests. */
export function onHostMessage(state: WidgetState, event: MessageEvent): void {
  // Only the parent window speaks the protocol to the widget; anything else is ignored.
  if (!framed || event.source !== window.parent) return;
  const data = event.data as { type?: unknown; id?: unknown; signature?: unknown; error?: unknown } | null;
  if (typeof data !== "object" || data === null) return;
  if (data.type === OMATRUST_HOST_READY) {
    // Only while the widget still waits for it (decisions §29: within 3 s). Later, basic mode stays: a host page that
    // spoke after the user connected the frame's wallet was sent the signing request and, in it, that wallet's address.
    if (state.mode === "detecting" && !state.busy) setMode(state, "integrated");
    return;
  }
  if (typeof data.id !== "string") return;
  const waiting = state.pending.get(data.id);
  if (waiting === undefined) return;
  if (data.type === OMATRUST_SIGNATURE) {
    state.pending.delete(data.id);
    if (typeof data.signature === "string" && /^0x[0-9a-fA-F]{130}$/.test(data.signature)) waiting.resolve(data.signature);
    else waiting.reject(new WidgetError("The host page returned something that is not a signature."));
  } else if (data.type === OMATRUST_SIGNATURE_ERROR) {
    state.pending.delete(data.id);
    const reason = typeof data.error === "string" && data.error !== "" ? data.error.slice(0, 300) : "no reason given";
    waiting.reject(new WidgetError(`The host page did not sign: ${reason}`));
  }
}

/** Asks the host page to sign, and waits for its answer (or gives up after a while). */
export function askHost(state: WidgetState, typed: TypedData): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    // getRandomValues, not randomUUID: a widget framed by an http page is not a secure context.
    const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
    const timer = window.setTimeout(() => {
      state.pending.delete(id);
      reject(new WidgetError("The host page did not answer the signing request."));
    }, HOST_SIGNATURE_TIMEOUT_MS);
    state.pending.set(id, {
      resolve: (signature) => (window.clearTimeout(timer), resolve(signature)),
      reject: (error) => (window.clearTimeout(timer), reject(error)),
    });
    window.parent.postMessage({ type: OMATRUST_SIGN_TYPED_DATA, id, domain: typed.domain, types: typed.types, message: typed.message }, "*");
  });
}

/** Asks the wallet in the frame to sign, on the service's chain. */
export async function askWallet(state: WidgetState, typed: TypedData, signer: `0x${string}`): Promise<string> {
  const injected = provider();
  if (injected === undefined) throw new WidgetError("No wallet found in this browser.");
  await injected.request({ method: "eth_requestAccounts" });
  const { chainId, chainName } = state.settings;
  // Asked to switch only when it is elsewhere: many wallets (embedded ones, WalletConnect) cannot switch at all, and
  // one already on the chain was refused for that.
  const current = await injected.request({ method: "eth_chainId" }).catch(() => undefined);
  if (typeof current === "string" && /^0x[0-9a-fA-F]+$/.test(current) && BigInt(current) === BigInt(chainId)) {
    return await walletSigner(injected, signer).signTypedData(typed);
  }
  try {
    await injected.request({ method: "wallet_switchEthereumChain", params: [{ chainId: `0x${chainId.toString(16)}` }] });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 4001) throw new WidgetError(`The wallet must be on ${chainName} to sign; the switch was rejected.`);
    throw new WidgetError(`The wallet could not switch to ${chainName} (chain ${chainId}).`);
  }
  return await walletSigner(injected, signer).signTypedData(typed);
}
