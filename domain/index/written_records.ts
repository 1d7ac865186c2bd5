/**
 * The records of attestations this service wrote itself, for the follower (issue 43 item 5): the write's instance knows
 * every field it sent and the uid the chain gave it, so the follower's step, which reads the block's time anyway, need
 * not ask the node for the record (`getAttestation`, one `eth_call`). A record is taken only when EAS's own uid of those
 * fields at that time is the uid the chain gave (EAS.sol `_getUID`, bump 0): then it is the record the chain holds, as it
 * was written. One revoked in the range read, or whose block's time the step did not read, is asked for as before.
 */
import type { EasEvent, IndexedAttestation, WrittenAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { checksumAddress, type KeccakHex } from "../address.ts";

/** The attestations this instance wrote, by lowercase uid; each is taken once. */
export type WrittenRecords = (uid: string) => WrittenAttestation | undefined;

/** EAS's uid of an attestation (`_getUID` with bump 0): keccak-256 of its fields, packed. */
export function easUid(a: Omit<IndexedAttestation, "uid" | "revocationTime">, keccak: KeccakHex): HexString {
  const word = (hex: string) => hex.slice(2).padStart(64, "0");
  const address = (hex: string) => hex.slice(2).padStart(40, "0");
  const u64 = (n: bigint) => n.toString(16).padStart(16, "0");
  const packed = `0x${word(a.schema)}${address(a.recipient)}${address(a.attester)}${u64(a.time)}${u64(a.expirationTime)}${a.revocable ? "01" : "00"}${
    word(a.refUID)
  }${a.data.slice(2)}00000000`;
  return keccak(packed as HexString);
}

/**
 * The records among `events` that this instance wrote and that stand without a read (by lowercase uid): attested in a
 * block whose time `times` holds, not revoked among `events`, and EAS's uid of them at that time is theirs.
 */
export function writtenRecords(events: readonly EasEvent[], times: ReadonlyMap<bigint, bigint>, written: WrittenRecords, keccak: KeccakHex): Map<string, IndexedAttestation> {
  const known = new Map<string, IndexedAttestation>();
  const revoked = new Set(events.filter((e) => e.kind === "revoked").map((e) => e.uid.toLowerCase()));
  for (const event of events) {
    if (event.kind !== "attested") continue;
    const uid = event.uid.toLowerCase();
    const time = times.get(event.blockNumber);
    if (time === undefined || revoked.has(uid)) continue;
    const sent = written(uid);
    if (sent === undefined || sent.blockNumber !== event.blockNumber) continue;
    if (easUid({ ...sent, time }, keccak).toLowerCase() !== uid) continue;
    known.set(uid, {
      // As the chain's read spells it (adapters/chain/_attestation_result.ts): lowercase hex, checksummed addresses.
      uid: uid as HexString,
      schema: sent.schema.toLowerCase() as HexString,
      time,
      expirationTime: sent.expirationTime,
      revocationTime: 0n,
      refUID: sent.refUID.toLowerCase() as HexString,
      recipient: checksumAddress(sent.recipient, keccak),
      attester: checksumAddress(sent.attester, keccak),
      revocable: sent.revocable,
      data: sent.data.toLowerCase() as HexString,
    });
  }
  return known;
}
