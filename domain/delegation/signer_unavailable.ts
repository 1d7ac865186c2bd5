import { SIGNER_RETRY_AFTER_SECONDS } from "../../ports/signer.ts";
import { fail, type Fail } from "../result.ts";

/**
 * 503 SIGNER_UNAVAILABLE (decisions §27): the delegate's signer could not be reached, timed out or refused, before
 * anything was spent (no nonce, no gas budget, no sponsored write; the signature is still unused).
 */
export function signerUnavailable(): Fail<"SIGNER_UNAVAILABLE"> & { readonly unavailable: true; readonly retryAfterSeconds: number } {
  return {
    ...fail("SIGNER_UNAVAILABLE", "The service's signer is unavailable; nothing was sent or charged, and the same request may be sent again"),
    unavailable: true,
    retryAfterSeconds: SIGNER_RETRY_AFTER_SECONDS,
  };
}
