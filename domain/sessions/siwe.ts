/**
 * Sign-In with Ethereum (EIP-4361): builds the exact message text a wallet signs, parses it back,
 * and verifies a personal_sign signature over it. Pure: times come in as ISO strings.
 */
import type { Hex } from "viem";
import { getAddress, isAddress, recoverMessageAddress } from "viem/utils";
import { fail, ok, type Result } from "../result.ts";

/** The statement every challenge of the service carries. */
export const SIWE_STATEMENT = "Sign in to Attestation Trust Services";

/** The fields of an EIP-4361 message. */
export type SiweMessage = {
  readonly scheme?: string | undefined;
  /** RFC 3986 authority (host and optional port) requesting the sign-in. */
  readonly domain: string;
  /** EIP-55 address. */
  readonly address: string;
  readonly statement?: string | undefined;
  readonly uri: string;
  readonly version: "1";
  readonly chainId: number;
  readonly nonce: string;
  /** RFC 3339 timestamps. */
  readonly issuedAt: string;
  readonly expirationTime?: string | undefined;
  readonly notBefore?: string | undefined;
  readonly requestId?: string | undefined;
  readonly resources?: readonly string[] | undefined;
};

const HEADER_SUFFIX = " wants you to sign in with your Ethereum account:";
const NONCE = /^[A-Za-z0-9]{8,}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
const AUTHORITY = /^[^\s/?#@]+$/;
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/;

const invalid = (message: string) => fail("INVALID_INPUT" as const, message);

/** Checks the fields of a message; the first problem is reported. */
export function validateSiweMessage(message: SiweMessage): Result<SiweMessage, "INVALID_INPUT"> {
  if (message.scheme !== undefined && !SCHEME.test(message.scheme)) return invalid("Invalid SIWE scheme");
  if (!AUTHORITY.test(message.domain)) return invalid("Invalid SIWE domain");
  if (!isAddress(message.address, { strict: false }) || getAddress(message.address) !== message.address) {
    return invalid("SIWE address must be an EIP-55 checksummed address");
  }
  if (message.statement !== undefined && /\n/.test(message.statement)) return invalid("SIWE statement must be one line");
  if (!URI.test(message.uri)) return invalid("Invalid SIWE URI");
  if (message.version !== "1") return invalid("SIWE version must be 1");
  if (!Number.isSafeInteger(message.chainId) || message.chainId <= 0) return invalid("Invalid SIWE chain ID");
  if (!NONCE.test(message.nonce)) return invalid("SIWE nonce must be at least 8 alphanumeric characters");
  for (const [name, value] of [
    ["Issued At", message.issuedAt],
    ["Expiration Time", message.expirationTime],
    ["Not Before", message.notBefore],
  ] as const) {
    if (value !== undefined && (!RFC3339.test(value) || Number.isNaN(Date.parse(value)))) {
      return invalid(`Invalid SIWE ${name}`);
    }
  }
  if (message.requestId !== undefined && /\n/.test(message.requestId)) return invalid("Invalid SIWE request ID");
  for (const resource of message.resources ?? []) if (!URI.test(resource)) return invalid("Invalid SIWE resource");
  return ok(message);
}

/** Builds the EIP-4361 text of a message; throws a TypeError on invalid fields (a bug of the caller). */
export function buildSiweMessage(message: SiweMessage): string {
  const checked = validateSiweMessage(message);
  if (!checked.ok) throw new TypeError(checked.message);
  const prefix = message.scheme === undefined ? "" : `${message.scheme}://`;
  const lines = [`${prefix}${message.domain}${HEADER_SUFFIX}`, message.address, ""];
  if (message.statement !== undefined) lines.push(message.statement, "");
  else lines.push("");
  lines.push(
    `URI: ${message.uri}`,
    `Version: ${message.version}`,
    `Chain ID: ${message.chainId}`,
    `Nonce: ${message.nonce}`,
    `Issued At: ${message.issuedAt}`,
  );
  if (message.expirationTime !== undefined) lines.push(`Expiration Time: ${message.expirationTime}`);
  if (message.notBefore !== undefined) lines.push(`Not Before: ${message.notBefore}`);
  if (message.requestId !== undefined) lines.push(`Request ID: ${message.requestId}`);
  if (message.resources !== undefined && message.resources.length > 0) {
    lines.push("Resources:", ...message.resources.map((r) => `- ${r}`));
  }
  return lines.join("\n");
}

/** Parses EIP-4361 text strictly (field order and spelling as in the standard). */
export function parseSiweMessage(text: string): Result<SiweMessage, "INVALID_INPUT"> {
  if (typeof text !== "string") return invalid("SIWE message must be a string");
  const lines = text.split("\n");
  let i = 0;
  const next = () => lines[i++];

  const header = next() ?? "";
  if (!header.endsWith(HEADER_SUFFIX)) return invalid("Not a SIWE message");
  let origin = header.slice(0, -HEADER_SUFFIX.length);
  let scheme: string | undefined;
  const schemeEnd = origin.indexOf("://");
  if (schemeEnd !== -1) {
    scheme = origin.slice(0, schemeEnd);
    origin = origin.slice(schemeEnd + 3);
  }
  const address = next() ?? "";
  if (next() !== "") return invalid("Malformed SIWE message: expected an empty line after the address");
  let statement: string | undefined;
  const afterAddress = next();
  if (afterAddress === undefined) return invalid("Malformed SIWE message: truncated");
  if (afterAddress !== "") {
    statement = afterAddress;
    if (next() !== "") return invalid("Malformed SIWE message: expected an empty line after the statement");
  }

  const field = (name: string, required: boolean): Result<string | undefined, "INVALID_INPUT"> => {
    const line = lines[i];
    if (line !== undefined && line.startsWith(`${name}: `)) {
      i++;
      return ok(line.slice(name.length + 2));
    }
    return required ? invalid(`Malformed SIWE message: missing ${name}`) : ok(undefined);
  };
  const uri = field("URI", true);
  if (!uri.ok) return uri;
  const version = field("Version", true);
  if (!version.ok) return version;
  const chainId = field("Chain ID", true);
  if (!chainId.ok) return chainId;
  const nonce = field("Nonce", true);
  if (!nonce.ok) return nonce;
  const issuedAt = field("Issued At", true);
  if (!issuedAt.ok) return issuedAt;
  const expirationTime = field("Expiration Time", false);
  if (!expirationTime.ok) return expirationTime;
  const notBefore = field("Not Before", false);
  if (!notBefore.ok) return notBefore;
  const requestId = field("Request ID", false);
  if (!requestId.ok) return requestId;
  let resources: string[] | undefined;
  if (lines[i] === "Resources:") {
    i++;
    resources = [];
    while (lines[i]?.startsWith("- ")) resources.push(lines[i++]!.slice(2));
  }
  if (i !== lines.length) return invalid("Malformed SIWE message: unexpected trailing lines");
  if (version.value !== "1") return invalid("SIWE version must be 1");
  if (!/^[0-9]+$/.test(chainId.value ?? "")) return invalid("Invalid SIWE chain ID");

  return validateSiweMessage({
    scheme,
    domain: origin,
    address,
    statement,
    uri: uri.value!,
    version: "1",
    chainId: Number(chainId.value),
    nonce: nonce.value!,
    issuedAt: issuedAt.value!,
    expirationTime: expirationTime.value,
    notBefore: notBefore.value,
    requestId: requestId.value,
    resources,
  });
}

/** Tells whether `signature` is a personal_sign of `message` by `address` (EOA wallets). */
export async function verifySiweSignature(message: string, signature: string, address: string): Promise<boolean> {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return false;
  try {
    const signer = await recoverMessageAddress({ message, signature: signature as Hex });
    return signer.toLowerCase() === address.toLowerCase();
  } catch {
    return false;
  }
}
