/**
 * The binary's subcommands (decisions §28): `ats healthcheck [url]` asks the local `/readyz` and exits 0 or 1 (the
 * image's HEALTHCHECK, app/healthcheck.ts); `ats devnet` runs only the chain part, as `npm run devnet` (the compose
 * file's devnet profile). No argument: undefined, and main.ts starts the service.
 */
import { runDevnetCommand } from "../adapters/devnet/mod.ts";
import { runHealthcheck } from "./healthcheck.ts";

/** Runs the subcommand `argv` names and resolves to its exit code; undefined when there is none. */
export async function runCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number | undefined> {
  const [command, ...rest] = argv;
  if (command === undefined) return undefined;
  if (command === "healthcheck") return await runHealthcheck({ env, url: rest[0] });
  if (command === "devnet") return await runDevnetCommand(env);
  console.error(`ats: unknown command "${command}" (expected none, healthcheck or devnet)`);
  return 2;
}
