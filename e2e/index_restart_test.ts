/**
 * Issue 43 item 11: three instances on one PostgreSQL, each stopped with SIGTERM and started again in turn while
 * attestations are written, on a chain that starts younger than the webhook confirmations (as an Anvil started
 * beside the service is). Before the fix the follower's first append stored a webhook boundary below -1; once the
 * head passed it, every append tried to queue each unrevoked attestation as a revocation without a block (`null
 * value in column "block_number" of relation "webhook_outbox"`), the index stayed where it was, and every read
 * answered 503 INDEX_STALE for good. Now each instance follows the head through every restart, reads answer 200
 * with every write listed, and the webhook boundary follows the head. Bounded by conditions, not by sleeps.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { createTestClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { e2eArtifacts } from "./harness.ts";
import { easWriter } from "./support/eas_writer.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "./support/postgres.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { waitFor } from "./support/wait_for.ts";

const skip = postgresUnavailableReason();
if (skip !== undefined) console.warn(`[index_restart_test] ${skip}`);

/** INDEX_CONFIRMATIONS, and so WEBHOOK_CONFIRMATIONS: more than the devnet's blocks at start (its deployment). */
const CONFIRMATIONS = 40;

let dir: string;
let devnet: Devnet;
let pg: TestPostgres;
let env: Record<string, string>;
const instances: ServiceProcess[] = [];

beforeAll(async () => {
  if (skip !== undefined) return;
  dir = mkdtempSync(join(tmpdir(), "ats-index-restart-"));
  [devnet, pg] = await Promise.all([startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() }), startPostgres()]);
  env = {
    PORT: "0",
    RPC_URL: devnet.rpcUrl,
    TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
    DATABASE_URL: pg.url,
    DATA_DIR: dir,
    START_BLOCK: "0",
    INDEX_CONFIRMATIONS: String(CONFIRMATIONS),
    INDEX_POLL_MS: "200",
    INDEX_STALL_SECONDS: "10",
    INDEX_LEASE_SECONDS: "5",
    LOG_LEVEL: "error",
  };
}, 60_000);
afterAll(async () => {
  for (const instance of instances) {
    if (instance.proc.exitCode === null && instance.proc.signalCode === null) await instance.stop();
  }
  await devnet?.stop();
  await pg?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Ready = { status: number; indexedBlock: number };
async function ready(instance: ServiceProcess): Promise<Ready> {
  const response = await fetch(`${instance.url}/readyz`);
  const body = await response.json() as { index?: { indexedBlock: number | null } };
  return { status: response.status, indexedBlock: body.index?.indexedBlock ?? -1 };
}

/** The uids the instance lists for the attester (one page), or the status when the read is refused. */
async function listed(instance: ServiceProcess, attester: string): Promise<{ status: number; uids: string[] }> {
  const response = await fetch(`${instance.url}/v1/attestations?attester=${attester}&limit=100`);
  const body = await response.json() as { items?: { attestation: { uid: string } }[] };
  return { status: response.status, uids: (body.items ?? []).map((i) => i.attestation.uid.toLowerCase()) };
}

describe.skipIf(skip !== undefined)("three instances on one PostgreSQL, each stopped and started again in turn (issue 43)", () => {
  test("the index follows the head through every restart: no outbox row stops it, reads answer 200 with every write", async () => {
    const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    const writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress as Hex });
    const key = devnet.keys.users[0] as Hex;
    const attester = privateKeyToAccount(key).address.toLowerCase();
    const schema = devnet.schemaUids["linked-identifier"] as Hex;
    const attest = async (n: number) =>
      (await writer.attest(key, schema, { recipient: `0x${n.toString(16).padStart(40, "0")}`, data: `0x${n.toString(16).padStart(64, "0")}`, revocable: true })).uid.toLowerCase();
    const head = async () => Number(await writer.client.getBlockNumber({ cacheTime: 0 }));

    // An attestation before the instances start, on a chain younger than the confirmations (the defect's condition).
    const uids = [await attest(1)];
    expect(await head()).toBeLessThan(CONFIRMATIONS - 1);
    instances.push(...await Promise.all([startServiceProcess(env), startServiceProcess(env), startServiceProcess(env)]));
    const first = await head();
    await waitFor("every instance indexes the young chain", async () =>
      (await Promise.all(instances.map(ready))).every((r) => r.status === 200 && r.indexedBlock >= first) ? true : undefined);

    /** Every instance ready at the head or past it and listing every write. */
    const settled = async () => {
      const target = await head();
      return await waitFor(`every instance at block ${target} listing ${uids.length} writes`, async () => {
        const states = await Promise.all(instances.map(async (i) => ({ ready: await ready(i), list: await listed(i, attester) })));
        const done = states.every((s) => s.ready.status === 200 && s.ready.indexedBlock >= target && s.list.status === 200 &&
          uids.every((u) => s.list.uids.includes(u)));
        return done ? states : undefined;
      });
    };

    for (let turn = 0; turn < instances.length; turn++) {
      expect(await instances[turn]!.stop()).toBe(0);
      // Writes and blocks while it is down: the head crosses the webhook boundary during the second turn.
      uids.push(await attest(10 + turn));
      await anvil.mine({ blocks: 12 });
      instances[turn] = await startServiceProcess(env);
      uids.push(await attest(20 + turn));
      const states = await settled();
      expect(states.map((s) => s.list.status)).toEqual([200, 200, 200]);
    }
    expect(await head()).toBeGreaterThan(CONFIRMATIONS + 1);

    // The webhook boundary moved past block 0: the attestations that crossed it were queued, none without a block.
    const sql = new SQL({ url: pg.url, max: 1 });
    try {
      const [mark] = await sql`SELECT block_number FROM webhook_marks` as { block_number: string }[];
      expect(Number(mark!.block_number)).toBeGreaterThanOrEqual((await head()) - CONFIRMATIONS - 1);
      const [nulls] = await sql`SELECT COUNT(*) AS n FROM webhook_outbox WHERE block_number IS NULL` as { n: string }[];
      expect(Number(nulls!.n)).toBe(0);
    } finally {
      await sql.close();
    }
  }, 180_000);
});
