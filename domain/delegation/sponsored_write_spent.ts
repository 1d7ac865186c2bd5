/**
 * Whether a private relay's sponsored write landed although the node cannot show its transaction (decisions §12, §15:
 * a sponsored write is given back only when nothing landed). Its stored transaction carries the signatures it
 * attests with; each names a replay record, and EAS spends the attester's nonce for it: every attester's nonce past
 * its signature's means the transaction landed, as the replay book reads it for the same signatures.
 */
import { decodeFunctionData, parseTransaction } from "viem/utils";
import type { EasReader, HexString } from "../../ports/eas.ts";
import type { ReplayStore } from "../../ports/replay_store.ts";
import { EAS_ABI } from "../eas_abi.ts";

type Sig = { readonly v: number; readonly r: HexString; readonly s: HexString };

/** The replay key of a signature as the calldata carries it (normalized: low s, v 27 or 28). */
const keyOf = (sig: Sig) => `0x${sig.r.slice(2)}${sig.s.slice(2)}${sig.v.toString(16).padStart(2, "0")}`.toLowerCase();

/**
 * The replay keys of the signatures a signed `attestByDelegation` or `multiAttestByDelegation` carries; undefined for
 * any other transaction (a witness's own `attest`) or bytes that do not decode.
 */
export function delegatedSignatureKeys(raw: HexString): string[] | undefined {
  try {
    const call = decodeFunctionData({ abi: EAS_ABI, data: parseTransaction(raw).data as HexString });
    if (call.functionName === "attestByDelegation") return [keyOf(call.args[0].signature as Sig)];
    if (call.functionName === "multiAttestByDelegation") {
      return (call.args[0] as readonly { readonly signatures: readonly Sig[] }[]).flatMap((group) => group.signatures.map(keyOf));
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether one signature is spent: its replay record mined, or still open with the attester's EAS nonce past the
 * signature's; false when the record is gone (the replay book gave the signature back) or reverted; undefined when
 * the nonce cannot be read.
 */
async function signatureSpent(replay: ReplayStore, eas: EasReader, key: string): Promise<boolean | undefined> {
  // The record on the reader's chain: the transaction was sent there (decisions §30, a record is its chain's).
  const record = await replay.find(eas.chainId, key);
  if (record === undefined || record.state === "reverted") return false;
  if (record.state === "mined") return true;
  return await nonceMovedPast(eas, record);
}

/**
 * Whether the attester's EAS nonce moved past the one its signature was made for (then EAS spent the signature);
 * undefined when the nonce cannot be read. The replay book reads its open records the same way.
 */
export async function nonceMovedPast(eas: EasReader, record: { readonly attester: string; readonly nonce: bigint }): Promise<boolean | undefined> {
  const nonce = await eas.getAttesterNonce(record.attester as HexString);
  return nonce.ok ? nonce.nonce > record.nonce : undefined;
}

/**
 * Whether the write a stored transaction made is spent on chain: true when every signature it carries is, false when
 * one is not or it carries none (a witness's own `attest`: nothing it spends tells), undefined when it cannot be told.
 */
export async function delegatedWriteSpent(replay: ReplayStore, eas: EasReader, raw: HexString): Promise<boolean | undefined> {
  const keys = delegatedSignatureKeys(raw);
  if (keys === undefined || keys.length === 0) return false;
  const answers = await Promise.all(keys.map((key) => signatureSpent(replay, eas, key)));
  if (answers.includes(false)) return false;
  return answers.includes(undefined) ? undefined : true;
}
