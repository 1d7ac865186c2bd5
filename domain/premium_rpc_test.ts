import { describe, expect, test } from "bun:test";
import type { Account } from "../ports/accounts.ts";
import { fakeClock } from "../ports/fakes.ts";
import type { PremiumReadLedger, RawRpc, RpcCall } from "../ports/premium_reads.ts";
import { createPremiumRpc } from "./premium_rpc.ts";

const account: Account = { id: "acct", address: "0xabc", plan: "free", createdAtMs: 0 };

function setup(limit = 5, options: { down?: boolean } = {}) {
  const used = new Map<string, number>();
  const ledger: PremiumReadLedger = {
    used: (id, year) => Promise.resolve(used.get(`${id}|${year}`) ?? 0),
    reserve(id, year, count, max) {
      const now = used.get(`${id}|${year}`) ?? 0;
      if (now + count > max) return Promise.resolve(false);
      used.set(`${id}|${year}`, now + count);
      return Promise.resolve(true);
    },
    release(id, year, count) {
      used.set(`${id}|${year}`, Math.max(0, (used.get(`${id}|${year}`) ?? 0) - count));
      return Promise.resolve();
    },
  };
  const forwarded: RpcCall[][] = [];
  const rpc = {
    down: options.down ?? false,
    forward(calls: readonly RpcCall[]) {
      forwarded.push([...calls]);
      if (rpc.down) return Promise.resolve(undefined);
      return Promise.resolve(calls.map((c) => (c.method === "eth_blockNumber" ? { id: c.id, result: "0x64" } : c.method === "eth_call" ? { id: c.id, error: { code: 3, message: "execution reverted" } } : { id: c.id, result: `${c.method}-ok` })));
    },
  } satisfies RawRpc & { down: boolean };
  const premium = createPremiumRpc({ ledger, rpc, clock: fakeClock(Date.UTC(2026, 5, 1)), limits: { free: limit, paid: 1_000 }, maxLogRange: 50n });
  return { premium, forwarded, rpc, used: () => used.get("acct|2026") ?? 0 };
}

const call = (id: number | string, method: string, params: unknown[] = []) => ({ jsonrpc: "2.0", id, method, params });

describe("createPremiumRpc()", () => {
  test("a batch is answered in order: reads forwarded and counted, writes and wide ranges refused and not counted", async () => {
    const { premium, forwarded, used } = setup(10);
    const result = await premium([
      call("a", "eth_chainId"),
      call("b", "eth_sendRawTransaction", ["0x02"]),
      call("c", "eth_getLogs", [{ fromBlock: "0x0", toBlock: "latest" }]),
      call("d", "eth_getLogs", [{ fromBlock: "0x40", toBlock: "0x60" }]),
      { id: "e" },
      call("f", "eth_call", [{}]),
    ], account);
    expect(result.ok && result.value).toEqual([
      { jsonrpc: "2.0", id: "a", result: "eth_chainId-ok" },
      { jsonrpc: "2.0", id: "b", error: { code: -32601, message: "Method not allowed: only read methods are served (eth_sendRawTransaction)" } },
      { jsonrpc: "2.0", id: "c", error: { code: -32602, message: "eth_getLogs range too wide: at most 50 blocks" } },
      { jsonrpc: "2.0", id: "d", result: "eth_getLogs-ok" },
      { jsonrpc: "2.0", id: "e", error: { code: -32600, message: "Invalid request" } },
      { jsonrpc: "2.0", id: "f", error: { code: 3, message: "execution reverted" } },
    ]);
    expect(used()).toBe(3);
    // The head read for "latest", then one batch of the three reads under our own ids.
    expect(forwarded.map((batch) => batch.map((c) => `${c.id}:${c.method}`))).toEqual([["head:eth_blockNumber"], ["0:eth_chainId", "1:eth_getLogs", "2:eth_call"]]);
  });

  test("a single call gets a single answer; past the plan's reads 403 and nothing forwarded", async () => {
    const { premium, forwarded } = setup(2);
    expect(await premium(call(1, "eth_blockNumber"), account)).toEqual({ ok: true, value: { jsonrpc: "2.0", id: 1, result: "0x64" } });
    expect((await premium([call(2, "eth_chainId"), call(3, "eth_chainId")], account))).toMatchObject({ ok: false, code: "PREMIUM_READ_LIMIT_EXCEEDED" });
    expect(forwarded).toHaveLength(1);
    expect((await premium(call(4, "eth_chainId"), account)).ok).toBe(true);
  });

  test("the node unreachable is NETWORK_ERROR and the reads are given back; bad bodies are INVALID_INPUT", async () => {
    const { premium, rpc, used } = setup(5, { down: true });
    expect(await premium(call(1, "eth_chainId"), account)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(used()).toBe(0);
    rpc.down = false;
    expect(await premium([], account)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await premium(Array.from({ length: 101 }, (_, i) => call(i, "eth_chainId")), account)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await premium("eth_chainId", account)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});
