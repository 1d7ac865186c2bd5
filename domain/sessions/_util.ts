/** Small helpers sign-in's files share: field checks, the wallet of a request, token hashing, client keys. */
import { sha256, stringToBytes } from "viem/utils";
import type { Random } from "../../ports/random.ts";
import { normalizeDid, parseDidPkh } from "../did/mod.ts";
import { classifyAddress } from "../discovery/mod.ts";
import { fail, ok, type Result } from "../result.ts";

export const MAX_FIELD = 2_048;
export const str = (value: unknown): value is string => typeof value === "string" && value.length > 0 && value.length <= MAX_FIELD;
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
/** `bytes` random bytes as lowercase hex. */
export const randomHex = (deps: { readonly random: Random }, bytes: number) => hex(deps.random.bytes(bytes));

/** SHA-256 of a session token, lowercase hex without 0x: the only form that is stored. */
export function hashSessionToken(token: string): string {
  return sha256(stringToBytes(token)).slice(2);
}

/** Compares two strings without an early exit on the first difference. */
export function constantTimeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/**
 * The key a client's challenge rate is counted under: an IPv4 address (IPv4-mapped IPv6 included) as
 * itself, an IPv6 address by its /64 (one subscriber usually holds a whole /64, so per-address counting
 * would not bound it), anything else `unknown`.
 */
export function clientKeyOf(address: string | undefined): string {
  const parsed = address === undefined ? undefined : classifyAddress(address);
  if (parsed === undefined) return "unknown";
  if (parsed.kind === "ipv4") return parsed.address;
  const groups = ipv6Groups(parsed.address);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`;
}

/**
 * The wider network of an address key ({@link clientKeyOf}): for an IPv6 /64 (`2001:db8:1:2::/64`) its /48
 * (`2001:db8:1::/48`; the groups are written without leading zeros, so one /48 has one key); undefined for an IPv4
 * address or `unknown`.
 */
export function networkKeyOf(clientKey: string): string | undefined {
  if (!clientKey.endsWith("::/64")) return undefined;
  const groups = clientKey.slice(0, -"::/64".length).split(":");
  return groups.length === 4 ? `${groups.slice(0, 3).join(":")}::/48` : undefined;
}

/** The eight 16-bit groups of a canonical IPv6 address (as `classifyAddress` writes it). */
function ipv6Groups(address: string): number[] {
  const part = (text: string) =>
    text === "" ? [] : text.split(":").flatMap((g) => {
      if (!g.includes(".")) return [parseInt(g, 16)];
      const [a, b, c, d] = g.split(".").map(Number) as [number, number, number, number];
      return [(a << 8) | b, (c << 8) | d];
    });
  const gap = address.indexOf("::");
  if (gap === -1) return part(address);
  const head = part(address.slice(0, gap));
  const tail = part(address.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** Reads the wallet of a challenge request: a did:pkh (eip155) or an address with `chainId`. */
export function walletOf(body: Record<string, unknown>): Result<{ address: string; chainId: number }, "INVALID_INPUT" | "INVALID_DID"> {
  const chainId = body.chainId;
  if (chainId !== undefined && (typeof chainId !== "number" || !Number.isSafeInteger(chainId) || chainId <= 0)) {
    return fail("INVALID_INPUT", "chainId must be a positive integer");
  }
  if (body.walletDid !== undefined) {
    if (!str(body.walletDid)) return fail("INVALID_INPUT", "walletDid must be a string");
    const normalized = normalizeDid(body.walletDid);
    const parts = normalized.ok ? parseDidPkh(normalized.value) : undefined;
    if (
      parts === undefined || !parts.ok || parts.value.namespace !== "eip155" ||
      !/^[1-9][0-9]{0,15}$/.test(parts.value.chainId) || !/^0x[0-9a-f]{40}$/.test(parts.value.address)
    ) {
      return fail("INVALID_DID", "walletDid must be a did:pkh:eip155 DID");
    }
    const didChain = Number(parts.value.chainId);
    if (chainId !== undefined && didChain !== chainId) return fail("INVALID_DID", "walletDid chain does not match chainId");
    return ok({ address: parts.value.address, chainId: didChain });
  }
  if (!str(body.address) || !/^0x[0-9a-fA-F]{40}$/.test(body.address)) {
    return fail("INVALID_INPUT", "walletDid (or address) is required");
  }
  if (chainId === undefined) return fail("INVALID_INPUT", "chainId is required with address");
  return ok({ address: body.address, chainId });
}
