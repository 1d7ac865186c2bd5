/**
 * Injected wallets in a browser: EIP-6963 discovery (each wallet announces itself on the window) and the
 * EIP-1193 calls the console needs (`eth_requestAccounts`, `personal_sign`, `eth_signTypedData_v4`). Any
 * object with a `request` method works, so a Bun program can pass its own provider.
 */
import { getAddress, stringToHex } from "viem/utils";
import { DOMAIN_FIELDS } from "./_eip712_domain.ts";
import { AtsClientError } from "./errors.ts";

/** The one method an EIP-1193 provider exposes. */
export type Eip1193Provider = {
  readonly request: (args: { method: string; params?: readonly unknown[] | undefined }) => Promise<unknown>;
};

/** What an EIP-6963 wallet says about itself. */
export type WalletInfo = { readonly uuid: string; readonly name: string; readonly icon: string; readonly rdns: string };

/** One announced wallet. */
export type AnnouncedWallet = { readonly info: WalletInfo; readonly provider: Eip1193Provider };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

function readAnnouncement(detail: unknown): AnnouncedWallet | undefined {
  if (!isRecord(detail) || !isRecord(detail.info) || !isRecord(detail.provider)) return undefined;
  const { uuid, name, icon, rdns } = detail.info;
  if (typeof uuid !== "string" || typeof name !== "string" || typeof detail.provider.request !== "function") return undefined;
  return {
    info: { uuid, name, icon: typeof icon === "string" ? icon : "", rdns: typeof rdns === "string" ? rdns : "" },
    provider: detail.provider as unknown as Eip1193Provider,
  };
}

/**
 * Listens for EIP-6963 announcements on `target` (the window) and asks wallets to announce themselves.
 * `onChange` gets every wallet seen so far (one per uuid) after each new one. Returns the function that stops listening.
 */
export function watchWallets(target: EventTarget, onChange: (wallets: readonly AnnouncedWallet[]) => void): () => void {
  const wallets = new Map<string, AnnouncedWallet>();
  const listener = (event: Event) => {
    const wallet = readAnnouncement((event as CustomEvent).detail);
    if (wallet === undefined || wallets.has(wallet.info.uuid)) return;
    wallets.set(wallet.info.uuid, wallet);
    onChange([...wallets.values()]);
  };
  target.addEventListener("eip6963:announceProvider", listener);
  target.dispatchEvent(new Event("eip6963:requestProvider"));
  return () => target.removeEventListener("eip6963:announceProvider", listener);
}

/** Why a provider call failed: the wallet's EIP-1193 error code when it gave one (4001: the user said no). */
function walletError(cause: unknown, doing: string): AtsClientError {
  const code = isRecord(cause) && typeof cause.code === "number" ? cause.code : undefined;
  const message = code === 4001 ? `The wallet refused to ${doing}` : `The wallet could not ${doing}`;
  return new AtsClientError(code === 4001 ? "USER_REJECTED" : "WALLET_ERROR", message, { cause });
}

/** Asks the wallet for its accounts (`eth_requestAccounts`); the first, checksummed. */
export async function requestWalletAddress(provider: Eip1193Provider): Promise<`0x${string}`> {
  let accounts: unknown;
  try {
    accounts = await provider.request({ method: "eth_requestAccounts" });
  } catch (cause) {
    throw walletError(cause, "share an account");
  }
  const first = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof first !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(first)) {
    throw new AtsClientError("WALLET_ERROR", "The wallet shared no account");
  }
  return getAddress(first);
}

/** Typed data as `signTypedData` takes it (big integers allowed). */
export type TypedDataInput = {
  readonly domain: Readonly<Record<string, unknown>>;
  readonly types: Readonly<Record<string, readonly { readonly name: string; readonly type: string }[]>>;
  readonly primaryType: string;
  readonly message: Readonly<Record<string, unknown>>;
};

/**
 * The JSON `eth_signTypedData_v4` takes: `EIP712Domain` listed among the types (only the domain fields
 * present, in the standard order), big integers as base-10 strings.
 */
export function typedDataJson(typedData: TypedDataInput): string {
  const EIP712Domain = DOMAIN_FIELDS.filter((field) => typedData.domain[field.name] !== undefined);
  return JSON.stringify(
    { types: { EIP712Domain, ...typedData.types }, domain: typedData.domain, primaryType: typedData.primaryType, message: typedData.message },
    (_key, value) => (typeof value === "bigint" ? value.toString() : value),
  );
}

/** Signs with an injected wallet for one address. */
export type WalletSigner = {
  readonly address: `0x${string}`;
  /** `personal_sign` of the UTF-8 message (sent hex-encoded, as wallets expect). */
  readonly signMessage: (message: string) => Promise<string>;
  /** `eth_signTypedData_v4`. */
  readonly signTypedData: (typedData: TypedDataInput) => Promise<string>;
};

/** Wraps a provider and one of its addresses as a signer for sign-in and delegated attestations. */
export function walletSigner(provider: Eip1193Provider, address: `0x${string}`): WalletSigner {
  const signature = (value: unknown) => {
    if (typeof value !== "string" || !/^0x[0-9a-fA-F]+$/.test(value)) throw new AtsClientError("WALLET_ERROR", "The wallet returned no signature");
    return value;
  };
  return {
    address,
    async signMessage(message) {
      try {
        return signature(await provider.request({ method: "personal_sign", params: [stringToHex(message), address] }));
      } catch (cause) {
        throw cause instanceof AtsClientError ? cause : walletError(cause, "sign the message");
      }
    },
    async signTypedData(typedData) {
      try {
        return signature(await provider.request({ method: "eth_signTypedData_v4", params: [address, typedDataJson(typedData)] }));
      } catch (cause) {
        throw cause instanceof AtsClientError ? cause : walletError(cause, "sign the attestation");
      }
    },
  };
}
