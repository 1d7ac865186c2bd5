/**
 * Every path that records an outcome on the embedded devnet saves the devnet first (issue 33 item 14), as a normal
 * send does: a transaction the reconciler sends again and records as mined, and a payment the devnet's x402
 * facilitator settles, are in the saved state before the service records them, so a `kill -9` of the service and its
 * Anvil right after cannot leave a write or a payment recorded that the restarted chain lacks (nor the wallet's next
 * nonces behind the gap). The reconciler and the facilitator run as the service wires them (app/submissions.ts,
 * app/payments.ts) over a real SQLite file and a persisted devnet whose periodic save is off: only what a save
 * covered comes back.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, erc20Abi, type Hex, http, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createViemEas } from "../adapters/chain/mod.ts";
import { type AnvilLock, type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { createPrometheusMetrics } from "../adapters/observability/mod.ts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { readConfig } from "../app/config.ts";
import type { Foundation } from "../app/foundation.ts";
import { wireX402 } from "../app/payments.ts";
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

/** `kill -9` of a devnet's Anvil: nothing is saved on the way out (the devnet's own stop then finds no Anvil to save). */
async function killAnvil(devnet: Devnet, dataDir: string) {
  const lock = JSON.parse(readFileSync(join(dataDir, "anvil.lock"), "utf8")) as AnvilLock;
  process.kill(lock.pid, "SIGKILL");
  while (await fetch(devnet.rpcUrl, { method: "POST" }).then(() => true, () => false)) await Bun.sleep(20);
  devnets.splice(devnets.indexOf(devnet), 1);
  await devnet.stop();
}

test("a transaction the reconciler sends again and records as mined survives kill -9 of the service and its Anvil", async () => {
  const dataDir = join(dir, "devnet");
  const devnet = await devnetOn(dataDir);
  const client = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
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
    expect(await storage.replay.markSigned(devnet.chainId, key, tx as never)).toBe(true);
    await storage.replay.markSent(devnet.chainId, key);
  }
  const eas = createViemEas({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, easAddress: devnet.easAddress, delegatePrivateKey: devnet.keys.delegate });

  // The start-up rounds resend the three and record them mined.
  // A foundation of the one devnet chain: its anchors (decisions §30: the served set is built from them), no signers.
  const trustAnchors = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8")) as Foundation["trustAnchors"];
  const foundation = { storage, eas, chainId: devnet.chainId, easAddress: devnet.easAddress, trustAnchors, chain: trustAnchors.chains[`eip155:${devnet.chainId}`], signers: {}, log: quiet, devnet };
  const reconciler = await wireSubmissions(readConfig({ DATA_DIR: dir }), foundation as unknown as Foundation);
  reconciler.stop();
  for (const i of [0, 1, 2]) expect((await storage.replay.find(devnet.chainId, `0x${String(i).repeat(130)}`))?.state).toBe("mined");
  await storage.close();

  await killAnvil(devnet, dataDir);

  const restarted = await devnetOn(dataDir);
  const after = createPublicClient({ cacheTime: 0, transport: http(restarted.rpcUrl) });
  for (const tx of txs) {
    const receipt = await after.getTransactionReceipt({ hash: tx.txHash as Hex }).then((r) => r.status, () => "missing");
    expect({ tx: tx.txHash, receipt }).toEqual({ tx: tx.txHash, receipt: "success" });
  }
  // No gap: the wallet's next nonce is past all three.
  expect(await after.getTransactionCount({ address: delegate.address, blockTag: "pending" })).toBe(nonce + 3);
}, 120_000);

test("a payment the devnet's facilitator settled survives kill -9 of the service and its Anvil", async () => {
  const dataDir = join(dir, "devnet-x402");
  const devnet = await devnetOn(dataDir);
  const storage = await openSqliteStorage(join(dir, "x402.sqlite"));
  const x402 = await wireX402(readConfig({ DATA_DIR: join(dir, "x402") }), {
    devnet, chainId: devnet.chainId, witnessKey: devnet.keys.witness, payments: storage.payments, clock: systemClock, metrics: createPrometheusMetrics(), log: quiet,
  });
  expect(x402).toBeDefined();
  const { facilitatorUrl, asset, payTo, network } = x402!.terms;
  const balance = async (rpcUrl: string) =>
    await createPublicClient({ cacheTime: 0, transport: http(rpcUrl) }).readContract({ address: asset as Hex, abi: erc20Abi, functionName: "balanceOf", args: [payTo as Hex] });
  const before = await balance(devnet.rpcUrl);

  const accepted = { scheme: "exact", network, asset, amount: "1000", payTo, maxTimeoutSeconds: 300, extra: { name: devnet.x402.name, version: devnet.x402.version } };
  const required = { x402Version: 2, resource: { url: "http://ats.test/v1/paid", description: "test", mimeType: "application/json" }, accepts: [accepted] } as PaymentRequired;
  const payer = new x402HTTPClient(registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(devnet.keys.users[0]!) })
    .setSpendControls({ allowedAssets: [{ network: network as never, asset, maxAmountPerPayment: "1000" }] }));
  const paymentPayload = await payer.createPaymentPayload(required);
  const settled = await (await fetch(`${facilitatorUrl}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ paymentPayload, paymentRequirements: accepted }),
  })).json() as { success: boolean };
  expect(settled.success).toBe(true);
  expect(await balance(devnet.rpcUrl)).toBe(before + 1000n);
  await x402!.stop();
  await storage.close();

  await killAnvil(devnet, dataDir);
  const restarted = await devnetOn(dataDir);
  expect(await balance(restarted.rpcUrl)).toBe(before + 1000n);
}, 120_000);
