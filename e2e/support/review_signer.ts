/** Signed delegated-attest bodies for a user review, as a reviewer's client would send them. */
import { join } from "node:path";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createSqliteReplayStore, openSqlite } from "../../adapters/sqlite/mod.ts";
import { normalizeSignature } from "../../domain/delegation/mod.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../../client/delegated_attest.ts";

/** Where the review goes: the chain, its EAS and the user-review schema UID. */
export type ReviewTarget = { readonly chainId: number; readonly easAddress: string; readonly schemaUids: Readonly<Record<string, string>> };

/** A `{prepared, signature, attester}` body for `/v1/delegated-attest`, signed with `key` at EAS nonce `nonce`. */
export async function signedReviewBody(
  target: ReviewTarget,
  key: Hex,
  options: { nonce?: bigint; data?: Record<string, unknown>; refUID?: Hex; expirationTime?: bigint } = {},
) {
  const account = privateKeyToAccount(key);
  const def = findSchemaByName("user-review")!;
  const prepared = prepareDelegatedAttestation({
    schema: { uid: target.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: options.data ?? { subject: "did:web:shop.test", version: "1", ratingValue: 5, reviewBody: "fine", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce: options.nonce ?? 0n,
    chainId: target.chainId,
    easAddress: target.easAddress as Hex,
    refUID: options.refUID,
    expirationTime: options.expirationTime,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

/**
 * The replay record of a delegated signature on chain `chainId`, read from the SQLite file of a service whose data lives
 * in `dir` (a record is its chain's, decisions §30).
 */
export async function replayRecordOf(dir: string, chainId: number, signature: Hex) {
  const db = openSqlite(join(dir, "ats.sqlite"));
  try {
    const key = normalizeSignature(signature);
    if (!key.ok) throw new Error("bad signature");
    return await createSqliteReplayStore(db).find(chainId, key.value.hex);
  } finally {
    db.close();
  }
}

/** POSTs `body` to a service's `/v1/delegated-attest`: the status and the JSON answer. */
export async function postDelegatedAttest(base: string, body: unknown) {
  const response = await fetch(`${base}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() as Record<string, any> };
}
