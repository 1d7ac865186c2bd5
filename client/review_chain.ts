/** What the review helpers read from the chain: the service's anchors, EAS attestations and their logs, and a payer's link to a reviewer. */
import { createPublicClient, type Hex, http, type PublicClient } from "viem";
import { EAS_ABI, type EasAttestation } from "../domain/eas_abi.ts";
import { didToAddress, isSameControllerId } from "../domain/did/mod.ts";
import { parseProofWrappers, readUint, verifyProofWrapper } from "../domain/artifact_trust/mod.ts";
import { decodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { createWebCryptoJwsVerifier } from "./jws_verifier.ts";
import { AtsClientError } from "./errors.ts";
import { serviceUrl } from "./http.ts";
import { fetchTrustAnchors, type FetchLike, getChainAnchors, getSchemaAnchor } from "./trust_anchors.ts";
import type { X402VerifyClientOptions } from "./x402.ts";
import type { PayerRelation } from "./review_proofs.ts";

export const ZERO_UID = `0x${"0".repeat(64)}` as Hex;

/** What the chain-reading helpers need: the service (anchors, endpoint evidence) and an RPC of its chain. */
export type ReviewChainOptions = {
  /** The ATS service; default `http://127.0.0.1:8080`. */
  readonly baseUrl?: string | undefined;
  /** JSON-RPC URL of the chain. */
  readonly rpc: string;
  readonly chainId: number;
  /** First block scanned for reviews, replies and evidence; default 0. */
  readonly fromBlock?: bigint | undefined;
  readonly fetch?: FetchLike | undefined;
  /** How offers and receipts are verified (did.json fetching, clock). */
  readonly x402?: X402VerifyClientOptions | undefined;
  /**
   * Judge an offer's or receipt's signing key by the service's key status at the receipt's `issuedAt` (the offer:
   * the review's time), decisions §18; default true. False: read witnesses and bindings from the chain here.
   */
  readonly keyStatus?: boolean | undefined;
};

type Attestation = EasAttestation;

/** What {@link chainContext} gives: the anchors, the EAS contract, schema UIDs and the chain's reads. */
export type ChainContext = {
  readonly anchors: TrustAnchors;
  readonly easAddress: Hex;
  readonly uid: (name: string) => Hex;
  readonly client: PublicClient;
  readonly read: (attestationUid: Hex) => Promise<Attestation>;
  readonly find: (filter: { recipient: Hex; schema: Hex; attester?: Hex | undefined }) => Promise<(Attestation & { position: bigint })[]>;
};

/** The chain's EAS contract and schema UIDs, from the service's trust anchors. */
export async function chainContext(options: ReviewChainOptions): Promise<ChainContext> {
  const anchors: TrustAnchors = await fetchTrustAnchors({ url: serviceUrl(options.baseUrl, "/v1/trust-anchors"), fetch: options.fetch });
  const easAddress = getChainAnchors(anchors, options.chainId).easContract as Hex;
  const uid = (name: string) => getSchemaAnchor(anchors, options.chainId, name).toLowerCase() as Hex;
  const client: PublicClient = createPublicClient({ transport: http(options.rpc, { batch: true }) });
  const read = async (attestationUid: Hex): Promise<Attestation> => {
    try {
      return await client.readContract({ address: easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [attestationUid] }) as Attestation;
    } catch (cause) {
      throw new AtsClientError("NETWORK_ERROR", "Could not read the attestation from the chain", { cause });
    }
  };
  /** Attestations logged for a recipient (and attester) under a schema, read back from EAS, in chain order. */
  const find = async (filter: { recipient: Hex; schema: Hex; attester?: Hex | undefined }): Promise<(Attestation & { position: bigint })[]> => {
    let logs;
    try {
      logs = await client.getLogs({
        address: easAddress,
        event: EAS_ABI.find((item) => item.type === "event" && item.name === "Attested") as never,
        args: { recipient: filter.recipient, schemaUID: filter.schema, ...(filter.attester ? { attester: filter.attester } : {}) } as never,
        fromBlock: options.fromBlock ?? 0n,
        toBlock: "latest",
      });
    } catch (cause) {
      throw new AtsClientError("NETWORK_ERROR", "Could not read attestation logs from the chain", { cause });
    }
    const positions = new Map<string, bigint>();
    for (const log of logs as unknown as { args: { uid: Hex }; blockNumber: bigint; logIndex: number }[]) {
      if (!positions.has(log.args.uid)) positions.set(log.args.uid, (log.blockNumber << 32n) + BigInt(log.logIndex));
    }
    return await Promise.all([...positions].map(async ([uid, position]) => ({ ...(await read(uid as Hex)), position })));
  };
  return { anchors, easAddress, uid, client, read, find };
}

export const decode = (name: string, data: Hex) => decodeSchemaData(findSchemaByName(name)!.schema, data);

/**
 * The payer is the reviewer, or linked to it: a live linked-identifier by the reviewer about its own
 * did:pkh naming the payer, with a proof signed by the payer (purpose `shared-control`) that names the reviewer as the
 * entity it authorizes (EIP-712 `authorizedEntity`, JWS `aud`). Proofs sit on chain for anyone to copy: before, one the
 * payer signed for its own site, pasted into another wallet's link, made that wallet "linked" to the payer, and its
 * review carrying the payer's public receipt proved a payment it never made.
 */
export async function payerRelation(
  payer: string,
  attester: string,
  context: ReviewChainOptions & { chain: Awaited<ReturnType<typeof chainContext>> },
): Promise<PayerRelation> {
  if (payer.toLowerCase() === attester.toLowerCase()) return "attester";
  if (!/^0x[0-9a-fA-F]{40}$/.test(payer)) return "unrelated";
  let linkedSchema: Hex;
  try {
    linkedSchema = context.chain.uid("linked-identifier");
  } catch {
    return "unrelated";
  }
  const reviewerDid = `did:pkh:eip155:${context.chainId}:${attester.toLowerCase()}`;
  const recipient = didToAddress(reviewerDid);
  if (!recipient.ok) return "unrelated";
  const links = await context.chain.find({ recipient: recipient.value, schema: linkedSchema, attester: attester as Hex });
  const now = BigInt(Math.floor(Date.now() / 1000));
  const payerDid = `did:pkh:eip155:1:${payer.toLowerCase()}`;
  const jws = createWebCryptoJwsVerifier();
  for (const link of links) {
    if (link.revocationTime !== 0n || (link.expirationTime !== 0n && link.expirationTime <= now)) continue;
    const data = decode("linked-identifier", link.data);
    if (!data.ok || typeof data.value.linkedId !== "string") continue;
    if (!isSameControllerId(data.value.linkedId, payerDid)) continue;
    if (typeof data.value.subject !== "string" || !isSameControllerId(data.value.subject, reviewerDid)) continue;
    const expiresAt = readUint(data.value.expiresAt) ?? 0n;
    const effectiveAt = readUint(data.value.effectiveAt) ?? 0n;
    if ((expiresAt !== 0n && expiresAt <= now) || effectiveAt > now) continue;
    for (const wrapper of parseProofWrappers(data.value.proofs)) {
      const proof = await verifyProofWrapper(wrapper, { nowSeconds: now, purpose: "shared-control", chainId: context.chainId, jws });
      if (proof === undefined || !proof.signers.some((s) => isSameControllerId(s, payerDid))) continue;
      if (proof.audiences.some((aud) => isSameControllerId(aud, reviewerDid))) return "linked";
    }
  }
  return "unrelated";
}
