import type { SQL } from "bun";
import type { WalletNonces } from "../../ports/storage.ts";

type Row = Record<string, unknown>;
const num = (value: unknown): number => Number(value);

/** The next transaction nonce of each service wallet, shared by every instance: a row locked while a transaction is sent. */
export function createPostgresWalletNonces(sql: SQL): WalletNonces {
  const walletNonces: WalletNonces = {
    withLock: (chainId, address, send) =>
      sql.begin(async (tx) => {
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
