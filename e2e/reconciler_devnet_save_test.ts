/**
 * The reconciler on the embedded devnet (issue 33 item 14): a transaction it sends again and records as mined is in
 * the devnet's saved state before the record is written, as after a normal send, so a `kill -9` of the service and
 * its Anvil right after cannot leave a write recorded that the restarted chain lacks (nor the wallet's next nonces
 * behind the gap). The reconciler runs as the service wires it (app/submissions.ts) over a real SQLite file and a
 * persisted devnet whose periodic save is off: only what a save covered comes back.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, type Hex, http, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createViemEas } from "../adapters/chain/mod.ts";
import { type AnvilLock, type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { readConfig } from "../app/config.ts";
import type { Foundation } from "../app/foundation.ts";
import { wireSubmissions } from "../app/submissions.ts";
import type { Logger } from "../ports/logger.ts";

const forgeBuilt = existsSync(join(import.meta.dir, "..", "out", "EAS.sol", "EAS.json"));
const artifacts = forgeBuilt ? "forge" : "npm";
const dir = mkdtempSync(join(tmpdir(), "ats-reconciler-save-"));
const devnets: Devnet[] = [];
afterEach(async () => {
  for (const devnet of devnets.splice(0)) await devnet.stop();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

async function devnetOn(dataDir: string): Promise<Devnet> {
  const devnet = await startDevnet({ dataDir, artifacts, checkpointIntervalMs: 0 });
  devnets.push(devnet);
  return devnet;
}

test("a transaction the reconciler sends again and records as mined survives kill -9 of the service and its Anvil", async () => {
  const dataDir = join(dir, "devnet");
  const devnet = await devnetOn(dataDir);
  const client = createPublicClient({ transport: http(devnet.rpcUrl) });
  const delegate = privateKeyToAccount(devnet.keys.delegate);
  // Three transactions signed and stored as sent, that a crash kept from the chain (never sent here).
  const nonce = await client.getTransactionCount({ address: delegate.address, blockTag: "pending" });
  const fees = await client.estimateFeesPerGas();
  const txs = await Promise.all([0, 1, 2].map(async (i) => {
    const raw = await delegate.signTransaction({
      chainId: devnet.chainId, type: "eip1559", to: delegate.address, value: 0n, gas: 21_000n, nonce: nonce + i, ...fees,
    });
    return { raw, txHash: keccak256(raw), wallet: delegate.address.toLowerCase(), nonce: nonce + i };
  }));
  const storage = await openSqliteStorage(join(dir, "ats.sqlite"));
  for (const [i, tx] of txs.entries()) {
    const key = `0x${String(i).repeat(130)}`;
    expect(await storage.replay.claim({ key, chainId: devnet.chainId, attester: `0x${"a".repeat(39)}${i}`, nonce: 0n, deadline: 4_000_000_000n, createdAtMs: 0 })).toBe("claimed");
    expect(await storage.replay.markSigned(key, tx as never)).toBe(true);
    await storage.replay.markSent(key);
  }
  const eas = createViemEas({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, easAddress: devnet.easAddress, delegatePrivateKey: devnet.keys.delegate });

  // The start-up rounds resend the three and record them mined.
  const reconciler = await wireSubmissions(readConfig({ DATA_DIR: dir }), { storage, eas, easAddress: devnet.easAddress, log: quiet, devnet } as unknown as Foundation);
  reconciler.stop();
  for (const i of [0, 1, 2]) expect((await storage.replay.find(`0x${String(i).repeat(130)}`))?.state).toBe("mined");
  await storage.close();

  // kill -9 of the service's Anvil: nothing is saved on the way out (the devnet's own stop then finds no Anvil to save).
  const lock = JSON.parse(readFileSync(join(dataDir, "anvil.lock"), "utf8")) as AnvilLock;
  process.kill(lock.pid, "SIGKILL");
  while (await fetch(devnet.rpcUrl, { method: "POST" }).then(() => true, () => false)) await Bun.sleep(20);
  devnets.splice(devnets.indexOf(devnet), 1);
  await devnet.stop();

  const restarted = await devnetOn(dataDir);
  const after = createPublicClient({ transport: http(restarted.rpcUrl) });
  for (const tx of txs) {
    const receipt = await after.getTransactionReceipt({ hash: tx.txHash as Hex }).then((r) => r.status, () => "missing");
    expect({ tx: tx.txHash, receipt }).toEqual({ tx: tx.txHash, receipt: "success" });
  }
  // No gap: the wallet's next nonce is past all three.
  expect(await after.getTransactionCount({ address: delegate.address, blockTag: "pending" })).toBe(nonce + 3);
}, 120_000);
