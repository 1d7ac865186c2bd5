/**
 * The `pkcs11:` signer (issue 44, decisions §27): a key in an HSM, a cloud HSM or SoftHSM2, reached through the
 * PKCS#11 module the operator names and called with bun:ffi. The key never leaves the token: the module signs the
 * 32-byte digest with CKM_ECDSA and this process only ever holds the public key.
 *
 * URI (RFC 7512): `pkcs11:token=<label>;object=<label>?module-path=<module .so>&pin-source=file:<path>`. Path
 * attributes `token`, `serial` (the token's), `object`, `id` (the key's CKA_ID, percent-encoded bytes) and
 * `type=private`; query attributes `module-path` (required), `pin-source` (a file whose first line is the PIN) or
 * `pin-value` (tests only). Unknown attributes are refused rather than ignored, so a typo never picks another key.
 *
 * The module's calls are synchronous and a network HSM can hang, so they run on a Worker of their own
 * (`_pkcs11_worker.ts`), one per signer, which handles one call at a time (a PKCS#11 session is not safe for
 * concurrent use). A signature waits at most `timeoutMs`; after one has timed out, further ones fail at once until the
 * module answers it, rather than queue behind a hung call. Opening waits at most `max(timeoutMs, 30 s)` (C_Initialize
 * of a network HSM can take seconds). At open the key signs a test digest whose signature must verify against the
 * token's public key object, so a public key that is not the private key's half stops the start.
 */
import { readFileSync } from "node:fs";
import { p256 } from "@noble/curves/p256";
import { secp256k1 } from "@noble/curves/secp256k1";
import { type DigestSigner, type SignerCurve, SignerError } from "./_digest_signer.ts";
import { normalizeSignature, parseRawSignature } from "./_ecdsa.ts";
import { type Pkcs11Failure, type Pkcs11Reply, type Pkcs11Request, pkcs11WorkerSource } from "./_pkcs11_worker.ts";

/** Options of {@link openPkcs11Signer}. */
export type Pkcs11SignerOptions = { readonly curve: SignerCurve; readonly timeoutMs: number };

/** A parsed `pkcs11:` URI (what the worker needs, the PIN read). */
export type Pkcs11Uri = {
  readonly modulePath: string;
  readonly token?: string | undefined;
  readonly serial?: string | undefined;
  readonly object?: string | undefined;
  readonly id?: Uint8Array | undefined;
  readonly pin?: string | undefined;
};

const PATH_ATTRIBUTES = new Set(["token", "serial", "object", "id", "type"]);
const QUERY_ATTRIBUTES = new Set(["module-path", "pin-source", "pin-value"]);
const OPEN_TIMEOUT_FLOOR_MS = 30_000;

/** Reads a `pkcs11:` URI and the PIN it points at; throws SignerError "config" naming what is wrong (never the PIN). */
export function parsePkcs11Uri(uri: string): Pkcs11Uri {
  const bad = (why: string) => new SignerError("config", `Malformed pkcs11: URI: ${why}`);
  if (!uri.startsWith("pkcs11:")) throw bad("it does not start with pkcs11:");
  const rest = uri.slice("pkcs11:".length);
  const question = rest.indexOf("?");
  const path = question === -1 ? rest : rest.slice(0, question);
  const query = question === -1 ? "" : rest.slice(question + 1);
  const read = (part: string, separator: string, known: Set<string>): Map<string, string> => {
    const values = new Map<string, string>();
    for (const pair of part.split(separator)) {
      if (pair === "") continue;
      const equals = pair.indexOf("=");
      const name = equals === -1 ? pair : pair.slice(0, equals);
      // Named only when it is a plain name: `pin-value:1234` (a typo for `=`) would put the PIN in the start's line.
      if (!known.has(name)) throw bad(`unknown attribute ${/^[A-Za-z0-9-]{1,40}$/.test(name) ? `"${name}"` : "(not written name=value)"} (known: ${[...known].join(", ")})`);
      if (values.has(name)) throw bad(`attribute "${name}" given twice`);
      if (equals === -1) throw bad(`attribute "${name}" has no value`);
      let value: string;
      try {
        value = name === "id" ? pair.slice(equals + 1) : decodeURIComponent(pair.slice(equals + 1));
      } catch {
        throw bad(`attribute "${name}" is not percent-encoded correctly`);
      }
      values.set(name, value);
    }
    return values;
  };
  const attributes = read(path, ";", PATH_ATTRIBUTES);
  const options = read(query, "&", QUERY_ATTRIBUTES);
  const modulePath = options.get("module-path");
  if (modulePath === undefined || modulePath === "") throw bad("module-path is required (the PKCS#11 module's .so)");
  if (attributes.get("token") === undefined && attributes.get("serial") === undefined) throw bad("token= (or serial=) is required");
  if (attributes.get("object") === undefined && attributes.get("id") === undefined) throw bad("object= (or id=) is required");
  const type = attributes.get("type");
  if (type !== undefined && type !== "private") throw bad("type must be private (the signing key)");
  let id: Uint8Array | undefined;
  const idText = attributes.get("id");
  if (idText !== undefined) {
    if (!/^(%[0-9a-fA-F]{2})+$/.test(idText)) throw bad("id must be percent-encoded bytes (%01%02)");
    id = Uint8Array.from(idText.slice(1).split("%"), (h) => Number.parseInt(h, 16));
  }
  const pinSource = options.get("pin-source");
  const pinValue = options.get("pin-value");
  if (pinSource !== undefined && pinValue !== undefined) throw bad("give pin-source or pin-value, not both");
  let pin = pinValue;
  if (pinSource !== undefined) {
    const file = pinSource.startsWith("file:") ? pinSource.slice("file:".length) : pinSource;
    try {
      pin = readFileSync(file, "utf8").split(/\r?\n/)[0]!;
    } catch {
      throw new SignerError("config", "The PKCS#11 PIN file (pin-source) cannot be read");
    }
  }
  return { modulePath, token: attributes.get("token"), serial: attributes.get("serial"), object: attributes.get("object"), id, pin };
}

/** The curve a DER-encoded CKA_EC_PARAMS names (a named-curve OID), or undefined for any other. */
export function curveOfEcParams(params: Uint8Array): SignerCurve | undefined {
  const hex = Buffer.from(params).toString("hex");
  if (hex === "06052b8104000a") return "secp256k1"; // 1.3.132.0.10
  if (hex === "06082a8648ce3d030107") return "P-256"; // 1.2.840.10045.3.1.7
  return undefined;
}

/** The uncompressed SEC1 point of a CKA_EC_POINT: DER OCTET STRING around the point (the standard) or bare. */
export function pointOfEcPoint(curve: SignerCurve, value: Uint8Array): Uint8Array | undefined {
  const candidates: Uint8Array[] = [];
  if (value[0] === 0x04 && value.length >= 2 && value[1] === value.length - 2 && value[1]! < 0x80) candidates.push(value.subarray(2));
  candidates.push(value); // some modules give the bare point
  for (const point of candidates) {
    try {
      return (curve === "P-256" ? p256 : secp256k1).ProjectivePoint.fromHex(point).toRawBytes(false);
    } catch {
      // the next reading
    }
  }
  return undefined;
}

const stalls = new WeakMap<DigestSigner, (gate: SharedArrayBuffer) => void>();

/**
 * Tests only: blocks `signer`'s PKCS#11 thread until the first Int32 of `gate` becomes non-zero (`Atomics.store` then
 * `Atomics.notify`), as a module call that hangs would; signatures asked meanwhile meet the signer timeout.
 */
export function stallPkcs11SignerForTests(signer: DigestSigner, gate: SharedArrayBuffer): void {
  const stall = stalls.get(signer);
  if (stall === undefined) throw new Error("Not a PKCS#11 signer");
  stall(gate);
}

/** How many signers hold each module open: the last to close finalizes it (C_Finalize is process-wide). */
const openModules = new Map<string, number>();

/** Opens the key a `pkcs11:` URI names; throws SignerError "config" with one line (never the PIN) when it cannot. */
export async function openPkcs11Signer(uri: string, options: Pkcs11SignerOptions): Promise<DigestSigner> {
  const parsed = parsePkcs11Uri(uri);
  const worker = startWorker();
  const pending = new Map<number, { resolve: (signature: Uint8Array) => void; reject: (error: SignerError) => void }>();
  let opening: { resolve: (reply: Pkcs11Reply) => void; reject: (error: SignerError) => void } | undefined;
  let closing: (() => void) | undefined;
  let broken: SignerError | undefined;
  /** Signatures that timed out and that the module has not answered yet. */
  const late = new Set<number>();
  let nextId = 1;

  worker.onmessage = (event: MessageEvent<Pkcs11Reply>) => {
    const reply = event.data;
    if (reply.op === "opened" || (reply.op === "failed" && reply.id === undefined && opening !== undefined)) {
      opening?.resolve(reply);
      opening = undefined;
      return;
    }
    if (reply.op === "closed") {
      closing?.();
      return;
    }
    if (reply.op === "signed" || reply.op === "failed") {
      if (reply.id === undefined) return;
      late.delete(reply.id);
      const waiter = pending.get(reply.id);
      pending.delete(reply.id);
      if (waiter === undefined) return;
      if (reply.op === "signed") waiter.resolve(reply.signature);
      else waiter.reject(signFailure(reply.failure));
    }
  };
  worker.onerror = () => {
    broken = new SignerError("unavailable", "The PKCS#11 signer's thread stopped");
    opening?.reject(new SignerError("config", "The PKCS#11 signer's thread stopped while opening the key"));
    for (const waiter of pending.values()) waiter.reject(broken);
    pending.clear();
    closing?.();
  };

  const send = (request: Pkcs11Request) => worker.postMessage(request);
  const release = () => {
    const count = (openModules.get(parsed.modulePath) ?? 1) - 1;
    if (count <= 0) openModules.delete(parsed.modulePath);
    else openModules.set(parsed.modulePath, count);
    return count <= 0;
  };

  openModules.set(parsed.modulePath, (openModules.get(parsed.modulePath) ?? 0) + 1);
  let opened: Pkcs11Reply;
  try {
    const openTimeout = Math.max(options.timeoutMs, OPEN_TIMEOUT_FLOOR_MS);
    opened = await new Promise<Pkcs11Reply>((resolve, reject) => {
      const timer = setTimeout(() => reject(new SignerError("config", `The PKCS#11 module did not open the key within ${openTimeout} ms`)), openTimeout);
      opening = {
        resolve: (reply) => (clearTimeout(timer), resolve(reply)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
      send({ op: "open", ...parsed });
    });
  } catch (error) {
    release();
    worker.terminate();
    throw error;
  }
  const fail = async (message: string): Promise<never> => {
    await closeWorker(release());
    throw new SignerError("config", message);
  };
  if (opened.op !== "opened") return fail(openFailureMessage((opened as { failure: Pkcs11Failure }).failure));

  const curve = curveOfEcParams(opened.ecParams);
  if (curve === undefined) return fail("The PKCS#11 key is not on secp256k1 or P-256 (CKA_EC_PARAMS names another curve)");
  if (curve !== options.curve) return fail(`The PKCS#11 key is on ${curve}; this role needs a ${options.curve} key`);
  const publicKey = pointOfEcPoint(curve, opened.ecPoint);
  if (publicKey === undefined) return fail("The PKCS#11 public key object holds no valid point (CKA_EC_POINT)");

  async function closeWorker(finalize: boolean): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.timeoutMs);
      closing = () => (clearTimeout(timer), resolve());
      send({ op: "close", finalize });
    });
    worker.terminate();
  }

  async function signRaw(digest: Uint8Array): Promise<Uint8Array> {
    if (broken !== undefined) throw broken;
    if (late.size > 0) throw new SignerError("timeout", "The HSM has not yet answered a signature that timed out");
    const id = nextId++;
    const deadline = Date.now() + options.timeoutMs;
    return await new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        late.add(id);
        reject(new SignerError("timeout", `The HSM did not sign within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      pending.set(id, {
        resolve: (signature) => (clearTimeout(timer), resolve(signature)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      send({ op: "sign", id, digest: Uint8Array.from(digest), deadline });
    });
  }

  // The private key must be the public key's half: one test signature, checked.
  const probe = new Uint8Array(new Bun.CryptoHasher("sha256").update("ats pkcs11 signer self-test").digest());
  try {
    const raw = parseRawSignature(await signRaw(probe));
    normalizeSignature(curve, publicKey, probe, raw);
  } catch (error) {
    const why = error instanceof SignerError && error.kind === "refused"
      ? "its test signature does not verify against the token's public key object"
      : error instanceof SignerError ? error.message : "its test signature failed";
    return fail(`The PKCS#11 key cannot be used: ${why}`);
  }

  let closed = false;
  const signer: DigestSigner = {
    backend: "pkcs11",
    curve,
    publicKey,
    async signDigest(digest) {
      if (closed) throw new SignerError("unavailable", "The PKCS#11 signer is closed");
      if (digest.length !== 32) throw new SignerError("refused", "A digest to sign is 32 bytes");
      return parseRawSignature(await signRaw(digest));
    },
    async close() {
      if (closed) return;
      closed = true;
      await closeWorker(release());
    },
  };
  stalls.set(signer, (gate) => send({ op: "stall", gate }));
  return signer;
}

function startWorker(): Worker {
  const source = pkcs11WorkerSource();
  const url = URL.createObjectURL(new Blob([source], { type: "application/javascript" }));
  const worker = new Worker(url);
  // A signer left open never keeps the process alive on its own.
  (worker as Worker & { unref?: () => void }).unref?.();
  setTimeout(() => URL.revokeObjectURL(url), 60_000).unref();
  return worker;
}

const hexRv = (rv: number | undefined) => (rv === undefined ? "" : ` (CKR 0x${rv.toString(16)})`);

function openFailureMessage(failure: Pkcs11Failure): string {
  switch (failure.stage) {
    case "module": return `The PKCS#11 module cannot be loaded (module-path)${hexRv(failure.rv)}`;
    case "initialize": return `The PKCS#11 module refused to initialize${hexRv(failure.rv)}`;
    case "slots": return `The PKCS#11 module cannot list its slots${hexRv(failure.rv)}`;
    case "token": return "No PKCS#11 token has the label (token=) or serial (serial=) of the URI";
    case "token-ambiguous": return "More than one PKCS#11 token matches the URI; add serial=";
    case "session": return `The PKCS#11 token refused a session${hexRv(failure.rv)}`;
    case "pin": return "The PKCS#11 token refused the PIN (CKR_PIN_INCORRECT)";
    case "pin-locked": return "The PKCS#11 token's user PIN is locked (CKR_PIN_LOCKED)";
    case "login": return `The PKCS#11 login failed${hexRv(failure.rv)}`;
    case "object": return `No private key on the PKCS#11 token has the URI's object= label or id=${hexRv(failure.rv)}`;
    case "object-ambiguous": return "More than one private key on the PKCS#11 token matches the URI; add id=";
    case "public-key": return "The PKCS#11 token has no single public key object for the key (same label and id)";
    case "attribute": return "The PKCS#11 key's CKA_EC_PARAMS or CKA_EC_POINT cannot be read (not an EC key?)";
    default: return `The PKCS#11 key cannot be opened (${failure.stage}${hexRv(failure.rv)})`;
  }
}

/** CK_RVs that mean the key or the mechanism said no (the others: the token or its link is down). */
const REFUSALS = new Set([0x63, 0x68, 0x70, 0x71, 0x101, 0x21]);

function signFailure(failure: Pkcs11Failure): SignerError {
  if (failure.stage === "expired") return new SignerError("timeout", "The HSM did not sign in time");
  if (failure.stage === "sign" && failure.rv !== undefined && REFUSALS.has(failure.rv)) {
    return new SignerError("refused", `The HSM refused to sign${hexRv(failure.rv)}`);
  }
  return new SignerError("unavailable", `The HSM did not sign (${failure.stage}${hexRv(failure.rv)})`);
}
