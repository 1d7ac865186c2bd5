/**
 * The params of a premium read, rebuilt from what the method takes (nothing passes through unread), and the
 * `eth_getLogs` range rule.
 */

/** What one param of a read method is. */
type ParamKind = "call" | "block" | "tag" | "address" | "hash" | "slot" | "bool" | "filter";

/** The params of each read method, in order; a call may send fewer (the node judges those), never more. */
const METHOD_PARAMS: Readonly<Record<string, readonly ParamKind[]>> = {
  eth_chainId: [],
  eth_blockNumber: [],
  eth_call: ["call", "block"],
  eth_getBalance: ["address", "block"],
  eth_getCode: ["address", "block"],
  eth_getStorageAt: ["address", "slot", "block"],
  eth_getLogs: ["filter"],
  eth_getTransactionReceipt: ["hash"],
  eth_getTransactionByHash: ["hash"],
  eth_getBlockByNumber: ["tag", "bool"],
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;
const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;
const BLOCK_NUMBER = /^0x[0-9a-fA-F]{1,16}$/;
const DATA = /^0x(?:[0-9a-fA-F]{2})*$/;
const BLOCK_TAGS: ReadonlySet<unknown> = new Set(["latest", "earliest", "pending", "safe", "finalized"]);

/**
 * The fields of an `eth_call` object that a read needs, and the check of each. Anything else (an access list,
 * blobs, an EIP-7702 authorization list, which could put code at an address like a state override) is refused.
 */
const CALL_FIELDS: Readonly<Record<string, (value: unknown) => boolean>> = {
  from: (v) => typeof v === "string" && ADDRESS.test(v),
  to: (v) => v === null || (typeof v === "string" && ADDRESS.test(v)),
  gas: (v) => typeof v === "string" && QUANTITY.test(v),
  gasPrice: (v) => typeof v === "string" && QUANTITY.test(v),
  maxFeePerGas: (v) => typeof v === "string" && QUANTITY.test(v),
  maxPriorityFeePerGas: (v) => typeof v === "string" && QUANTITY.test(v),
  value: (v) => typeof v === "string" && QUANTITY.test(v),
  data: (v) => typeof v === "string" && DATA.test(v),
  input: (v) => typeof v === "string" && DATA.test(v),
  // Sent by some libraries and harmless for a read.
  nonce: (v) => typeof v === "string" && QUANTITY.test(v),
  type: (v) => typeof v === "string" && QUANTITY.test(v),
  chainId: (v) => typeof v === "string" && QUANTITY.test(v),
};

/** The fields of an `eth_getLogs` filter; `fromBlock`, `toBlock` and `blockHash` are judged by {@link logRangeOf}. */
const FILTER_FIELDS = new Set(["fromBlock", "toBlock", "blockHash", "address", "topics"]);

const isTopic = (t: unknown): boolean => t === null || (typeof t === "string" && HASH.test(t));

/**
 * The params forwarded for one read call, rebuilt from what the read needs, or why they are refused (a -32602
 * message). Nothing is passed through: an extra param is refused (for `eth_call` the third is a state override and
 * the fourth a block override: refused by name, never silently dropped), each present param must be of its kind
 * (an EIP-1898 block object is rebuilt from `blockNumber`, or `blockHash` and `requireCanonical`), an `eth_call`
 * object keeps only the fields of {@link CALL_FIELDS} (any other is refused), and its gas is lowered to `maxCallGas`
 * or set to it when absent. A call with fewer params than its method takes is forwarded as it is: the node
 * answers it with an error at no cost.
 */
export function rebuildParams(method: string, params: readonly unknown[], maxCallGas: bigint): unknown[] | string {
  const kinds = METHOD_PARAMS[method] ?? [];
  if (method === "eth_call" && params.length >= 3) {
    return params.length === 3
      ? "eth_call state overrides (a third param) are not served"
      : "eth_call state and block overrides (a third and fourth param) are not served";
  }
  if (params.length > kinds.length) return `${method} takes at most ${kinds.length} param${kinds.length === 1 ? "" : "s"}`;
  const out: unknown[] = [];
  for (const [i, value] of params.entries()) {
    const kind = kinds[i]!;
    const rebuilt = rebuildParam(kind, value, maxCallGas);
    if (rebuilt === undefined) return `${method} param ${i + 1} must be ${KIND_TEXT[kind]}`;
    if (typeof rebuilt === "object" && rebuilt !== null && "refused" in rebuilt) return `${method}: ${rebuilt.refused}`;
    out.push(rebuilt);
  }
  return out;
}

const KIND_TEXT: Readonly<Record<ParamKind, string>> = {
  call: "a call object",
  block: "a block number (hex), a block tag or an EIP-1898 block object",
  tag: "a block number (hex) or a block tag",
  address: "an address (0x and 40 hex digits)",
  hash: "a 32-byte hash (0x and 64 hex digits)",
  slot: "a storage slot (hex)",
  bool: "true or false",
  filter: "a filter object",
};

/** One param rebuilt, undefined when it is not of its kind, or `{refused}` naming what is not served. */
function rebuildParam(kind: ParamKind, value: unknown, maxCallGas: bigint): unknown {
  const isObject = typeof value === "object" && value !== null && !Array.isArray(value);
  switch (kind) {
    case "address":
      return typeof value === "string" && ADDRESS.test(value) ? value : undefined;
    case "hash":
      return typeof value === "string" && HASH.test(value) ? value : undefined;
    case "slot":
      return typeof value === "string" && QUANTITY.test(value) ? value : undefined;
    case "bool":
      return typeof value === "boolean" ? value : undefined;
    case "tag":
      return BLOCK_TAGS.has(value) || (typeof value === "string" && BLOCK_NUMBER.test(value)) ? value : undefined;
    case "block": {
      if (!isObject) return BLOCK_TAGS.has(value) || (typeof value === "string" && BLOCK_NUMBER.test(value)) ? value : undefined;
      const b = value as Record<string, unknown>;
      const keys = Object.keys(b);
      if (keys.length === 1 && typeof b.blockNumber === "string" && BLOCK_NUMBER.test(b.blockNumber)) return { blockNumber: b.blockNumber };
      const canonical = b.requireCanonical;
      if (
        typeof b.blockHash === "string" && HASH.test(b.blockHash) && (canonical === undefined || typeof canonical === "boolean") &&
        keys.every((k) => k === "blockHash" || k === "requireCanonical")
      ) return canonical === undefined ? { blockHash: b.blockHash } : { blockHash: b.blockHash, requireCanonical: canonical };
      return undefined;
    }
    case "call": {
      if (!isObject) return undefined;
      const call: Record<string, unknown> = {};
      for (const [field, v] of Object.entries(value as Record<string, unknown>)) {
        const check = Object.hasOwn(CALL_FIELDS, field) ? CALL_FIELDS[field] : undefined;
        if (check === undefined) return { refused: `the call field ${JSON.stringify(field.slice(0, 40))} is not served (only ${Object.keys(CALL_FIELDS).join(", ")})` };
        if (v === undefined) continue;
        if (!check(v)) return { refused: `the call field ${field} is malformed` };
        call[field] = v;
      }
      const gas = typeof call.gas === "string" ? BigInt(call.gas) : maxCallGas;
      call.gas = `0x${(gas < maxCallGas ? gas : maxCallGas).toString(16)}`;
      return call;
    }
    case "filter": {
      if (!isObject) return undefined;
      const filter: Record<string, unknown> = {};
      for (const [field, v] of Object.entries(value as Record<string, unknown>)) {
        if (!FILTER_FIELDS.has(field)) return { refused: `the filter field ${JSON.stringify(field.slice(0, 40))} is not served (only ${[...FILTER_FIELDS].join(", ")})` };
        filter[field] = v;
      }
      const address = filter.address;
      if (address !== undefined && address !== null && !(typeof address === "string" && ADDRESS.test(address)) &&
        !(Array.isArray(address) && address.every((a) => typeof a === "string" && ADDRESS.test(a)))) {
        return { refused: "address must be an address or a list of addresses" };
      }
      const topics = filter.topics;
      if (topics !== undefined && topics !== null &&
        !(Array.isArray(topics) && topics.length <= 4 && topics.every((t) => isTopic(t) || (Array.isArray(t) && t.every(isTopic))))) {
        return { refused: "topics must be a list of at most 4 topics (a hash, null or a list of hashes)" };
      }
      return filter;
    }
  }
}

/** The block tags that stand for the head (a missing or null bound too): `pending` is counted as the head. */
const HEAD_TAGS: ReadonlySet<unknown> = new Set([undefined, null, "latest", "pending", "safe", "finalized"]);

/** An `eth_getLogs` filter's bounds: a number, or the head (to be read). A `blockHash` filter has none. */
export type LogRange = { readonly from: bigint | "head"; readonly to: bigint | "head" } | { readonly blockHash: string };

/**
 * An `eth_getLogs` filter's range, or why it is refused. Block tags are resolved to numbers (`earliest` is 0, the
 * others and a missing bound the head); a `blockHash` filter is one block.
 */
export function logRangeOf(filter: unknown): LogRange | string {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return "eth_getLogs takes a filter object";
  const f = filter as Record<string, unknown>;
  if (f.blockHash !== undefined) return typeof f.blockHash === "string" ? { blockHash: f.blockHash } : "blockHash must be a block hash";
  const fixed = (value: unknown): bigint | "head" | undefined => {
    if (HEAD_TAGS.has(value)) return "head";
    if (value === "earliest") return 0n;
    if (typeof value === "string" && BLOCK_NUMBER.test(value)) return BigInt(value);
    return undefined;
  };
  // As `toBlock` these tags are counted as the head (never narrower than they are); as `fromBlock` the head would make
  // the range look narrower than it is, by the chain's finality lag (64 blocks on Anvil, thousands on some L2s).
  if (f.fromBlock === "safe" || f.fromBlock === "finalized") return `fromBlock ${f.fromBlock} is not taken: give a block number (hex)`;
  const from = fixed(f.fromBlock);
  const to = fixed(f.toBlock);
  if (from === undefined) return "fromBlock must be a block number (hex) or a block tag";
  if (to === undefined) return "toBlock must be a block number (hex) or a block tag";
  return { from, to };
}

/**
 * Why an `eth_getLogs` range is refused (undefined: allowed), or "unreachable" when the head was needed and could
 * not be read (it is read only when a bound needs it).
 */
export async function rangeRefusal(
  range: LogRange,
  readHead: () => Promise<bigint | undefined>,
  maxRange: bigint,
): Promise<string | undefined> {
  if ("blockHash" in range) return undefined;
  const head = range.from === "head" || range.to === "head" ? await readHead() : 0n;
  if (head === undefined) return "unreachable";
  const first = range.from === "head" ? head : range.from;
  const last = range.to === "head" ? head : range.to;
  if (last - first + 1n > maxRange) return `eth_getLogs range too wide: at most ${maxRange} blocks`;
  return undefined;
}
