/**
 * The service's signers (decisions §27): a role's URI parsed and opened on its backend. `env:` and `keystore:` keep the
 * key in this process (signing with libsecp256k1 when present, as before); `jsonrpc:` asks a remote signer;
 * `pkcs11:` and `awskms:` sign digests where the key lives (pkcs11_signer.ts, awskms_signer.ts). A URI that is wrong
 * (malformed, an unknown scheme, a missing module or file, a wrong PIN or password, a key of the wrong curve or of
 * another address) throws a {@link SignerStartError}: one line naming the role's variable and what is wrong, never a
 * PIN or password.
 */
import { readFileSync } from "node:fs";
import { p256 } from "@noble/curves/p256";
import { secp256k1 as nobleSecp256k1 } from "@noble/curves/secp256k1";
import { publicKeyToAddress } from "viem/accounts";
import type { HexString } from "../../ports/eas.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import type { EthereumSigner, JwsSigner, RawReason, SignerRole } from "../../ports/signer.ts";
import type { SignerAuditDeps } from "./_audit.ts";
import { type DigestSigner, type SignerCurve, SignerError } from "./_digest_signer.ts";
import { digestEthereumSigner, localEthereumSigner } from "./_ethereum.ts";
import { digestJwsSigner } from "./_jws.ts";
import { openJsonRpcSigner } from "./jsonrpc_signer.ts";
import { decryptKeystore } from "./keystore.ts";

export { SIGNATURE_DURATION, SIGNATURES_TOTAL, type SignerAuditDeps } from "./_audit.ts";
export { decryptKeystore } from "./keystore.ts";
export { openJsonRpcSigner } from "./jsonrpc_signer.ts";
export { jwkThumbprint } from "./_jws.ts";

/** A role's signer could not be opened: the one line the process stops with. */
export class SignerStartError extends Error {}

/** A signer URI, parsed. */
export type SignerUri =
  | { readonly scheme: "env"; readonly variable: string }
  | { readonly scheme: "keystore"; readonly path: string; readonly passwordFile?: string | undefined; readonly passwordEnv?: string | undefined }
  | { readonly scheme: "jsonrpc"; readonly url: string; readonly address: HexString }
  | { readonly scheme: "pkcs11" | "awskms"; readonly uri: string };

/** The variable a role's URI is read from. */
export function signerVariable(role: SignerRole): string {
  return `${role.toUpperCase()}_SIGNER`;
}

/** Parses a signer URI; undefined and a reason when it is not one. */
export function parseSignerUri(text: string): { readonly ok: true; readonly value: SignerUri } | { readonly ok: false; readonly error: string } {
  const colon = text.indexOf(":");
  const scheme = colon < 0 ? "" : text.slice(0, colon);
  const rest = text.slice(colon + 1);
  switch (scheme) {
    case "env":
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(rest)) return { ok: false, error: "env: names an environment variable (env:DELEGATE_PRIVATE_KEY)" };
      return { ok: true, value: { scheme: "env", variable: rest } };
    case "keystore": {
      const [path, query = ""] = splitOnce(rest, "?");
      if (path === "") return { ok: false, error: "keystore: names a file (keystore:/path/key.json?password-file=/path/password)" };
      // Percent-decoded as the path is (a `+` stays a `+`: these are paths, not form fields), each name once.
      const params = new Map<string, string>();
      for (const pair of query === "" ? [] : query.split("&")) {
        const [name, value] = splitOnce(pair, "=");
        if (name !== "password-file" && name !== "password-env") {
          return { ok: false, error: `keystore: takes password-file= or password-env=, not ${/^[A-Za-z0-9-]{1,40}$/.test(name) ? `${name}=` : "that"}` };
        }
        if (params.has(name)) return { ok: false, error: `keystore: ${name}= is given twice` };
        const decoded = value === undefined ? undefined : percentDecoded(value);
        if (decoded === undefined || decoded === "") return { ok: false, error: `keystore: ${name}= needs a percent-encoded value` };
        params.set(name, decoded);
      }
      const passwordFile = params.get("password-file");
      const passwordEnv = params.get("password-env");
      if ((passwordFile === undefined) === (passwordEnv === undefined)) {
        return { ok: false, error: "keystore: needs one of password-file=<path> or password-env=<VARIABLE>" };
      }
      const file = percentDecoded(path);
      if (file === undefined) return { ok: false, error: "keystore: the file's path is not percent-encoded correctly (write % as %25)" };
      return { ok: true, value: { scheme: "keystore", path: file, passwordFile, passwordEnv } };
    }
    case "jsonrpc": {
      const [url, address = ""] = splitOnce(rest, "#");
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return { ok: false, error: "jsonrpc: is followed by an http(s) URL (jsonrpc:https://signer:9000#0xAddress)" };
      }
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { ok: false, error: "jsonrpc: takes an http or https URL" };
      if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return { ok: false, error: "jsonrpc: ends with #<address> of the key to use" };
      return { ok: true, value: { scheme: "jsonrpc", url, address: address as HexString } };
    }
    case "pkcs11":
    case "awskms":
      return { ok: true, value: { scheme, uri: text } };
    default:
      return { ok: false, error: `unknown scheme "${scheme === "" ? text.slice(0, 12) : scheme}:" (expected env:, keystore:, jsonrpc:, pkcs11: or awskms:)` };
  }
}

/** What opening a signer needs. */
export type OpenSignerDeps = {
  readonly audit: SignerAuditDeps;
  /** The environment `env:` and `password-env=` read. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The service's secp256k1 (libsecp256k1 when present) and keccak: the raw keys' hot path. */
  readonly secp256k1: Secp256k1;
  readonly keccak?: Keccak256 | undefined;
  /** Replaces `fetch` for jsonrpc: (tests). */
  readonly fetchFn?: typeof fetch | undefined;
};

/**
 * Opens the Ethereum signer of `role` at `uri` (a secp256k1 key); `expectedAddress` (`<ROLE>_ADDRESS`) must be the
 * key's. Throws {@link SignerStartError}.
 */
export async function openEthereumSigner(
  role: SignerRole,
  uri: string,
  deps: OpenSignerDeps,
  expectedAddress?: string | undefined,
): Promise<EthereumSigner> {
  const variable = signerVariable(role);
  const stop = (what: string) => new SignerStartError(`${variable}: ${redact(what)}`);
  const parsed = parseSignerUri(uri);
  if (!parsed.ok) throw stop(parsed.error);
  const u = parsed.value;
  let signer: EthereumSigner;
  try {
    switch (u.scheme) {
      case "env":
        signer = localEthereumSigner(hexKey(deps.env[u.variable], u.variable), {
          role,
          backend: "env",
          secp256k1: deps.secp256k1,
          keccak: deps.keccak,
          audit: deps.audit,
          rawReason: "env",
        });
        break;
      case "keystore": {
        const { key, rawReason } = openKeystore(u, deps.env);
        signer = localEthereumSigner(key, { role, backend: "keystore", secp256k1: deps.secp256k1, keccak: deps.keccak, audit: deps.audit, rawReason });
        break;
      }
      case "jsonrpc":
        signer = openJsonRpcSigner(u.url, u.address, { role, audit: deps.audit, fetchFn: deps.fetchFn });
        await selfTest(signer);
        break;
      default:
        signer = digestEthereumSigner(await openDigest(u, "secp256k1", deps), { role, audit: deps.audit, keccak: deps.keccak, secp256k1: deps.secp256k1 });
    }
  } catch (error) {
    throw error instanceof SignerStartError ? error : stop(error instanceof Error ? error.message : String(error));
  }
  if (expectedAddress !== undefined && expectedAddress.toLowerCase() !== signer.address.toLowerCase()) {
    await signer.close();
    throw stop(`the key answers for ${signer.address}, not ${role.toUpperCase()}_ADDRESS ${expectedAddress}`);
  }
  return signer;
}

/**
 * One typed-data signature asked of a remote signer at start, as the HSM and KMS backends sign a test digest at open: a
 * signer that cannot be reached, refuses, or signs with another key than the URI's address stops the start (before, the
 * address was only the URI's word, `<ROLE>_ADDRESS` compared it with itself, and every write then answered 503).
 */
async function selfTest(signer: EthereumSigner): Promise<void> {
  const signed = await signer.signTypedData({
    domain: { name: "ATS signer self-test", version: "1" },
    types: { SelfTest: [{ name: "statement", type: "string" }] },
    primaryType: "SelfTest",
    message: { statement: "The service checks at start that this signer holds the key it names." },
  }, { purpose: "test" });
  if (signed.ok) return;
  throw new Error(signed.reason === "refused"
    ? `the signer refused a test signature or signed it with another key than ${signer.address}`
    : `the signer gave no test signature (${signed.reason})`);
}

/**
 * Opens the JWS signer of `role` at `uri`: a P-256 key (ES256) or a secp256k1 key (ES256K). `env:` holds a private
 * JWK (EC, P-256 or secp256k1) or 32 bytes of hex (P-256); a keystore holds a secp256k1 key. Throws
 * {@link SignerStartError}.
 */
export async function openJwsSigner(role: SignerRole, uri: string, deps: OpenSignerDeps, expectedAddress?: string | undefined): Promise<JwsSigner> {
  const signer = await openJwsKey(role, uri, deps);
  if (expectedAddress === undefined) return signer;
  // `X402_ADDRESS` pins a JWS issuer's key too (it was ignored with X402_SIGNING_FORMAT=jws): a secp256k1 key by its
  // address; a P-256 key has none, so a pin cannot hold and stops the start rather than be silently dropped.
  const address = signer.publicJwk.crv === "secp256k1" ? jwkAddress(signer.publicJwk) : undefined;
  if (address !== undefined && address.toLowerCase() === expectedAddress.toLowerCase()) return signer;
  await signer.close();
  const what = address === undefined ? "the key is P-256 (ES256), which has no Ethereum address" : `the key answers for ${address}`;
  throw new SignerStartError(`${signerVariable(role)}: ${what}, not ${role.toUpperCase()}_ADDRESS ${expectedAddress}`);
}

/** The Ethereum address (checksummed) of a secp256k1 public JWK. */
export function jwkAddress(jwk: { readonly x: string; readonly y: string }): string {
  const hex = (part: string) => Buffer.from(part, "base64url").toString("hex").padStart(64, "0");
  return publicKeyToAddress(`0x04${hex(jwk.x)}${hex(jwk.y)}`);
}

async function openJwsKey(role: SignerRole, uri: string, deps: OpenSignerDeps): Promise<JwsSigner> {
  const variable = signerVariable(role);
  const stop = (what: string) => new SignerStartError(`${variable}: ${redact(what)}`);
  const parsed = parseSignerUri(uri);
  if (!parsed.ok) throw stop(parsed.error);
  const u = parsed.value;
  try {
    switch (u.scheme) {
      case "env":
        return digestJwsSigner(envJwsKey(deps.env[u.variable], u.variable), { role, audit: deps.audit, rawReason: "env" });
      case "keystore": {
        const { key, rawReason } = openKeystore(u, deps.env);
        return digestJwsSigner(localDigestSigner("secp256k1", key, "keystore"), { role, audit: deps.audit, rawReason });
      }
      case "jsonrpc":
        throw new SignerError("config", "jsonrpc: signs Ethereum transactions and typed data, not JWS; use pkcs11:, awskms:, keystore: or env:");
      default: {
        // The key's curve decides the algorithm: P-256 first (ES256, what verifiers expect), then secp256k1.
        let digest: DigestSigner;
        try {
          digest = await openDigest(u, "P-256", deps);
        } catch (error) {
          if (!(error instanceof SignerError && error.kind === "config" && /curve|spec|P-256|secp256k1/i.test(error.message))) throw error;
          digest = await openDigest(u, "secp256k1", deps);
        }
        return digestJwsSigner(digest, { role, audit: deps.audit, rawReason: undefined });
      }
    }
  } catch (error) {
    throw error instanceof SignerStartError ? error : stop(error instanceof Error ? error.message : String(error));
  }
}

/** Opens a PKCS#11 or AWS KMS key; each backend's module loads only when a role names it (the AWS SDK is large). */
async function openDigest(u: Extract<SignerUri, { scheme: "pkcs11" | "awskms" }>, curve: SignerCurve, deps: OpenSignerDeps): Promise<DigestSigner> {
  const options = { curve, timeoutMs: deps.audit.timeoutMs };
  if (u.scheme === "pkcs11") return await (await import("./pkcs11_signer.ts")).openPkcs11Signer(u.uri, options);
  return await (await import("./awskms_signer.ts")).openAwsKmsSigner(u.uri, options);
}

/** A digest signer over a key held in this process (env:, keystore: JWS roles). */
function localDigestSigner(curve: SignerCurve, privateKey: Uint8Array, backend: "env" | "keystore"): DigestSigner {
  const ecdsa = curve === "P-256" ? p256 : nobleSecp256k1;
  let publicKey: Uint8Array;
  try {
    publicKey = ecdsa.getPublicKey(privateKey, false);
  } catch {
    throw new SignerError("config", `the key is not a ${curve} private key`);
  }
  return {
    backend,
    curve,
    publicKey,
    signDigest: (digest) => {
      const signature = ecdsa.sign(digest, privateKey);
      return Promise.resolve({ r: signature.r, s: signature.s });
    },
  };
}

/**
 * A variable's name as an error may print it: only when it looks like one (capitals, digits and `_`, at most 48, not
 * a run of hex). An operator moving from `DELEGATE_PRIVATE_KEY` who wrote `env:<the key>` was shown the key in the
 * line the process stopped with (container and kubelet logs); a password given as `password-env=` its password.
 */
function nameShown(variable: string): string {
  return /^[A-Z_][A-Z0-9_]{0,47}$/.test(variable) && !/^[0-9A-F]{16,}$/.test(variable) ? variable : "the variable the URI names";
}

/** A file's path as an error may print it: an absolute path without spaces, else not (a password given as the path). */
function pathShown(path: string, what: string): string {
  return /^\/[^\s]{1,255}$/.test(path) ? `${what} ${path}` : `${what} the URI names`;
}

function hexKey(value: string | undefined, variable: string): Uint8Array {
  if (value === undefined || value === "") throw new SignerError("config", `${nameShown(variable)} is not set`);
  const hex = value.startsWith("0x") ? value.slice(2) : value;
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new SignerError("config", `${nameShown(variable)} is not 32 bytes of hex (64 characters)`);
  return new Uint8Array(Buffer.from(hex, "hex"));
}

function envJwsKey(value: string | undefined, variable: string): DigestSigner {
  if (value === undefined || value === "") throw new SignerError("config", `${nameShown(variable)} is not set`);
  if (!value.trim().startsWith("{")) return localDigestSigner("P-256", hexKey(value, variable), "env");
  let jwk: { kty?: unknown; crv?: unknown; d?: unknown };
  try {
    jwk = JSON.parse(value) as typeof jwk;
  } catch {
    throw new SignerError("config", `${nameShown(variable)} is neither a private JWK nor 32 bytes of hex`);
  }
  if (jwk.kty !== "EC" || (jwk.crv !== "P-256" && jwk.crv !== "secp256k1") || typeof jwk.d !== "string") {
    throw new SignerError("config", `${nameShown(variable)} is not an EC private JWK on P-256 or secp256k1`);
  }
  return localDigestSigner(jwk.crv, new Uint8Array(Buffer.from(jwk.d, "base64url")), "env");
}

/**
 * A keystore's key, and why it counts as raw: its password in the environment, or empty. An empty password file
 * started on a real chain without a word, though whoever reads the keystore file holds the key.
 */
function openKeystore(u: Extract<SignerUri, { scheme: "keystore" }>, env: OpenSignerDeps["env"]): { key: Uint8Array; rawReason: RawReason | undefined } {
  let json: string;
  try {
    json = readFileSync(u.path, "utf8");
  } catch {
    throw new SignerError("config", `cannot read ${pathShown(u.path, "the keystore file")}`);
  }
  let password: string;
  if (u.passwordFile !== undefined) {
    try {
      // One trailing newline is the file's, not the password's (echo, editors).
      password = readFileSync(u.passwordFile, "utf8").replace(/\r?\n$/, "");
    } catch {
      throw new SignerError("config", `cannot read ${pathShown(u.passwordFile, "the password file")}`);
    }
  } else {
    const value = env[u.passwordEnv!];
    if (value === undefined) throw new SignerError("config", `${nameShown(u.passwordEnv!)} (the keystore's password) is not set`);
    password = value;
  }
  const key = decryptKeystore(json, password);
  return { key, rawReason: password === "" ? "empty-password" : u.passwordEnv !== undefined ? "password-env" : undefined };
}

/** Never a PIN or password in the line the process stops with. */
function redact(message: string): string {
  return message.replace(/(pin-value|password)[=:][^&;\s"]*/gi, "$1=…");
}

/** `decodeURIComponent`, or undefined for a malformed escape (it throws a bare "URI error"). */
function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
