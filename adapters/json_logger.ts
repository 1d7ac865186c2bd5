import type { Logger } from "../ports/logger.ts";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

/** Writes one JSON object per line to stderr at or above the given level. */
export function createJsonLogger(level: keyof typeof LEVELS = "info"): Logger {
  const min = LEVELS[level];
  const write = (lvl: Exclude<keyof typeof LEVELS, "silent">) => (event: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    const line = JSON.stringify(
      { time: new Date().toISOString(), level: lvl, event, ...fields },
      (_k, v) => (typeof v === "bigint" ? v.toString() : v),
    );
    process.stderr.write(`${line}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
