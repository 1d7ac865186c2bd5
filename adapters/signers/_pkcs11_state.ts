/**
 * The PKCS#11 worker's messages, its state and its memory (see `_pkcs11_worker.ts`). Every function here is part of
 * the worker's source text: it may refer only to its parameters, globals and the other worker functions, by name.
 */
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

/** The module functions the worker calls (indices in CK_FUNCTION_LIST: see {@link pkcs11Constants}). */
export type Pkcs11FunctionName =
  | "C_Initialize" | "C_Finalize" | "C_GetSlotList" | "C_GetTokenInfo" | "C_OpenSession" | "C_CloseSession" | "C_Login"
  | "C_GetAttributeValue" | "C_FindObjectsInit" | "C_FindObjects" | "C_FindObjectsFinal" | "C_SignInit" | "C_Sign";

/** The worker's state: the module, the open session and key, and the memory handed to the module. */
export type WorkerState = {
  readonly k: ReturnType<typeof pkcs11Constants>;
  readonly scope: { onmessage: ((event: MessageEvent<Pkcs11Request>) => void) | null; postMessage: (message: Pkcs11Reply) => void };
  ffi: typeof import("bun:ffi") | undefined;
  fns: Record<Pkcs11FunctionName, (...args: unknown[]) => unknown> | undefined;
  library: { close(): void } | undefined;
  open: Extract<Pkcs11Request, { op: "open" }> | undefined;
  session: bigint | undefined;
  key: bigint | undefined;
  /** Memory handed to the module: one buffer, a bump allocator reset at each operation. */
  readonly bytes: Uint8Array;
  readonly view: DataView;
  base: number;
  used: number;
};

/** Constants of the standard (PKCS#11 v2.40). */
export function pkcs11Constants() {
  return {
    CKR_OK: 0,
    CKR_PIN_INCORRECT: 0xa0,
    CKR_PIN_LOCKED: 0xa4,
    CKR_USER_ALREADY_LOGGED_IN: 0x100,
    CKR_CRYPTOKI_ALREADY_INITIALIZED: 0x191,
    CKF_OS_LOCKING_OK: 2n,
    CKF_SERIAL_SESSION: 4n,
    CKU_USER: 1n,
    CKA_CLASS: 0x0n,
    CKA_LABEL: 0x3n,
    CKA_ID: 0x102n,
    CKA_EC_PARAMS: 0x180n,
    CKA_EC_POINT: 0x181n,
    CKO_PUBLIC_KEY: 2n,
    CKO_PRIVATE_KEY: 3n,
    CKM_ECDSA: 0x1041n,
    /** Errors after which the session (or the login) is gone: the next signature opens a new one. */
    SESSION_LOST: new Set([0x30, 0x32, 0xb0, 0xb3, 0xe0, 0x101, 0x190, 0x60, 0x82]),
    /** Function indices in CK_FUNCTION_LIST. */
    INDEX: {
      C_Initialize: 0, C_Finalize: 1, C_GetSlotList: 4, C_GetTokenInfo: 6, C_OpenSession: 12, C_CloseSession: 13,
      C_Login: 18, C_GetAttributeValue: 24, C_FindObjectsInit: 26, C_FindObjects: 27, C_FindObjectsFinal: 28,
      C_SignInit: 42, C_Sign: 43,
    } as const,
  };
}

/** The worker's state before the first message. */
export function pkcs11WorkerState(scope: WorkerState["scope"]): WorkerState {
  const memory = new ArrayBuffer(1 << 16);
  return {
    k: pkcs11Constants(),
    scope,
    ffi: undefined,
    fns: undefined,
    library: undefined,
    open: undefined,
    session: undefined,
    key: undefined,
    bytes: new Uint8Array(memory),
    view: new DataView(memory),
    base: 0,
    used: 0,
  };
}

/** An error carrying the failure the worker reports. */
export function pkcs11Failed(failure: Pkcs11Failure): Error & { readonly pkcs11Failure: Pkcs11Failure } {
  return Object.assign(new Error(failure.stage), { pkcs11Failure: failure });
}

/** Takes the buffer's address again and clears it: each operation starts with empty memory. */
export function pkcs11Reset(w: WorkerState): void {
  w.base = w.ffi!.ptr(w.bytes);
  w.used = 0;
  w.bytes.fill(0);
}

/** Reserves `size` bytes (8-aligned) and returns their offset. */
export function pkcs11Alloc(w: WorkerState, size: number): number {
  const at = w.used;
  w.used += Math.ceil(Math.max(size, 1) / 8) * 8;
  if (w.used > w.bytes.length) throw pkcs11Failed({ stage: "internal" });
  return at;
}

/** The address of an offset into the memory. */
export function pkcs11Address(w: WorkerState, offset: number): number {
  return w.base + offset;
}

/** A CK_ULONG holding `value`. */
export function pkcs11Ulong(w: WorkerState, value: bigint): number {
  const at = pkcs11Alloc(w, 8);
  w.view.setBigUint64(at, value, true);
  return at;
}

/** A copy of `data`. */
export function pkcs11Blob(w: WorkerState, data: Uint8Array): number {
  const at = pkcs11Alloc(w, data.length);
  w.bytes.set(data, at);
  return at;
}

/** A CK_ATTRIBUTE array; each value an offset into memory and its length. */
export function pkcs11Template(w: WorkerState, attributes: ReadonlyArray<readonly [bigint, number, number]>): number {
  const at = pkcs11Alloc(w, 24 * attributes.length);
  attributes.forEach(([type, value, length], i) => {
    w.view.setBigUint64(at + 24 * i, type, true);
    w.view.setBigUint64(at + 24 * i + 8, BigInt(pkcs11Address(w, value)), true);
    w.view.setBigUint64(at + 24 * i + 16, BigInt(length), true);
  });
  return at;
}

/** Calls a module function; its CK_RV as a number. */
export function pkcs11Call(w: WorkerState, name: Pkcs11FunctionName, ...args: unknown[]): number {
  return Number(w.fns![name](...args) as bigint | number);
}
