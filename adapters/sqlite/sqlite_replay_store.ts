import type { Database } from "bun:sqlite";
import type { ClaimOutcome, ReplayClaim, ReplayFinal, ReplayStore } from "../../ports/replay_store.ts";
import { type ReplayRow, toReplayRecord } from "../sql/replay_store.ts";

/** A durable replay store in the service's SQLite file; survives restarts. */
export function createSqliteReplayStore(db: Database): ReplayStore {
  // A record is its chain's (decisions §30): every statement by key names the chain, the table's key (chain_id, key).
  const find = db.query<ReplayRow, [number, string]>("SELECT * FROM replay WHERE chain_id = ? AND key = ?");
  const findAnyChain = db.query<ReplayRow, [string]>("SELECT * FROM replay WHERE key = ? ORDER BY chain_id LIMIT 1");
  const insert = db.query(
    `INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, created_at_ms)
     VALUES ($key, $chainId, $attester, $nonce, $deadline, 'checked', $createdAtMs)`,
  );
  const signed = db.query(
    `UPDATE replay SET state = 'signed', tx_hash = $txHash, raw_tx = $raw, wallet = $wallet, tx_nonce = $nonce
      WHERE chain_id = $chainId AND key = $key AND state = 'checked'`,
  );
  const sent = db.query("UPDATE replay SET state = 'sent' WHERE chain_id = ? AND key = ? AND state IN ('checked', 'signed')");
  const finish = db.query(
    `UPDATE replay SET state = $state, tx_hash = $txHash, uid = $uid, block_number = $blockNumber
      WHERE chain_id = $chainId AND key = $key AND state IN ('checked', 'signed', 'sent')`,
  );
  const release = db.query("DELETE FROM replay WHERE chain_id = ? AND key = ? AND state IN ('checked', 'signed', 'sent')");
  const open = db.query<ReplayRow, [number]>(
    "SELECT * FROM replay WHERE state IN ('checked', 'signed', 'sent') AND created_at_ms < ? ORDER BY created_at_ms, tx_nonce",
  );
  const prune = db.query("DELETE FROM replay WHERE deadline < ? AND state IN ('mined', 'reverted')");

  return {
    find(chainId, key) {
      const row = find.get(chainId, key);
      return Promise.resolve(row === null ? undefined : toReplayRecord(row));
    },
    findAnyChain(key) {
      const row = findAnyChain.get(key);
      return Promise.resolve(row === null ? undefined : toReplayRecord(row));
    },
    claim(claim: ReplayClaim): Promise<ClaimOutcome> {
      try {
        insert.run({
          key: claim.key,
          chainId: claim.chainId,
          attester: claim.attester.toLowerCase(),
          nonce: claim.nonce.toString(),
          deadline: Number(claim.deadline),
          createdAtMs: claim.createdAtMs,
        });
        return Promise.resolve("claimed");
      } catch (error) {
        if (!isConstraintError(error)) throw error;
        return Promise.resolve(find.get(claim.chainId, claim.key) !== null ? "duplicate-signature" : "nonce-in-flight");
      }
    },
    markSigned(chainId, key, tx) {
      const changed = signed.run({ chainId, key, txHash: tx.txHash, raw: tx.raw, wallet: tx.wallet.toLowerCase(), nonce: tx.nonce });
      return Promise.resolve(changed.changes === 1);
    },
    markSent(chainId, key) {
      sent.run(chainId, key);
      return Promise.resolve();
    },
    finish(chainId, key, final: ReplayFinal) {
      finish.run({
        chainId,
        key,
        state: final.state,
        txHash: final.txHash,
        uid: final.state === "mined" ? final.uid : null,
        blockNumber: final.blockNumber.toString(),
      });
      return Promise.resolve();
    },
    release(chainId, key) {
      release.run(chainId, key);
      return Promise.resolve();
    },
    open: (createdBeforeMs) => Promise.resolve(open.all(createdBeforeMs).map(toReplayRecord)),
    prune(nowSeconds) {
      return Promise.resolve(prune.run(Number(nowSeconds)).changes);
    },
  };
}

function isConstraintError(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error &&
    String((error as { code: unknown }).code).startsWith("SQLITE_CONSTRAINT");
}
