import type { SQL } from "bun";
import type { ClaimOutcome, ReplayStore } from "../../ports/replay_store.ts";
import { type ReplayRow, toReplayRecord } from "../sql/replay_store.ts";

/** Replay records in PostgreSQL: a key claimed once, one live submission per attester nonce (a unique index). */
export function createPostgresReplayStore(sql: SQL): ReplayStore {
  const findReplay = async (key: string) => {
    const rows: ReplayRow[] = await sql`SELECT * FROM replay WHERE key = ${key}`;
    return rows[0] === undefined ? undefined : toReplayRecord(rows[0]);
  };
  const replay: ReplayStore = {
    find: findReplay,
    async claim(claim): Promise<ClaimOutcome> {
      // ON CONFLICT without a target covers the key and the live-nonce index alike.
      const inserted = await sql`
        INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, created_at_ms)
        VALUES (${claim.key}, ${claim.chainId}, ${claim.attester.toLowerCase()}, ${claim.nonce.toString()},
                ${Number(claim.deadline)}, 'checked', ${claim.createdAtMs})
        ON CONFLICT DO NOTHING RETURNING key`;
      if (inserted.length === 1) return "claimed";
      return (await findReplay(claim.key)) !== undefined ? "duplicate-signature" : "nonce-in-flight";
    },
    async markSigned(key, tx) {
      const rows = await sql`UPDATE replay SET state = 'signed', tx_hash = ${tx.txHash}, raw_tx = ${tx.raw},
                                    wallet = ${tx.wallet.toLowerCase()}, tx_nonce = ${tx.nonce}
                              WHERE key = ${key} AND state = 'checked' RETURNING key`;
      return rows.length === 1;
    },
    async markSent(key) {
      await sql`UPDATE replay SET state = 'sent' WHERE key = ${key} AND state IN ('checked', 'signed')`;
    },
    async finish(key, final) {
      const uid = final.state === "mined" ? final.uid : null;
      await sql`UPDATE replay SET state = ${final.state}, tx_hash = ${final.txHash}, uid = ${uid},
                       block_number = ${final.blockNumber.toString()}
                 WHERE key = ${key} AND state IN ('checked', 'signed', 'sent')`;
    },
    async release(key) {
      await sql`DELETE FROM replay WHERE key = ${key} AND state IN ('checked', 'signed', 'sent')`;
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
