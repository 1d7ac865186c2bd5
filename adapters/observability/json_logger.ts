import type { Logger } from "../../ports/logger.ts";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

/** Field names whose values never reach a log line. */
const SECRET_FIELD = /(private|secret|password|token|cookie|authorization|mnemonic|^key$)/i;
/**
 * A key's public name, which a field named `key` may carry (the signature audit, decisions §27): an Ethereum address or
 * an RFC 9278 JWK thumbprint URI. A private key (32 bytes of hex, a JWK) never has either shape.
 */
const PUBLIC_KEY_NAME = /^(0x[0-9a-fA-F]{40}|urn:ietf:params:oauth:jwk-thumbprint:sha-256:[A-Za-z0-9_-]{43})$/;
/** A 65-byte signature; logged as its first bytes only. */
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
/** A URL inside free text (an upstream error message): scheme, optional userinfo, host, rest. */
const URL_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/?#@"']*@)?([^\s/?#"']+)([^\s"']*)/gi;
/** A hex run longer than a 32-byte word (calldata, a signed transaction, a signature) inside free text. */
const LONG_HEX_IN_TEXT = /0x[0-9a-fA-F]{65,}/g;

/**
 * Keeps secrets and full signatures out of a log field. Fields named like secrets are dropped; a value
 * that is a signature keeps its first bytes. Free text (error messages from viem, fetch, the database)
 * gets its URLs cut to scheme and host, since an RPC URL often carries an API key in its path or query
 * and a database URL its password, and its long hex runs cut to their first bytes, since calldata
 * carries the user's signature.
 */
export function redactLogValue(key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (key !== "" && SECRET_FIELD.test(key) && !(key === "key" && typeof value === "string" && PUBLIC_KEY_NAME.test(value))) return "[redacted]";
  if (typeof value !== "string") return value;
  if (SIGNATURE.test(value)) return `${value.slice(0, 10)}…`;
  return redactText(value);
}

/** {@link redactLogValue} for free text. */
export function redactText(text: string): string {
  if (!text.includes("://") && !text.includes("0x")) return text;
  return text
    .replace(URL_IN_TEXT, (_, scheme: string, host: string, rest: string) => `${scheme}${host}${rest === "" ? "" : "/…"}`)
    .replace(LONG_HEX_IN_TEXT, (hex) => `${hex.slice(0, 10)}…(${(hex.length - 2) / 2} bytes)`);
}

/**
 * Writes one JSON object per line to `out` (default stderr) at or above the given level. `context`
 * adds fields of the current request (its id) to every line.
 */
export function createJsonLogger(
  level: keyof typeof LEVELS = "info",
  options: { context?: () => Record<string, unknown> | undefined; out?: (line: string) => void } = {},
): Logger {
  const min = LEVELS[level];
  const out = options.out ?? ((line: string) => process.stderr.write(line));
  const write = (lvl: Exclude<keyof typeof LEVELS, "silent">) => (event: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level: lvl, event, ...options.context?.(), ...fields }, redactLogValue);
    out(`${line}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
