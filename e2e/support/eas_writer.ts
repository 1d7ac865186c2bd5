/**
 * Direct EAS writes for tests and benches: `attest`, `multiAttest` and `revoke` from any funded
 * wallet (the attester pays gas), returning the uids from the `Attested` logs.
 */
import { createPublicClient, createWalletClient, decodeEventLog, type Hex, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../../domain/eas_abi.ts";

const WRITE_ABI = parseAbi([
  "struct AttestationRequestData { address recipient; uint64 expirationTime; bool revocable; bytes32 refUID; bytes data; uint256 value; }",
  "struct AttestationRequest { bytes32 schema; AttestationRequestData data; }",
  "struct MultiAttestationRequest { bytes32 schema; AttestationRequestData[] data; }",
  "struct RevocationRequestData { bytes32 uid; uint256 value; }",
  "struct RevocationRequest { bytes32 schema; RevocationRequestData data; }",
  "function attest(AttestationRequest request) payable returns (bytes32)",
  "function multiAttest(MultiAttestationRequest[] multiRequests) payable returns (bytes32[])",
  "function revoke(RevocationRequest request) payable",
]);

const ZERO_UID = `0x${"0".repeat(64)}` as Hex;

/** One attestation to write. */
export type AttestInput = {
  readonly recipient: Hex;
  readonly data: Hex;
  readonly revocable: boolean;
  /** Unix seconds; default 0 (none). */
  readonly expirationTime?: bigint | undefined;
};

/** Writes attestations straight to EAS. */
export function easWriter(options: { rpcUrl: string; easAddress: Hex }) {
  const client = createPublicClient({ cacheTime: 0, transport: http(options.rpcUrl), pollingInterval: 20 });
  const requestData = (input: AttestInput) => ({
    recipient: input.recipient,
    expirationTime: input.expirationTime ?? 0n,
    revocable: input.revocable,
    refUID: ZERO_UID,
    data: input.data,
    value: 0n,
  });
  const send = async (key: Hex, call: { functionName: "attest" | "multiAttest" | "revoke"; args: readonly unknown[] }) => {
    const wallet = createWalletClient({ account: privateKeyToAccount(key), transport: http(options.rpcUrl) });
    const hash = await wallet.writeContract({
      chain: null,
      address: options.easAddress,
      abi: WRITE_ABI,
      functionName: call.functionName,
      args: call.args as never,
    });
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${call.functionName} reverted`);
    const uids: Hex[] = [];
    for (const log of receipt.logs) {
      try {
        const event = decodeEventLog({ abi: EAS_ABI, data: log.data, topics: log.topics });
        if (event.eventName === "Attested") uids.push(event.args.uid);
      } catch {
        // not an EAS event
      }
    }
    return { uids, blockNumber: receipt.blockNumber };
  };
  return {
    client,
    /** Attests once; returns the uid and the block it landed in. */
    async attest(key: Hex, schema: Hex, input: AttestInput): Promise<{ uid: Hex; blockNumber: bigint }> {
      const { uids, blockNumber } = await send(key, { functionName: "attest", args: [{ schema, data: requestData(input) }] });
      return { uid: uids[0]!, blockNumber };
    },
    /** Attests many under one schema in one transaction. */
    async multiAttest(key: Hex, schema: Hex, inputs: readonly AttestInput[]): Promise<Hex[]> {
      const { uids } = await send(key, { functionName: "multiAttest", args: [[{ schema, data: inputs.map(requestData) }]] });
      return uids;
    },
    /** Revokes one attestation; returns the block the revocation landed in. */
    async revoke(key: Hex, schema: Hex, uid: Hex): Promise<{ blockNumber: bigint }> {
      const { blockNumber } = await send(key, { functionName: "revoke", args: [{ schema, data: { uid, value: 0n } }] });
      return { blockNumber };
    },
  };
}
