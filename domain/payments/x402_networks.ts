/** x402 network names (v1 names and CAIP-2 ids) and the did:web of a resource URL. */
import { normalizeDomain } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";

/** v1 network names and their CAIP-2 ids (EVM); the names the official package knows. */
const V1_EVM_CHAIN_IDS: Readonly<Record<string, number>> = {
  ethereum: 1,
  sepolia: 11155111,
  abstract: 2741,
  "abstract-testnet": 11124,
  "base-sepolia": 84532,
  base: 8453,
  "avalanche-fuji": 43113,
  avalanche: 43114,
  iotex: 4689,
  sei: 1329,
  "sei-testnet": 1328,
  polygon: 137,
  "polygon-amoy": 80002,
  peaq: 3338,
  story: 1514,
  educhain: 41923,
  "skale-base-sepolia": 324705682,
};
const V1_SOLANA: Readonly<Record<string, string>> = {
  solana: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  "solana-devnet": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  "solana-testnet": "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
};

/** A v1 network name as CAIP-2; a CAIP-2 id or an unknown name is returned unchanged. */
export function toCaip2Network(network: string): string {
  if (network.includes(":")) return network;
  const key = network.toLowerCase();
  const chainId = V1_EVM_CHAIN_IDS[key];
  if (chainId !== undefined) return `eip155:${chainId}`;
  return V1_SOLANA[key] ?? network;
}

/** A CAIP-2 id as its v1 name when there is one, for v1 `accepts[]`; otherwise unchanged. */
export function toV1Network(network: string): string {
  for (const [name, id] of Object.entries(V1_EVM_CHAIN_IDS)) if (`eip155:${id}` === network) return name;
  for (const [name, id] of Object.entries(V1_SOLANA)) if (id === network) return name;
  return network;
}

const CAIP2 = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/;

/** Tells whether a network id is CAIP-2. */
export function isCaip2(network: unknown): network is string {
  return typeof network === "string" && CAIP2.test(network);
}

/**
 * The did:web of the service a resource URL belongs to: the URL's host, lowercased, without a trailing
 * dot or a leading `www.`, IDNA as the URL parser applies it, and a non-default port kept the W3C way
 * (`did:web:localhost%3A4021`), so the subject matches the `did:web` kid and did.json location of the
 * same server. Path, query and fragment never count.
 */
export function resourceUrlToDidWeb(resourceUrl: string): Result<string, "INVALID_INPUT"> {
  let url: URL;
  try {
    url = new URL(resourceUrl);
  } catch {
    return fail("INVALID_INPUT", "resourceUrl is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return fail("INVALID_INPUT", "resourceUrl must be http(s)");
  const host = normalizeDomain(url.hostname);
  if (host === "" || host.startsWith("[")) return fail("INVALID_INPUT", "resourceUrl has no domain name");
  return ok(url.port === "" ? `did:web:${host}` : `did:web:${host}%3A${url.port}`);
}

/** The canonical form of a resource URL that offers and receipts sign: origin plus path, no query or fragment. */
export function canonicalResourceUrl(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return undefined;
  }
}
