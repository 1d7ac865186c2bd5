/**
 * Operator command: `bun run ops accounts list` and `bun run ops accounts set-plan <id|address> <free|paid>`.
 * Reads the database from the same environment as the service (DATABASE_URL, else DATABASE_PATH or DATA_DIR).
 * Prints JSON, one account per line for `list`.
 */
import { systemClock } from "./adapters/system_clock.ts";
import { openStorage } from "./main.ts";
import { ConfigError, readConfig } from "./config.ts";
import { isPlan, PLANS, quotaYear } from "./domain/plans.ts";

const USAGE = `usage: bun run ops accounts list
       bun run ops accounts set-plan <account id | wallet address> <${PLANS.join("|")}>`;

/** Runs one operator command; returns the exit code. */
export async function runOps(args: readonly string[], env: Readonly<Record<string, string | undefined>>, out: (line: string) => void): Promise<number> {
  const [group, command, ...rest] = args;
  if (group !== "accounts" || (command !== "list" && command !== "set-plan")) {
    out(USAGE);
    return 2;
  }
  let config;
  try {
    config = readConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      out(`ats ops: ${error.message}`);
      return 2;
    }
    throw error;
  }
  const storage = await openStorage(config);
  try {
    const { accounts, ledger } = storage;
    const year = quotaYear(systemClock.nowMs());
    const limitOf = (plan: "free" | "paid") => plan === "free" ? config.freePlanAnnualWrites : config.paidPlanAnnualWrites;
    if (command === "list") {
      for (const account of await accounts.listAccounts()) {
        const usage = await ledger.usage(account.id, year);
        out(JSON.stringify({
          id: account.id,
          address: account.address,
          plan: account.plan,
          createdAt: new Date(account.createdAtMs).toISOString(),
          year,
          writesUsed: usage.used,
          writesReserved: usage.reserved,
          writeLimit: limitOf(account.plan),
        }));
      }
      return 0;
    }
    const [who, plan] = rest;
    if (who === undefined || plan === undefined || !isPlan(plan)) {
      out(USAGE);
      return 2;
    }
    const updated = await accounts.setPlan(who, plan, systemClock.nowMs());
    if (updated === undefined) {
      out(`ats ops: no account ${who}`);
      return 1;
    }
    out(JSON.stringify({ id: updated.id, address: updated.address, plan: updated.plan, writeLimit: limitOf(updated.plan) }));
    return 0;
  } finally {
    await storage.close();
  }
}

if (import.meta.main) {
  process.exit(await runOps(process.argv.slice(2), process.env, (line) => console.log(line)));
}
