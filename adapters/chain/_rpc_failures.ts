import { HttpRequestError, ResponseBodyTooLargeError, TimeoutError } from "viem";

/** The kinds of failure an RPC call ends in; `tooLarge` marks an answer too large to read. */
export type RpcFailure = { kind: "range" | "timeout" | "fatal" | "transient"; text: string; tooLarge?: true };

/**
 * Whether a response was too large to read: over the transport's limit (viem's `ResponseBodyTooLargeError`), HTTP
 * 413, or a provider's refusal for its size.
 */
export function isResponseTooLarge(error: unknown): boolean {
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    if (e instanceof ResponseBodyTooLargeError) return true;
    if (e instanceof HttpRequestError && e.status === 413) return true;
  }
  return isTooLargeText(describe(error));
}

/** A provider's or the transport's words for a response too large to send or read. */
function isTooLargeText(text: string): boolean {
  return /exceeded the size limit|response (body )?(size|too large|is too large)|payload too large|status: 413|responsebodytoolarge/i.test(text);
}

/** Whether a deployless call failed because its return data exceeded the contract size limit. */
export function isReturnSizeLimit(error: unknown): boolean {
  return /contract ?size ?limit|max(imum)? code size|code size (limit|exceeded)|contract code size/i.test(describe(error));
}

/** Whether a call ran out of gas; inside the batch reader a starved STATICCALL shows as a bare revert. */
export function isOutOfGas(error: unknown): boolean {
  return /out ?of ?gas|gas required exceeds|revert/i.test(nodeText(error));
}

/** The batch reader's call came back empty: the node ignored the state override. */
export class OverrideIgnoredError extends Error {
  constructor() {
    super("The node ignored the eth_call state override");
  }
}

/**
 * Whether the node refused the state-override parameter (invalid params, unknown method or field,
 * "too many arguments") or ignored it, rather than the request failing on the way or for a reason
 * a retry may cure.
 */
export function isOverrideRefusal(error: unknown): boolean {
  const codes: unknown[] = [];
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    if (e instanceof OverrideIgnoredError) return true;
    if (e instanceof HttpRequestError || e instanceof TimeoutError) return false;
    codes.push((e as { code?: unknown }).code);
  }
  if (codes.some((code) => code === -32600 || code === -32601 || code === -32602)) return true;
  return /override|argument|invalid param|unknown field|not supported|unsupported/i.test(nodeText(error));
}

/** What the node itself said (viem's `details`), without viem's own text (which names the call's arguments). */
export function nodeText(error: unknown): string {
  const texts: string[] = [];
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    const details = (e as { details?: unknown }).details;
    if (typeof details === "string") texts.push(details);
  }
  return texts.join(" | ");
}

/** The messages and details of an error and its causes, for matching and logs. */
function describe(error: unknown): string {
  let text = "";
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    text += ` ${e.message} ${String((e as { details?: unknown }).details ?? "")}`;
  }
  return text;
}

/**
 * Texts providers use to refuse a log range or a result size (Alchemy, Infura, QuickNode, Ankr,
 * BlockPI, Chainstack, public Base/OP nodes, geth/erigon/reth). Matched lowercase.
 */
const RANGE_REFUSALS = [
  /block range/,
  /range (is )?too (large|wide|big)/,
  /too (many|large) (blocks|logs|results)/,
  /query returned more than/,
  /response size (exceeded|is larger|should not)/,
  /log response size/,
  /exceed(s|ed)? (the )?max(imum)? (block )?range/,
  /max(imum)? (block )?range/,
  /limited to (a )?[\d,]+/,
  /range limit/,
  /results? (limit|exceed)/,
  /more than [\d,]+ (results|logs|blocks)/,
  /query timeout exceeded/,
  /invalid block range/,
];

/** What kind of failure an RPC error is; `ranged` calls may be refused for their range. */
export function classify(error: unknown, ranged: boolean): RpcFailure {
  const texts: string[] = [];
  const codes: number[] = [];
  let status: number | undefined;
  let timeout = false;
  let seen = error;
  for (let depth = 0; depth < 8 && seen instanceof Error; depth++) {
    const e = seen as Error & { details?: unknown; shortMessage?: unknown; code?: unknown; status?: unknown };
    if (typeof e.details === "string") texts.push(e.details);
    if (typeof e.shortMessage === "string") texts.push(e.shortMessage);
    if (typeof e.code === "number") codes.push(e.code);
    if (e instanceof HttpRequestError && typeof e.status === "number") status = e.status;
    if (e instanceof TimeoutError) timeout = true;
    seen = e.cause;
  }
  if (texts.length === 0 && error instanceof Error) texts.push(error.message);
  const text = texts.join(" | ");
  const lower = text.toLowerCase();
  if (timeout) return { kind: "timeout", text };
  const tooLarge = status === 413 || isResponseTooLarge(error);
  // A too-large answer is marked: the scan first sends fewer ranges together, then splits (issue 43).
  if (ranged && (tooLarge || RANGE_REFUSALS.some((re) => re.test(lower)))) return { kind: "range", text, ...(tooLarge ? { tooLarge: true } : {}) };
  // A revert or an unknown method will not change on retry.
  if (codes.includes(3) || codes.includes(-32601) || /execution reverted|revert/.test(lower)) return { kind: "fatal", text };
  return { kind: "transient", text };
}

/** The width of the range a provider suggests (`[0x.., 0x..]`, Infura/Alchemy style), when it starts at `from`. */
export function suggestedWidth(text: string, from: bigint, to: bigint): bigint | undefined {
  const match = /\[\s*(0x[0-9a-fA-F]+)\s*,\s*(0x[0-9a-fA-F]+)\s*\]/.exec(text);
  if (!match) return undefined;
  const a = BigInt(match[1]!);
  const b = BigInt(match[2]!);
  if (a !== from || b < a || b >= to) return undefined;
  return b - a + 1n;
}
