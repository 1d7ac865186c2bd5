/**
 * The instances' shared nonce lock against a real PostgreSQL, ended by the database while its send runs
 * (`pg_terminate_backend`, as a failover, an operator or the hold's idle timeout ends it): Bun's `sql.begin` rejects at
 * once while the send goes on, and the sender must answer what the send did, never "nothing sent" for bytes that left.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { SignedTx } from "../../ports/eas.ts";
import type { Storage } from "../../ports/storage.ts";
import type { JsonRpc } from "./json_rpc.ts";
import { createTxSender } from "./viem_tx_sender.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "../../e2e/support/postgres.ts";
import { openPostgresStorage } from "../postgres/mod.ts";

const pgSkip = postgresUnavailableReason();
if (pgSkip !== undefined) console.warn(`[viem_tx_sender_postgres_test] ${pgSkip}`);
let pg: TestPostgres | undefined;
let admin: SQL | undefined;
beforeAll(async () => {
  if (pgSkip !== undefined) return;
  pg = await startPostgres();
  admin = new SQL({ url: pg.url, max: 1 });
});
afterAll(async () => {
  await admin?.close();
  await pg?.stop();
});

/** Ends every other backend holding a transaction open (the wallet's lock), as an operator or a failover would. */
async function terminateLockHolder(): Promise<number> {
  const rows: { pid: number }[] = await admin!`SELECT pid FROM pg_stat_activity
    WHERE state LIKE 'idle in transaction%' AND pid <> pg_backend_pid() AND datname = current_database()`;
  for (const { pid } of rows) await admin!`SELECT pg_terminate_backend(${pid})`;
  return rows.length;
}

/** A node answering a send's reads; `onCount` and `onSend` run when the pending count is read and the bytes are sent. */
function node(hooks: { onCount?: () => Promise<void>; onSend?: () => Promise<void> }) {
  const methods: string[] = [];
  const rpc: JsonRpc = {
    async request<T>(method: string, params: readonly unknown[]): Promise<T> {
      methods.push(method);
      switch (method) {
        case "eth_gasPrice":
          return "0x3b9aca00" as T;
        case "eth_maxPriorityFeePerGas":
          return "0x1" as T;
        case "eth_getTransactionCount":
          await hooks.onCount?.();
          return "0x7" as T;
        case "eth_sendRawTransaction":
          await hooks.onSend?.();
          return "0x" as T;
        case "eth_getTransactionReceipt":
          return { transactionHash: params[0], blockNumber: "0x10", gasUsed: "0x5208", status: "0x1", logs: [] } as T;
      }
      throw new Error(`unexpected ${method}`);
    },
  };
  return { rpc, methods };
}

describe.skipIf(pgSkip !== undefined)("createTxSender() with PostgreSQL's shared nonce lock ended by the database", () => {
  async function senderOn(storage: Storage, rpc: JsonRpc) {
    const key = generatePrivateKey();
    const signed: SignedTx[] = [];
    const events: string[] = [];
    const s = createTxSender({ rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces: storage.walletNonces, sendSync: "off", log: (event) => void events.push(event) });
    const send = () => s.send({ to: "0x000000000000000000000000000000000000dEaD", data: "0x", gas: 21_000n, onSigned: async (tx) => void signed.push(tx) });
    return { send, signed, events };
  }

  test("ended while the bytes are sent: the send's real outcome, sent once", async () => {
    const storage = await openPostgresStorage(pg!.url, { max: 1 });
    try {
      let terminated = 0;
      const chain = node({
        onSend: async () => {
          terminated = await terminateLockHolder();
          // The rejection reaches the sender while the node still holds the send's answer.
          await Bun.sleep(50);
        },
      });
      const s = await senderOn(storage, chain.rpc);
      const outcome = await s.send();
      expect(terminated).toBe(1);
      expect(s.events).toContain("nonce_lock_error");
      expect(outcome).toMatchObject({ ok: true, txHash: s.signed[0]!.txHash });
      expect(chain.methods.filter((m) => m === "eth_sendRawTransaction")).toHaveLength(1);
      // The instances' row was not moved past the nonce (its transaction rolled back with the lock): the next holder
      // takes the larger of it and the node's pending count, which counts the transaction that left.
      const rows: { next_nonce: unknown }[] = await admin!`SELECT next_nonce FROM wallet_nonces WHERE address = ${s.signed[0]!.wallet}`;
      expect(rows.map((r) => Number(r.next_nonce)).filter((n) => n > 7)).toEqual([]);
    } finally {
      await storage.close().catch(() => undefined);
    }
  }, 30_000);

  test("ended while the pending nonce is read: nonce-unavailable, and nothing is ever signed or sent", async () => {
    const storage = await openPostgresStorage(pg!.url, { max: 1 });
    try {
      const chain = node({
        onCount: async () => {
          await terminateLockHolder();
          await Bun.sleep(50);
        },
      });
      const s = await senderOn(storage, chain.rpc);
      expect(await s.send()).toEqual({ ok: false, reason: "nonce-unavailable" });
      await Bun.sleep(50);
      expect(s.signed).toEqual([]);
      expect(chain.methods.filter((m) => m.startsWith("eth_send"))).toEqual([]);
    } finally {
      await storage.close().catch(() => undefined);
    }
  }, 30_000);
});
