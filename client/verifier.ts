import { createPublicClient, type Hex, http, parseAbi, parseAbiItem, type PublicClient } from "viem";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { AtsClientError } from "./errors.ts";
import { fetchTrustAnchors, type FetchLike, getChainAnchors, getSchemaAnchor, isApprovedIssuer } from "./trust_anchors.ts";

const ATTESTED = parseAbiItem(
  "event Attested(address indexed recipient, address indexed attester, bytes32 uid, bytes32 indexed schemaUID)",
);
const GET_ATTESTATION = parseAbi([
  "struct Attestation { bytes32 uid; bytes32 schema; uint64 time; uint64 expirationTime; uint64 revocationTime; bytes32 refUID; address recipient; address attester; bool revocable; bytes data; }",
  "function getAttestation(bytes32 uid) view returns (Attestation)",
]);

/** An attestation kept by the verifier workflow. */
export type ApprovedAttestation = {
  uid: Hex;
  attester: Hex;
  recipient: Hex;
  time: bigint;
  expirationTime: bigint;
  revocationTime: bigint;
  data: Hex;
  /** The approved issuer's label from the registry. */
  issuerLabel: string;
};

/** Options of {@link findApprovedAttestations}. */
export type FindApprovedAttestationsOptions = {
  /** Trust-anchors URL (default the local service) or the anchors themselves. */
  readonly trustAnchors?: string | TrustAnchors | undefined;
  /** A chain id or CAIP-2 id present in the anchors. */
  readonly chain: number | string;
  readonly schemaName: string;
  /** JSON-RPC endpoint of that chain, or a viem public client. */
  readonly rpc: string | PublicClient;
  /** Only attestations to this recipient (e.g. a DID address). */
  readonly recipient?: Hex | undefined;
  readonly fromBlock?: bigint | undefined;
  readonly fetch?: FetchLike | undefined;
  /** Keep revoked and expired attestations too (default false). */
  readonly includeInvalid?: boolean | undefined;
};

/**
 * The verifier workflow of the contract in one call: fetch the anchors, look up the schema UID,
 * query the registry for that schema, and keep the attestations whose attester is an approved
 * issuer for that schema at the attestation time (and, by default, unrevoked and unexpired).
 */
export async function findApprovedAttestations(options: FindApprovedAttestationsOptions): Promise<ApprovedAttestation[]> {
  const anchors = typeof options.trustAnchors === "object"
    ? options.trustAnchors
    : await fetchTrustAnchors({ url: options.trustAnchors, fetch: options.fetch });
  const chain = getChainAnchors(anchors, options.chain);
  const schemaUid = getSchemaAnchor(anchors, options.chain, options.schemaName) as Hex;
  const client = typeof options.rpc === "string"
    ? createPublicClient({ transport: http(options.rpc, { batch: true }) })
    : options.rpc;
  const eas = chain.easContract as Hex;
  let uids: Hex[];
  let attestations;
  try {
    const logs = await client.getLogs({
      address: eas,
      event: ATTESTED,
      args: { schemaUID: schemaUid, ...(options.recipient ? { recipient: options.recipient } : {}) },
      fromBlock: options.fromBlock ?? 0n,
      toBlock: "latest",
    });
    uids = [...new Set(logs.map((l) => l.args.uid!))];
    attestations = await Promise.all(
      uids.map((uid) => client.readContract({ address: eas, abi: GET_ATTESTATION, functionName: "getAttestation", args: [uid] })),
    );
  } catch (cause) {
    throw new AtsClientError("NETWORK_ERROR", "Registry query failed", { cause });
  }
  const now = BigInt(Math.floor(Date.now() / 1000));
  const kept: ApprovedAttestation[] = [];
  for (const a of attestations) {
    if (a.schema.toLowerCase() !== schemaUid.toLowerCase()) continue;
    if (!options.includeInvalid) {
      if (a.revocationTime !== 0n) continue;
      if (a.expirationTime !== 0n && a.expirationTime <= now) continue;
    }
    const at = new Date(Number(a.time) * 1000);
    if (!isApprovedIssuer(anchors, a.attester, options.schemaName, at, chainIdOf(options.chain))) continue;
    const label = anchors.registries
      .flatMap((r) => r.issuers)
      .find((i) => i.address.toLowerCase() === a.attester.toLowerCase())?.label ?? "";
    kept.push({
      uid: a.uid,
      attester: a.attester,
      recipient: a.recipient,
      time: a.time,
      expirationTime: a.expirationTime,
      revocationTime: a.revocationTime,
      data: a.data,
      issuerLabel: label,
    });
  }
  return kept;
}

/** The decimal chain id of `chain` (a chain id or an eip155 CAIP-2 id); undefined for another namespace. */
function chainIdOf(chain: number | string): number | undefined {
  const text = String(chain).trim().replace(/^eip155:/, "");
  return /^[0-9]{1,15}$/.test(text) ? Number(text) : undefined;
}
