import type { Logger } from "../ports/logger.ts";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

/** Field names whose values never reach a log line. */
const SECRET_FIELD = /(private|secret|password|token|cookie|authorization|mnemonic|^key$)/i;
/** A 65-byte signature; logged as its first bytes only. */
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;

/** Keeps secrets and full signatures out of a log field. */
export function redactLogValue(key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (key !== "" && SECRET_FIELD.test(key)) return "[redacted]";
  if (typeof value === "string" && SIGNATURE.test(value)) return `${value.slice(0, 10)}…`;
  return value;
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
