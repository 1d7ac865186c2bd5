/**
 * SoftHSM2 for tests (issue 44): a token folder of its own in a temp directory (SOFTHSM2_CONF), tokens made with
 * `softhsm2-util` and EC key pairs with OpenSC's `pkcs11-tool`, as an operator would make them (docs/signing.md).
 * Debian packages `softhsm2` and `opensc`; `scripts/test.sh` installs them.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where Debian (and Ubuntu) put the SoftHSM2 module. */
export const SOFTHSM_MODULE = ["/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so", "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so"]
  .find((p) => existsSync(p));

/** True when SoftHSM2 and pkcs11-tool are installed. */
export function softHsmAvailable(): boolean {
  return SOFTHSM_MODULE !== undefined && Bun.which("softhsm2-util") !== null && Bun.which("pkcs11-tool") !== null;
}

/** A SoftHSM2 token store in a temp folder. */
export type SoftHsm = {
  readonly dir: string;
  /** The SOFTHSM2_CONF file: a process that opens the module must have it in its environment. */
  readonly conf: string;
  readonly modulePath: string;
  /** Initialises a token with this label, SO PIN "so-pin" and user PIN `pin`. */
  readonly createToken: (label: string, pin: string) => void;
  /** Generates an EC key pair on `token` (label and CKA_ID `id`, hex); returns the uncompressed public key. */
  readonly generateKey: (token: string, pin: string, label: string, curve: "secp256k1" | "P-256", id: string) => Uint8Array;
  /** The signer URI of a key, with the PIN as pin-value (or in a file when `pinFile` is given). */
  readonly uri: (token: string, label: string, pin: string, pinFile?: string) => string;
  readonly remove: () => void;
};

/** Creates an empty token store. */
export function createSoftHsm(): SoftHsm {
  if (SOFTHSM_MODULE === undefined) throw new Error("SoftHSM2 is not installed (apt-get install softhsm2 opensc)");
  const modulePath = SOFTHSM_MODULE;
  const dir = mkdtempSync(join(tmpdir(), "ats-softhsm-"));
  mkdirSync(join(dir, "tokens"));
  const conf = join(dir, "softhsm2.conf");
  writeFileSync(conf, `directories.tokendir = ${join(dir, "tokens")}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
  const run = (command: string[]): string => {
    const result = Bun.spawnSync(command, { env: { ...process.env, SOFTHSM2_CONF: conf }, stdout: "pipe", stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`${command[0]} failed: ${result.stderr.toString()}${result.stdout.toString()}`);
    return result.stdout.toString();
  };
  return {
    dir,
    conf,
    modulePath,
    createToken(label, pin) {
      run(["softhsm2-util", "--init-token", "--free", "--label", label, "--so-pin", "so-pin", "--pin", pin]);
    },
    generateKey(token, pin, label, curve, id) {
      const keyType = curve === "secp256k1" ? "EC:secp256k1" : "EC:prime256v1";
      const out = run(["pkcs11-tool", "--module", modulePath, "--token-label", token, "--login", "--pin", pin, "--keypairgen", "--key-type", keyType, "--label", label, "--id", id]);
      const point = /EC_POINT:\s+([0-9a-f]+)/.exec(out)?.[1];
      if (point === undefined) throw new Error(`pkcs11-tool printed no EC_POINT: ${out}`);
      // DER OCTET STRING (04 41) around the uncompressed point.
      return new Uint8Array(Buffer.from(point.slice(4), "hex"));
    },
    uri(token, label, pin, pinFile) {
      const path = `pkcs11:token=${encodeURIComponent(token)};object=${encodeURIComponent(label)}`;
      const pinPart = pinFile === undefined ? `pin-value=${encodeURIComponent(pin)}` : `pin-source=file:${pinFile}`;
      return `${path}?module-path=${modulePath}&${pinPart}`;
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Sets SOFTHSM2_CONF in this process's C environment, where the module reads it (Bun's `process.env` does not reach
 * `getenv`). SoftHSM2 reads it once, at the first C_Initialize of the process, so one store serves a whole test file.
 */
export async function useSoftHsmInThisProcess(hsm: SoftHsm): Promise<void> {
  const { dlopen, FFIType } = await import("bun:ffi");
  const libc = dlopen(process.platform === "darwin" ? "libc.dylib" : "libc.so.6", {
    setenv: { args: [FFIType.cstring, FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
  });
  const result = libc.symbols.setenv(Buffer.from("SOFTHSM2_CONF\0"), Buffer.from(`${hsm.conf}\0`), 1);
  libc.close();
  if (result !== 0) throw new Error("setenv(SOFTHSM2_CONF) failed");
  process.env.SOFTHSM2_CONF = hsm.conf;
}
