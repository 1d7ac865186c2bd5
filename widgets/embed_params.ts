/**
 * The review widget's query parameters (decisions §29): `url`, `contract`, `chainId` required; `name`, `icon`,
 * `wallet` and `explorer` optional. Pure: the service reads them to render the page (or the page naming the bad
 * parameter) and the widget's script reads them again from its own address.
 */
import { getAddress, isAddress } from "viem";
import { normalizeSubjectDid } from "../domain/did/mod.ts";
import { displayTextProblem } from "../domain/display_text.ts";

/** The widget's configuration, as the parameters gave it. */
export type EmbedParams = {
  /** The app's domain, lowercase, `www.` stripped. */
  readonly domain: string;
  /** `did:web:<domain>`: what the review is about. */
  readonly subject: string;
  /** The app's contract users interact with (for proof of interaction), as given. */
  readonly contract: `0x${string}`;
  /** The chain of `contract`. */
  readonly chainId: number;
  readonly name?: string | undefined;
  /** An https URL. */
  readonly icon?: string | undefined;
  /** The user's wallet, when the host page knows it (integrated mode needs it). */
  readonly wallet?: `0x${string}` | undefined;
  /** An Etherscan-compatible explorer API (https) for proof of interaction. */
  readonly explorer?: string | undefined;
};

/** A parameter the widget cannot use: its name, what is wrong, and the value given (shown as text). */
export type EmbedParamError = { readonly param: string; readonly message: string; readonly value?: string | undefined };

/** The longest `name` shown; longer names are refused rather than cut. */
export const MAX_NAME_LENGTH = 100;
const MAX_URL_LENGTH = 2_048;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
const CHECKSUM = (param: string) => `${param}'s mixed case is not its checksum (EIP-55): check the address, or give it in lower case`;

/** Reads the parameters; the first bad one is named. */
export function parseEmbedParams(query: URLSearchParams): { ok: true; value: EmbedParams } | { ok: false; error: EmbedParamError } {
  const bad = (param: string, message: string) => ({ ok: false as const, error: { param, message, value: query.get(param) ?? undefined } });
  const url = query.get("url");
  if (url === null || url.trim() === "") return bad("url", "The app's domain (url) is required");
  const domain = domainOf(url);
  if (domain === undefined) return bad("url", "url must be the app's domain, such as example.com");
  const contract = query.get("contract");
  if (contract === null || contract === "") return bad("contract", "The app's contract address (contract) is required");
  if (!ADDRESS.test(contract)) return bad("contract", "contract must be an address: 0x and 40 hex digits");
  if (!checksumHolds(contract)) return bad("contract", CHECKSUM("contract"));
  const chainIdText = query.get("chainId");
  if (chainIdText === null || chainIdText === "") return bad("chainId", "The contract's chain id (chainId) is required");
  const chainId = Number(chainIdText);
  if (!/^[1-9][0-9]*$/.test(chainIdText) || !Number.isSafeInteger(chainId)) return bad("chainId", "chainId must be a positive whole number");
  const name = optional(query, "name");
  if (name !== undefined && (name.length > MAX_NAME_LENGTH || CONTROL.test(name) || displayTextProblem("name", name) !== undefined)) {
    return bad("name", `name must be at most ${MAX_NAME_LENGTH} characters, without control characters (bidirectional overrides and isolates included)`);
  }
  const icon = optional(query, "icon");
  if (icon !== undefined && !isHttpsUrl(icon)) return bad("icon", "icon must be an https URL");
  const wallet = optional(query, "wallet");
  if (wallet !== undefined && !ADDRESS.test(wallet)) return bad("wallet", "wallet must be an address: 0x and 40 hex digits");
  // A mixed case that is not the address's checksum is a mistyped address: the page took it, and every step after the
  // rating then refused it (the nonce, the wallet's signature, the signer check), so the review could never be written.
  if (wallet !== undefined && !checksumHolds(wallet)) return bad("wallet", CHECKSUM("wallet"));
  const explorer = optional(query, "explorer");
  if (explorer !== undefined && !isHttpsUrl(explorer)) return bad("explorer", "explorer must be an https URL");
  return {
    ok: true,
    value: {
      domain,
      subject: `did:web:${domain}`,
      contract: contract as `0x${string}`,
      chainId,
      name,
      icon: icon === undefined ? undefined : new URL(icon).href,
      // In its checksum form: the nonce route and the wallets take no other mixed case.
      wallet: wallet === undefined ? undefined : getAddress(wallet),
      explorer,
    },
  };
}

/** An address all in one case (no checksum given, EIP-55) or with its checksum. */
function checksumHolds(address: string): boolean {
  const hex = address.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase() || isAddress(address);
}

function optional(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name)?.trim();
  return value === undefined || value === "" ? undefined : value;
}

function isHttpsUrl(value: string): boolean {
  if (value.length > MAX_URL_LENGTH) return false;
  try {
    return new URL(value).protocol === "https:";
  } catch {
    return false;
  }
}

/**
 * The domain of `url`: a bare domain or a URL's host, lowercase, one leading `www.` dropped (the reference's rule),
 * no port; undefined when that is not a domain name a did:web can name (an IP address, a host with odd characters).
 */
export function domainOf(url: string): string | undefined {
  const trimmed = url.trim();
  if (trimmed.length > MAX_URL_LENGTH || CONTROL.test(trimmed) || /\s/.test(trimmed)) return undefined;
  let host: string;
  try {
    host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `https://${trimmed}`).hostname;
  } catch {
    return undefined;
  }
  const domain = host.toLowerCase().replace(/\.$/, "").replace(/^www\./, "");
  if (!domain.includes(".") && domain !== "localhost") return undefined;
  const subject = normalizeSubjectDid(`did:web:${domain}`);
  return subject.ok && subject.value === `did:web:${domain}` ? domain : undefined;
}
