/** The review widget and proof of interaction (decisions §29): the `widgets` section. */
import { Type } from "@sinclair/typebox";
import { browserOrigin } from "../../domain/identity/mod.ts";
import { ConfigError, int, list, readSection, type ReadContext } from "./_declare.ts";

/** The `widgets` section's variables. */
export const WidgetsSection = Type.Object({
  widgetOrigins: list("WIDGET_ORIGINS", { default: [], description: "other origins serving this service's widgets" }),
  explorerApiUrls: list("EXPLORER_API_URLS", { default: [], description: "<chainId>=<url> pairs: each chain's Etherscan-compatible explorer API" }),
  proofReadsPerMinute: int("PROOF_READ_RATE_PER_MINUTE", {
    default: 60,
    minimum: 1,
    maximum: 1_000_000,
    description: "public /v1/interactions and /v1/tx-proofs lookups that ask an explorer or a chain (a kept answer is none) per client address a minute",
  }),
}, { title: "widgets" });

/** Where the widgets are served and each chain's explorer. */
export type WidgetsConfig = {
  /** `WIDGET_ORIGINS`: other origins serving this service's widgets, published after its own (decisions §29). */
  readonly widgetOrigins: readonly string[];
  /** `EXPLORER_API_URLS`: the Etherscan-compatible explorer API of each chain id, for proof of interaction (decisions §29). */
  readonly explorerApiUrls: ReadonlyMap<number, string>;
  /** `PROOF_READ_RATE_PER_MINUTE`: proof lookups that read an explorer or a chain, per client address a minute. */
  readonly proofReadsPerMinute: number;
};

/** Reads the `widgets` section. */
export function readWidgets(ctx: Omit<ReadContext, "values">): WidgetsConfig {
  const v = readSection(WidgetsSection, ctx);
  return { widgetOrigins: widgetOrigins(v.widgetOrigins), explorerApiUrls: explorerApiUrls(v.explorerApiUrls), proofReadsPerMinute: v.proofReadsPerMinute };
}

/**
 * `WIDGET_ORIGINS`: each an http(s) origin, published as the browser writes `event.origin` (`https://cdn.example`:
 * lower case, no default port, no trailing slash), since the reference's bridge compares origins as strings. A
 * trailing slash is dropped; a path, query, fragment, user or anything not a URL (`*`) stops the start. Before, each
 * was published as written, so `https://cdn.example/` never matched a message's origin in a host on that bridge.
 */
function widgetOrigins(values: readonly string[]): string[] {
  return values.map((value) => {
    const origin = browserOrigin(value);
    if (origin === undefined) throw new ConfigError("WIDGET_ORIGINS", `expected origins such as https://cdn.example (scheme, host and port only), got "${value}"`);
    return origin;
  });
}

/** `EXPLORER_API_URLS`: `<chainId>=<url>` pairs, comma-separated; an http or https URL each, one per chain. */
function explorerApiUrls(pairs: readonly string[]): ReadonlyMap<number, string> {
  const urls = new Map<number, string>();
  for (const pair of pairs) {
    const match = /^([1-9][0-9]{0,15})=(.+)$/.exec(pair);
    let url: URL | undefined;
    try {
      url = match === null ? undefined : new URL(match[2]!);
    } catch {
      url = undefined;
    }
    if (match === null || url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
      throw new ConfigError("EXPLORER_API_URLS", "expected <chainId>=<http(s) URL> pairs, comma-separated");
    }
    if (urls.has(Number(match[1]))) throw new ConfigError("EXPLORER_API_URLS", `chain ${match[1]} is named twice`);
    urls.set(Number(match[1]), url.href);
  }
  return urls;
}
