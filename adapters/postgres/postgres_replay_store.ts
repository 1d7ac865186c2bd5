import type { SQL } from "bun";
import type { ClaimOutcome, ReplayStore } from "../../ports/replay_store.ts";
import { type ReplayRow, toReplayRecord } from "../sql/replay_store.ts";

/**
 * Replay records in PostgreSQL: a key claimed once on its chain (the table's key is (chain_id, key), decisions §30),
 * one live submission per attester nonce (a unique index).
 */
export function createPostgresReplayStore(sql: SQL): ReplayStore {
  const findReplay = async (chainId: number, key: string) => {
    const rows: ReplayRow[] = await sql`SELECT * FROM replay WHERE chain_id = ${chainId} AND key = ${key}`;
    return rows[0] === undefined ? undefined : toReplayRecord(rows[0]);
  };
  const replay: ReplayStore = {
    find: findReplay,
    async findAnyChain(key) {
      const rows: ReplayRow[] = await sql`SELECT * FROM replay WHERE key = ${key} ORDER BY chain_id LIMIT 1`;
      return rows[0] === undefined ? undefined : toReplayRecord(rows[0]);
    },
    async claim(claim): Promise<ClaimOutcome> {
      // ON CONFLICT without a target covers the key and the live-nonce index alike.
      const inserted = await sql`
        INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, created_at_ms)
        VALUES (${claim.key}, ${claim.chainId}, ${claim.attester.toLowerCase()}, ${claim.nonce.toString()},
                ${Number(claim.deadline)}, 'checked', ${claim.createdAtMs})
        ON CONFLICT DO NOTHING RETURNING key`;
      if (inserted.length === 1) return "claimed";
      return (await findReplay(claim.chainId, claim.key)) !== undefined ? "duplicate-signature" : "nonce-in-flight";
    },
    async markSigned(chainId, key, tx) {
      const rows = await sql`UPDATE replay SET state = 'signed', tx_hash = ${tx.txHash}, raw_tx = ${tx.raw},
                                    wallet = ${tx.wallet.toLowerCase()}, tx_nonce = ${tx.nonce}
                              WHERE chain_id = ${chainId} AND key = ${key} AND state = 'checked' RETURNING key`;
      return rows.length === 1;
    },
    async markSent(chainId, key) {
      await sql`UPDATE replay SET state = 'sent' WHERE chain_id = ${chainId} AND key = ${key} AND state IN ('checked', 'signed')`;
    },
    async finish(chainId, key, final) {
      const uid = final.state === "mined" ? final.uid : null;
      await sql`UPDATE replay SET state = ${final.state}, tx_hash = ${final.txHash}, uid = ${uid},
                       block_number = ${final.blockNumber.toString()}
                 WHERE chain_id = ${chainId} AND key = ${key} AND state IN ('checked', 'signed', 'sent')`;
    },
    async release(chainId, key) {
      await sql`DELETE FROM replay WHERE chain_id = ${chainId} AND key = ${key} AND state IN ('checked', 'signed', 'sent')`;
    },
    async open(createdBeforeMs) {
      const rows: ReplayRow[] = await sql`SELECT * FROM replay WHERE state IN ('checked', 'signed', 'sent')
                                           AND created_at_ms < ${createdBeforeMs} ORDER BY created_at_ms, tx_nonce`;
      return rows.map(toReplayRecord);
    },
    async prune(nowSeconds) {
      const rows = await sql`DELETE FROM replay WHERE deadline < ${Number(nowSeconds)} AND state IN ('mined', 'reverted')
                             RETURNING key`;
      return rows.length;
    },
  };
  return replay;
}
