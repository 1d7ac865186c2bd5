/**
 * A counterfactual wallet's factory call (ERC-6492, issue 23) against a hand-written node: what `deployWallet` answers
 * when nothing was sent, whatever the reads after it do. The deployments a real Anvil shows are in
 * e2e/contract_wallets_test.ts.
 */
import { describe, expect, test } from "bun:test";
import type { HexString, WalletDeploymentOutcome } from "../../ports/eas.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import { createViemEas } from "./viem_eas.ts";

type Call = { readonly id: number; readonly method: string; readonly params: readonly unknown[] };
type Answer = { readonly result: unknown } | { readonly error: { readonly code: number; readonly message: string } };

/** A node answering by method; `eth_getCode` answers "0x" once, then fails (the read after the send). */
function fakeNode(answers: Record<string, (call: Call) => Answer>) {
  const methods: string[] = [];
  let codeReads = 0;
  const defaults: Record<string, (call: Call) => Answer> = {
    eth_chainId: () => ({ result: "0x7a69" }),
    eth_gasPrice: () => ({ result: "0x3b9aca00" }),
    eth_maxPriorityFeePerGas: () => ({ result: "0x1" }),
    eth_getTransactionCount: () => ({ result: "0x7" }),
    eth_estimateGas: () => ({ result: "0x186a0" }),
    eth_getTransactionByHash: () => ({ result: null }),
    eth_getCode: () => (++codeReads === 1 ? { result: "0x" } : { error: { code: -32000, message: "header not found" } }),
  };
  const fetchFn = (async (_url: unknown, init?: { body?: unknown }) => {
    const body = JSON.parse(String(init?.body)) as Call | Call[];
    const answer = (call: Call) => {
      methods.push(call.method);
      const answerOf = answers[call.method] ?? defaults[call.method];
      return { jsonrpc: "2.0", id: call.id, ...(answerOf === undefined ? { error: { code: -32601, message: `unexpected ${call.method}` } } : answerOf(call)) };
    };
    return Response.json(Array.isArray(body) ? body.map(answer) : answer(body));
  }) as unknown as typeof fetch;
  return { fetchFn, methods };
}

const ATTESTER = "0x00000000000000000000000000000000000a11e7" as HexString;
const DEPLOYMENT = { factory: "0x000000000000000000000000000000000000fac7" as HexString, factoryCalldata: "0xabcdef01" as HexString };

function deployWith(node: ReturnType<typeof fakeNode>, walletNonces?: WalletNonces): Promise<WalletDeploymentOutcome> {
  const eas = createViemEas({
    rpcUrl: "http://node.invalid",
    chainId: 31337,
    easAddress: "0x4200000000000000000000000000000000000021",
    delegatePrivateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    fetchFn: node.fetchFn,
    sendSync: "off",
    walletNonces,
  });
  return eas.delegate!.deployWallet!(ATTESTER, DEPLOYMENT, () => Promise.resolve(true));
}

describe("deployWallet(): a factory call that sent nothing", () => {
  test("refused by the node: failed (nothing sent), even when the attester's code cannot be read after it", async () => {
    // The code read after the send failed and the outcome was rpc-error: the charge, the token and the wallet's
    // record kept, as for a call that may have left.
    const node = fakeNode({ eth_sendRawTransaction: () => ({ error: { code: -32000, message: "oversized data" } }) });
    expect(await deployWith(node)).toBe("failed");
    expect(node.methods.filter((m) => m === "eth_sendRawTransaction")).toHaveLength(1);
  });

  test("the delegate wallet's shared nonce not taken (the storage failed): nonce-unavailable, never failed nor rpc-error", async () => {
    const node = fakeNode({});
    const walletNonces: WalletNonces = { withLock: () => Promise.reject(new Error("connection terminated")) };
    expect(await deployWith(node, walletNonces)).toBe("nonce-unavailable");
    expect(node.methods.filter((m) => m.startsWith("eth_send"))).toEqual([]);
  });
});
