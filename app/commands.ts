/**
 * The binary's subcommands (decisions §28): `ats healthcheck [url]` asks the local `/readyz` and exits 0 or 1 (the
 * image's HEALTHCHECK, app/healthcheck.ts); `ats devnet` runs only the chain part, as `npm run devnet` (the compose
 * file's devnet profile); `ats ops …` the operator's commands (app/ops.ts: accounts, payments, the index, the OAuth
 * key, the signers), so they run in the image, which has no npm, through `docker compose exec` or `kubectl exec` with
 * the instance's own environment and key access. No argument: undefined, and main.ts starts the service.
 */
import { runDevnetCommand } from "../adapters/devnet/mod.ts";
import { runHealthcheck } from "./healthcheck.ts";
import { runOps } from "./ops.ts";

/** Runs the subcommand `argv` names and resolves to its exit code; undefined when there is none. */
export async function runCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number | undefined> {
  const [command, ...rest] = argv;
  if (command === undefined) return undefined;
  if (command === "healthcheck") return await runHealthcheck({ env, url: rest[0] });
  if (command === "devnet") return await runDevnetCommand(env);
  if (command === "ops") return await runOps(rest, env, (line) => console.log(line));
  console.error(`ats: unknown command "${command}" (expected none, healthcheck, devnet or ops)`);
  return 2;
}
