/**
 * The thread that calls a PKCS#11 module (issue 44). Every call into the module is synchronous and a network HSM may
 * take long or hang, so none runs on the service's thread: `pkcs11_signer.ts` starts this function as a Worker and
 * talks to it by messages. Messages are handled strictly one after the other (a PKCS#11 session is not safe for
 * concurrent use), each sign carries its deadline and one whose caller has given up is skipped unsigned.
 *
 * The function is started from its own source text (`Function.prototype.toString`, as a Blob URL), so it runs the
 * same from the sources and in the single binary: it must stay self-contained (no reference to anything outside its
 * body but globals and `bun:ffi`, imported inside).
 *
 * Layouts (x86_64 and arm64 Linux, LP64): CK_ULONG and pointers are 8 bytes; CK_ATTRIBUTE is {type u64, pValue ptr,
 * ulValueLen u64} (24 bytes); CK_MECHANISM {mechanism u64, pParameter ptr, ulParameterLen u64}; CK_TOKEN_INFO starts
 * with label[32], manufacturerID[32], model[16], serialNumber[16]; CK_FUNCTION_LIST is a CK_VERSION (2 bytes,
 * padded to 8) and then one pointer per function in the order of the standard. All memory handed to the module lives
 * in one ArrayBuffer of this worker whose storage never moves; its address is taken again before each operation.
 */

import type { FFIFunction, FFIType } from "bun:ffi";

/** What the service thread sends. */
export type Pkcs11Request =
  | {
    readonly op: "open";
    readonly modulePath: string;
    readonly token?: string | undefined;
    readonly serial?: string | undefined;
    readonly object?: string | undefined;
    readonly id?: Uint8Array | undefined;
    readonly pin?: string | undefined;
  }
  | { readonly op: "sign"; readonly id: number; readonly digest: Uint8Array; readonly deadline: number }
  | { readonly op: "close"; readonly finalize: boolean }
  /** Tests only: blocks this thread until the gate's first Int32 is non-zero, exactly as a hung module call would. */
  | { readonly op: "stall"; readonly gate: SharedArrayBuffer };

/** Why an operation failed: a stage and, when the module answered, its CK_RV. */
export type Pkcs11Failure = {
  readonly stage:
    | "module" | "initialize" | "slots" | "token" | "token-ambiguous" | "session" | "pin" | "pin-locked" | "login"
    | "object" | "object-ambiguous" | "public-key" | "attribute" | "sign" | "expired" | "internal";
  readonly rv?: number | undefined;
};

/** What this worker answers. */
export type Pkcs11Reply =
  | { readonly op: "opened"; readonly ecParams: Uint8Array; readonly ecPoint: Uint8Array }
  | { readonly op: "signed"; readonly id: number; readonly signature: Uint8Array }
  | { readonly op: "failed"; readonly id?: number | undefined; readonly failure: Pkcs11Failure }
  | { readonly op: "closed" };

/** The worker's body; started by `pkcs11_signer.ts` from its source text. */
export function pkcs11WorkerMain(): void {
  type Ffi = typeof import("bun:ffi");
  const scope = globalThis as unknown as {
    onmessage: ((event: MessageEvent<Pkcs11Request>) => void) | null;
    postMessage: (message: Pkcs11Reply) => void;
  };

  // Constants of the standard (PKCS#11 v2.40).
  const CKR_OK = 0;
  const CKR_PIN_INCORRECT = 0xa0;
  const CKR_PIN_LOCKED = 0xa4;
  const CKR_USER_ALREADY_LOGGED_IN = 0x100;
  const CKR_CRYPTOKI_ALREADY_INITIALIZED = 0x191;
  const CKF_OS_LOCKING_OK = 2n;
  const CKF_SERIAL_SESSION = 4n;
  const CKU_USER = 1n;
  const CKA_CLASS = 0x0n;
  const CKA_LABEL = 0x3n;
  const CKA_ID = 0x102n;
  const CKA_EC_PARAMS = 0x180n;
  const CKA_EC_POINT = 0x181n;
  const CKO_PUBLIC_KEY = 2n;
  const CKO_PRIVATE_KEY = 3n;
  const CKM_ECDSA = 0x1041n;
  /** Errors after which the session (or the login) is gone: the next signature opens a new one. */
  const SESSION_LOST = new Set([0x30, 0x32, 0xb0, 0xb3, 0xe0, 0x101, 0x190, 0x60, 0x82]);
  /** Function indices in CK_FUNCTION_LIST. */
  const INDEX = {
    C_Initialize: 0, C_Finalize: 1, C_GetSlotList: 4, C_GetTokenInfo: 6, C_OpenSession: 12, C_CloseSession: 13,
    C_Login: 18, C_GetAttributeValue: 24, C_FindObjectsInit: 26, C_FindObjects: 27, C_FindObjectsFinal: 28,
    C_SignInit: 42, C_Sign: 43,
  } as const;

  class Failed extends Error {
    constructor(readonly failure: Pkcs11Failure) {
      super(failure.stage);
    }
  }

  let ffi: Ffi | undefined;
  let fns: Record<keyof typeof INDEX, (...args: unknown[]) => unknown> | undefined;
  let library: { close(): void } | undefined;
  let open: Extract<Pkcs11Request, { op: "open" }> | undefined;
  let session: bigint | undefined;
  let key: bigint | undefined;

  // Memory handed to the module: one buffer, a bump allocator reset at each operation.
  const memory = new ArrayBuffer(1 << 16);
  const bytes = new Uint8Array(memory);
  const view = new DataView(memory);
  let base = 0;
  let used = 0;
  const reset = () => {
    base = ffi!.ptr(bytes);
    used = 0;
    bytes.fill(0);
  };
  /** Reserves `size` bytes (8-aligned) and returns their offset. */
  const alloc = (size: number): number => {
    const at = used;
    used += Math.ceil(Math.max(size, 1) / 8) * 8;
    if (used > bytes.length) throw new Failed({ stage: "internal" });
    return at;
  };
  const address = (offset: number): number => base + offset;
  const ulong = (value: bigint): number => {
    const at = alloc(8);
    view.setBigUint64(at, value, true);
    return at;
  };
  const blob = (data: Uint8Array): number => {
    const at = alloc(data.length);
    bytes.set(data, at);
    return at;
  };
  /** A CK_ATTRIBUTE array; each value an offset into memory and its length. */
  const template = (attributes: ReadonlyArray<readonly [bigint, number, number]>): number => {
    const at = alloc(24 * attributes.length);
    attributes.forEach(([type, value, length], i) => {
      view.setBigUint64(at + 24 * i, type, true);
      view.setBigUint64(at + 24 * i + 8, BigInt(address(value)), true);
      view.setBigUint64(at + 24 * i + 16, BigInt(length), true);
    });
    return at;
  };
  const call = (name: keyof typeof INDEX, ...args: unknown[]): number => Number(fns![name](...args) as bigint | number);

  function load(modulePath: string): void {
    const f = ffi!;
    const { u64, ptr, u8 } = f.FFIType;
    let opened: { symbols: { C_GetFunctionList: (out: Uint8Array) => unknown }; close(): void };
    try {
      opened = f.dlopen(modulePath, { C_GetFunctionList: { args: [ptr], returns: u64 } }) as unknown as typeof opened;
    } catch {
      throw new Failed({ stage: "module" });
    }
    const out = new Uint8Array(new ArrayBuffer(8));
    const rv = Number(opened.symbols.C_GetFunctionList(out) as bigint | number);
    const table = Number(new DataView(out.buffer).getBigUint64(0, true));
    if (rv !== CKR_OK || table === 0) {
      opened.close();
      throw new Failed({ stage: "module", rv });
    }
    const signatures: Record<keyof typeof INDEX, { args: FFIType[]; returns: FFIType }> = {
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
      const pointer = f.read.ptr(table as FFIFunction["ptr"] & number, 8 + 8 * INDEX[name as keyof typeof INDEX]) as FFIFunction["ptr"];
      if (!pointer) {
        opened.close();
        throw new Failed({ stage: "module" });
      }
      linked[name] = { ptr: pointer, args: signature.args, returns: signature.returns };
    }
    fns = f.linkSymbols(linked).symbols as unknown as typeof fns;
    library = opened;

    // CK_C_INITIALIZE_ARGS: four mutex callbacks (none), flags, pReserved: the module uses the OS's locks.
    reset();
    const args = alloc(48);
    view.setBigUint64(args + 32, CKF_OS_LOCKING_OK, true);
    const initialized = call("C_Initialize", address(args));
    if (initialized !== CKR_OK && initialized !== CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      throw new Failed({ stage: "initialize", rv: initialized });
    }
  }

  function text(offset: number, length: number): string {
    return new TextDecoder().decode(bytes.subarray(offset, offset + length)).replace(/[\s\0]+$/, "");
  }

  function findSlot(): bigint {
    reset();
    const count = ulong(0n);
    let rv = call("C_GetSlotList", 1, null, address(count));
    if (rv !== CKR_OK) throw new Failed({ stage: "slots", rv });
    const n = Number(view.getBigUint64(count, true));
    if (n === 0 || n > 1000) throw new Failed({ stage: "token" });
    const list = alloc(8 * n);
    rv = call("C_GetSlotList", 1, address(list), address(count));
    if (rv !== CKR_OK) throw new Failed({ stage: "slots", rv });
    const slots = Array.from({ length: Number(view.getBigUint64(count, true)) }, (_, i) => view.getBigUint64(list + 8 * i, true));
    const matching: bigint[] = [];
    for (const slot of slots) {
      const info = alloc(256);
      if (call("C_GetTokenInfo", slot, address(info)) !== CKR_OK) continue;
      if (open!.token !== undefined && text(info, 32) !== open!.token) continue;
      if (open!.serial !== undefined && text(info + 80, 16) !== open!.serial) continue;
      matching.push(slot);
    }
    if (matching.length === 0) throw new Failed({ stage: "token" });
    if (matching.length > 1) throw new Failed({ stage: "token-ambiguous" });
    return matching[0]!;
  }

  /** The handles of the objects of `cls` with the label and id asked (at most two: more than one is ambiguous). */
  function find(handle: bigint, cls: bigint, id: Uint8Array | undefined): bigint[] {
    reset();
    const attributes: Array<readonly [bigint, number, number]> = [[CKA_CLASS, ulong(cls), 8]];
    if (open!.object !== undefined) {
      const label = new TextEncoder().encode(open!.object);
      attributes.push([CKA_LABEL, blob(label), label.length]);
    }
    if (id !== undefined) attributes.push([CKA_ID, blob(id), id.length]);
    const at = template(attributes);
    let rv = call("C_FindObjectsInit", handle, address(at), BigInt(attributes.length));
    if (rv !== CKR_OK) throw new Failed({ stage: "object", rv });
    const found = alloc(16);
    const count = ulong(0n);
    rv = call("C_FindObjects", handle, address(found), 2n, address(count));
    call("C_FindObjectsFinal", handle);
    if (rv !== CKR_OK) throw new Failed({ stage: "object", rv });
    return Array.from({ length: Number(view.getBigUint64(count, true)) }, (_, i) => view.getBigUint64(found + 8 * i, true));
  }

  /** One attribute's value; undefined when the object does not have it or hides it. */
  function attribute(handle: bigint, object: bigint, type: bigint): Uint8Array | undefined {
    reset();
    const value = alloc(1024);
    const at = template([[type, value, 1024]]);
    const rv = call("C_GetAttributeValue", handle, object, address(at), 1n);
    if (rv !== CKR_OK) return undefined;
    const length = view.getBigUint64(at + 16, true);
    if (length > 1024n) return undefined;
    return bytes.slice(value, value + Number(length));
  }

  /** Opens a session on the token, logs in and finds the key; returns the public key's parameters and point. */
  function connect(): { ecParams: Uint8Array; ecPoint: Uint8Array } {
    const slot = findSlot();
    reset();
    const out = ulong(0n);
    const rv = call("C_OpenSession", slot, CKF_SERIAL_SESSION, null, null, address(out));
    if (rv !== CKR_OK) throw new Failed({ stage: "session", rv });
    const handle = view.getBigUint64(out, true);
    try {
      if (open!.pin !== undefined) {
        reset();
        const pin = new TextEncoder().encode(open!.pin);
        const at = blob(pin);
        const login = call("C_Login", handle, CKU_USER, address(at), BigInt(pin.length));
        bytes.fill(0, at, at + pin.length);
        if (login === CKR_PIN_INCORRECT) throw new Failed({ stage: "pin", rv: login });
        if (login === CKR_PIN_LOCKED) throw new Failed({ stage: "pin-locked", rv: login });
        if (login !== CKR_OK && login !== CKR_USER_ALREADY_LOGGED_IN) throw new Failed({ stage: "login", rv: login });
      }
      const keys = find(handle, CKO_PRIVATE_KEY, open!.id);
      if (keys.length === 0) throw new Failed({ stage: "object" });
      if (keys.length > 1) throw new Failed({ stage: "object-ambiguous" });
      const privateKey = keys[0]!;
      // The public half: the public key object of the same id (as pkcs11-tool and most HSM tools create the pair).
      const id = open!.id ?? attribute(handle, privateKey, CKA_ID);
      const publics = find(handle, CKO_PUBLIC_KEY, id !== undefined && id.length > 0 ? id : undefined);
      if (publics.length !== 1) throw new Failed({ stage: "public-key" });
      const ecPoint = attribute(handle, publics[0]!, CKA_EC_POINT);
      const ecParams = attribute(handle, privateKey, CKA_EC_PARAMS) ?? attribute(handle, publics[0]!, CKA_EC_PARAMS);
      if (ecPoint === undefined || ecParams === undefined) throw new Failed({ stage: "attribute" });
      session = handle;
      key = privateKey;
      return { ecParams, ecPoint };
    } catch (error) {
      call("C_CloseSession", handle);
      throw error;
    }
  }

  function signOnce(digest: Uint8Array): { rv: number; signature?: Uint8Array } {
    reset();
    const mechanism = alloc(24);
    view.setBigUint64(mechanism, CKM_ECDSA, true);
    let rv = call("C_SignInit", session!, address(mechanism), key!);
    if (rv !== CKR_OK) return { rv };
    const data = blob(digest);
    const signature = alloc(512);
    const length = ulong(512n);
    rv = call("C_Sign", session!, address(data), BigInt(digest.length), address(signature), address(length));
    if (rv !== CKR_OK) return { rv };
    const n = Number(view.getBigUint64(length, true));
    if (n > 512) return { rv: 0x150 };
    return { rv, signature: bytes.slice(signature, signature + n) };
  }

  function dropSession(): void {
    if (session !== undefined) call("C_CloseSession", session);
    session = undefined;
    key = undefined;
  }

  function sign(digest: Uint8Array): Uint8Array {
    // A session the module lost (device removed, token reinserted, login gone) is opened again once.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (session === undefined) connect();
      const { rv, signature } = signOnce(digest);
      if (signature !== undefined) return signature;
      if (!SESSION_LOST.has(rv) || attempt === 1) throw new Failed({ stage: "sign", rv });
      dropSession();
    }
    throw new Failed({ stage: "sign" });
  }

  async function handle(request: Pkcs11Request): Promise<void> {
    ffi ??= await import("bun:ffi");
    try {
      if (request.op === "open") {
        open = request;
        load(request.modulePath);
        const { ecParams, ecPoint } = connect();
        scope.postMessage({ op: "opened", ecParams, ecPoint });
      } else if (request.op === "stall") {
        Atomics.wait(new Int32Array(request.gate), 0, 0);
      } else if (request.op === "sign") {
        if (Date.now() > request.deadline) {
          scope.postMessage({ op: "failed", id: request.id, failure: { stage: "expired" } });
          return;
        }
        scope.postMessage({ op: "signed", id: request.id, signature: sign(request.digest) });
      } else {
        try {
          dropSession();
          if (request.finalize && fns !== undefined) call("C_Finalize", null);
        } finally {
          library?.close();
          library = undefined;
          fns = undefined;
          open = undefined;
          scope.postMessage({ op: "closed" });
        }
      }
    } catch (error) {
      const failure: Pkcs11Failure = error instanceof Failed ? error.failure : { stage: "internal" };
      scope.postMessage({ op: "failed", id: request.op === "sign" ? request.id : undefined, failure });
    }
  }

  let queue: Promise<void> = Promise.resolve();
  scope.onmessage = (event) => {
    queue = queue.then(() => handle(event.data));
  };
}
