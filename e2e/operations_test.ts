/**
 * Operations: request ids on every log line, Prometheus metrics, the delegate balance in readiness,
 * and a shutdown that lets an in-flight submission finish.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { createJsonLogger } from "../adapters/observability/mod.ts";
import { readConfig } from "../app/config.ts";
import { isAtsClientError } from "../client/errors.ts";
import { requestControllerWitness, signInWithWallet } from "../client/session.ts";
import { requestLogContext } from "../http/instrument.ts";
import { type Service, startService } from "../app/service.ts";
import { e2eArtifacts } from "./harness.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { signedReviewBody } from "./support/review_signer.ts";

let dir: string;
let devnet: Devnet;
let dns: DnsServer | undefined;
const lines: string[] = [];
const started: Service[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ats-ops-"));
  devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
});
afterAll(async () => {
  for (const s of started) await s.stop();
  await devnet?.stop();
  await dns?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}, rpcFetch?: typeof fetch, sendSyncGraceMs?: number) {
  const service = await startService(
    readConfig({
      PORT: "0",
      RPC_URL: devnet.rpcUrl,
      TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
      DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
      WITNESS_PRIVATE_KEY: devnet.keys.witness,
      DATABASE_PATH: join(dir, `ats-${started.length}.sqlite`),
      DATA_DIR: dir,
      ...env,
    }),
    { log: createJsonLogger("debug", { context: requestLogContext, out: (l) => lines.push(l) }), rpcFetch, sendSyncGraceMs },
  );
  started.push(service);
  return service;
}

const signedReview = () => signedReviewBody(devnet, generatePrivateKey());

const attest = (base: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

describe("operations", () => {
  test("the request id is echoed and carried by every log line of the request; no signature is logged", async () => {
    const service = await start();
    const body = await signedReview();
    lines.length = 0;
    const res = await attest(service.url, body, { "x-request-id": "trace-42" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("trace-42");
    const records = lines.map((l) => JSON.parse(l));
    const mine = records.filter((r) => r.requestId === "trace-42");
    // The delegate's transaction signature is audited (decisions §27) in the request's context; the user's
    // signature itself is never logged.
    expect(mine.map((r) => r.event)).toEqual(["signature", "delegated_attest", "request"]);
    expect(mine[0]).toMatchObject({ role: "delegate", backend: "env", purpose: "transaction" });
    expect(mine[0].key).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(mine[0].digest).toMatch(/^0x[0-9a-f]{64}$/);
    expect(mine[2]).toMatchObject({ route: "/v1/delegated-attest", status: 200, method: "POST" });
    expect(lines.join("\n")).not.toContain(body.signature.slice(2));

    const other = await fetch(`${service.url}/v1/trust-anchors`);
    expect(other.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("/metrics reports requests and latency by route and status, RPC calls and failures, wallet balances and pending transactions", async () => {
    const service = await start();
    expect((await attest(service.url, await signedReview())).status).toBe(200);
    // EAS reverts NotFound in simulation: the node answers HTTP 200 with a JSON-RPC error object.
    const reverted = await attest(service.url, await signedReviewBody(devnet, generatePrivateKey(), { refUID: `0x${"12".repeat(32)}` }));
    expect(reverted.status).toBe(400);
    await fetch(`${service.url}/no/such/path/${"x".repeat(20)}`);
    const res = await fetch(`${service.url}/metrics`);
    expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await res.text();
    expect(text).toContain('ats_http_requests_total{method="POST",route="/v1/delegated-attest",status="200"} 1');
    expect(text).toContain('ats_http_requests_total{method="POST",route="/v1/delegated-attest",status="400"} 1');
    expect(text).toContain('ats_http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toContain('ats_http_request_duration_seconds_count{route="/v1/delegated-attest",status="200"} 1');
    expect(text).toContain('ats_http_request_duration_seconds_count{route="/v1/delegated-attest",status="400"} 1');
    expect(text).toMatch(/ats_http_request_duration_seconds_bucket\{route="unmatched",status="404",le="\+Inf"\} 1/);
    // Anvil mines on arrival: the one send goes by eth_sendRawTransactionSync (RPC_SEND_SYNC=auto), no plain send.
    expect(text).toMatch(/ats_rpc_calls_total\{method="eth_sendRawTransactionSync"\} 1/);
    expect(text).not.toContain('ats_rpc_calls_total{method="eth_sendRawTransaction"}');
    expect(text).toMatch(/ats_rpc_failures_total\{code="3",method="eth_estimateGas",reason="rpc_error"\} 1/);
    expect(text).not.toContain("NotFound");
    expect(text).toMatch(/ats_wallet_balance_wei\{wallet="delegate"\} [1-9][0-9]*/);
    expect(text).toMatch(/ats_wallet_pending_transactions\{wallet="witness"\} 0/);
    expect(text).not.toContain(devnet.rpcUrl);
  });

  test("/metrics shows sponsored-write quota use: witnesses by outcome and reservations not yet settled", async () => {
    dns = await startDnsServer();
    const controller = privateKeyToAccount(generatePrivateKey());
    dns.setTxt("_controllers.quota.test", [[`v=1;controller=did:pkh:eip155:${devnet.chainId}:${controller.address}`]]);
    const origin = "https://app.test";
    const service = await start({ DNS_SERVERS: dns.address, SIWE_DOMAINS: "app.test", CORS_ORIGINS: origin, FREE_PLAN_ANNUAL_WRITES: "1" });
    const wallet = privateKeyToAccount(generatePrivateKey());
    const options = { baseUrl: service.url, origin };
    const session = await signInWithWallet({
      walletDid: `did:pkh:eip155:${devnet.chainId}:${wallet.address}`,
      domain: "app.test",
      uri: `${origin}/login`,
      sign: (message) => wallet.signMessage({ message }),
    }, options);
    const witness = { subjectDid: "did:web:quota.test", controllerDid: `did:pkh:eip155:${devnet.chainId}:${controller.address}` };
    expect(await requestControllerWitness(witness, session, options)).toMatchObject({ success: true, method: "dns-txt" });
    const refused = await requestControllerWitness(witness, session, options).then(() => "ok", (e) => (isAtsClientError(e) ? e.code : String(e)));
    expect(refused).toBe("SPONSORED_WRITE_LIMIT_EXCEEDED");
    const text = await (await fetch(`${service.url}/metrics`)).text();
    expect(text).toContain('ats_sponsored_writes_total{outcome="committed"} 1');
    expect(text).toContain('ats_sponsored_writes_total{outcome="sponsored_write_limit_exceeded"} 1');
    expect(text).toContain("# TYPE ats_sponsored_writes_unsettled gauge\nats_sponsored_writes_unsettled 0");
  });

  test("a delegate wallet below MIN_DELEGATE_BALANCE_WEI is shown on /readyz, not counted: reads go on, a write it cannot pay for is 503 with nothing recorded", async () => {
    const fine = await start();
    // Ready once the index's first poll has completed (before it, public reads would be 503 INDEX_STALE).
    expect(await fine.index.catchUp()).toBe(true);
    const ok = await fetch(`${fine.url}/readyz`);
    expect(ok.status).toBe(200);
    expect((await ok.json() as { checks: Record<string, boolean> }).checks).toMatchObject({ delegateBalance: true, rpc: true, database: true });
    // A delegate wallet under its reserve (it could still pay for a few writes): before, /readyz was 503 on every
    // instance using it, and a balancer took them all out, every public read with them. The relays refuse the writes.
    const poor = await start({ MIN_DELEGATE_BALANCE_WEI: (10n ** 30n).toString() });
    expect(await poor.index.catchUp()).toBe(true);
    const res = await fetch(`${poor.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ready", checks: { delegateBalance: false, rpc: true, database: true, index: true } });
    const read = await fetch(`${poor.url}/v1/attestations?subject=did:web:example.com`);
    expect(read.status).toBe(200);
    // The write is refused by the wallet's own check, before anything is recorded: sent again, it is refused the same
    // way (not 409 DUPLICATE), and a funded instance accepts the same signature.
    const body = await signedReview();
    for (let i = 0; i < 2; i++) {
      const refused = await attest(poor.url, body);
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ code: "SUBMISSION_FAILED" });
    }
    const accepted = await attest(fine.url, body);
    expect(accepted.status).toBe(200);
  });

  test("stop() lets an in-flight submission finish and answer, then refuses new connections", async () => {
    let signalSend!: () => void;
    const sending = new Promise<void>((resolve) => (signalSend = resolve));
    // The send is held until stop() was called: it is in flight during the shutdown however fast the machine is.
    let releaseSend!: () => void;
    const sendReleased = new Promise<void>((resolve) => (releaseSend = resolve));
    const slowSend = (async (input: RequestInfo | URL, init?: RequestInit) => {
      // Either send method (eth_sendRawTransactionSync contains the name).
      if (String(init?.body ?? "").includes("eth_sendRawTransaction")) {
        signalSend();
        await sendReleased;
      }
      return await fetch(input, init);
    }) as typeof fetch;
    // The held send's answer decides, however long the hold: no 100 ms grace after which the sender asks about the hash.
    const service = await start({}, slowSend, 120_000);
    const pending = attest(service.url, await signedReview());
    await sending;
    const stopped = service.stop();
    // A second signal waits for the same shutdown instead of returning at once (and exiting mid-submission).
    expect(service.stop()).toBe(stopped);
    releaseSend();
    const res = await pending;
    await stopped;
    expect(res.status).toBe(200);
    const body = await res.json() as { uid: Hex };
    const client = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
    const count = await client.getTransactionCount({ address: privateKeyToAccount(devnet.keys.delegate).address });
    expect(count).toBeGreaterThan(0);
    expect(body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
  });
});
