/**
 * How a configuration variable is declared, once: its environment name, its default as the docs show it, its range
 * and description (a TypeBox schema carries them), and how its text is read. A section is a `Type.Object` of such
 * declarations (or of nested sections); `readSection` reads them all in order.
 */
import { type Static, type TObject, type TSchema, Type } from "@sinclair/typebox";

/** The environment the configuration is read from. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A configuration value that stops the server at start; the message names the variable. */
export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`${variable}: ${reason}`);
    this.name = "ConfigError";
  }
}

/** What a variable's reader sees: the environment, whether the embedded devnet runs, and what was read before it. */
export type ReadContext = {
  readonly env: Env;
  /** Neither `RPC_URL` nor `CHAINS_FILE`: the embedded devnet fills what is unset. */
  readonly devnet: boolean;
  /** The sections read so far, by name. */
  readonly sections: Readonly<Record<string, unknown>>;
  /** The variables of this section read so far, by key. */
  readonly values: Readonly<Record<string, unknown>>;
};

/** A declared variable: its schema, its environment name, its default as docs/configuration.md shows it, its reader. */
export type Declared<S extends TSchema> = S & {
  readonly env: string;
  readonly envDefault: string;
  readonly read: (ctx: ReadContext) => Static<S>;
};

/** A default given as a value or computed from what was read before. */
type Fallback<T> = T | ((ctx: ReadContext) => T);
type Described = { readonly description: string; /** The default as the docs show it; else the default's own text. */ readonly doc?: string };

/** The variable's text, trimmed; empty counts as unset. */
export function raw(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

const resolve = <T>(fallback: Fallback<T>, ctx: ReadContext): T => (typeof fallback === "function" ? (fallback as (c: ReadContext) => T)(ctx) : fallback);

/** Declares a variable of any schema with its own reader (`raw` is undefined when unset). */
export function declare<S extends TSchema>(
  schema: S,
  env: string,
  envDefault: string,
  read: (text: string | undefined, ctx: ReadContext) => Static<S>,
): Declared<S> {
  return Object.assign(schema, { env, envDefault, read: (ctx: ReadContext) => read(raw(ctx.env, env), ctx) });
}

/** Parses a whole number within bounds, naming the variable in its error. */
export function parseWhole(name: string, text: string, minimum = 0, maximum = Number.MAX_SAFE_INTEGER): number {
  if (!/^[0-9]+$/.test(text)) throw new ConfigError(name, `expected a whole number, got "${text}"`);
  const n = Number(text);
  if (n < minimum || n > maximum) throw new ConfigError(name, `expected a number from ${minimum} to ${maximum}`);
  return n;
}

type IntOptions = Described & { readonly default: Fallback<number>; readonly minimum?: number; readonly maximum?: number };

/** A whole number from `minimum` (default 0) to `maximum`. */
export function int(env: string, options: IntOptions) {
  const { minimum = 0, maximum = Number.MAX_SAFE_INTEGER } = options;
  const schema = Type.Integer({ minimum, maximum, description: options.description, ...(typeof options.default === "number" ? { default: options.default } : {}) });
  return declare(schema, env, options.doc ?? String(options.default), (text, ctx) =>
    text === undefined ? resolve(options.default, ctx) : parseWhole(env, text, minimum, maximum));
}

/** A whole number, or undefined when unset (its meaning then decided where it is used). */
export function optionalInt(env: string, options: Described & { readonly doc: string; readonly minimum?: number; readonly maximum?: number }) {
  const { minimum = 0, maximum = Number.MAX_SAFE_INTEGER } = options;
  const schema = Type.Union([Type.Integer({ minimum, maximum }), Type.Undefined()], { description: options.description });
  return declare(schema, env, options.doc, (text) => (text === undefined ? undefined : parseWhole(env, text, minimum, maximum)));
}

/** A whole number kept as a bigint (gas units, wei). */
export function bigInt(env: string, options: IntOptions) {
  const { minimum = 0, maximum = Number.MAX_SAFE_INTEGER } = options;
  return declare(Type.BigInt({ description: options.description }), env, options.doc ?? String(options.default), (text, ctx) =>
    BigInt(text === undefined ? resolve(options.default, ctx) : parseWhole(env, text, minimum, maximum)));
}

/** `true`/`1`/`yes` or `false`/`0`/`no`. */
export function bool(env: string, options: Described & { readonly default: boolean }) {
  return declare(Type.Boolean({ default: options.default, description: options.description }), env, options.doc ?? String(options.default), (text) => {
    const value = text?.toLowerCase();
    if (value === undefined) return options.default;
    if (["true", "1", "yes"].includes(value)) return true;
    if (["false", "0", "no"].includes(value)) return false;
    throw new ConfigError(env, `expected true or false, got "${value}"`);
  });
}

/** `on` (or true) and `off` (or false). */
export function onOff(env: string, options: Described & { readonly default: boolean }) {
  return declare(Type.Boolean({ default: options.default, description: options.description }), env, options.doc ?? (options.default ? "on" : "off"), (text) => {
    const value = text?.toLowerCase();
    if (value === undefined) return options.default;
    if (["on", "true", "1", "yes"].includes(value)) return true;
    if (["off", "false", "0", "no"].includes(value)) return false;
    throw new ConfigError(env, `expected on or off, got "${value}"`);
  });
}

/** A comma-separated list; empty items dropped. */
export function list(env: string, options: Described & { readonly default: Fallback<readonly string[]> }) {
  const doc = options.doc ?? (typeof options.default === "function" ? "" : options.default.join(",") || "(none)");
  return declare(Type.Readonly(Type.Array(Type.String(), { description: options.description })), env, doc, (text, ctx) =>
    text === undefined ? [...resolve(options.default, ctx)] : text.split(",").map((s) => s.trim()).filter((s) => s !== ""));
}

/** Text; `check` refuses a bad one (throwing a ConfigError). */
export function text(env: string, options: Described & { readonly default: Fallback<string>; readonly check?: (value: string) => void }) {
  return declare(Type.String({ description: options.description }), env, options.doc ?? String(options.default), (value, ctx) => {
    if (value === undefined) return resolve(options.default, ctx);
    options.check?.(value);
    return value;
  });
}

/** Text that may be unset. */
export function optionalText(env: string, options: Described & { readonly doc: string; readonly check?: (value: string) => void }) {
  return declare(Type.Union([Type.String(), Type.Undefined()], { description: options.description }), env, options.doc, (value) => {
    if (value !== undefined) options.check?.(value);
    return value;
  });
}

/** A 32-byte hex key (with or without 0x), lowercased with 0x; unset: undefined. */
export function privateKey(env: string, options: Described & { readonly doc: string }) {
  const schema = Type.Union([Type.TemplateLiteral("0x${string}"), Type.Undefined()], { description: options.description });
  return declare(schema, env, options.doc, (value) => {
    if (value === undefined) return undefined;
    const hex = value.startsWith("0x") ? value.slice(2) : value;
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError(env, "expected 32 bytes of hex (64 characters)");
    return `0x${hex.toLowerCase()}` as `0x${string}`;
  });
}

/** A check that the text matches `pattern`, else the variable's error with `reason`. */
export function matching(env: string, pattern: RegExp, reason: string): (value: string) => void {
  return (value) => {
    if (!pattern.test(value)) throw new ConfigError(env, reason);
  };
}

/** Every declared variable of a section, nested sections included, with the section's key path. */
export function declarations(section: TObject): Declared<TSchema>[] {
  const found: Declared<TSchema>[] = [];
  for (const property of Object.values(section.properties)) {
    if (typeof (property as Partial<Declared<TSchema>>).read === "function") found.push(property as Declared<TSchema>);
    else if ((property as TObject).properties !== undefined) found.push(...declarations(property as TObject));
  }
  return found;
}

/** Reads every variable of a section, in order; a nested section is read as its own object. */
export function readSection<S extends TObject>(section: S, ctx: Omit<ReadContext, "values">): Static<S> {
  const values: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(section.properties)) {
    const declared = property as Partial<Declared<TSchema>>;
    if (typeof declared.read === "function") values[key] = declared.read({ ...ctx, values });
    else if ((property as TObject).properties !== undefined) values[key] = readSection(property as TObject, ctx);
  }
  return values as Static<S>;
}

/** One of `values`; `reason` words the refusal of another. */
export function choice<const T extends string>(
  env: string,
  values: readonly T[],
  options: Described & { readonly default: T | undefined; readonly reason: (value: string) => string },
) {
  const schema = Type.Unsafe<T>(Type.Union(values.map((v) => Type.Literal(v)), { description: options.description }));
  return declare(schema, env, options.doc ?? String(options.default), (value) => {
    if (value === undefined) return options.default as T;
    if (!(values as readonly string[]).includes(value)) throw new ConfigError(env, options.reason(value));
    return value as T;
  });
}
