/**
 * What every route plugin does with its input before a use case sees it: read the body within the size
 * limit, parse it, and check it (or the query) against the operation's model of `REQUEST_MODELS`, the
 * same objects `/openapi.json` publishes.
 */
import type { Static, TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { ValueError } from "@sinclair/typebox/errors";
import type { DocumentDecoration } from "elysia";
import type { RequestModels } from "../models.ts";
import { clientKeyOf } from "../../domain/sessions/mod.ts";
import type { ClientAddressOf } from "../../ports/request_context.ts";

/**
 * Largest request body, in bytes. The biggest valid request is identity-resolve with 100 identifiers of
 * 10 KiB (10,240 UTF-16 units each) made only of characters JSON writes as six-byte escapes (control
 * characters, or emoji sent as `\ud83d\ude00` pairs): about 6.15 MB. 8 MiB leaves room for whitespace.
 */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The body a route sees when the request's body was longer than {@link MAX_BODY_BYTES}. */
export const BODY_TOO_LARGE: unique symbol = Symbol("body too large");

const decoder = new TextDecoder();

/**
 * Elysia body parser of every route with a body: UTF-8 text, or {@link BODY_TOO_LARGE}. The app refuses a
 * declared Content-Length over the limit before routing; the bytes are counted here too, so a chunked
 * body (no Content-Length) is cut off at the limit instead of being buffered whole.
 */
export async function readBodyText({ request }: { request: Request }): Promise<string | typeof BODY_TOO_LARGE> {
  if (request.body === null) return "";
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) <= MAX_BODY_BYTES) {
    // Over HTTP the body is exactly the declared length; the check after reading is for a Request built in
    // process with a Content-Length that is not its body's. UTF-8 takes at most 3 bytes per UTF-16 unit.
    const text = await request.text();
    return text.length * 3 > MAX_BODY_BYTES && Buffer.byteLength(text) > MAX_BODY_BYTES ? BODY_TOO_LARGE : text;
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      return BODY_TOO_LARGE;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return decoder.decode(all);
}

/** A parsed JSON body, or why there is none. */
export type JsonBody =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly code: "INVALID_JSON" | "PAYLOAD_TOO_LARGE" | "INVALID_INPUT"; readonly message: string };

/** The message of a 413 `PAYLOAD_TOO_LARGE`. */
export const TOO_LARGE_MESSAGE = `Request body larger than ${MAX_BODY_BYTES} bytes`;

/**
 * The deepest nesting of arrays and objects any JSON body may have (issue 33). The deepest body a route takes is a
 * premium JSON-RPC batch of `eth_getLogs` filters (batch, call, params, filter, topics, a topic's list: 6 levels);
 * EIP-712 typed data and MCP messages are shallower.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * The most values any JSON body may hold (issue 33): array elements and object members (keys are not counted), plus
 * the containers themselves and the body itself. The bodies the routes take are far below it (a premium batch of 100
 * calls with their filters, identity-resolve's 100 identifiers, an MCP batch of tool calls); at 20,000 the values
 * parsed from one body cost about a megabyte beside the body's own text.
 */
export const MAX_JSON_VALUES = 20_000;

/** The characters {@link jsonShapeRefusal} looks at outside strings. */
const STRUCTURE = /["[\]{},]/g;

/**
 * Why no route takes `text` as JSON, read without parsing it: nested deeper than {@link MAX_JSON_DEPTH}, or more
 * than {@link MAX_JSON_VALUES} values; undefined otherwise (which says nothing of whether it parses). Issue 33:
 * `JSON.parse` of 8 MiB of `[` builds four million arrays (120 MiB) before any route looks at the result, so every
 * JSON body is scanned first. One pass over the text outside strings, which are skipped with `indexOf` (and runs of
 * anything else, such as whitespace or digits, with one regular-expression search: 8 MB of spaces scan in under a
 * millisecond instead of 15); it stops at the first bracket or comma past a bound, and counts a `[` or `{` and a `,` as one
 * value each (exact for non-empty containers, one too many for an empty one).
 */
export function jsonShapeRefusal(text: string): string | undefined {
  let depth = 0;
  let values = 1;
  let plain = 0;
  // A JSON text has at most two strings per value (a member's name and its value): more strings than twice the
  // bound means more values than the bound, or no JSON at all, and stops the scan as soon.
  let strings = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x22 && c !== 0x5b && c !== 0x7b && c !== 0x5d && c !== 0x7d && c !== 0x2c) {
      if (++plain < 16) continue;
      STRUCTURE.lastIndex = i;
      const next = STRUCTURE.exec(text);
      if (next === null) break;
      i = next.index - 1;
      plain = 0;
      continue;
    }
    plain = 0;
    if (c === 0x22) {
      if (++strings > 2 * MAX_JSON_VALUES) return `Body holds more than ${MAX_JSON_VALUES} values`;
      // A string: its end is the next quote not escaped, i.e. after an even run of backslashes (the runs before
      // successive quotes do not overlap, so the whole scan stays linear).
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end === -1) return undefined;
        let slashes = 0;
        for (let j = end - 1; text.charCodeAt(j) === 0x5c; j--) slashes++;
        if ((slashes & 1) === 0) break;
      }
      i = end;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return `Body nested deeper than ${MAX_JSON_DEPTH} levels`;
      if (++values > MAX_JSON_VALUES) return `Body holds more than ${MAX_JSON_VALUES} values`;
    } else if (c === 0x5d || c === 0x7d) {
      // More closed than opened: no JSON, and JSON.parse stops there, having built no more than the scan allowed.
      if (--depth < 0) return undefined;
    } else if (c === 0x2c) {
      if (++values > MAX_JSON_VALUES) return `Body holds more than ${MAX_JSON_VALUES} values`;
    }
  }
  return undefined;
}

/**
 * Parses the text {@link readBodyText} gave; a body that does not parse is `INVALID_JSON` (decisions §2), one no
 * route takes ({@link jsonShapeRefusal}) `INVALID_INPUT` before it is parsed.
 */
export function parseJsonBody(body: unknown): JsonBody {
  if (body === BODY_TOO_LARGE) return { ok: false, code: "PAYLOAD_TOO_LARGE", message: TOO_LARGE_MESSAGE };
  if (typeof body === "string") {
    const refusal = jsonShapeRefusal(body);
    if (refusal !== undefined) return { ok: false, code: "INVALID_INPUT", message: refusal };
  }
  try {
    return { ok: true, value: JSON.parse(typeof body === "string" ? body : "") };
  } catch {
    return { ok: false, code: "INVALID_JSON", message: "Invalid JSON body" };
  }
}

/**
 * The query string as the object a query model checks: a name given once is a string, a repeated name an
 * array of strings (which no model takes for a string: a repeated parameter is ambiguous, so it is refused).
 */
export function queryOf(url: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null);
  const start = url.indexOf("?");
  if (start === -1) return query;
  const hash = url.indexOf("#", start);
  for (const [name, value] of new URLSearchParams(url.slice(start + 1, hash === -1 ? undefined : hash))) {
    const seen = query[name];
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return query;
}

/** A compiled check of one request model. */
export type RequestCheck<T extends TSchema> = {
  /** The model, the very object `/openapi.json` publishes. */
  readonly model: T;
  readonly check: (value: unknown) => value is Static<T>;
  /** Why a value fails the check, naming the field (decisions §2): `controllerDid is required`. */
  readonly explain: (value: unknown) => string;
  /**
   * The body {@link readBodyText} gave, parsed and checked: the value, or the refusal (`PAYLOAD_TOO_LARGE`,
   * `INVALID_JSON`, or `INVALID_INPUT` with {@link explain}'s message).
   */
  readonly readJson: (body: unknown) =>
    | { readonly ok: true; readonly value: Static<T> }
    | { readonly ok: false; readonly code: "INVALID_JSON" | "PAYLOAD_TOO_LARGE" | "INVALID_INPUT"; readonly message: string };
};

/** The sentence of one field's error: `<field> is required`, or `<field> is invalid: <why>`. */
function explainError(error: ValueError): string {
  const field = error.path.slice(1).split("/").map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~")).join(".");
  if (error.value === undefined) return `${field} is required`;
  return `${field} is invalid: ${error.message.charAt(0).toLowerCase()}${error.message.slice(1)}`;
}

/**
 * Compiles the check of a request model. `explain` may give the domain's own wording of a refusal (it must
 * refuse whatever the model refuses); when it has none, the message names the first failing field.
 */
export function compileRequestCheck<T extends TSchema>(
  model: T,
  options: { explain?: ((value: unknown) => string | undefined) | undefined; query?: boolean | undefined } = {},
): RequestCheck<T> {
  const compiled = TypeCompiler.Compile(model);
  const describe = (value: unknown): string => {
    const first = compiled.Errors(value).First();
    if (first === undefined) return "Invalid request";
    // A query parameter given twice ({@link queryOf} makes it an array): say so, not what type it should have been.
    const name = first.path.split("/")[1];
    if (options.query === true && name !== undefined && Array.isArray((value as Record<string, unknown>)[name])) return `${name} must be given once`;
    // A union whose alternatives fail on different fields says what it wants in its description.
    const alternatives = first.errors.map((variant) => variant.First()).filter((e): e is ValueError => e !== undefined).map(deepest);
    const description = (first.schema as { description?: unknown }).description;
    // One alternative failing on a field the body gives (the others on one it left out): the body chose that one, and its
    // field is the one to name (decisions §2), not the union's general sentence.
    const given = alternatives.filter((e) => e.value !== undefined && e.path !== "");
    const differ = new Set(alternatives.map((e) => e.path)).size > 1;
    if (differ && given.length === 1) return explainError(given[0]!);
    if (differ && typeof description === "string") return description;
    const error = deepest(first);
    if (error.path === "") return typeof value === "object" && value !== null && !Array.isArray(value) ? "Invalid request" : "Body must be a JSON object";
    return explainError(error);
  };
  const explain = (value: unknown) => options.explain?.(value) ?? describe(value);
  return {
    model,
    check: (value): value is Static<T> => compiled.Check(value),
    explain,
    readJson(body) {
      const parsed = parseJsonBody(body);
      if (!parsed.ok) return parsed;
      if (!compiled.Check(parsed.value)) return { ok: false, code: "INVALID_INPUT", message: explain(parsed.value) };
      return { ok: true, value: parsed.value };
    },
  };
}

/** The most specific error under a union's error: the one deepest in the value, the first of equals. */
function deepest(error: ValueError): ValueError {
  let best = error;
  for (const variant of error.errors) {
    const first = variant.First();
    if (first === undefined) continue;
    const candidate = deepest(first);
    if (candidate.path.length > best.path.length) best = candidate;
  }
  return best;
}

/** Route metadata naming the request models a route validates with, readable from `app.routes[i].hooks.detail`. */
export type RequestDetail = DocumentDecoration & { readonly "x-request-models": RequestModels };

/** The `detail` of a route validated with `models`. */
export function requestDetail(models: RequestModels): RequestDetail {
  return { "x-request-models": models };
}

/**
 * The key a per-client limit counts a request under: its client's address, an IPv6 client by its /64 and an
 * IPv4-mapped one as its IPv4 (domain/sessions `clientKeyOf`); "unknown" when not known. Counting raw addresses gave
 * every address of one IPv6 subscriber's /64 a budget of its own.
 */
export function clientKeyFor(of: ClientAddressOf | undefined, request: Request): string {
  return clientKeyOf(of?.(request));
}
