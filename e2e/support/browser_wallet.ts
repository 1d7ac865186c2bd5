/**
 * The console's browser tests' wallet: an EIP-1193 provider announced through EIP-6963 inside the page, whose calls
 * are answered in the test process with a local key (accounts, chain id, personal_sign, eth_signTypedData_v4).
 */
import type { Page } from "playwright-core";
import type { Hex, LocalAccount } from "viem";

/** The provider inside the page: it forwards every request to `window.__atsTestWallet`. */
export const INJECT_WALLET = `(() => {
  const provider = {
    async request({ method, params }) {
      const answer = JSON.parse(await window.__atsTestWallet(method, JSON.stringify(params ?? [])));
      if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
      return answer.result;
    },
  };
  const info = Object.freeze({ uuid: "5f1c9d3e-0000-4000-8000-000000000001", name: "Test Wallet", icon: "data:,", rdns: "test.ats.wallet" });
  const announce = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }));
  window.addEventListener("eip6963:requestProvider", announce);
  announce();
})();`;

/**
 * Answers the page's EIP-1193 calls with `user`'s key on the devnet (chain 31337), as JSON-RPC result or error.
 * `onCall` sees every method asked for, in order. A signature asked of another account, or typed data whose
 * `EIP712Domain` is not the four fields wallets derive (name, version, chainId, verifyingContract), is an error.
 */
export function walletAnswers(user: LocalAccount, options: { onCall?: (method: string) => void } = {}): (method: string, paramsJson: string) => Promise<string> {
  const mustBeUser = (address: string) => {
    if (address.toLowerCase() !== user.address.toLowerCase()) throw new Error("unknown account");
  };
  return async (method, paramsJson) => {
    options.onCall?.(method);
    const params = JSON.parse(paramsJson) as unknown[];
    try {
      switch (method) {
        case "eth_requestAccounts":
        case "eth_accounts":
          return JSON.stringify({ result: [user.address] });
        case "eth_chainId":
          return JSON.stringify({ result: "0x7a69" });
        case "personal_sign": {
          const [data, address] = params as [Hex, string];
          mustBeUser(address);
          return JSON.stringify({ result: await user.signMessage!({ message: { raw: data } }) });
        }
        case "eth_signTypedData_v4": {
          const [address, json] = params as [string, string];
          mustBeUser(address);
          const typed = JSON.parse(json) as {
            types: Record<string, { name: string; type: string }[]>;
            domain: Record<string, unknown>;
            primaryType: string;
            message: Record<string, unknown>;
          };
          const { EIP712Domain, ...types } = typed.types;
          if (EIP712Domain?.map((f) => f.name).join() !== "name,version,chainId,verifyingContract") throw new Error("unexpected EIP712Domain");
          // JSON carries big integers as strings; the signer wants them as numbers.
          const message = { ...typed.message };
          for (const field of types[typed.primaryType]!) if (/^u?int/.test(field.type)) message[field.name] = BigInt(message[field.name] as string);
          return JSON.stringify({ result: await user.signTypedData!({ domain: typed.domain as never, types, primaryType: typed.primaryType, message }) });
        }
        default:
          return JSON.stringify({ error: { code: 4200, message: `Unsupported method ${method}` } });
      }
    } catch (error) {
      return JSON.stringify({ error: { code: -32603, message: error instanceof Error ? error.message : String(error) } });
    }
  };
}

/** Puts the test wallet in every document `page` opens from now on. */
export async function injectWallet(page: Page, answer: (method: string, paramsJson: string) => Promise<string>): Promise<void> {
  await page.exposeFunction("__atsTestWallet", answer);
  await page.addInitScript(INJECT_WALLET);
}
