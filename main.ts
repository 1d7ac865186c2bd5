/**
 * Starts the service: reads the config from the environment, starts it (app/service.ts wires everything), prints
 * the banner and stops cleanly on SIGINT and SIGTERM. Subcommands (`healthcheck`, `devnet`): app/commands.ts.
 */
import { runCommand } from "./app/commands.ts";
import { ConfigError, readConfig } from "./app/config.ts";
import { type Service, StartupError, startService } from "./app/service.ts";

// From source argv is [bun, main.ts, ...]; in the compiled binary [bun, /$bunfs/root/ats, ...] as well.
const exitCode = import.meta.main ? await runCommand(process.argv.slice(2), process.env) : undefined;
if (exitCode !== undefined) {
  process.exit(exitCode);
} else if (import.meta.main) {
  // A stop asked for while starting (as PID 1 in a container the kernel would otherwise drop SIGTERM until the
  // handlers below exist): nothing is served yet, so the process ends at once. What start-up began is safe to
  // cut: the schema is applied in one transaction, and the devnet's Anvil ends with its watchdog.
  const stopWhileStarting = () => process.exit(0);
  process.on("SIGINT", stopWhileStarting);
  process.on("SIGTERM", stopWhileStarting);
  let service: Service;
  let graceMs = 0;
  try {
    const config = readConfig(process.env);
    graceMs = config.server.shutdownGraceMs;
    // The service process holds its SQLite file's instance lock: a second one on the file stops (app/foundation.ts).
    service = await startService(config, { holdSqliteLock: true });
  } catch (error) {
    if (error instanceof ConfigError || error instanceof StartupError) {
      console.error(`ats: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const lines = [
    `ats listening on ${service.url}`,
    `chain ${service.chainName} (eip155:${service.chainId})`,
    `EAS ${service.easAddress}`,
  ];
  if (service.devnet) {
    // The node of the chain served (DEVNET_CHAINS=2 with DEFAULT_CHAIN=31338 serves the devnet's second).
    const served = service.devnet.chains.find((c) => c.chainId === service.chainId)?.rpcUrl ?? service.devnet.rpcUrl;
    lines.push(`SchemaRegistry ${service.devnet.schemaRegistryAddress}`, `devnet RPC ${served}`);
  }
  if (service.x402) {
    const { x402 } = service;
    const price = (value: string | null) => value ?? "not offered";
    lines.push(
      `x402 token ${x402.asset} on ${x402.network}${service.devnet ? ` (${service.devnet.x402.name}, ${service.devnet.x402.decimals} decimals, minted to the Anvil dev accounts)` : ""}`,
      // The facilitator's origin only: a URL may carry its credentials (userinfo, a key in the path or query).
      `x402 payTo ${x402.payTo}, facilitator ${originOf(x402.facilitatorUrl)}`,
      `x402 prices (token units): witness ${price(x402.prices.witness)}, relay ${price(x402.prices.relay)}, paid plan year ${price(x402.prices.paidPlan)}`,
    );
  }
  // The handlers come first: whoever waits for the banner may stop the service right after reading it.
  // Decisions §28: exit 0 within SHUTDOWN_GRACE_MS + 5 s. The drain keeps to the grace; what follows it (the index's
  // last round against a node that hangs, webhook deliveries, signer sessions) is cut 4 s after it rather than left
  // to the runtime's SIGKILL (exit 137). What it leaves is settled at the next start: leases expire, records stand.
  const shutdown = async () => {
    setTimeout(() => process.exit(0), graceMs + 4_000).unref();
    await service.stop();
    process.exit(0);
  };
  process.off("SIGINT", stopWhileStarting);
  process.off("SIGTERM", stopWhileStarting);
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  console.log(lines.join("\n"));
}

/** A URL as the banner shows it: its origin, without userinfo, and "/…" for a path or query (they may hold a key). */
function originOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" && u.search === "" ? "" : "/…"}`;
  } catch {
    return "(not a URL)";
  }
}
