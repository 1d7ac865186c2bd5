import { describe, expect, test } from "bun:test";
import { recoverMessageAddress, recoverTypedDataAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { buildAttestTypedData } from "../domain/delegation/mod.ts";
import { isAtsClientError } from "./errors.ts";
import { type AnnouncedWallet, type Eip1193Provider, requestWalletAddress, typedDataJson, walletSigner, watchWallets } from "./wallet.ts";

const account = privateKeyToAccount(generatePrivateKey());

/** An EIP-1193 provider over a viem account, as a wallet extension would answer. */
function provider(options: { refuse?: boolean } = {}): Eip1193Provider & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async request({ method, params = [] }) {
      calls.push(method);
      if (options.refuse) throw Object.assign(new Error("User rejected the request."), { code: 4001 });
      if (method === "eth_requestAccounts") return [account.address.toLowerCase()];
      if (method === "personal_sign") return await account.signMessage({ message: { raw: params[0] as `0x${string}` } });
      if (method === "eth_signTypedData_v4") {
        const typed = JSON.parse(params[1] as string);
        const { EIP712Domain: _, ...types } = typed.types;
        for (const field of types.Attest) if (/^u?int/.test(field.type)) typed.message[field.name] = BigInt(typed.message[field.name]);
        return await account.signTypedData({ domain: typed.domain, types, primaryType: typed.primaryType, message: typed.message });
      }
      throw Object.assign(new Error("unsupported"), { code: 4200 });
    },
  };
}

describe("watchWallets()", () => {
  test("asks wallets to announce themselves and lists each once, ignoring malformed announcements", () => {
    const target = new EventTarget();
    const seen: (readonly AnnouncedWallet[])[] = [];
    const p = provider();
    const announce = (detail: unknown) => target.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail }));
    let asked = 0;
    target.addEventListener("eip6963:requestProvider", () => {
      asked++;
      announce({ info: { uuid: "a", name: "Wallet A", icon: "data:,", rdns: "a.example" }, provider: p });
    });
    const stop = watchWallets(target, (wallets) => seen.push(wallets));
    announce({ info: { uuid: "a", name: "Wallet A", icon: "", rdns: "" }, provider: p });
    announce({ info: { name: "no uuid" }, provider: p });
    announce({ info: { uuid: "b", name: "Wallet B", icon: "", rdns: "b.example" }, provider: {} });
    announce({ info: { uuid: "c", name: "Wallet C", icon: "", rdns: "c.example" }, provider: p });
    stop();
    announce({ info: { uuid: "d", name: "Wallet D", icon: "", rdns: "" }, provider: p });
    expect(asked).toBe(1);
    expect(seen.map((wallets) => wallets.map((w) => w.info.name))).toEqual([["Wallet A"], ["Wallet A", "Wallet C"]]);
  });
});

describe("walletSigner()", () => {
  test("signs sign-in messages with personal_sign and attestations with eth_signTypedData_v4", async () => {
    const p = provider();
    const address = await requestWalletAddress(p);
    expect(address).toBe(account.address);
    const signer = walletSigner(p, address);
    const message = "ats.example wants you to sign in\n\nNonce: 1 ü";
    expect(await recoverMessageAddress({ message, signature: await signer.signMessage(message) as `0x${string}` })).toBe(account.address);
    const typedData = buildAttestTypedData({ chainId: 31337, easAddress: "0x00000000000000000000000000000000000000e5" }, {
      attester: account.address,
      schema: `0x${"1".repeat(64)}`,
      recipient: `0x${"2".repeat(40)}`,
      expirationTime: 0n,
      revocable: true,
      refUID: `0x${"0".repeat(64)}`,
      data: "0x1234",
      value: 0n,
      nonce: 7n,
      deadline: 2n ** 63n,
    });
    const signature = await signer.signTypedData(typedData);
    expect(await recoverTypedDataAddress({ ...typedData, signature: signature as `0x${string}` })).toBe(account.address);
    expect(p.calls).toEqual(["eth_requestAccounts", "personal_sign", "eth_signTypedData_v4"]);
    expect(JSON.parse(typedDataJson(typedData)).types.EIP712Domain.map((f: { name: string }) => f.name)).toEqual(["name", "version", "chainId", "verifyingContract"]);
    expect(JSON.parse(typedDataJson(typedData)).message.deadline).toBe("9223372036854775808");
  });

  test("a refusal is USER_REJECTED, anything else WALLET_ERROR", async () => {
    const refused = await requestWalletAddress(provider({ refuse: true })).catch((error) => error);
    expect(isAtsClientError(refused, "USER_REJECTED")).toBe(true);
    const signer = walletSigner({ request: () => Promise.resolve(42) }, account.address);
    expect(isAtsClientError(await signer.signMessage("x").catch((e) => e), "WALLET_ERROR")).toBe(true);
  });
});
