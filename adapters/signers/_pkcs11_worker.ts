/**
 * The thread that calls a PKCS#11 module (issue 44). Every call into the module is synchronous and a network HSM may
 * take long or hang, so none runs on the service's thread: `pkcs11_signer.ts` starts the worker's source text
 * ({@link pkcs11WorkerSource}) as a Worker and talks to it by messages. Messages are handled strictly one after the
 * other (a PKCS#11 session is not safe for concurrent use), each sign carries its deadline and one whose caller has
 * given up is skipped unsigned.
 *
 * The source text is the text of the worker's functions (`Function.prototype.toString`, as a Blob URL), so it runs
 * the same from the sources and in the single binary: each of them (here, `_pkcs11_state.ts`, `_pkcs11_token.ts`)
 * must stay self-contained (no reference to anything outside its body but globals, `bun:ffi` imported inside, and
 * the other worker functions by name), and each is listed in {@link WORKER_FUNCTIONS}.
 *
 * Layouts (x86_64 and arm64 Linux, LP64): CK_ULONG and pointers are 8 bytes; CK_ATTRIBUTE is {type u64, pValue ptr,
 * ulValueLen u64} (24 bytes); CK_MECHANISM {mechanism u64, pParameter ptr, ulParameterLen u64}; CK_TOKEN_INFO starts
 * with label[32], manufacturerID[32], model[16], serialNumber[16]; CK_FUNCTION_LIST is a CK_VERSION (2 bytes,
 * padded to 8) and then one pointer per function in the order of the standard. All memory handed to the module lives
 * in one ArrayBuffer of this worker whose storage never moves; its address is taken again before each operation.
 */
import {
  pkcs11Address,
  pkcs11Alloc,
  pkcs11Blob,
  pkcs11Call,
  pkcs11Constants,
  pkcs11Failed,
  type Pkcs11Failure,
  type Pkcs11Request,
  pkcs11Reset,
  pkcs11Template,
  pkcs11Ulong,
  pkcs11WorkerState,
  type WorkerState,
} from "./_pkcs11_state.ts";
import {
  pkcs11Attribute,
  pkcs11Connect,
  pkcs11DropSession,
  pkcs11Find,
  pkcs11FindSlot,
  pkcs11Load,
  pkcs11Sign,
  pkcs11SignOnce,
  pkcs11Text,
} from "./_pkcs11_token.ts";

export type { Pkcs11Failure, Pkcs11Reply, Pkcs11Request } from "./_pkcs11_state.ts";

/** Every function of the worker's source text; each is declared there at the top level, under its own name. */
const WORKER_FUNCTIONS: readonly ((...args: never[]) => unknown)[] = [
  pkcs11Constants,
  pkcs11WorkerState,
  pkcs11Failed,
  pkcs11Reset,
  pkcs11Alloc,
  pkcs11Address,
  pkcs11Ulong,
  pkcs11Blob,
  pkcs11Template,
  pkcs11Call,
  pkcs11Load,
  pkcs11Text,
  pkcs11FindSlot,
  pkcs11Find,
  pkcs11Attribute,
  pkcs11Connect,
  pkcs11SignOnce,
  pkcs11DropSession,
  pkcs11Sign,
  pkcs11Handle,
  pkcs11WorkerMain,
];

/** The worker's source text: its functions, then a call of {@link pkcs11WorkerMain}. */
export function pkcs11WorkerSource(): string {
  return `${WORKER_FUNCTIONS.map((f) => f.toString()).join("\n")}\n${pkcs11WorkerMain.name}();\n`;
}

/** The worker's body: its state, then each message handled after the one before. */
export function pkcs11WorkerMain(): void {
  const w = pkcs11WorkerState(globalThis as unknown as WorkerState["scope"]);
  let queue: Promise<void> = Promise.resolve();
  w.scope.onmessage = (event) => {
    queue = queue.then(() => pkcs11Handle(w, event.data));
  };
}

/** One message: open, sign, close, or (tests only) stall. */
export async function pkcs11Handle(w: WorkerState, request: Pkcs11Request): Promise<void> {
  w.ffi ??= await import("bun:ffi");
  try {
    if (request.op === "open") {
      w.open = request;
      pkcs11Load(w, request.modulePath);
      const { ecParams, ecPoint } = pkcs11Connect(w);
      w.scope.postMessage({ op: "opened", ecParams, ecPoint });
    } else if (request.op === "stall") {
      Atomics.wait(new Int32Array(request.gate), 0, 0);
    } else if (request.op === "sign") {
      if (Date.now() > request.deadline) {
        w.scope.postMessage({ op: "failed", id: request.id, failure: { stage: "expired" } });
        return;
      }
      w.scope.postMessage({ op: "signed", id: request.id, signature: pkcs11Sign(w, request.digest) });
    } else {
      try {
        pkcs11DropSession(w);
        if (request.finalize && w.fns !== undefined) pkcs11Call(w, "C_Finalize", null);
      } finally {
        w.library?.close();
        w.library = undefined;
        w.fns = undefined;
        w.open = undefined;
        w.scope.postMessage({ op: "closed" });
      }
    }
  } catch (error) {
    const failure: Pkcs11Failure = error instanceof Error && "pkcs11Failure" in error ? error.pkcs11Failure as Pkcs11Failure : { stage: "internal" };
    w.scope.postMessage({ op: "failed", id: request.op === "sign" ? request.id : undefined, failure });
  }
}
