import { isAddress, type KeccakHex } from "../address.ts";
import type { HexString } from "../../ports/eas.ts";
import { ZERO_UID } from "./attest_typed_data.ts";
import { fail, ok, type Result } from "../result.ts";

/** A delegated-attest request body after field validation; the signature is still as sent. */
export type DelegatedRequest = {
  readonly attester: HexString;
  readonly signature: string;
  readonly schema: HexString;
  readonly deadline: bigint;
  readonly recipient: HexString;
  readonly expirationTime: bigint;
  readonly revocable: boolean;
  readonly refUID: HexString;
  readonly data: HexString;
  readonly value: bigint;
  /** The nonce the client signed with, when it said; used only to tell a moved nonce apart. */
  readonly clientNonce: bigint | undefined;
  /**
   * The chain the signature is for (decisions §30): the signed typed data's domain (`chainId`, `verifyingContract`),
   * else `delegatedRequest`'s `chainId` and `easContractAddress`; undefined when the body names neither.
   */
  readonly domain?: { readonly chainId?: unknown; readonly verifyingContract?: unknown } | undefined;
};

/** Marks a request this module read, so a use case given one does not read it again (issue 47 item 2: parsed once). */
const READ = new WeakSet<object>();

/** A body as a delegated attestation's use case takes it: read already ({@link parseDelegatedRequest}), or as sent. */
export type DelegatedBody = DelegatedRequest | unknown;

/** The request of `body`: itself when it was read already, else read now (`hash` as {@link parseDelegatedRequest}'s). */
export function delegatedRequestOf(body: DelegatedBody, hash?: KeccakHex): Result<DelegatedRequest, "INVALID_INPUT"> {
  return isRecord(body) && READ.has(body) ? ok(body as DelegatedRequest) : parseDelegatedRequest(body, hash);
}

type Invalid = Result<never, "INVALID_INPUT">;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const UINT_MAX = (1n << 256n) - 1n;

/** Reads an unsigned integer given as a bigint, a safe integer or a base-10 string. */
export function parseUint(value: unknown, bits = 256): bigint | undefined {
  let n: bigint | undefined;
  if (typeof value === "bigint") n = value;
  else if (typeof value === "number" && Number.isSafeInteger(value)) n = BigInt(value);
  else if (typeof value === "string" && /^[0-9]{1,78}$/.test(value)) n = BigInt(value);
  if (n === undefined || n < 0n) return undefined;
  const max = bits === 256 ? UINT_MAX : (1n << BigInt(bits)) - 1n;
  return n > max ? undefined : n;
}

const invalid = (field: string, rule: string): Invalid => fail("INVALID_INPUT", `${field} ${rule}`);

/**
 * Validates the fields of a delegated-attest body. The schema and deadline come from
 * `prepared.delegatedRequest`, the attestation fields from `prepared.typedData.message` (falling back
 * to `delegatedRequest`), with the EAS defaults the reference relay applies when one is absent. `hash` checks the
 * addresses' checksums (the service passes its keccak in WebAssembly; absent: viem's).
 */
export function parseDelegatedRequest(body: unknown, hash?: KeccakHex): Result<DelegatedRequest, "INVALID_INPUT"> {
  if (!isRecord(body)) return fail("INVALID_INPUT", "Body must be a JSON object");
  const missing = (["prepared", "signature", "attester"] as const).filter((k) => !body[k]);
  if (missing.length > 0) return fail("INVALID_INPUT", `Missing required fields: ${missing.join(", ")}`);
  const { prepared, signature, attester } = body;
  if (typeof attester !== "string" || !isAddress(attester, hash)) {
    return invalid("attester", "must be a 20-byte 0x-prefixed address");
  }
  if (typeof signature !== "string") return invalid("signature", "must be a hex string");
  if (!isRecord(prepared)) return invalid("prepared", "must be an object");
  const request = prepared.delegatedRequest;
  if (!isRecord(request)) return invalid("prepared.delegatedRequest", "is required");
  const typedData = prepared.typedData;
  if (typedData !== undefined && !isRecord(typedData)) return invalid("prepared.typedData", "must be an object");
  const message = isRecord(typedData?.message) ? typedData.message : {};
  const pick = (name: string): unknown => message[name] ?? request[name];

  const schema = request.schema ?? request.schemaUid ?? message.schema;
  if (schema === undefined) return invalid("prepared.delegatedRequest.schema", "is required");
  if (!isBytes32(schema)) return invalid("prepared.delegatedRequest.schema", "must be a 32-byte hex string");

  const rawDeadline = request.deadline ?? message.deadline;
  if (rawDeadline === undefined) return invalid("prepared.delegatedRequest.deadline", "is required");
  const deadline = parseUint(rawDeadline, 64);
  if (deadline === undefined) return invalid("prepared.delegatedRequest.deadline", "must be a uint64 in base 10");

  const recipient = pick("recipient") ?? `0x${"0".repeat(40)}`;
  if (typeof recipient !== "string" || !isAddress(recipient, hash)) return invalid("recipient", "must be an address");
  const expirationTime = parseUint(pick("expirationTime") ?? 0, 64);
  if (expirationTime === undefined) return invalid("expirationTime", "must be a uint64 in base 10");
  const revocable = pick("revocable") ?? true;
  if (typeof revocable !== "boolean") return invalid("revocable", "must be a boolean");
  const refUID = pick("refUID") ?? ZERO_UID;
  if (!isBytes32(refUID)) return invalid("refUID", "must be a 32-byte hex string");
  const data = pick("data") ?? "0x";
  if (typeof data !== "string" || !/^0x([0-9a-fA-F]{2})*$/.test(data)) return invalid("data", "must be 0x-prefixed hex bytes");
  const value = parseUint(pick("value") ?? 0);
  if (value === undefined) return invalid("value", "must be a uint256 in base 10");
  if (value !== 0n) return invalid("value", "must be 0: the delegate wallet does not send value");
  const rawNonce = pick("nonce");
  const clientNonce = rawNonce === undefined ? undefined : parseUint(rawNonce);

  const read: DelegatedRequest = {
    attester: attester as HexString,
    signature,
    schema: schema.toLowerCase() as HexString,
    deadline,
    recipient: recipient as HexString,
    expirationTime,
    revocable,
    refUID: refUID.toLowerCase() as HexString,
    data: data.toLowerCase() as HexString,
    value,
    clientNonce,
    domain: signedDomain(typedData?.domain, request),
  };
  READ.add(read);
  return ok(read);
}

/** The chain a body names: its typed data's domain, else `delegatedRequest`'s chain id and EAS address; none: undefined. */
function signedDomain(domain: unknown, request: Record<string, unknown>): DelegatedRequest["domain"] {
  const signed = isRecord(domain) ? domain : {};
  const chainId = signed.chainId ?? request.chainId;
  const verifyingContract = signed.verifyingContract ?? request.easContractAddress;
  return chainId === undefined && verifyingContract === undefined ? undefined : { chainId, verifyingContract };
}

function isBytes32(v: unknown): v is string {
  return typeof v === "string" && /^0x[0-9a-fA-F]{64}$/.test(v);
}
