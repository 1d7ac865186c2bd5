/**
 * `POST /api/verify/subject-ownership` on the devnet with real DNS (issue 17, item 3): a did:web proven by DNS TXT,
 * the wallet's own did:pkh, a contract by owner(), by its creation transaction and by an ownership transfer;
 * failures say why; a lookup that cannot be made is 502.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicClient, createWalletClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { ownedContract } from "./support/owned_contract.ts";
import { type RpcProxy, inFrontOf, startRpcProxy } from "./support/rpc_proxy.ts";
import { startStack, type Stack } from "./harness.ts";
import { LOOPING_CONTRACT_INITCODE } from "./support/test_wallet.ts";

let stack: Stack;
let dns: DnsServer;
let proxy: RpcProxy;
const creatorKey = generatePrivateKey();
const creator = privateKeyToAccount(creatorKey);
const buyer = privateKeyToAccount(generatePrivateKey());
const pkh = (address: string) => `did:pkh:eip155:31337:${address.toLowerCase()}`;
let contract: Hex;
let creationTx: Hex;
let transferTx: Hex;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.owned.test", [[`v=1;controller=${pkh(creator.address)}`]]);
  proxy = startRpcProxy("");
  stack = await startStack({
    env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true" },
    rpcUrlFor: inFrontOf(proxy),
  });
  const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 20 });
  await client.request({ method: "anvil_setBalance", params: [creator.address, "0x56bc75e2d63100000"] } as never);
  const wallet = createWalletClient({ account: creator, transport: http(stack.devnet.rpcUrl) });
  const { abi, bytecode } = await ownedContract();
  creationTx = await wallet.deployContract({ abi, bytecode, chain: null });
  contract = (await client.waitForTransactionReceipt({ hash: creationTx })).contractAddress!;
  // A second contract, created by the creator and then transferred to the buyer.
  const second = await wallet.deployContract({ abi, bytecode, chain: null });
  const secondAddress = (await client.waitForTransactionReceipt({ hash: second })).contractAddress!;
  transferTx = await wallet.writeContract({ address: secondAddress, abi: abi as never, functionName: "transferOwnership" as never, args: [buyer.address] as never, chain: null });
  await client.waitForTransactionReceipt({ hash: transferTx });
  transferred = secondAddress;
}, 60_000);
let transferred: Hex;
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
  await dns?.stop();
});

async function verify(body: Record<string, unknown>) {
  const res = await fetch(`${stack.baseUrl}/api/verify/subject-ownership`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

describe("subject ownership", () => {
  test("a did:web by DNS TXT; another wallet fails with what to publish", async () => {
    const ok = await verify({ subjectDid: "did:web:owned.test", connectedWalletDid: pkh(creator.address) });
    expect(ok.body).toMatchObject({ ok: true, status: "verified", method: "dns", subjectDid: "did:web:owned.test", controllingWalletDid: pkh(creator.address) });
    const other = await verify({ subjectDid: "owned.test", connectedWalletDid: pkh(buyer.address) });
    expect(other.body).toMatchObject({ ok: false, status: "failed" });
    expect(other.body.details).toContain(`_controllers.owned.test`);
    expect(other.body.details).toContain(pkh(buyer.address));
  });

  test("the wallet's own did:pkh, on any eip155 chain", async () => {
    const res = await verify({ subjectDid: `did:pkh:eip155:1:${buyer.address}`, connectedWalletDid: pkh(buyer.address) });
    expect(res.body).toMatchObject({ ok: true, method: "wallet" });
  });

  test("a contract: by owner(), by its creation transaction, by an ownership transfer; the wrong wallet fails", async () => {
    expect((await verify({ subjectDid: pkh(contract), connectedWalletDid: pkh(creator.address) })).body).toMatchObject({ ok: true, method: "contract" });
    expect((await verify({ subjectDid: pkh(transferred), connectedWalletDid: pkh(creator.address), txHash: creationTx })).body)
      .toMatchObject({ ok: false, status: "failed" });
    expect((await verify({ subjectDid: pkh(contract), connectedWalletDid: pkh(creator.address), txHash: creationTx })).body)
      .toMatchObject({ ok: true, method: "minting-wallet" });
    expect((await verify({ subjectDid: pkh(transferred), connectedWalletDid: pkh(buyer.address), txHash: transferTx })).body)
      .toMatchObject({ ok: true, method: "transfer" });
    const stranger = await verify({ subjectDid: pkh(contract), connectedWalletDid: pkh(buyer.address) });
    expect(stranger.body).toMatchObject({ ok: false, status: "failed", method: "contract" });
    expect(stranger.body.error).toContain("owner()");
    const eoa = await verify({ subjectDid: pkh(privateKeyToAccount(generatePrivateKey()).address), connectedWalletDid: pkh(buyer.address) });
    expect(eoa.body).toMatchObject({ ok: false, status: "failed" });
  });

  test("a did:web whose host is an IP address is 400 INVALID_DID on every route that takes a did:web, never 502, and nothing is looked up (issue 33)", async () => {
    const ips = ["did:web:127.0.0.1", "did:web:0", "did:web:1.2.3", "did:web:2130706433", "did:web:0x7f.1", "did:web:127.0.0.1%3A8443", "did:web:%5B%3A%3A1%5D", "10.0.0.1"];
    const before = dns.queries.length;
    const key = `did:pkh:eip155:31337:${buyer.address.toLowerCase()}`;
    for (const subjectDid of ips) {
      const q = encodeURIComponent(subjectDid);
      const answers = {
        ownership: await verify({ subjectDid, connectedWalletDid: pkh(buyer.address) }),
        endpointConfirm: await fetch(`${stack.baseUrl}/v1/controller-endpoint-confirm?subjectDid=${q}`),
        confirm: await fetch(`${stack.baseUrl}/api/public/controller-confirm?subjectDid=${q}&walletDid=${encodeURIComponent(key)}`),
        keyStatus: await fetch(`${stack.baseUrl}/v1/key-status?subjectDid=${q}&keyDid=${encodeURIComponent(key)}`),
      };
      const seen: Record<string, [number, unknown]> = { ownership: [answers.ownership.status, answers.ownership.body.code] };
      for (const name of ["endpointConfirm", "confirm", "keyStatus"] as const) {
        const res = answers[name];
        seen[name] = [res.status, ((await res.json()) as { code?: string }).code];
      }
      expect({ subjectDid, seen }).toEqual({
        subjectDid,
        seen: { ownership: [400, "INVALID_DID"], endpointConfirm: [400, "INVALID_DID"], confirm: [400, "INVALID_DID"], keyStatus: [400, "INVALID_DID"] },
      });
    }
    expect(dns.queries.slice(before)).toEqual([]);
    // A name still is looked up.
    expect((await verify({ subjectDid: "did:web:owned.test", connectedWalletDid: pkh(creator.address) })).body).toMatchObject({ ok: true, method: "dns" });
  });

  test("a contract whose owner() loops has no owner, and its calls run at owner()'s capped gas", async () => {
    // Found by attacking the route: anonymous requests ran the contract's loop at the node's cap (a block's gas).
    const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 20 });
    const wallet = createWalletClient({ account: creator, transport: http(stack.devnet.rpcUrl) });
    const deployed = await wallet.sendTransaction({ data: LOOPING_CONTRACT_INITCODE, chain: null });
    const burner = (await client.waitForTransactionReceipt({ hash: deployed })).contractAddress!;
    const mark = proxy.calls.length;
    const looped = await verify({ subjectDid: pkh(burner), connectedWalletDid: pkh(creator.address) });
    expect(looped).toMatchObject({ status: 200, body: { ok: false, status: "failed", method: "contract" } });
    const ownerCalls = proxy.calls.slice(mark).filter((c) => c.method === "eth_call");
    expect(ownerCalls.length).toBeGreaterThan(0);
    expect(new Set(ownerCalls.map((c) => (c.params[0] as { gas?: string }).gas))).toEqual(new Set([`0x${(100_000).toString(16)}`]));
  });

  test("bad input is 400; a chain that cannot be reached is 502 NETWORK_ERROR, never failed", async () => {
    expect((await verify({ subjectDid: "did:web:owned.test" })).status).toBe(400);
    expect((await verify({ subjectDid: "did:web:owned.test", connectedWalletDid: "did:web:nope.test" })).body.code).toBe("INVALID_DID");
    proxy.onHttp = () => new Response("down", { status: 502 });
    try {
      const down = await verify({ subjectDid: pkh(contract), connectedWalletDid: pkh(buyer.address) });
      expect([down.status, down.body.code]).toEqual([502, "NETWORK_ERROR"]);
      expect(JSON.stringify(down.body)).not.toContain("127.0.0.1");
    } finally {
      proxy.onHttp = undefined;
    }
  });
});
