import { afterAll, describe, expect, test } from "bun:test";
import { createPublicClient, encodeErrorResult, encodeFunctionResult, http } from "viem";
import { silentLogger } from "../adapters/observability/mod.ts";
import { EAS_DOMAIN_VERSION } from "../domain/delegation/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { checkChains, createChainGates } from "./chain_checks.ts";
import type { ChainConfig, ChainsConfig } from "./config.ts";
import { StartupError } from "./startup_error.ts";

const EAS = "0x4200000000000000000000000000000000000021";
const anchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: { "eip155:31337": { easContract: EAS, schemas: {} } },
  registries: [],
} as unknown as TrustAnchors;
const proofs = (caip2: string, rpcUrl: string): ChainConfig => ({ caip2, chainId: Number(caip2.slice(7)), rpcUrl, role: "proofs" });

/** A node's fetch that answers 503 to everything, recording the methods it was asked. */
function downNode() {
  const methods: string[] = [];
  const urls: string[] = [];
  const fetchFn = Object.assign(async (input: RequestInfo | URL, init?: RequestInit) => {
    urls.push(String(input instanceof Request ? input.url : input));
    const body = JSON.parse(String(init?.body)) as { method: string } | { method: string }[];
    for (const call of Array.isArray(body) ? body : [body]) methods.push(call.method);
    return new Response("down", { status: 503 });
  }, { preconnect: fetch.preconnect }) as typeof fetch;
  return { fetchFn, methods, urls };
}

describe("createChainGates()", () => {
  test("a held chain whose rpcUrl carries credentials: the requests viem sends (credentials moved to a header) wait behind its gate too", async () => {
    const node = downNode();
    const gates = createChainGates(node.fetchFn, () => undefined);
    const url = "http://user:secret@node.example:8545/v1/key";
    gates.hold(url, proofs("eip155:31339", url), anchors, silentLogger);
    const client = createPublicClient({ transport: http(url, { fetchFn: gates.rpcFetch, retryCount: 0 }) });
    await expect(client.getBlockNumber()).rejects.toThrow();
    // Only the gate's own check reached the node.
    expect(new Set(node.methods)).toEqual(new Set(["eth_chainId"]));
    expect(node.urls.every((u) => u === "http://node.example:8545/v1/key")).toBe(true);
  });

  test("the node's URL as the config writes it and as a client asks for it (host case, trailing slash) is one gate; another path is not", async () => {
    const node = downNode();
    const gates = createChainGates(node.fetchFn, () => undefined);
    gates.hold("http://Node.Example:8545", proofs("eip155:31339", "http://Node.Example:8545"), anchors, silentLogger);
    await expect(gates.rpcFetch("http://node.example:8545/", { method: "POST", body: JSON.stringify({ method: "eth_blockNumber" }) })).rejects.toThrow();
    expect(node.methods).toEqual(["eth_chainId"]);
    const other = await gates.rpcFetch("http://node.example:8545/other", { method: "POST", body: JSON.stringify({ method: "eth_blockNumber" }) });
    expect([other.status, node.methods.at(-1)]).toEqual([503, "eth_blockNumber"]);
  });

  test("held(): each held chain's gate state by CAIP-2 id: unchecked until its node answers its chain id, then checked", async () => {
    // eip155:31339's node answers its id; eip155:31338's does not (503).
    const node = Object.assign(async (input: RequestInfo | URL, init?: RequestInit) => {
      const call = JSON.parse(String(init?.body)) as { id: number; method: string };
      return String(input).includes("up.example") ? Response.json({ jsonrpc: "2.0", id: call.id, result: "0x7a6b" }) : new Response("down", { status: 503 });
    }, { preconnect: fetch.preconnect }) as typeof fetch;
    const gates = createChainGates(node, () => undefined);
    expect(gates.held()).toEqual(new Map());
    gates.hold("http://up.example:8545", proofs("eip155:31339", "http://up.example:8545"), anchors, silentLogger);
    gates.hold("http://down.example:8545", proofs("eip155:31338", "http://down.example:8545"), anchors, silentLogger);
    expect(gates.held()).toEqual(new Map([["eip155:31339", "unchecked"], ["eip155:31338", "unchecked"]]));
    const call = (url: string) => gates.rpcFetch(url, { method: "POST", body: JSON.stringify({ id: 1, method: "eth_blockNumber" }) });
    expect((await call("http://up.example:8545/")).status).toBe(200);
    await expect(call("http://down.example:8545/")).rejects.toThrow();
    expect(gates.held()).toEqual(new Map([["eip155:31339", "checked"], ["eip155:31338", "unchecked"]]));
  });
  test("a chain checked at start: its exchanges go straight to the node while they succeed; after a 503, the next one checks its chain id first, and another chain's id closes it for good (metered and unmetered fetch alike)", async () => {
    // The node of eip155:31338 answers every call, a 503 while `down`, and the chain id `answering`.
    let down = false;
    let answering = 0x7a6a;
    const methods: string[] = [];
    const node = Object.assign(async (_input: RequestInfo | URL, init?: RequestInit) => {
      const call = JSON.parse(String(init?.body)) as { id: number; method: string };
      methods.push(call.method);
      if (down) return new Response("down", { status: 503 });
      return Response.json({ jsonrpc: "2.0", id: call.id, result: call.method === "eth_chainId" ? `0x${answering.toString(16)}` : "0x10" });
    }, { preconnect: fetch.preconnect }) as typeof fetch;
    const gates = createChainGates(node, () => undefined);
    const url = "http://b.example:8545";
    gates.hold(url, proofs("eip155:31338", url), anchors, silentLogger, { checked: true });
    expect(gates.held()).toEqual(new Map([["eip155:31338", "checked"]]));
    const call = (fetchFn: typeof fetch) => fetchFn(`${url}/`, { method: "POST", body: JSON.stringify({ id: 1, method: "eth_blockNumber" }) });
    for (let i = 0; i < 3; i++) expect((await call(gates.rpcFetch)).status).toBe(200);
    expect((await call(gates.unmeteredRpcFetch)).status).toBe(200);
    // No check while the exchanges succeed.
    expect(methods).toEqual(["eth_blockNumber", "eth_blockNumber", "eth_blockNumber", "eth_blockNumber"]);
    // A flap: its provider answers 503, then its URL reaches chain 31337's node.
    down = true;
    expect((await call(gates.rpcFetch)).status).toBe(503);
    down = false;
    answering = 0x7a69;
    methods.length = 0;
    await expect(call(gates.unmeteredRpcFetch)).rejects.toThrow("serves another chain");
    await expect(call(gates.rpcFetch)).rejects.toThrow("serves another chain");
    expect(methods).toEqual(["eth_chainId"]);
    expect(gates.held()).toEqual(new Map([["eip155:31338", "wrong"]]));
  });
});

describe("checkChains()", () => {
  // A node answering chain 31337 (with EAS at the anchored address) once, then 503: the default chain's check answered,
  // the next chain's on the same URL does not.
  let asked = 0;
  const node = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const call = (await request.json()) as { id: number; method: string };
      if (asked++ >= 2) return new Response("down", { status: 503 });
      const result = call.method === "eth_chainId" ? "0x7a69" : encodeFunctionResult({ abi: EAS_ABI, functionName: "version", result: EAS_DOMAIN_VERSION });
      return Response.json({ jsonrpc: "2.0", id: call.id, result });
    },
  });
  afterAll(() => node.stop(true));

  test("another chain on the default chain's node that does not answer stops the start: its gate would hold (or open for) the other chain's exchanges", async () => {
    const url = `http://127.0.0.1:${node.port}`;
    const chains = {
      default: "eip155:31337",
      list: [{ caip2: "eip155:31337", chainId: 31337, rpcUrl: url, role: "attestations" }, proofs("eip155:31339", `${url}/`)],
    } as unknown as ChainsConfig;
    const gates = createChainGates(fetch, () => undefined);
    const started = await checkChains(chains, { rpcUrl: url, trustAnchors: anchors, devnet: undefined, log: silentLogger, gates }).catch((error: unknown) => error);
    expect(started).toBeInstanceOf(StartupError);
    expect((started as Error).message).toBe("CHAINS_FILE: eip155:31339 and eip155:31337 name one rpcUrl (one node answers one chain id)");
  });
});

/** A logger that keeps every line, for the tests that read what was logged. */
function recordingLogger() {
  const lines: { level: string; event: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (event: string, fields: Record<string, unknown> = {}) => void lines.push({ level, event, fields });
  return { log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

/** A JSON-RPC error a node answers `eth_call` with. */
type CallError = { readonly code: number; readonly message: string; readonly data?: string | undefined };

/**
 * A node on loopback: the chain id in `chainId`, 503 while `down` (or for the next `downFor` calls), and EAS's version
 * from `version` ("0x" for an empty answer: no code at the address, as a lagging backend answers), or `callError` to
 * `eth_call` when set.
 */
function fakeNode() {
  const state = { chainId: 0x7a69, down: false, downFor: 0, version: EAS_DOMAIN_VERSION as string | "0x", callError: undefined as CallError | undefined };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const call = (await request.json()) as { id: number; method: string };
      if (state.down) return new Response("down", { status: 503 });
      if (state.downFor > 0) {
        state.downFor--;
        return new Response("down", { status: 503 });
      }
      if (call.method === "eth_call" && state.callError !== undefined) return Response.json({ jsonrpc: "2.0", id: call.id, error: state.callError });
      const result = call.method === "eth_chainId"
        ? `0x${state.chainId.toString(16)}`
        : call.method === "eth_call"
        ? (state.version === "0x" ? "0x" : encodeFunctionResult({ abi: EAS_ABI, functionName: "version", result: state.version }))
        : "0x10";
      return Response.json({ jsonrpc: "2.0", id: call.id, result });
    },
  });
  return { state, server, url: `http://127.0.0.1:${server.port}` };
}

const blockNumber = (fetchFn: typeof fetch, url: string) => fetchFn(url, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }) });

describe("a node found wrong after the start: chain_wrong_node names the setting to fix", () => {
  const node = fakeNode();
  afterAll(() => node.server.stop(true));

  test("the default chain served from RPC_URL names RPC_URL (and, without DEFAULT_CHAIN, says to set it: a restart takes whatever chain the node answers); one from CHAINS_FILE names its rpcUrl there; the devnet's says to restart", async () => {
    const rpcUrlAlone = { default: undefined, list: [{ caip2: undefined, chainId: undefined, rpcUrl: node.url, role: "attestations" }] };
    const withDefaultChain = { ...rpcUrlAlone, rpcUrlChainId: 31337 };
    const chainsFile = { default: "eip155:31337", list: [{ caip2: "eip155:31337", chainId: 31337, rpcUrl: node.url, role: "attestations" }] };
    // The embedded devnet's chain: an id, no rpcUrl (its node is the devnet's, given as the default chain's URL).
    const devnet = { default: "eip155:31337", list: [{ caip2: "eip155:31337", chainId: 31337, rpcUrl: undefined, role: "attestations" }] };
    const cases: [unknown, Record<string, unknown>][] = [
      [rpcUrlAlone, {
        chain: "eip155:31337",
        problem: "RPC_URL answers chain 31338, not eip155:31337",
        action: "the chain stays closed; fix RPC_URL (and set DEFAULT_CHAIN=eip155:31337 so a restart refuses another chain) and restart",
      }],
      [withDefaultChain, { chain: "eip155:31337", problem: "RPC_URL answers chain 31338, not eip155:31337", action: "the chain stays closed; fix RPC_URL and restart" }],
      [chainsFile, { chain: "eip155:31337", problem: "CHAINS_FILE: the rpcUrl of eip155:31337 answers chain 31338", action: "the chain stays closed; fix its rpcUrl in CHAINS_FILE and restart" }],
      [devnet, { chain: "eip155:31337", problem: "The embedded devnet's node of eip155:31337 answers chain 31338", action: "the chain stays closed; restart (the embedded devnet serves it)" }],
    ];
    for (const [chains, logged] of cases) {
      Object.assign(node.state, { chainId: 0x7a69, down: false });
      const { log, lines } = recordingLogger();
      const gates = createChainGates(fetch, () => undefined);
      await checkChains(chains as ChainsConfig, { rpcUrl: node.url, trustAnchors: anchors, devnet: undefined, log, gates });
      // Its provider answers 503, then its URL reaches chain 31338's node.
      node.state.down = true;
      expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(503);
      Object.assign(node.state, { chainId: 0x7a6a, down: false });
      await expect(blockNumber(gates.rpcFetch, node.url)).rejects.toThrow("serves another chain");
      expect(lines.filter((line) => line.event === "chain_wrong_node")).toEqual([{ level: "error", event: "chain_wrong_node", fields: logged }]);
    }
  });
});

describe("a held chain's node answering EAS's version empty after the start (a lagging or recovering backend)", () => {
  const node = fakeNode();
  afterAll(() => node.server.stop(true));
  const attestations = (rpcUrl: string): ChainConfig => ({ caip2: "eip155:31337", chainId: 31337, rpcUrl, role: "attestations" });

  test("stays unchecked (asked again, warned once), and is checked once the node answers the version; another version is wrong for good", async () => {
    Object.assign(node.state, { chainId: 0x7a69, down: false, downFor: 0, version: EAS_DOMAIN_VERSION, callError: undefined });
    const { log, lines } = recordingLogger();
    const gates = createChainGates(fetch, () => undefined);
    gates.hold(node.url, attestations(node.url), anchors, log);
    expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(200);
    // The provider answers 503 once: the gate closes and every exchange checks the node (chain id, then EAS's version)
    // in its place, with no wait between the checks.
    node.state.downFor = 1;
    expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(503);
    node.state.version = "0x";
    for (let i = 0; i < 3; i++) {
      await expect(blockNumber(gates.rpcFetch, node.url)).rejects.toThrow("has not answered its chain id yet");
      expect(gates.held()).toEqual(new Map([["eip155:31337", "unchecked"]]));
    }
    node.state.version = EAS_DOMAIN_VERSION;
    expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(200);
    expect(gates.held()).toEqual(new Map([["eip155:31337", "checked"]]));
    expect(lines.map(({ level, event }) => [level, event])).toEqual([
      ["info", "chain_checked"],
      ["warn", "chain_recheck"],
      ["warn", "chain_check_empty"],
      ["info", "chain_checked"],
    ]);
    expect(lines[2]!.fields).toMatchObject({ chain: "eip155:31337", problem: `No EAS contract answers at ${EAS} on eip155:31337` });

    // A real answer that is not the EAS meant: wrong, final.
    node.state.version = "0.1.0";
    const other = `${node.url}/other`;
    gates.hold(other, attestations(other), anchors, log);
    await expect(blockNumber(gates.rpcFetch, other)).rejects.toThrow("serves another chain");
    expect(lines.at(-1)).toMatchObject({ level: "error", event: "chain_wrong_node" });
  });
});

describe("a node answering EAS's version() with an internal error (-32603, no revert data): not answered, never a revert", () => {
  const node = fakeNode();
  const other = fakeNode();
  afterAll(() => {
    node.server.stop(true);
    other.server.stop(true);
  });
  const attestations = (caip2: string, rpcUrl: string): ChainConfig => ({ caip2, chainId: Number(caip2.slice(7)), rpcUrl, role: "attestations" });
  // A recovering node's answer to `eth_call` (viem reads -32603 as a revert, as it does RPC code 3).
  const headerNotFound: CallError = { code: -32603, message: "internal error: header not found" };
  const revertData = encodeErrorResult({ abi: [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }], errorName: "Error", args: ["no version"] });
  const twoChains = { ...anchors, chains: { ...anchors.chains, "eip155:31338": { easContract: EAS, schemas: {} } } } as unknown as TrustAnchors;

  test("after the start: a held chain stays unchecked (asked again at each exchange, nothing logged as wrong) and is checked once the node answers the version", async () => {
    Object.assign(node.state, { chainId: 0x7a69, down: false, downFor: 0, version: EAS_DOMAIN_VERSION, callError: undefined });
    const { log, lines } = recordingLogger();
    const gates = createChainGates(fetch, () => undefined);
    gates.hold(node.url, attestations("eip155:31337", node.url), anchors, log);
    expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(200);
    // Its provider answers 503 once, then its node, back, answers eth_call with -32603 for a while.
    node.state.downFor = 1;
    expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(503);
    node.state.callError = headerNotFound;
    for (let i = 0; i < 3; i++) {
      await expect(blockNumber(gates.rpcFetch, node.url)).rejects.toThrow("has not answered its chain id yet");
      expect(gates.held()).toEqual(new Map([["eip155:31337", "unchecked"]]));
    }
    node.state.callError = undefined;
    expect((await blockNumber(gates.rpcFetch, node.url)).status).toBe(200);
    expect(gates.held()).toEqual(new Map([["eip155:31337", "checked"]]));
    expect(lines.map(({ level, event }) => [level, event])).toEqual([["info", "chain_checked"], ["warn", "chain_recheck"], ["info", "chain_checked"]]);
  });

  test("after the start: a real revert (RPC code 3, or -32603 with revert data) is the node's answer: wrong, final", async () => {
    for (const reverting of [{ code: 3, message: "execution reverted: no version", data: revertData }, { ...headerNotFound, data: revertData }]) {
      Object.assign(node.state, { chainId: 0x7a69, down: false, downFor: 0, version: EAS_DOMAIN_VERSION, callError: reverting });
      const { log, lines } = recordingLogger();
      const gates = createChainGates(fetch, () => undefined);
      gates.hold(node.url, attestations("eip155:31337", node.url), anchors, log);
      await expect(blockNumber(gates.rpcFetch, node.url)).rejects.toThrow("serves another chain");
      expect(gates.held()).toEqual(new Map([["eip155:31337", "wrong"]]));
      expect(lines.map(({ level, event }) => [level, event])).toEqual([["error", "chain_wrong_node"]]);
      expect(lines[0]!.fields).toMatchObject({ problem: `No EAS contract answers at ${EAS} on eip155:31337` });
    }
  });

  test("at start: another chain's node answering -32603 is held (chain_unchecked), as a node that does not answer; the default chain's stops the start; a real revert stops it too", async () => {
    Object.assign(node.state, { chainId: 0x7a69, down: false, downFor: 0, version: EAS_DOMAIN_VERSION, callError: undefined });
    Object.assign(other.state, { chainId: 0x7a6a, down: false, downFor: 0, version: EAS_DOMAIN_VERSION, callError: headerNotFound });
    const chains = { default: "eip155:31337", list: [attestations("eip155:31337", node.url), attestations("eip155:31338", other.url)] } as unknown as ChainsConfig;
    const start = (log = silentLogger, gates = createChainGates(fetch, () => undefined)) =>
      checkChains(chains, { rpcUrl: node.url, trustAnchors: twoChains, devnet: undefined, log, gates });
    const { log, lines } = recordingLogger();
    const gates = createChainGates(fetch, () => undefined);
    await start(log, gates);
    expect(gates.held()).toEqual(new Map([["eip155:31338", "unchecked"], ["eip155:31337", "checked"]]));
    expect(lines).toEqual([{
      level: "warn",
      event: "chain_unchecked",
      fields: {
        chain: "eip155:31338",
        problem: `CHAINS_FILE: the rpcUrl of eip155:31338 does not answer eth_call (EAS's version at ${EAS})`,
        action: "its routes fail closed until its node answers its chain id",
      },
    }]);
    // Its node answers the version: the chain serves.
    other.state.callError = undefined;
    expect((await blockNumber(gates.rpcFetch, other.url)).status).toBe(200);
    expect(gates.held().get("eip155:31338")).toBe("checked");

    other.state.callError = { code: 3, message: "execution reverted: no version", data: revertData };
    expect(await start().catch((error: unknown) => error)).toEqual(new StartupError(`No EAS contract answers at ${EAS} on eip155:31338`));
    other.state.callError = undefined;
    node.state.callError = headerNotFound;
    expect(await start().catch((error: unknown) => error)).toEqual(new StartupError(`CHAINS_FILE: the rpcUrl of eip155:31337 does not answer eth_call (EAS's version at ${EAS})`));
  });
});
