import { describe, expect, test } from "bun:test";
import { ConfigError, defaultChain, readConfig } from "../config.ts";
import { checkAnchoredChains, StartupError } from "../foundation.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";

const ANCHORS = { TRUST_ANCHORS_PATH: "anchors.json" };
/** readConfig with CHAINS_FILE's text given (no file read). */
const withFile = (text: string, env: Record<string, string> = {}) =>
  readConfig({ CHAINS_FILE: "chains.json", ...ANCHORS, ...env }, { readFile: () => text });
const chains = [
  { caip2: "eip155:66238", rpcUrl: "https://testnet.example/rpc", role: "attestations", confirmations: 3 },
  { caip2: "eip155:6623", rpcUrl: "https://mainnet.example/rpc", wsUrl: "wss://mainnet.example/ws", startBlock: 100, role: "attestations" },
  { caip2: "eip155:8453", rpcUrl: "https://base.example/rpc", role: "proofs" },
];

describe("the chains section (decisions §30)", () => {
  test("without CHAINS_FILE: the one chain of RPC_URL (its id read at start), or the devnet's one or two", () => {
    const one = readConfig({ RPC_URL: "https://node.example", RPC_WS_URL: "wss://node.example", START_BLOCK: "7", ...ANCHORS }).chains;
    expect(one.list).toEqual([{ caip2: undefined, chainId: undefined, rpcUrl: "https://node.example", wsUrl: "wss://node.example", startBlock: 7n, confirmations: undefined, role: "attestations" }]);
    expect(defaultChain(one).rpcUrl).toBe("https://node.example");
    // DEFAULT_CHAIN beside RPC_URL names the chain meant (checked against the node's at start); before, it was ignored.
    expect(one.rpcUrlChainId).toBeUndefined();
    expect(readConfig({ RPC_URL: "https://node.example", DEFAULT_CHAIN: "eip155:8453", ...ANCHORS }).chains.rpcUrlChainId).toBe(8453);
    expect(readConfig({ RPC_URL: "https://node.example", DEFAULT_CHAIN: "8453", ...ANCHORS }).chains.rpcUrlChainId).toBe(8453);
    expect(() => readConfig({ RPC_URL: "https://node.example", DEFAULT_CHAIN: "base", ...ANCHORS })).toThrow(/^DEFAULT_CHAIN: base is not a chain id/);
    const devnet = readConfig({ DEVNET_CHAINS: "2" }).chains;
    expect(devnet.list.map((c) => c.caip2)).toEqual(["eip155:31337", "eip155:31338"]);
    expect(defaultChain(devnet).chainId).toBe(31337);
    expect(defaultChain(readConfig({ DEVNET_CHAINS: "2", DEFAULT_CHAIN: "31338" }).chains).chainId).toBe(31338);
    expect(() => readConfig({ DEVNET_CHAINS: "3" })).toThrow(/^DEVNET_CHAINS: /);
  });

  test("CHAINS_FILE: each chain with its role; the first attestation chain is the default unless DEFAULT_CHAIN names another", () => {
    const read = withFile(JSON.stringify(chains)).chains;
    expect(read.list.map((c) => [c.caip2, c.chainId, c.role])).toEqual([["eip155:66238", 66238, "attestations"], ["eip155:6623", 6623, "attestations"], ["eip155:8453", 8453, "proofs"]]);
    expect(read.list[1]).toMatchObject({ wsUrl: "wss://mainnet.example/ws", startBlock: 100n });
    expect(defaultChain(read).caip2).toBe("eip155:66238");
    expect(defaultChain(withFile(JSON.stringify(chains), { DEFAULT_CHAIN: "eip155:6623" }).chains).rpcUrl).toBe("https://mainnet.example/rpc");
    expect(defaultChain(withFile(JSON.stringify(chains), { DEFAULT_CHAIN: "6623" }).chains).chainId).toBe(6623);
  });

  test("a bad CHAINS_FILE stops the start with one line naming it", () => {
    const refused = (text: string, env: Record<string, string> = {}) => {
      try {
        withFile(text, env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as Error).message).not.toContain("\n");
        return (error as Error).message;
      }
      throw new Error("accepted");
    };
    expect(refused("[{")).toBe("CHAINS_FILE: cannot read JSON from chains.json");
    expect(refused(JSON.stringify([chains[0], chains[2], chains[0]]))).toBe("CHAINS_FILE: eip155:66238 is named twice");
    expect(refused(JSON.stringify([chains[2]]))).toBe(`CHAINS_FILE: no chain has role "attestations"`);
    expect(refused(JSON.stringify(chains), { DEFAULT_CHAIN: "eip155:1" })).toBe("DEFAULT_CHAIN: eip155:1 is not an attestation chain the deployment serves");
    expect(refused(JSON.stringify(chains), { DEFAULT_CHAIN: "8453" })).toStartWith("DEFAULT_CHAIN: 8453");
    expect(refused(JSON.stringify([{ ...chains[0], role: "reads" }]))).toStartWith("CHAINS_FILE: chain eip155:66238: expected role");
    expect(refused(JSON.stringify([{ ...chains[0], caip2: "base" }]))).toStartWith("CHAINS_FILE: chain 1: expected caip2");
    expect(refused(JSON.stringify([{ ...chains[0], rpcUrl: "ftp://x" }]))).toStartWith("CHAINS_FILE: chain eip155:66238: expected rpcUrl");
    expect(refused(JSON.stringify(chains), { RPC_URL: "https://node.example" })).toStartWith("RPC_URL: set, but CHAINS_FILE");
    expect(() => readConfig({ CHAINS_FILE: "chains.json" }, { readFile: () => JSON.stringify(chains) })).toThrow("TRUST_ANCHORS_PATH: required when CHAINS_FILE is set");
  });

  test("an attestation chain the trust anchors do not describe stops the start naming it; proof chains need no anchors", () => {
    const anchors = { chains: { "eip155:66238": { name: "t", easContract: "0x4200000000000000000000000000000000000021", schemas: {} } } } as unknown as TrustAnchors;
    const served = withFile(JSON.stringify([chains[0], chains[2]])).chains;
    expect(() => checkAnchoredChains(served, anchors)).not.toThrow();
    const unanchored = withFile(JSON.stringify(chains)).chains;
    expect(() => checkAnchoredChains(unanchored, anchors)).toThrow(StartupError);
    expect(() => checkAnchoredChains(unanchored, anchors)).toThrow("CHAINS_FILE: eip155:6623 is an attestation chain the trust anchors do not describe (TRUST_ANCHORS_PATH)");
  });

  test("DELEGATE_SIGNER_<chainId>: the delegate's signer on that chain; a bad one names its variable", () => {
    const signers = readConfig({ DELEGATE_SIGNER_6623: "awskms:alias/mainnet", DELEGATE_SIGNER: "env:DELEGATE_PRIVATE_KEY" }).signers;
    expect([...signers.delegateByChain]).toEqual([[6623, "awskms:alias/mainnet"]]);
    expect(signers.delegate).toBe("env:DELEGATE_PRIVATE_KEY");
    expect(() => readConfig({ DELEGATE_SIGNER_6623: "mainnet-key" })).toThrow(/^DELEGATE_SIGNER_6623: expected a signer URI/);
    expect(() => readConfig({ DELEGATE_SIGNER_0: "env:X" })).toThrow(/^DELEGATE_SIGNER_0: /);
  });
});

describe("CHAINS_FILE's minesOnDemand", () => {
  test("a chain may be declared to mine only on demand (true or false); undefined when not given; anything else stops the start", () => {
    const read = withFile(JSON.stringify([{ ...chains[0], minesOnDemand: true }, { ...chains[1], minesOnDemand: false }, chains[2]])).chains;
    expect(read.list.map((c) => c.minesOnDemand)).toEqual([true, false, undefined]);
    expect(() => withFile(JSON.stringify([{ ...chains[0], minesOnDemand: "yes" }]))).toThrow("CHAINS_FILE: chain eip155:66238: expected minesOnDemand, true or false");
  });
});
