import type { Database } from "bun:sqlite";
import type { ClaimOutcome, ReplayClaim, ReplayFinal, ReplayStore } from "../ports/replay_store.ts";

/** A durable replay store in the service's SQLite file; survives restarts. */
export function createSqliteReplayStore(db: Database): ReplayStore {
  const has = db.query<{ one: number }, [string]>("SELECT 1 AS one FROM replay WHERE key = ?");
  const insert = db.query(
    `INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, created_at_ms)
     VALUES ($key, $chainId, $attester, $nonce, $deadline, 'claimed', $createdAtMs)`,
  );
  const broadcast = db.query("UPDATE replay SET state = 'broadcast', tx_hash = ? WHERE key = ?");
  const finish = db.query(
    "UPDATE replay SET state = $state, tx_hash = $txHash, uid = $uid, block_number = $blockNumber WHERE key = $key",
  );
  const release = db.query("DELETE FROM replay WHERE key = ? AND state = 'claimed'");
  const prune = db.query("DELETE FROM replay WHERE deadline < ?");

  return {
    has: (key) => Promise.resolve(has.get(key) !== null),
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
        return Promise.resolve(has.get(claim.key) !== null ? "duplicate-signature" : "nonce-in-flight");
      }
    },
    markBroadcast(key, txHash) {
      broadcast.run(txHash, key);
      return Promise.resolve();
    },
    finish(key, final: ReplayFinal) {
      finish.run({
        key,
        state: final.state,
        txHash: final.txHash,
        uid: final.state === "done" ? final.uid : null,
        blockNumber: final.state === "done" ? final.blockNumber.toString() : null,
      });
      return Promise.resolve();
    },
    release(key) {
      release.run(key);
      return Promise.resolve();
    },
    prune(nowSeconds) {
      return Promise.resolve(prune.run(Number(nowSeconds)).changes);
    },
  };
}

function isConstraintError(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error &&
    String((error as { code: unknown }).code).startsWith("SQLITE_CONSTRAINT");
}
