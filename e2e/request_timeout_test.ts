/**
 * A lookup longer than Bun's default idle timeout (10 s) still gets its documented answer (issue 15): artifact
 * trust behind an RPC that hangs answers 502 NETWORK_ERROR after three attempts of 4 s, instead of a connection
 * reset at 10 s.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sha256, stringToBytes } from "viem";
import { artifactDidFromDigest } from "../domain/did.ts";
import { SERVER_IDLE_TIMEOUT_SECONDS } from "../main.ts";
import { type RpcProxy, inFrontOf, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";

let proxy: RpcProxy;
let stack: Stack;
beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({
    env: { ARTIFACT_TRUST_RPC_TIMEOUT_MS: "4000" },
    rpcUrlFor: inFrontOf(proxy),
  });
});
afterAll(async () => {
  proxy.onHttp = undefined;
  await stack?.stop();
  await proxy?.stop();
});

test("a hanging RPC behind artifact trust is answered 502 with the error body after more than 10 s, not cut off", async () => {
  const did = artifactDidFromDigest(sha256(stringToBytes("request timeout")));
  const held: Promise<unknown>[] = [];
  proxy.onHttp = () => {
    const never = new Promise<Response>(() => {});
    held.push(never);
    return never;
  };
  const started = performance.now();
  const res = await fetch(`${stack.baseUrl}/v1/artifact-trust?artifactDid=${encodeURIComponent(did)}`);
  const elapsed = performance.now() - started;
  proxy.onHttp = undefined;
  expect(res.status).toBe(502);
  expect(await res.json()).toMatchObject({ code: "NETWORK_ERROR" });
  expect(elapsed).toBeGreaterThan(10_000);
  expect(held.length).toBe(3);
}, 60_000);

test("the server's idle timeout is Bun's maximum, above the longest documented route", () => {
  expect(SERVER_IDLE_TIMEOUT_SECONDS).toBe(255);
  // Receipt wait (120 s) + four RPC exchanges of 10 s with one retry; artifact trust's seven levels of 3 × 8 s.
  expect(120 + 4 * 2 * 10).toBeLessThan(SERVER_IDLE_TIMEOUT_SECONDS);
  expect(7 * (3 * 8 + 0.45)).toBeLessThan(SERVER_IDLE_TIMEOUT_SECONDS);
});
