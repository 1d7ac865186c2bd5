/**
 * The service on the devnet behind a JSON-RPC proxy whose faults a test file arms (`proxy.onCall`, `proxy.onAnswer`),
 * with the public relay's attester rate set small so that a token kept shows: started before the file's tests, stopped
 * after them. The relay tests of what is given back before a send share it.
 */
import { afterAll, beforeAll } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { startStack, type Stack } from "../harness.ts";
import { inFrontOf, type RpcCall, startRpcProxy } from "./rpc_proxy.ts";

/** Registers the file's service behind its proxy, with `attesterPerHour` writes an hour per attester. */
export function proxiedRelay(attesterPerHour: number) {
  const proxy = startRpcProxy("");
  let started: Stack | undefined;
  beforeAll(async () => {
    // The node's answer to a sync send decides, never its speed (docs/testing.md).
    started = await startStack({ rpcUrlFor: inFrontOf(proxy), sendSyncGraceMs: 120_000, env: { PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: String(attesterPerHour) } });
  });
  afterAll(async () => {
    await started?.stop();
    await proxy.stop();
  });
  const stack = (): Stack => started!;
  return {
    proxy,
    stack,
    /** What a review is signed for on the devnet. */
    target: () => ({ chainId: stack().devnet.chainId, easAddress: stack().service.easAddress, schemaUids: stack().devnet.schemaUids }),
    /** An exchange's call reading the delegate wallet's balance. */
    isDelegateBalance: (call: RpcCall) =>
      call.method === "eth_getBalance" && String(call.params[0]).toLowerCase() === privateKeyToAccount(stack().devnet.keys.delegate).address.toLowerCase(),
    /** POSTs `body` as JSON; its status, `Idempotent-Replayed` and body. */
    async post(path: string, body: unknown, headers: Record<string, string> = {}) {
      const res = await fetch(`${stack().baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, any> };
    },
  };
}
