/**
 * One send under the instances' shared nonce lock (several instances on one PostgreSQL, decisions §21; split from
 * viem_tx_sender.ts). The next nonce is the larger of what the instances recorded and what the node has.
 */
import type { HexString } from "../../ports/eas.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import type { Log } from "./_tx_receipts.ts";
import { type Attempt, nonceLockFailed, nonceUnread } from "./_tx_delivery.ts";

/** What {@link sendUnderSharedLock} takes: the wallet, its pending count, and the signing and sending of one nonce. */
export type SharedLockSend = {
  readonly nonces: WalletNonces;
  readonly chainId: number;
  readonly address: HexString;
  readonly log: Log;
  readonly pendingCount: () => Promise<number | undefined>;
  /** Signs and sends with `nonce`; signs, stores and sends nothing once `lockLost()` says so. */
  readonly signAndSend: (nonce: number, lockLost: () => boolean) => Promise<Attempt>;
};

/**
 * Signs and sends under the shared lock. The lock not taken (its storage failed) is `nonce-unavailable`, nothing sent:
 * it was `not-broadcast`, answered as the node's refusal.
 *
 * The storage may end the lock while the send runs (the backend terminated, its idle timeout, a failover, a cut
 * network): its promise rejects at once while the callback goes on. Once it has handed the bytes to the node, its outcome is the
 * answer (the bytes may have left: their record, their charge and the 'unknown' of a lost answer must stand), awaited
 * here, so the caller's own lock on the wallet is held until it ends and no send of this process takes the same nonce
 * meanwhile. Lost before that (before or while signing, or while the signed record is stored), it never sends (`lost`):
 * `nonce-unavailable`, nothing sent. It was `nonce-unavailable` for a
 * send still under way. A send that left without its lock leaves the instances' row behind the node (its update rolled
 * back with the lock); the next holder takes the larger of the row and the node's pending count, which counts it once the node asked has
 * seen it (a lagging backend of a load-balanced provider may not have: the same nonce signed twice, one refused).
 */
export async function sendUnderSharedLock(run: SharedLockSend): Promise<Attempt> {
  let lost = false;
  let beforeSigning: Attempt = nonceLockFailed;
  let sending: Promise<Attempt> | undefined;
  try {
    return await run.nonces.withLock(run.chainId, run.address, async (storedNext) => {
      const pending = await run.pendingCount();
      if (pending === undefined) {
        beforeSigning = nonceUnread;
        return { used: undefined, value: nonceUnread };
      }
      // The lock ended while the count was read: another instance may hold it now, so nothing is signed.
      if (lost) return { used: undefined, value: nonceLockFailed };
      const nonce = Math.max(storedNext, pending);
      sending = run.signAndSend(nonce, () => lost);
      const outcome = await sending;
      return { used: outcome.settled === "accepted" ? nonce : undefined, value: outcome };
    });
  } catch (error) {
    lost = true;
    run.log("nonce_lock_error", { error: error instanceof Error ? error.message : String(error) });
    return sending === undefined ? beforeSigning : await sending;
  }
}
