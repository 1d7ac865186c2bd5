// A stand-in for the service in devnet lifetime tests: `bun e2e/support/devnet_child.ts <dataDir>` starts a
// persisted devnet there, prints one JSON line ({ rpcUrl, pid }) on stdout, then obeys lines on stdin:
// `checkpoint` (answers `checkpointed` or `failed <message>`) and `stop` (stops the devnet and exits 0).
// CHECKPOINT_INTERVAL_MS sets the periodic checkpoint (default: the devnet's).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startDevnet } from "../../adapters/devnet/mod.ts";

const dataDir = process.argv[2];
if (dataDir === undefined) {
  process.stderr.write("usage: bun e2e/support/devnet_child.ts <dataDir>\n");
  process.exit(2);
}
const interval = process.env.CHECKPOINT_INTERVAL_MS;
const forgeBuilt = existsSync(join(import.meta.dir, "..", "..", "out", "EAS.sol", "EAS.json"));

const devnet = await startDevnet({
  dataDir,
  artifacts: forgeBuilt ? "forge" : "npm",
  checkpointIntervalMs: interval === undefined ? undefined : Number(interval),
  log: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`${JSON.stringify({ rpcUrl: devnet.rpcUrl, pid: process.pid })}\n`);

const decoder = new TextDecoder();
let buffered = "";
for await (const chunk of process.stdin) {
  buffered += decoder.decode(chunk as Uint8Array, { stream: true });
  let newline = buffered.indexOf("\n");
  while (newline >= 0) {
    const command = buffered.slice(0, newline).trim();
    buffered = buffered.slice(newline + 1);
    newline = buffered.indexOf("\n");
    if (command === "checkpoint") {
      try {
        await devnet.checkpoint!();
        process.stdout.write("checkpointed\n");
      } catch (error) {
        process.stdout.write(`failed ${error instanceof Error ? error.message : String(error)}\n`);
      }
    } else if (command === "stop") {
      await devnet.stop();
      process.exit(0);
    }
  }
}
// stdin closed: keep running until killed, as a service would.
setInterval(() => {}, 1 << 30);
