import { describe, expect, test } from "bun:test";
import { createPublicClient, custom, encodeAbiParameters, encodeEventTopics, erc20Abi, type Hex, parseAbi, toHex } from "viem";
import { createViemAuthorizationUses } from "./viem_authorization_uses.ts";

const TOKEN = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const PAYER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc";
const PAY_TO = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const NONCE = `0x${"11".repeat(32)}` as Hex;
const TX = `0x${"ab".repeat(32)}` as Hex;
const EVENTS = parseAbi([
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
]);

const rpcLog = (topics: readonly (Hex | Hex[] | null)[], data: Hex, logIndex: number) => ({
  address: TOKEN, topics, data, blockNumber: "0x64", blockHash: `0x${"cc".repeat(32)}`, transactionHash: TX, transactionIndex: "0x0", logIndex: toHex(logIndex), removed: false,
});
const used = (logIndex: number) => rpcLog(encodeEventTopics({ abi: EVENTS, eventName: "AuthorizationUsed", args: { authorizer: PAYER, nonce: NONCE } }), "0x", logIndex);
const canceled = () => rpcLog(encodeEventTopics({ abi: EVENTS, eventName: "AuthorizationCanceled", args: { authorizer: PAYER, nonce: NONCE } }), "0x", 0);
const transfer = (to: Hex, value: bigint, logIndex: number) =>
  rpcLog(encodeEventTopics({ abi: erc20Abi, eventName: "Transfer", args: { from: PAYER, to } }), encodeAbiParameters([{ type: "uint256" }], [value]), logIndex);

/** A chain at block 20,000 whose token logs are `logs` (each answered to a getLogs that names its event, in block 100). */
function fakeChain(logs: { used?: ReturnType<typeof rpcLog>; canceled?: ReturnType<typeof rpcLog>; receipt?: ReturnType<typeof rpcLog>[] }, options: { down?: boolean } = {}) {
  const ranges: [bigint, bigint][] = [];
  const transport = custom({
    request({ method, params }: { method: string; params: unknown[] }) {
      if (options.down) throw new Error("connect ECONNREFUSED http://secret-rpc.example");
      if (method === "eth_blockNumber") return Promise.resolve(toHex(20_000));
      if (method === "eth_getLogs") {
        const filter = params[0] as { fromBlock: Hex; toBlock: Hex; topics: Hex[] };
        const [from, to] = [BigInt(filter.fromBlock), BigInt(filter.toBlock)];
        ranges.push([from, to]);
        const found = filter.topics[0] === used(0).topics[0] ? logs.used : logs.canceled;
        return Promise.resolve(found !== undefined && from <= 100n && to >= 100n ? [found] : []);
      }
      if (method === "eth_getTransactionReceipt") {
        return Promise.resolve({ transactionHash: TX, status: "0x1", blockNumber: "0x64", blockHash: `0x${"cc".repeat(32)}`, logs: logs.receipt ?? [], from: PAY_TO, to: TOKEN, contractAddress: null, transactionIndex: "0x0", cumulativeGasUsed: "0x1", gasUsed: "0x1", logsBloom: `0x${"00".repeat(256)}`, type: "0x2", effectiveGasPrice: "0x1" });
      }
      throw new Error(`unexpected ${method}`);
    },
  }, { retryCount: 0 });
  return { ranges, uses: createViemAuthorizationUses({ client: createPublicClient({ transport }), network: "eip155:31337", lookbackBlocks: 20_000n }) };
}

const input = { network: "eip155:31337", asset: TOKEN, authorizer: PAYER, nonce: NONCE };

describe("createViemAuthorizationUses", () => {
  test("a used authorization names its transaction and the Transfer logged right after it", async () => {
    const { uses } = fakeChain({ used: used(3), receipt: [transfer(PAY_TO, 1n, 2), used(3), transfer(PAY_TO, 10_000n, 4)] });
    expect(await uses.useOf(input)).toEqual({ kind: "used", transaction: TX, transfer: { from: expect.stringMatching(/^0x3c44/i), to: expect.stringMatching(/^0x7099/i), value: 10_000n } });
  });

  test("a use without a Transfer right after it has none; a cancel is a cancel", async () => {
    expect(await fakeChain({ used: used(3), receipt: [transfer(PAY_TO, 10_000n, 2), used(3)] }).uses.useOf(input)).toEqual({ kind: "used", transaction: TX });
    expect(await fakeChain({ canceled: canceled() }).uses.useOf(input)).toEqual({ kind: "canceled", transaction: TX });
  });

  test("nothing found: every window of the lookback read once, newest first, within 2,000 blocks each", async () => {
    const { uses, ranges } = fakeChain({});
    expect(await uses.useOf(input)).toEqual({ kind: "not_found" });
    const windows = [...new Set(ranges.map(([a, b]) => `${a}-${b}`))];
    expect(windows[0]).toBe("18001-20000");
    expect(windows.at(-1)).toBe("1-2000");
    expect(windows.length).toBe(10);
    expect(ranges.every(([a, b]) => b - a < 2_000n)).toBe(true);
  });

  test("another network or a node that is down: undefined, never an error", async () => {
    expect(await fakeChain({}).uses.useOf({ ...input, network: "eip155:8453" })).toBeUndefined();
    expect(await fakeChain({}, { down: true }).uses.useOf(input)).toBeUndefined();
  });
});
