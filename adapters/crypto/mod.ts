/**
 * The service's cryptography on the hot path (issue 28): secp256k1 recovery and signing with the native libsecp256k1
 * when the machine has it (@noble/curves otherwise), keccak-256 in WebAssembly (@noble/hashes as the fallback).
 */
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import { openNativeSecp256k1 } from "./native_secp256k1.ts";
import { nobleSecp256k1 } from "./noble_secp256k1.ts";

export { LIBRARY_NAMES, openNativeSecp256k1 } from "./native_secp256k1.ts";
export { nobleSecp256k1 } from "./noble_secp256k1.ts";

/**
 * The implementation `setting` asks for (`SECP256K1_LIBRARY`): unset, libsecp256k1 if one of the usual names opens and
 * passes its known-answer check, else @noble/curves; `none`, @noble/curves; a path or name, that library, or an
 * error (an operator who names a library wants it, not a silent fallback). The native one hashes addresses with
 * `keccak` when given.
 */
export function loadSecp256k1(
  setting: string | undefined,
  keccak?: Keccak256,
): { readonly ok: true; readonly value: Secp256k1 } | { readonly ok: false; readonly error: string } {
  if (setting === "none") return { ok: true, value: nobleSecp256k1 };
  const native = openNativeSecp256k1(setting, keccak);
  if (native !== undefined) return { ok: true, value: native };
  if (setting === undefined) return { ok: true, value: nobleSecp256k1 };
  return { ok: false, error: `SECP256K1_LIBRARY=${setting} could not be opened, or it failed the known-answer check` };
}

export { nobleKeccak256, openKeccak256 } from "./wasm_keccak.ts";
