/**
 * The PKCS#11 worker's token operations: loading the module, finding the token and the key, signing. Part of the
 * worker's source text like `_pkcs11_state.ts`: each function refers only to its parameters, globals and other
 * worker functions.
 */
import type { FFIFunction, FFIType } from "bun:ffi";
import {
  pkcs11Address,
  pkcs11Alloc,
  pkcs11Blob,
  pkcs11Call,
  pkcs11Failed,
  type Pkcs11FunctionName,
  pkcs11Reset,
  pkcs11Template,
  pkcs11Ulong,
  type WorkerState,
} from "./_pkcs11_state.ts";

export function pkcs11Load(w: WorkerState, modulePath: string): void {
  const f = w.ffi!;
  const { u64, ptr, u8 } = f.FFIType;
  let opened: { symbols: { C_GetFunctionList: (out: Uint8Array) => unknown }; close(): void };
  try {
    opened = f.dlopen(modulePath, { C_GetFunctionList: { args: [ptr], returns: u64 } }) as unknown as typeof opened;
  } catch {
    throw pkcs11Failed({ stage: "module" });
  }
  const out = new Uint8Array(new ArrayBuffer(8));
  const rv = Number(opened.symbols.C_GetFunctionList(out) as bigint | number);
  const table = Number(new DataView(out.buffer).getBigUint64(0, true));
  if (rv !== w.k.CKR_OK || table === 0) {
    opened.close();
    throw pkcs11Failed({ stage: "module", rv });
  }
  const signatures: Record<Pkcs11FunctionName, { args: FFIType[]; returns: FFIType }> = {
    C_Initialize: { args: [ptr], returns: u64 },
    C_Finalize: { args: [ptr], returns: u64 },
    C_GetSlotList: { args: [u8, ptr, ptr], returns: u64 },
    C_GetTokenInfo: { args: [u64, ptr], returns: u64 },
    C_OpenSession: { args: [u64, u64, ptr, ptr, ptr], returns: u64 },
    C_CloseSession: { args: [u64], returns: u64 },
    C_Login: { args: [u64, u64, ptr, u64], returns: u64 },
    C_GetAttributeValue: { args: [u64, u64, ptr, u64], returns: u64 },
    C_FindObjectsInit: { args: [u64, ptr, u64], returns: u64 },
    C_FindObjects: { args: [u64, ptr, u64, ptr], returns: u64 },
    C_FindObjectsFinal: { args: [u64], returns: u64 },
    C_SignInit: { args: [u64, ptr, u64], returns: u64 },
    C_Sign: { args: [u64, ptr, u64, ptr, ptr], returns: u64 },
  };
  const linked: Record<string, FFIFunction> = {};
  for (const [name, signature] of Object.entries(signatures)) {
    const pointer = f.read.ptr(table as FFIFunction["ptr"] & number, 8 + 8 * w.k.INDEX[name as Pkcs11FunctionName]) as FFIFunction["ptr"];
    if (!pointer) {
      opened.close();
      throw pkcs11Failed({ stage: "module" });
    }
    linked[name] = { ptr: pointer, args: signature.args, returns: signature.returns };
  }
  w.fns = f.linkSymbols(linked).symbols as unknown as typeof w.fns;
  w.library = opened;

  // CK_C_INITIALIZE_ARGS: four mutex callbacks (none), flags, pReserved: the module uses the OS's locks.
  pkcs11Reset(w);
  const args = pkcs11Alloc(w, 48);
  w.view.setBigUint64(args + 32, w.k.CKF_OS_LOCKING_OK, true);
  const initialized = pkcs11Call(w, "C_Initialize", pkcs11Address(w, args));
  if (initialized !== w.k.CKR_OK && initialized !== w.k.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
    throw pkcs11Failed({ stage: "initialize", rv: initialized });
  }
}

export function pkcs11Text(w: WorkerState, offset: number, length: number): string {
  return new TextDecoder().decode(w.bytes.subarray(offset, offset + length)).replace(/[\s\0]+$/, "");
}

export function pkcs11FindSlot(w: WorkerState): bigint {
  pkcs11Reset(w);
  const count = pkcs11Ulong(w, 0n);
  let rv = pkcs11Call(w, "C_GetSlotList", 1, null, pkcs11Address(w, count));
  if (rv !== w.k.CKR_OK) throw pkcs11Failed({ stage: "slots", rv });
  const n = Number(w.view.getBigUint64(count, true));
  if (n === 0 || n > 1000) throw pkcs11Failed({ stage: "token" });
  const list = pkcs11Alloc(w, 8 * n);
  rv = pkcs11Call(w, "C_GetSlotList", 1, pkcs11Address(w, list), pkcs11Address(w, count));
  if (rv !== w.k.CKR_OK) throw pkcs11Failed({ stage: "slots", rv });
  const slots = Array.from({ length: Number(w.view.getBigUint64(count, true)) }, (_, i) => w.view.getBigUint64(list + 8 * i, true));
  const matching: bigint[] = [];
  for (const slot of slots) {
    const info = pkcs11Alloc(w, 256);
    if (pkcs11Call(w, "C_GetTokenInfo", slot, pkcs11Address(w, info)) !== w.k.CKR_OK) continue;
    if (w.open!.token !== undefined && pkcs11Text(w, info, 32) !== w.open!.token) continue;
    if (w.open!.serial !== undefined && pkcs11Text(w, info + 80, 16) !== w.open!.serial) continue;
    matching.push(slot);
  }
  if (matching.length === 0) throw pkcs11Failed({ stage: "token" });
  if (matching.length > 1) throw pkcs11Failed({ stage: "token-ambiguous" });
  return matching[0]!;
}

/** The handles of the objects of `cls` with the label and id asked (at most two: more than one is ambiguous). */
export function pkcs11Find(w: WorkerState, handle: bigint, cls: bigint, id: Uint8Array | undefined): bigint[] {
  pkcs11Reset(w);
  const attributes: Array<readonly [bigint, number, number]> = [[w.k.CKA_CLASS, pkcs11Ulong(w, cls), 8]];
  if (w.open!.object !== undefined) {
    const label = new TextEncoder().encode(w.open!.object);
    attributes.push([w.k.CKA_LABEL, pkcs11Blob(w, label), label.length]);
  }
  if (id !== undefined) attributes.push([w.k.CKA_ID, pkcs11Blob(w, id), id.length]);
  const at = pkcs11Template(w, attributes);
  let rv = pkcs11Call(w, "C_FindObjectsInit", handle, pkcs11Address(w, at), BigInt(attributes.length));
  if (rv !== w.k.CKR_OK) throw pkcs11Failed({ stage: "object", rv });
  const found = pkcs11Alloc(w, 16);
  const count = pkcs11Ulong(w, 0n);
  rv = pkcs11Call(w, "C_FindObjects", handle, pkcs11Address(w, found), 2n, pkcs11Address(w, count));
  pkcs11Call(w, "C_FindObjectsFinal", handle);
  if (rv !== w.k.CKR_OK) throw pkcs11Failed({ stage: "object", rv });
  return Array.from({ length: Number(w.view.getBigUint64(count, true)) }, (_, i) => w.view.getBigUint64(found + 8 * i, true));
}

/** One attribute's value; undefined when the object does not have it or hides it. */
export function pkcs11Attribute(w: WorkerState, handle: bigint, object: bigint, type: bigint): Uint8Array | undefined {
  pkcs11Reset(w);
  const value = pkcs11Alloc(w, 1024);
  const at = pkcs11Template(w, [[type, value, 1024]]);
  const rv = pkcs11Call(w, "C_GetAttributeValue", handle, object, pkcs11Address(w, at), 1n);
  if (rv !== w.k.CKR_OK) return undefined;
  const length = w.view.getBigUint64(at + 16, true);
  if (length > 1024n) return undefined;
  return w.bytes.slice(value, value + Number(length));
}

/** Opens a session on the token, logs in and finds the key; returns the public key's parameters and point. */
export function pkcs11Connect(w: WorkerState): { ecParams: Uint8Array; ecPoint: Uint8Array } {
  const slot = pkcs11FindSlot(w);
  pkcs11Reset(w);
  const out = pkcs11Ulong(w, 0n);
  const rv = pkcs11Call(w, "C_OpenSession", slot, w.k.CKF_SERIAL_SESSION, null, null, pkcs11Address(w, out));
  if (rv !== w.k.CKR_OK) throw pkcs11Failed({ stage: "session", rv });
  const handle = w.view.getBigUint64(out, true);
  try {
    if (w.open!.pin !== undefined) {
      pkcs11Reset(w);
      const pin = new TextEncoder().encode(w.open!.pin);
      const at = pkcs11Blob(w, pin);
      const login = pkcs11Call(w, "C_Login", handle, w.k.CKU_USER, pkcs11Address(w, at), BigInt(pin.length));
      w.bytes.fill(0, at, at + pin.length);
      if (login === w.k.CKR_PIN_INCORRECT) throw pkcs11Failed({ stage: "pin", rv: login });
      if (login === w.k.CKR_PIN_LOCKED) throw pkcs11Failed({ stage: "pin-locked", rv: login });
      if (login !== w.k.CKR_OK && login !== w.k.CKR_USER_ALREADY_LOGGED_IN) throw pkcs11Failed({ stage: "login", rv: login });
    }
    const keys = pkcs11Find(w, handle, w.k.CKO_PRIVATE_KEY, w.open!.id);
    if (keys.length === 0) throw pkcs11Failed({ stage: "object" });
    if (keys.length > 1) throw pkcs11Failed({ stage: "object-ambiguous" });
    const privateKey = keys[0]!;
    // The public half: the public key object of the same id (as pkcs11-tool and most HSM tools create the pair).
    const id = w.open!.id ?? pkcs11Attribute(w, handle, privateKey, w.k.CKA_ID);
    const publics = pkcs11Find(w, handle, w.k.CKO_PUBLIC_KEY, id !== undefined && id.length > 0 ? id : undefined);
    if (publics.length !== 1) throw pkcs11Failed({ stage: "public-key" });
    const ecPoint = pkcs11Attribute(w, handle, publics[0]!, w.k.CKA_EC_POINT);
    const ecParams = pkcs11Attribute(w, handle, privateKey, w.k.CKA_EC_PARAMS) ?? pkcs11Attribute(w, handle, publics[0]!, w.k.CKA_EC_PARAMS);
    if (ecPoint === undefined || ecParams === undefined) throw pkcs11Failed({ stage: "attribute" });
    w.session = handle;
    w.key = privateKey;
    return { ecParams, ecPoint };
  } catch (error) {
    pkcs11Call(w, "C_CloseSession", handle);
    throw error;
  }
}

export function pkcs11SignOnce(w: WorkerState, digest: Uint8Array): { rv: number; signature?: Uint8Array } {
  pkcs11Reset(w);
  const mechanism = pkcs11Alloc(w, 24);
  w.view.setBigUint64(mechanism, w.k.CKM_ECDSA, true);
  let rv = pkcs11Call(w, "C_SignInit", w.session!, pkcs11Address(w, mechanism), w.key!);
  if (rv !== w.k.CKR_OK) return { rv };
  const data = pkcs11Blob(w, digest);
  const signature = pkcs11Alloc(w, 512);
  const length = pkcs11Ulong(w, 512n);
  rv = pkcs11Call(w, "C_Sign", w.session!, pkcs11Address(w, data), BigInt(digest.length), pkcs11Address(w, signature), pkcs11Address(w, length));
  if (rv !== w.k.CKR_OK) return { rv };
  const n = Number(w.view.getBigUint64(length, true));
  if (n > 512) return { rv: 0x150 };
  return { rv, signature: w.bytes.slice(signature, signature + n) };
}

export function pkcs11DropSession(w: WorkerState): void {
  if (w.session !== undefined) pkcs11Call(w, "C_CloseSession", w.session);
  w.session = undefined;
  w.key = undefined;
}

export function pkcs11Sign(w: WorkerState, digest: Uint8Array): Uint8Array {
  // A session the module lost (device removed, token reinserted, login gone) is opened again once.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (w.session === undefined) pkcs11Connect(w);
    const { rv, signature } = pkcs11SignOnce(w, digest);
    if (signature !== undefined) return signature;
    if (!w.k.SESSION_LOST.has(rv) || attempt === 1) throw pkcs11Failed({ stage: "sign", rv });
    pkcs11DropSession(w);
  }
  throw pkcs11Failed({ stage: "sign" });
}
