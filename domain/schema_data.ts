import type { AbiParameter } from "viem";
import { decodeAbiParameters, encodeAbiParameters, isAddress, parseAbiParameters } from "viem/utils";
import type { HexString } from "../ports/eas.ts";
import { ZERO_ADDRESS } from "./eas_abi.ts";
import { computeDidHash, didAddressFromHash, didToAddress } from "./did/mod.ts";
import { fail, ok, type Result } from "./result.ts";

/** One field of an EAS schema string such as `string subject, uint256 observedAt`. */
export type SchemaField = { readonly type: string; readonly name: string };

/** Splits an EAS schema string into its typed fields. */
export function parseSchemaFields(schema: string): Result<SchemaField[], "INVALID_INPUT"> {
  const fields: SchemaField[] = [];
  for (const part of schema.split(",")) {
    const match = /^\s*([a-z0-9]+(?:\[\])?)\s+([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(part);
    if (!match) return fail("INVALID_INPUT", `Unsupported schema field "${part.trim()}"`);
    fields.push({ type: match[1]!, name: match[2]! });
  }
  return ok(fields);
}

type Encoded = unknown;

function coerce(field: SchemaField, value: unknown): Result<Encoded, "INVALID_INPUT"> {
  const bad = (rule: string) => fail("INVALID_INPUT", `${field.name} ${rule}`);
  if (field.type.endsWith("[]")) {
    if (!Array.isArray(value)) return bad("must be an array");
    const inner = { type: field.type.slice(0, -2), name: field.name };
    const out: Encoded[] = [];
    for (const item of value) {
      const c = coerce(inner, item);
      if (!c.ok) return c;
      out.push(c.value);
    }
    return ok(out);
  }
  if (/^u?int[0-9]*$/.test(field.type)) {
    if (typeof value === "bigint") return ok(value);
    if (typeof value === "number" && Number.isSafeInteger(value)) return ok(BigInt(value));
    if (typeof value === "string" && /^-?[0-9]+$/.test(value)) return ok(BigInt(value));
    return bad("must be an integer (bigint, safe integer or base-10 string)");
  }
  if (field.type === "string") return typeof value === "string" ? ok(value) : bad("must be a string");
  if (field.type === "bool") return typeof value === "boolean" ? ok(value) : bad("must be a boolean");
  if (field.type === "address") {
    return typeof value === "string" && isAddress(value) ? ok(value) : bad("must be an address");
  }
  if (field.type === "bytes") {
    return typeof value === "string" && /^0x([0-9a-fA-F]{2})*$/.test(value) ? ok(value) : bad("must be hex bytes");
  }
  const fixed = /^bytes([0-9]+)$/.exec(field.type);
  if (fixed) {
    const size = Number(fixed[1]);
    return typeof value === "string" && new RegExp(`^0x[0-9a-fA-F]{${size * 2}}$`).test(value)
      ? ok(value)
      : bad(`must be ${size} bytes of hex`);
  }
  return bad(`has an unsupported type ${field.type}`);
}

/**
 * ABI-encodes attestation data for a schema string. Objects in `string` fields must already be
 * strings (proofs are JSON-stringified by the caller). `subjectDidHash`, when the schema declares
 * it and `subject` is a DID, is filled with the DID hash.
 */
export function encodeSchemaData(schema: string, data: Readonly<Record<string, unknown>>): Result<HexString, "INVALID_INPUT"> {
  const fields = parseSchemaFields(schema);
  if (!fields.ok) return fields;
  const values: Encoded[] = [];
  for (const field of fields.value) {
    let value = data[field.name];
    if (field.name === "subjectDidHash" && value === undefined && typeof data.subject === "string" && data.subject.startsWith("did:")) {
      const hash = computeDidHash(data.subject);
      if (!hash.ok) return fail("INVALID_INPUT", `subject ${hash.message}`);
      value = hash.value;
    }
    if (value === undefined) return fail("INVALID_INPUT", `${field.name} is required`);
    const c = coerce(field, value);
    if (!c.ok) return c;
    values.push(c.value);
  }
  try {
    return ok(encodeAbiParameters(parseAbiParameters(schema), values as never) as HexString);
  } catch {
    return fail("INVALID_INPUT", "Data does not fit the schema");
  }
}

/** Decodes attestation data; big integers come back as base-10 strings. */
export function decodeSchemaData(schema: string, data: HexString): Result<Record<string, unknown>, "INVALID_INPUT"> {
  const parsed = parsedSchema(schema);
  return parsed.ok ? decodeSchemaFields(parsed.value.params, parsed.value.fields, data) : parsed;
}

/** A schema string read once: its fields and ABI parameters. */
type ParsedSchema = { readonly fields: readonly SchemaField[]; readonly params: readonly AbiParameter[] };

/**
 * Schema strings already read (issue 43 item 4: the follower and the webhook fan-out decode every new attestation,
 * and reading the schema with abitype cost more than the decode). Bounded: emptied when full, so schema strings
 * from requests cannot grow it.
 */
const PARSED = new Map<string, Result<ParsedSchema, "INVALID_INPUT">>();
const PARSED_KEPT = 64;

function parsedSchema(schema: string): Result<ParsedSchema, "INVALID_INPUT"> {
  let parsed = PARSED.get(schema);
  if (parsed === undefined) {
    parsed = parseSchema(schema);
    if (PARSED.size >= PARSED_KEPT) PARSED.clear();
    PARSED.set(schema, parsed);
  }
  return parsed;
}

function parseSchema(schema: string): Result<ParsedSchema, "INVALID_INPUT"> {
  const fields = parseSchemaFields(schema);
  if (!fields.ok) return fields;
  try {
    return ok({ fields: fields.value, params: parseAbiParameters(schema) as readonly AbiParameter[] });
  } catch {
    return fail("INVALID_INPUT", "Data does not decode with the schema");
  }
}

/**
 * Decodes attestation data with a schema already parsed (its ABI parameters and fields), by field name; big integers
 * come back as base-10 strings. For callers that parse each schema once.
 */
export function decodeSchemaFields(
  params: readonly AbiParameter[],
  fields: readonly SchemaField[],
  data: HexString,
): Result<Record<string, unknown>, "INVALID_INPUT"> {
  try {
    const decoded = decodeAbiParameters(params, data) as readonly unknown[];
    // Values that need more bytes than the data holds were read twice through shared offsets (see fitsIn).
    if (!fitsIn(params, decoded, (data.length - 2) / 2)) return fail("INVALID_INPUT", "Data does not decode with the schema");
    const out: Record<string, unknown> = {};
    fields.forEach((f, i) => {
      out[f.name] = stringifyBigints(decoded[i]);
    });
    return ok(out);
  } catch {
    return fail("INVALID_INPUT", "Data does not decode with the schema");
  }
}

/**
 * Whether decoded values could have come from `bytes` bytes without reading any part twice: the least their
 * canonical encoding takes (a string counted as one byte per UTF-16 unit, never more than the bytes it came from) must
 * fit. ABI offsets may point anywhere, so 33 KB whose thousand `string[]` offsets all name one 1 KB string decoded into
 * a thousand strings (viem allows 32 times the input), about 6 MB of JSON an answer, recomputed at every read. Every
 * encoder writes each value once; data that does not is answered as undecodable.
 */
function fitsIn(params: readonly AbiParameter[], values: readonly unknown[], bytes: number): boolean {
  let size = 0;
  for (let i = 0; i < params.length && size <= bytes; i++) size += slotted(params[i]!, values[i]);
  return size <= bytes;
}

/** The value's own encoding, plus its offset slot when it is dynamic (it then lives in the tail). */
function slotted(param: AbiParameter, value: unknown): number {
  return isDynamic(param) ? 32 + leastSize(param, value) : leastSize(param, value);
}

function leastSize(param: AbiParameter, value: unknown): number {
  const type = param.type;
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array !== null) {
    const element = { ...param, type: array[1]! } as AbiParameter;
    const items = Array.isArray(value) ? value : [];
    let size = array[2] === "" ? 32 : 0;
    for (const item of items) size += slotted(element, item);
    return size;
  }
  if (type === "tuple") {
    const components = (param as { components?: readonly AbiParameter[] }).components ?? [];
    const fields = Array.isArray(value) ? value : components.map((c) => (value as Record<string, unknown> | null)?.[c.name ?? ""]);
    let size = 0;
    components.forEach((c, i) => {
      size += slotted(c, fields[i]);
    });
    return size;
  }
  if (type === "string") return 32 + padded(typeof value === "string" ? value.length : 0);
  if (type === "bytes") return 32 + padded(typeof value === "string" ? Math.max(0, (value.length - 2) / 2) : 0);
  return 32;
}

function isDynamic(param: AbiParameter): boolean {
  const type = param.type;
  if (type === "string" || type === "bytes" || type.endsWith("[]")) return true;
  const fixed = /^(.*)\[\d+\]$/.exec(type);
  if (fixed !== null) return isDynamic({ ...param, type: fixed[1]! } as AbiParameter);
  if (type === "tuple") return ((param as { components?: readonly AbiParameter[] }).components ?? []).some(isDynamic);
  return false;
}

const padded = (length: number) => Math.ceil(length / 32) * 32;

function stringifyBigints(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(stringifyBigints);
  return value;
}

/** The inputs of recipient derivation: the attestation data fields that can name a recipient. */
export type RecipientInput = { readonly subject?: unknown; readonly subjectDidHash?: unknown; readonly recipient?: unknown };

/**
 * Derives the EAS recipient (interface "Recipient derivation"): the DID address of a `did:`
 * subject, else the low 160 bits of `subjectDidHash`, else a valid `recipient`, else zero.
 */
export function deriveRecipient(input: RecipientInput): Result<HexString, "INVALID_DID"> {
  if (typeof input.subject === "string" && input.subject.startsWith("did:")) {
    const address = didToAddress(input.subject);
    return address.ok ? ok(address.value as HexString) : address;
  }
  if (typeof input.subjectDidHash === "string" && /^0x[0-9a-fA-F]{64}$/.test(input.subjectDidHash)) {
    const address = didAddressFromHash(input.subjectDidHash);
    if (address.ok) return ok(address.value as HexString);
  }
  if (typeof input.recipient === "string" && isAddress(input.recipient)) return ok(input.recipient as HexString);
  return ok(ZERO_ADDRESS);
}
