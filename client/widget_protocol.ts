/**
 * The widget signing protocol (decisions §29), as the reference (`omatrust-sdk` "Widget Signing Bridge") defines it:
 * the widget announces itself with `omatrust:ready` (at 0, 500, 1000 and 2000 ms), the host answers
 * `omatrust:hostReady`, the widget asks `omatrust:signTypedData` and gets `omatrust:signature` or
 * `omatrust:signatureError` with the same `id`; `omatrust:close` asks the host to close the widget.
 */

export const OMATRUST_READY = "omatrust:ready";
export const OMATRUST_HOST_READY = "omatrust:hostReady";
export const OMATRUST_SIGN_TYPED_DATA = "omatrust:signTypedData";
export const OMATRUST_SIGNATURE = "omatrust:signature";
export const OMATRUST_SIGNATURE_ERROR = "omatrust:signatureError";
export const OMATRUST_CLOSE = "omatrust:close";

/** When the widget sends `omatrust:ready`, in milliseconds after it starts. */
export const READY_SCHEDULE_MS = [0, 500, 1000, 2000] as const;
/** How long the widget waits for `omatrust:hostReady` before it signs with a wallet of its own. */
export const HOST_READY_TIMEOUT_MS = 3000;

export type OmaTrustReadyMessage = { readonly type: typeof OMATRUST_READY };
export type OmaTrustHostReadyMessage = { readonly type: typeof OMATRUST_HOST_READY };
export type OmaTrustSignTypedDataMessage = {
  readonly type: typeof OMATRUST_SIGN_TYPED_DATA;
  readonly id: string;
  readonly domain: Record<string, unknown>;
  readonly types: Record<string, readonly { readonly name: string; readonly type: string }[]>;
  readonly message: Record<string, unknown>;
};
export type OmaTrustSignatureMessage = { readonly type: typeof OMATRUST_SIGNATURE; readonly id: string; readonly signature: string };
export type OmaTrustSignatureErrorMessage = { readonly type: typeof OMATRUST_SIGNATURE_ERROR; readonly id: unknown; readonly error: string };
export type OmaTrustCloseMessage = { readonly type: typeof OMATRUST_CLOSE };
export type OmaTrustMessage =
  | OmaTrustReadyMessage
  | OmaTrustHostReadyMessage
  | OmaTrustSignTypedDataMessage
  | OmaTrustSignatureMessage
  | OmaTrustSignatureErrorMessage
  | OmaTrustCloseMessage;
