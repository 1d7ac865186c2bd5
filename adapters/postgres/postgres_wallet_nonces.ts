import type { SQL } from "bun";
import type { WalletNonces } from "../../ports/storage.ts";

type Row = Record<string, unknown>;
const num = (value: unknown): number => Number(value);

/**
 * The next transaction nonce of each service wallet, shared by every instance: a row locked while a transaction is sent.
 * The hold is bounded (`holdSeconds`, WALLET_LOCK_SECONDS): an instance that froze or lost its way to the database while
 * it held the row (a pause, a stopped process, a cut network) held every instance's writes for as long as PostgreSQL took
 * to notice (hours, with the system's keepalives). PostgreSQL now ends a hold idle that long (the transaction's
 * `idle_in_transaction_session_timeout`); the holder's send then stands or not as the node has it (the sender reads the
 * node's pending count under the next hold), and the others go on.
 */
export function createPostgresWalletNonces(sql: SQL, options: { readonly holdSeconds: number } = { holdSeconds: 120 }): WalletNonces {
  const holdMs = Math.max(1, Math.floor(options.holdSeconds)) * 1_000;
  const walletNonces: WalletNonces = {
    withLock: (chainId, address, send) =>
      sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL idle_in_transaction_session_timeout = ${holdMs}`);
        const wallet = address.toLowerCase();
        await tx`INSERT INTO wallet_nonces (chain_id, address, next_nonce) VALUES (${chainId}, ${wallet}, 0)
                 ON CONFLICT DO NOTHING`;
        const [row]: Row[] = await tx`SELECT next_nonce FROM wallet_nonces WHERE chain_id = ${chainId} AND address = ${wallet}
                                      FOR UPDATE`;
        const result = await send(num(row!.next_nonce));
        if (result.used !== undefined) {
          await tx`UPDATE wallet_nonces SET next_nonce = ${result.used + 1} WHERE chain_id = ${chainId} AND address = ${wallet}`;
        }
        return result.value;
      }),
  };
  return walletNonces;
}
