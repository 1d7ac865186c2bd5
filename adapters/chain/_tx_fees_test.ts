import { expect, test } from "bun:test";
import type { JsonRpc } from "./json_rpc.ts";
import { createFees, FEE_TTL_MS } from "./_tx_fees.ts";

/** A node quoting a gas price of 30 and a priority fee of 2 (wei), that counts what it is asked. */
function node() {
  const asked: string[] = [];
  const rpc: JsonRpc = {
    request: <T>(method: string) => {
      asked.push(method);
      const answers: Record<string, string> = { eth_gasPrice: "0x1e", eth_maxPriorityFeePerGas: "0x2" };
      return Promise.resolve(answers[method] as T);
    },
  };
  return { rpc, asked };
}

test("fees are read once per FEE_TTL_MS: the maximum fee twice the gas price plus the priority fee", async () => {
  let now = 0;
  const { rpc, asked } = node();
  const fees = createFees(rpc, () => now);
  expect(await fees.refresh()).toEqual({ maxFeePerGas: 62n, maxPriorityFeePerGas: 2n });
  now = FEE_TTL_MS - 1;
  await fees.refresh();
  expect(asked).toEqual(["eth_gasPrice", "eth_maxPriorityFeePerGas"]);
  now = FEE_TTL_MS;
  await fees.refresh();
  expect(asked).toEqual(["eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_gasPrice", "eth_maxPriorityFeePerGas"]);
});

test("issue 43 item 5: a receipt's effective gas price renews the price part, so only the priority fee is read when its time is up", async () => {
  let now = 0;
  const { rpc, asked } = node();
  const fees = createFees(rpc, () => now);
  await fees.refresh();
  now = 1_500;
  // The chain charged this wallet 40 a gas in the block just mined.
  fees.charged(40n);
  now = FEE_TTL_MS + 100;
  expect(await fees.refresh()).toEqual({ maxFeePerGas: 82n, maxPriorityFeePerGas: 2n });
  expect(asked).toEqual(["eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_maxPriorityFeePerGas"]);
  // Past the charged price's own time both are read again.
  now = 1_500 + FEE_TTL_MS;
  expect(await fees.refresh()).toEqual({ maxFeePerGas: 62n, maxPriorityFeePerGas: 2n });
  expect(asked.slice(3)).toEqual(["eth_gasPrice"]);
});

test("refreshes asked for together share one read", async () => {
  const { rpc, asked } = node();
  const fees = createFees(rpc, () => 0);
  await Promise.all([fees.refresh(), fees.refresh(), fees.refresh()]);
  expect(asked).toEqual(["eth_gasPrice", "eth_maxPriorityFeePerGas"]);
});
