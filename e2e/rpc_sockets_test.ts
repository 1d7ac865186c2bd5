/**
 * The delegated-attestation path's JSON-RPC over kept-alive sockets (adapters/chain/http1_post.ts, issue 43 item 4),
 * as an operator runs the service (`bun main.ts`, `RPC_URL` on a plain-http node): the writes go out on it, a node
 * that drops its connections (a restart) costs no write, a node that is down is RPC_ERROR (500) naming no URL, and the same
 * signature is taken again once it is back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { generatePrivateKey } from "viem/accounts";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { e2eArtifacts, TEST_RELAY_LIMITS } from "./harness.ts";
import { postDelegatedAttest, type ReviewTarget, signedReviewBody } from "./support/review_signer.ts";
import { devnetServiceEnv, type ServiceProcess, startServiceProcess } from "./support/service_process.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-rpc-sockets-"));
const SECRET = "k3y-0f-the-provider";
let devnet: Devnet;
let service: ServiceProcess;
let target: ReviewTarget;

/** The node as the service sees it: a proxy on a fixed port that can go away and come back, noting each send. */
const node = {
  port: 0,
  server: undefined as Server<undefined> | undefined,
  /** The User-Agent of each request that carried a send (`fetch` names Bun; the sockets send none). */
  sendAgents: [] as (string | null)[],
  /** The path and Authorization of each request that carried a send. */
  sendTargets: [] as string[],
  start() {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: this.port,
      fetch: async (request) => {
        const body = await request.text();
        if (body.includes("eth_sendRawTransaction")) {
          this.sendAgents.push(request.headers.get("user-agent"));
          this.sendTargets.push(`${new URL(request.url).pathname} ${request.headers.get("authorization")}`);
        }
        const answer = await fetch(devnet.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
        return new Response(await answer.text(), { headers: { "content-type": "application/json" } });
      },
    });
    this.port = this.server.port!;
  },
  async stop() {
    // Closes the kept connections too, as a node's restart does.
    await this.server?.stop(true);
    this.server = undefined;
  },
};

beforeAll(async () => {
  devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
  node.start();
  // A provider's key in the URL's userinfo and path: it must reach no answer, log line, /metrics or /readyz.
  service = await startServiceProcess({
    ...devnetServiceEnv(devnet, dir, `http://ats:${SECRET}@127.0.0.1:${node.port}/v3/${SECRET}`),
    ...TEST_RELAY_LIMITS,
    LOG_LEVEL: "info",
  });
  const anchors = await (await fetch(`${service.url}/v1/trust-anchors`)).json() as { chains: Record<string, { easContract: string; schemas: Record<string, string> }> };
  const [caip2, chain] = Object.entries(anchors.chains)[0]!;
  target = { chainId: Number(caip2.split(":")[1]), easAddress: chain.easContract, schemaUids: chain.schemas };
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await node.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("JSON-RPC of the write path over kept-alive sockets", () => {
  test("writes go out on the sockets; a node that dropped its connections costs no write", async () => {
    const first = await postDelegatedAttest(service.url, await signedReviewBody(target, generatePrivateKey()));
    expect(first.status).toBe(200);
    expect(node.sendAgents.length).toBe(1);
    // Not Bun's fetch, which names itself.
    expect(node.sendAgents[0] ?? "").not.toContain("Bun");

    await node.stop();
    node.start();
    for (let i = 0; i < 3; i++) {
      const next = await postDelegatedAttest(service.url, await signedReviewBody(target, generatePrivateKey()));
      expect(next.status).toBe(200);
      expect(next.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    }
    expect(node.sendAgents.length).toBe(4);
  }, 60_000);

  test("a node that is down is RPC_ERROR naming no URL; the same signature goes through once it is back", async () => {
    const body = await signedReviewBody(target, generatePrivateKey());
    await node.stop();
    const down = await postDelegatedAttest(service.url, body);
    // RPC_ERROR is the contract's 500 (http/errors.ts): nothing was claimed, no nonce or gas spent.
    expect(down.status).toBe(500);
    expect(down.body.code).toBe("RPC_ERROR");
    expect(JSON.stringify(down.body)).not.toContain(String(node.port));
    expect(JSON.stringify(down.body)).not.toContain("127.0.0.1");
    expect(JSON.stringify(down.body)).not.toContain(SECRET);
    node.start();
    const back = await postDelegatedAttest(service.url, body);
    expect(back.status).toBe(200);
    expect(back.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
  }, 60_000);

  test("the provider's key goes to the node and nowhere else: no answer, log line, /metrics or /readyz", async () => {
    expect(node.sendTargets[0]).toBe(`/v3/${SECRET} Basic ${btoa(`ats:${SECRET}`)}`);
    const seen = [
      await (await fetch(`${service.url}/metrics`)).text(),
      await (await fetch(`${service.url}/readyz`)).text(),
      service.stderrTail(),
    ];
    expect(seen[2]).toContain("rpc_error");
    for (const text of seen) expect(text).not.toContain(SECRET);
  }, 60_000);
});
