import { describe, expect, test } from "bun:test";
import type { Account } from "../../ports/accounts.ts";
import { fakeClock, fakePremiumReadLedger, fakeRawRpc } from "../../ports/fakes/mod.ts";
import { createPremiumRpc, MAX_BATCH, PREMIUM_METHODS } from "./premium_rpc.ts";

const account: Account = { id: "acct", address: "0xabc", plan: "free", createdAtMs: 0 };
const JUNE_2026 = Date.UTC(2026, 5, 1);

function setup(options: { limit?: number; paidLimit?: number; head?: bigint; maxLogRange?: bigint } = {}) {
  const ledger = fakePremiumReadLedger();
  const rpc = fakeRawRpc({
    head: options.head ?? 100n,
    answer: (c) => (c.method === "eth_call" ? { error: { code: 3, message: "execution reverted" } } : { result: `${c.method}-ok` }),
  });
  const clock = fakeClock(JUNE_2026);
  const premium = createPremiumRpc({
    ledger,
    rpc,
    clock,
    limits: { free: options.limit ?? 10, paid: options.paidLimit ?? 1_000 },
    maxLogRange: options.maxLogRange ?? 50n,
  });
  const used = (year = 2026, id = account.id) => ledger.rows.get(`${id}|${year}`) ?? 0;
  /** What the node was sent, batch by batch, as `id:method`. */
  const sent = () => rpc.batches.map((batch) => batch.map((c) => `${c.id}:${c.method}`));
  return { premium, rpc, ledger, clock, used, sent };
}

const call = (id: number | string | null, method: string, params: unknown[] = []) => ({ jsonrpc: "2.0", id, method, params });
const getLogs = (id: number | string, filter: unknown) => call(id, "eth_getLogs", [filter]);

describe("createPremiumRpc()", () => {
  test("a batch is answered in order: reads forwarded and counted, writes and wide ranges refused and not counted", async () => {
    const { premium, used, sent } = setup();
    const result = await premium([
      call("a", "eth_chainId"),
      call("b", "eth_sendRawTransaction", ["0x02"]),
      getLogs("c", { fromBlock: "0x0", toBlock: "latest" }),
      getLogs("d", { fromBlock: "0x40", toBlock: "0x60" }),
      { id: "e" },
      call("f", "eth_call", [{}]),
    ], account);
    expect(result.ok && result.value).toEqual([
      { jsonrpc: "2.0", id: "a", result: "eth_chainId-ok" },
      { jsonrpc: "2.0", id: "b", error: { code: -32601, message: "Method not allowed: only read methods are served (eth_sendRawTransaction)" } },
      { jsonrpc: "2.0", id: "c", error: { code: -32602, message: "eth_getLogs range too wide: at most 50 blocks" } },
      { jsonrpc: "2.0", id: "d", result: "eth_getLogs-ok" },
      { jsonrpc: "2.0", id: "e", error: { code: -32600, message: 'Invalid request: jsonrpc must be "2.0"' } },
      // The node's own error is passed on, and the call counts: it was forwarded and served.
      { jsonrpc: "2.0", id: "f", error: { code: 3, message: "execution reverted" } },
    ]);
    expect(used()).toBe(3);
    // The head read for "latest" (not counted), then one batch of the three reads under our own ids.
    expect(sent()).toEqual([["0:eth_blockNumber"], ["0:eth_chainId", "1:eth_getLogs", "2:eth_call"]]);
  });

  test("a node's error is passed on with its code and data; its message not when it names a URL or runs long (a provider's notice)", async () => {
    const ledger = fakePremiumReadLedger();
    const A = `0x${"a".repeat(40)}`;
    const errors: Record<string, { code: number; message: string; data?: unknown }> = {
      eth_call: { code: 3, message: "execution reverted: not owner", data: "0x08c379a0" },
      eth_getBalance: { code: -32005, message: "daily request limit reached, upgrade at https://provider.example/plans?key=abc" },
      eth_getCode: { code: -32000, message: "x".repeat(201) },
      eth_getStorageAt: { code: -32000, message: "header not found" },
    };
    const rpc = fakeRawRpc({ head: 100n, answer: (c) => ({ error: errors[c.method]! }) });
    const premium = createPremiumRpc({ ledger, rpc, clock: fakeClock(JUNE_2026), limits: { free: 10, paid: 10 }, maxLogRange: 50n });
    const result = await premium([call(1, "eth_call", [{}]), call(2, "eth_getBalance", [A, "latest"]), call(3, "eth_getCode", [A, "latest"]), call(4, "eth_getStorageAt", [A, "0x0", "latest"])], account);
    expect(result.ok && result.value).toEqual([
      { jsonrpc: "2.0", id: 1, error: { code: 3, message: "execution reverted: not owner", data: "0x08c379a0" } },
      // It reached the client verbatim: the service's provider, and a key in its URL.
      { jsonrpc: "2.0", id: 2, error: { code: -32005, message: "The node refused the call" } },
      { jsonrpc: "2.0", id: 3, error: { code: -32000, message: "The node refused the call" } },
      { jsonrpc: "2.0", id: 4, error: { code: -32000, message: "header not found" } },
    ]);
  });

  test("every read method of decisions §12 is forwarded; no other", async () => {
    expect([...PREMIUM_METHODS].sort()).toEqual([
      "eth_blockNumber", "eth_call", "eth_chainId", "eth_getBalance", "eth_getBlockByNumber", "eth_getCode", "eth_getLogs",
      "eth_getStorageAt", "eth_getTransactionByHash", "eth_getTransactionReceipt",
    ]);
    const { premium, rpc, used, sent } = setup({ limit: 100 });
    const reads = [...PREMIUM_METHODS].map((m, i) => (m === "eth_getLogs" ? getLogs(i, { fromBlock: "0x1", toBlock: "0x2" }) : call(i, m)));
    const answered = await premium(reads, account);
    expect(answered.ok && (answered.value as { error?: unknown }[]).filter((a) => a.error !== undefined && (a.error as { code: number }).code !== 3)).toEqual([]);
    expect(used()).toBe(10);
    const refusedMethods = [
      "eth_sendRawTransaction", "eth_sendRawTransactionSync", "eth_sendTransaction", "eth_sign", "eth_signTransaction", "eth_accounts", "personal_sign",
      "anvil_setBalance", "evm_mine", "debug_traceTransaction", "eth_newFilter", "eth_subscribe", "eth_estimateGas",
      "ETH_CHAINID", "eth_chainId ", "__proto__", "constructor",
    ];
    rpc.batches.length = 0;
    const refused = await premium(refusedMethods.map((m, i) => call(i, m)), account);
    expect(refused.ok && (refused.value as { error: { code: number } }[]).map((a) => a.error.code)).toEqual(refusedMethods.map(() => -32601));
    expect(sent()).toEqual([]);
    expect(used()).toBe(10);
  });

  test("eth_getLogs: tags resolved to numbers first, a missing bound is the head, a blockHash is one block", async () => {
    const { premium, rpc, sent } = setup({ head: 100n, maxLogRange: 50n, limit: 100 });
    const cases: [unknown, boolean][] = [
      [{ fromBlock: "0x33", toBlock: "0x64" }, true], // 51..100: exactly 50 blocks
      [{ fromBlock: "0x32", toBlock: "0x64" }, false], // 50..100: 51 blocks
      [{ fromBlock: "0x33" }, true], // to the head
      [{ fromBlock: "0x32" }, false],
      [{ fromBlock: "0x33", toBlock: "latest" }, true],
      [{ fromBlock: "0x32", toBlock: "safe" }, false],
      [{ fromBlock: "0x32", toBlock: "finalized" }, false],
      [{ fromBlock: "0x32", toBlock: "pending" }, false],
      [{ fromBlock: "0x32", toBlock: null }, false],
      [{}, true], // head..head: one block
      [{ fromBlock: "latest", toBlock: "latest" }, true],
      [{ fromBlock: "earliest", toBlock: "0x31" }, true], // 0..49
      [{ fromBlock: "earliest", toBlock: "0x32" }, false], // 0..50
      [{ fromBlock: "earliest" }, false], // 0..head
      [{ toBlock: "0x10" }, true], // head..16: an empty range, for the node to judge
      [{ blockHash: `0x${"ab".repeat(32)}` }, true],
      [{ fromBlock: "0x0", toBlock: "0xffffffffffffffff" }, false],
      // As fromBlock, safe and finalized would count as the head: a range by the chain's finality lag wider than counted.
      [{ fromBlock: "finalized", toBlock: "latest" }, false],
      [{ fromBlock: "safe" }, false],
    ];
    for (const [filter, allowed] of cases) {
      const result = await premium(getLogs(1, filter), account);
      const answer = result.ok ? result.value as { result?: unknown; error?: { code: number } } : undefined;
      expect({ filter, allowed: answer?.result === "eth_getLogs-ok", code: answer?.error?.code })
        .toEqual({ filter, allowed, code: allowed ? undefined : -32602 });
    }
    // The head is read only when a bound needs it: never for numbers, earliest or a blockHash.
    rpc.batches.length = 0;
    await premium([getLogs(1, { fromBlock: "0x1", toBlock: "0x2" }), getLogs(2, { fromBlock: "earliest", toBlock: "0x2" }), getLogs(3, { blockHash: `0x${"ab".repeat(32)}` })], account);
    expect(sent()).toEqual([["0:eth_getLogs", "1:eth_getLogs", "2:eth_getLogs"]]);
  });

  test("the head is read once per request; bad filters are -32602 and never forwarded", async () => {
    const { premium, rpc, used } = setup();
    rpc.batches.length = 0;
    await premium([getLogs(1, { fromBlock: "0x60" }), getLogs(2, { toBlock: "latest", fromBlock: "latest" }), getLogs(3, {})], account);
    expect(rpc.batches.map((b) => b.map((c) => c.method))).toEqual([["eth_blockNumber"], ["eth_getLogs", "eth_getLogs", "eth_getLogs"]]);
    rpc.batches.length = 0;
    const bad = [
      call(1, "eth_getLogs"),
      getLogs(2, "latest"),
      getLogs(3, [{ fromBlock: "0x1" }]),
      getLogs(4, { fromBlock: 1, toBlock: 2 }),
      getLogs(5, { fromBlock: "0x1", toBlock: "0xzz" }),
      getLogs(6, { fromBlock: "0x" }),
      getLogs(7, { fromBlock: "0x1", toBlock: "0x10000000000000000" }),
      getLogs(8, { blockHash: 5 }),
    ];
    const before = used();
    const result = await premium(bad, account);
    expect(result.ok && (result.value as { id: unknown; error: { code: number } }[]).map((a) => [a.id, a.error.code])).toEqual(bad.map((c) => [c.id as unknown, -32602]));
    expect(rpc.batches).toEqual([]);
    expect(used()).toBe(before);
  });

  test("a single call gets a single answer; a refused single call is a JSON-RPC error, not counted", async () => {
    const { premium, used, sent } = setup({ head: 0x64n });
    expect(await premium(call(1, "eth_blockNumber"), account)).toEqual({ ok: true, value: { jsonrpc: "2.0", id: 1, result: "0x64" } });
    expect(await premium(call("x", "eth_sendRawTransaction", ["0x02"]), account)).toEqual({
      ok: true,
      value: { jsonrpc: "2.0", id: "x", error: { code: -32601, message: "Method not allowed: only read methods are served (eth_sendRawTransaction)" } },
    });
    expect(used()).toBe(1);
    expect(sent()).toHaveLength(1);
  });

  test("ids: the client's are echoed (repeated, null, absent), the node only ever sees ours", async () => {
    const { premium, sent } = setup();
    const result = await premium([call(7, "eth_chainId"), call(7, "eth_blockNumber"), call(null, "eth_getCode"), { jsonrpc: "2.0", method: "eth_getBalance" }], account);
    expect(result.ok && result.value).toEqual([
      { jsonrpc: "2.0", id: 7, result: "eth_chainId-ok" },
      { jsonrpc: "2.0", id: 7, result: "0x64" },
      { jsonrpc: "2.0", id: null, result: "eth_getCode-ok" },
      { jsonrpc: "2.0", id: null, result: "eth_getBalance-ok" },
    ]);
    expect(sent()).toEqual([["0:eth_chainId", "1:eth_blockNumber", "2:eth_getCode", "3:eth_getBalance"]]);
  });

  test("the plan's limit: the whole request is reserved at once; past it 403 and nothing forwarded", async () => {
    const { premium, used, sent } = setup({ limit: 5 });
    for (let i = 0; i < 3; i++) expect((await premium(call(i, "eth_chainId"), account)).ok).toBe(true);
    // Two left: a batch of three reads is refused whole, even with refused calls beside them.
    const three = [call(1, "eth_chainId"), call(2, "eth_sendRawTransaction"), call(3, "eth_chainId"), call(4, "eth_chainId")];
    expect(await premium(three, account)).toMatchObject({ ok: false, code: "PREMIUM_READ_LIMIT_EXCEEDED" });
    expect(used()).toBe(3);
    // A batch whose refused calls leave two reads fits.
    expect((await premium([call(1, "eth_chainId"), call(2, "eth_sendRawTransaction"), call(3, "eth_chainId")], account)).ok).toBe(true);
    expect(used()).toBe(5);
    expect(await premium(call(6, "eth_chainId"), account)).toMatchObject({ ok: false, code: "PREMIUM_READ_LIMIT_EXCEEDED" });
    // A request with nothing to forward needs no reads.
    expect(await premium(call(7, "eth_sendRawTransaction"), account)).toMatchObject({ ok: true, value: { error: { code: -32601 } } });
    expect(sent()).toHaveLength(4);
    expect(used()).toBe(5);
  });

  test("the limit is the account's plan's, per UTC year", async () => {
    const { premium, clock, used } = setup({ limit: 1, paidLimit: 3 });
    const paid: Account = { ...account, id: "paid", plan: "paid" };
    expect((await premium([call(1, "eth_chainId"), call(2, "eth_chainId"), call(3, "eth_chainId")], paid)).ok).toBe(true);
    expect(await premium([call(1, "eth_chainId"), call(2, "eth_chainId")], account)).toMatchObject({ ok: false, code: "PREMIUM_READ_LIMIT_EXCEEDED" });
    expect((await premium(call(1, "eth_chainId"), account)).ok).toBe(true);
    expect(await premium(call(1, "eth_chainId"), account)).toMatchObject({ ok: false });
    clock.set(Date.UTC(2027, 0, 1));
    expect((await premium(call(1, "eth_chainId"), account)).ok).toBe(true);
    expect([used(2026), used(2027), used(2026, "paid")]).toEqual([1, 1, 3]);
  });

  test("the node unreachable: 502 NETWORK_ERROR, the reads given back; a head that cannot be read reserves nothing", async () => {
    const { premium, rpc, used } = setup({ limit: 5 });
    expect((await premium(call(1, "eth_chainId"), account)).ok).toBe(true);
    rpc.down = true;
    expect(await premium([call(1, "eth_chainId"), call(2, "eth_getBalance")], account)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(used()).toBe(1);
    expect(await premium([call(1, "eth_chainId"), getLogs(2, { fromBlock: "0x1" })], account)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(used()).toBe(1);
    rpc.down = false;
    expect((await premium([1, 2, 3, 4].map((i) => call(i, "eth_chainId")), account)).ok).toBe(true);
    expect(used()).toBe(5);
  });

  test("a node that leaves a call unanswered: that call is -32603, the others answered", async () => {
    const { premium, rpc } = setup();
    const forward = rpc.forward;
    rpc.forward = async (calls) => (await forward(calls))!.filter((a) => a.id !== 1);
    const result = await premium([call("a", "eth_chainId"), call("b", "eth_chainId"), call("c", "eth_chainId")], account);
    expect(result.ok && (result.value as { id: string; error?: { code: number } }[]).map((a) => [a.id, a.error?.code])).toEqual([["a", undefined], ["b", -32603], ["c", undefined]]);
  });

  test("bodies that are not a JSON-RPC request or batch are INVALID_INPUT naming what is wrong; calls of a batch are answered one by one", async () => {
    const { premium, sent, used } = setup();
    const refused: [unknown, string][] = [
      [[], "An empty batch"],
      [Array.from({ length: MAX_BATCH + 1 }, (_, i) => call(i, "eth_chainId")), "A batch holds at most 100 calls"],
      ["eth_chainId", "Body must be a JSON-RPC request object or a batch (array)"],
      [null, "Body must be a JSON-RPC request object or a batch (array)"],
      [42, "Body must be a JSON-RPC request object or a batch (array)"],
      [{}, 'jsonrpc must be "2.0"'],
      [{ jsonrpc: "1.0", id: 1, method: "eth_chainId" }, 'jsonrpc must be "2.0"'],
      [{ jsonrpc: "2.0", id: 1 }, "method must be a method name"],
      [{ jsonrpc: "2.0", id: 1, method: 5 }, "method must be a method name"],
      [{ jsonrpc: "2.0", id: { a: 1 }, method: "eth_chainId" }, "id must be a string, a number or null"],
      [{ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: { address: "0x1" } }, "params must be an array"],
    ];
    for (const [body, message] of refused) {
      expect({ body: JSON.stringify(body).slice(0, 60), result: await premium(body, account) })
        .toEqual({ body: JSON.stringify(body).slice(0, 60), result: { ok: false, code: "INVALID_INPUT", message } });
    }
    expect((await premium(Array.from({ length: MAX_BATCH }, (_, i) => call(i, "eth_sendRawTransaction")), account)).ok).toBe(true);
    const batch = await premium([1, [call(1, "eth_chainId")], { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: "0x1" }, call(4, "eth_chainId")], account);
    expect(batch.ok && batch.value).toEqual([
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid request: A call must be a JSON-RPC request object" } },
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid request: A call must be a JSON-RPC request object" } },
      { jsonrpc: "2.0", id: 3, error: { code: -32602, message: "params must be an array" } },
      { jsonrpc: "2.0", id: 4, result: "eth_chainId-ok" },
    ]);
    expect(sent()).toEqual([["0:eth_chainId"]]);
    expect(used()).toBe(1);
  });
});

describe("createPremiumRpc(): what a read may make the node do (issue 23)", () => {
  const LOOP = "0x00000000000000000000000000000000000010a7";

  test("an eth_call's params are rebuilt: known call fields only, gas capped or set, a state or block override refused by name", async () => {
    const ledger = fakePremiumReadLedger();
    const rpc = fakeRawRpc();
    const premium = createPremiumRpc({ ledger, rpc, clock: fakeClock(JUNE_2026), limits: { free: 100, paid: 100 }, maxLogRange: 50n, maxCallGas: 1_000_000n });
    const result = await premium([
      call("huge", "eth_call", [{ to: LOOP, gas: "0xffffffffffff", data: "0x" }, "latest"]),
      call("small", "eth_call", [{ from: LOOP, to: LOOP, gas: "0x5208", value: "0x0", input: "0xabcd", maxFeePerGas: "0x1", maxPriorityFeePerGas: "0x1" }, { blockNumber: "0x1" }]),
      call("none", "eth_call", [{ to: LOOP, data: undefined }, { blockHash: `0x${"ab".repeat(32)}`, requireCanonical: true }]),
      call("override", "eth_call", [{ to: LOOP, gas: "0xffffffffffff" }, "latest", { [LOOP]: { code: "0x5b600056" } }]),
      call("empty-override", "eth_call", [{ to: LOOP }, "latest", {}]),
      call("block-override", "eth_call", [{ to: LOOP }, "latest", {}, { number: "0x1" }]),
      call("authorization", "eth_call", [{ to: LOOP, authorizationList: [] }]),
      call("access-list", "eth_call", [{ to: LOOP, accessList: [] }]),
      call("bad-gas", "eth_call", [{ to: LOOP, gas: 30_000_000 }]),
      call("bad-block", "eth_call", [{ to: LOOP }, { blockNumber: "0x1", extra: true }]),
      call("not-object", "eth_call", ["0x00"]),
    ], account);
    const answers = result.ok ? result.value as { id: string; error?: { code: number; message: string } }[] : [];
    expect(answers.map((a) => [a.id, a.error?.code])).toEqual([
      ["huge", undefined], ["small", undefined], ["none", undefined],
      ["override", -32602], ["empty-override", -32602], ["block-override", -32602], ["authorization", -32602], ["access-list", -32602],
      ["bad-gas", -32602], ["bad-block", -32602], ["not-object", -32602],
    ]);
    expect(answers[3]!.error!.message).toBe("eth_call state overrides (a third param) are not served");
    expect(answers[6]!.error!.message).toContain('"authorizationList" is not served');
    // What reached the node: the known fields, the gas at most the cap and the cap when none was named.
    expect(rpc.batches.map((b) => b.map((c) => c.params))).toEqual([[
      [{ to: LOOP, gas: "0xf4240", data: "0x" }, "latest"],
      [{ from: LOOP, to: LOOP, gas: "0x5208", value: "0x0", input: "0xabcd", maxFeePerGas: "0x1", maxPriorityFeePerGas: "0x1" }, { blockNumber: "0x1" }],
      [{ to: LOOP, gas: "0xf4240" }, { blockHash: `0x${"ab".repeat(32)}`, requireCanonical: true }],
    ]]);
    expect(ledger.rows.get(`${account.id}|2026`)).toBe(3);
  });

  test("every read method is refused extra or malformed params, never forwarded nor counted", async () => {
    const { premium, rpc, used } = setup({ limit: 100 });
    const address = LOOP;
    const hash = `0x${"cd".repeat(32)}`;
    const refused = [
      call(1, "eth_chainId", ["x"]),
      call(2, "eth_blockNumber", [1]),
      call(3, "eth_getBalance", [address, "latest", {}]),
      call(4, "eth_getBalance", ["0x12", "latest"]),
      call(5, "eth_getCode", [address, "tomorrow"]),
      call(6, "eth_getStorageAt", [address, "0x0", "latest", {}]),
      call(7, "eth_getStorageAt", [address, 0, "latest"]),
      call(8, "eth_getTransactionReceipt", [hash, true]),
      call(9, "eth_getTransactionByHash", ["0x12"]),
      call(10, "eth_getBlockByNumber", ["latest", true, {}]),
      call(11, "eth_getBlockByNumber", ["latest", "yes"]),
      call(12, "eth_getBlockByNumber", [{ blockNumber: "0x1" }, false]),
      getLogs(13, { fromBlock: "0x1", toBlock: "0x2", extra: 1 }),
      call(14, "eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }, {}]),
      getLogs(15, { fromBlock: "0x1", toBlock: "0x2", address: ["0x12"] }),
      getLogs(16, { fromBlock: "0x1", toBlock: "0x2", topics: [null, null, null, null, null] }),
    ];
    const result = await premium(refused, account);
    expect(result.ok && (result.value as { id: number; error: { code: number } }[]).map((a) => [a.id, a.error?.code] as unknown[])).toEqual(refused.map((c) => [c.id, -32602]));
    expect(rpc.batches).toEqual([]);
    expect(used()).toBe(0);
    const allowed = [
      call(1, "eth_getBalance", [address, { blockHash: hash }]),
      call(2, "eth_getStorageAt", [address, `0x${"0".repeat(64)}`, "0x10"]),
      call(3, "eth_getTransactionReceipt", [hash]),
      call(4, "eth_getBlockByNumber", ["finalized", true]),
      getLogs(5, { fromBlock: "0x1", toBlock: "0x2", address: [address], topics: [hash, null, [hash, null]] }),
    ];
    const ok = await premium(allowed, account);
    expect(ok.ok && (ok.value as { error?: unknown }[]).every((a) => a.error === undefined)).toBe(true);
    expect(rpc.batches.flat().map((c) => c.params)).toEqual(allowed.map((c) => c.params));
  });

  test("a call handed to the node is a read spent, whether its answer timed out or was lost; one never sent is given back", async () => {
    const { premium, rpc, used } = setup({ limit: 10 });
    rpc.lost = { timedOut: true };
    expect(await premium([call(1, "eth_call", [{ to: LOOP }]), call(2, "eth_chainId")], account))
      .toEqual({ ok: false, code: "NETWORK_ERROR", message: "The chain did not answer in time" });
    expect(used()).toBe(2);
    rpc.lost = { timedOut: false };
    expect(await premium(call(3, "eth_call", [{ to: LOOP }]), account)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(used()).toBe(3);
    rpc.lost = undefined;
    rpc.down = true;
    expect(await premium(call(4, "eth_call", [{ to: LOOP }]), account)).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(used()).toBe(3);
  });

  test("requests waiting on the node are bounded per account and overall: past either 429 RATE_LIMITED, nothing reserved or sent", async () => {
    const ledger = fakePremiumReadLedger();
    const rpc = fakeRawRpc();
    const premium = createPremiumRpc({
      ledger, rpc, clock: fakeClock(JUNE_2026), limits: { free: 100, paid: 100 }, maxLogRange: 50n, maxInFlightPerAccount: 2, maxInFlight: 3,
    });
    const other: Account = { ...account, id: "other" };
    const third: Account = { ...account, id: "third" };
    let open!: () => void;
    rpc.gate = new Promise<void>((resolve) => (open = resolve));
    const waiting = [premium(call(1, "eth_chainId"), account), premium(call(2, "eth_chainId"), account)];
    const limited = { ok: false, code: "RATE_LIMITED", retryAfterSeconds: 1 };
    expect(await premium(call(3, "eth_chainId"), account)).toMatchObject(limited);
    waiting.push(premium(call(4, "eth_chainId"), other));
    expect(await premium(call(5, "eth_chainId"), third)).toMatchObject(limited);
    // A request with nothing for the node needs no slot; nor is the head read of a log range taken without one.
    expect(await premium(call(6, "eth_sendRawTransaction", ["0x02"]), third)).toMatchObject({ ok: true, value: { error: { code: -32601 } } });
    expect(await premium(getLogs(7, { fromBlock: "0x1" }), third)).toMatchObject(limited);
    expect(rpc.batches).toEqual([]);
    expect([ledger.rows.get(`${account.id}|2026`), ledger.rows.get("other|2026"), ledger.rows.get("third|2026")]).toEqual([2, 1, undefined]);
    open();
    expect((await Promise.all(waiting)).map((r) => r.ok)).toEqual([true, true, true]);
    // Slots are given back however a request ends: a lost answer too.
    rpc.gate = undefined;
    rpc.lost = { timedOut: true };
    for (let i = 0; i < 3; i++) expect(await premium(call(i, "eth_chainId"), account)).toMatchObject({ code: "NETWORK_ERROR" });
    rpc.lost = undefined;
    expect((await Promise.all([premium(call(1, "eth_chainId"), account), premium(call(2, "eth_chainId"), account), premium(call(3, "eth_chainId"), third)])).map((r) => r.ok))
      .toEqual([true, true, true]);
  });
});
