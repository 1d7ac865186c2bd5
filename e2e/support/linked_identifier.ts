/**
 * A signed delegated linked identifier of a wallet's own did:pkh (the body of the relays' routes), for tests that need
 * writes of a chosen size: `linkedId` sets the data's length.
 */
import { createPublicClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { prepareDelegatedAttestation, signableTypedData } from "../../client/delegated_attest.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import type { Stack } from "../harness.ts";

const LINKED = findSchemaByName("linked-identifier")!;

/** `key`'s linked identifier of its own did:pkh naming `linkedId`, signed for `nonce` (the chain's when not given). */
export async function signedLinkedIdentifier(stack: Stack, key: Hex, linkedId: string, nonce?: bigint) {
  const account = privateKeyToAccount(key);
  const at = nonce ?? await createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) })
    .readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [account.address] });
  const prepared = prepareDelegatedAttestation({
    schema: { uid: stack.devnet.schemaUids["linked-identifier"] as Hex, schema: LINKED.schema, revocable: LINKED.revocable },
    data: { subject: `did:pkh:eip155:${stack.service.chainId}:${account.address.toLowerCase()}`, linkedId, proofs: [], issuedAt: 1, effectiveAt: 0, expiresAt: 0 },
    attester: account.address,
    nonce: at,
    chainId: stack.service.chainId,
    easAddress: stack.service.easAddress,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}
