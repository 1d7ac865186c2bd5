/** Small helpers artifact trust's files share. */
import type { AbiParameter } from "viem";
import { parseAbiParameters } from "viem/utils";
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { type Fail, fail, type Result } from "../result.ts";
import { decodeSchemaFields, parseSchemaFields, type SchemaField } from "../schema_data.ts";
import type { ArtifactTrustContext } from "./_types.ts";

export const networkError = (message: string): Fail<"NETWORK_ERROR"> => fail("NETWORK_ERROR", message);
export const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];
export const pkhOf = (chainId: number, address: string) => `did:pkh:eip155:${chainId}:${address.toLowerCase()}`;

/** Reads the attestations of logged uids, which must all exist at the pinned block. */
export async function readAttestations(
  ctx: ArtifactTrustContext,
  uids: readonly string[],
  block: bigint,
): Promise<IndexedAttestation[] | undefined> {
  if (uids.length === 0) return [];
  const read = await ctx.index.attestations(uids as HexString[], block);
  if (!read.ok || read.value.length !== uids.length) return undefined;
  if (read.value.some((a, i) => a.uid.toLowerCase() !== uids[i])) return undefined;
  return read.value;
}

type ParsedSchema = { readonly params: readonly AbiParameter[]; readonly fields: readonly SchemaField[] } | null;
const parsedSchemas = new Map<string, ParsedSchema>();

/**
 * `decodeSchemaData` with each schema string parsed once per process: a request decodes hundreds of
 * payloads of the same few schemas, and parsing costs about as much as decoding. Big integers come
 * back as base-10 strings, as there.
 */
export function decodePayload(schema: string, data: HexString): Result<Record<string, unknown>, "INVALID_INPUT"> {
  let parsed = parsedSchemas.get(schema);
  if (parsed === undefined) {
    const fields = parseSchemaFields(schema);
    try {
      parsed = fields.ok ? { params: parseAbiParameters(schema) as readonly AbiParameter[], fields: fields.value } : null;
    } catch {
      parsed = null;
    }
    parsedSchemas.set(schema, parsed);
  }
  if (parsed === null) return fail("INVALID_INPUT", "Unsupported schema");
  return decodeSchemaFields(parsed.params, parsed.fields, data);
}
