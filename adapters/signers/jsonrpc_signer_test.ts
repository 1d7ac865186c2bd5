/**
 * The `jsonrpc:` signer's checks of what a remote signer answers (decisions §27), against a real JSON-RPC server on
 * loopback whose answers a test chooses: the transaction asked for, signed by the configured key, is used; anything
 * else is a refusal (`SIGNER_UNAVAILABLE` at the routes), never a transaction handed on to be sent. Found by attacking
 * the signers: a transaction signed by another key was accepted and sent from another wallet.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fromRlp, type Hex, keccak256, parseTransaction, recoverTransactionAddress, serializeTransaction, toRlp } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { TransactionFields } from "../../ports/signer.ts";
import { openJsonRpcSigner } from "./jsonrpc_signer.ts";

const KEY = `0x${"11".repeat(32)}` as const;
const OTHER = `0x${"22".repeat(32)}` as const;
const ADDRESS = privateKeyToAccount(KEY).address;
const TX: TransactionFields = { chainId: 8453, nonce: 5, maxPriorityFeePerGas: 1n, maxFeePerGas: 2n, gas: 21_000n, to: `0x${"ab".repeat(20)}`, value: 0n, data: "0xabcd" };
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

let answer: () => Promise<unknown> = () => Promise.resolve(null);
let server: ReturnType<typeof Bun.serve>;
const events: Record<string, unknown>[] = [];

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const { id } = await request.json() as { id: number };
      return Response.json({ jsonrpc: "2.0", id, result: await answer() });
    },
  });
});
afterAll(() => server.stop(true));

function signer() {
  const log = { debug() {}, info: (e: string, f?: Record<string, unknown>) => void events.push({ e, ...f }), warn: (e: string, f?: Record<string, unknown>) => void events.push({ e, ...f }), error() {} };
  return openJsonRpcSigner(`http://127.0.0.1:${server.port}/`, ADDRESS, { role: "delegate", audit: { log, timeoutMs: 2_000 } as never });
}

const eip1559 = { ...TX, type: "eip1559" as const };

describe("jsonrpc: signer answers", () => {
  test("the transaction asked for, signed by the configured key: used as answered", async () => {
    const raw = await privateKeyToAccount(KEY).signTransaction(eip1559);
    answer = () => Promise.resolve(raw);
    const signed = await signer().signTransaction(TX, { purpose: "transaction" } as never);
    expect(signed).toMatchObject({ ok: true, raw, txHash: keccak256(raw) });
    expect(await recoverTransactionAddress({ serializedTransaction: raw as never })).toBe(ADDRESS);
  });

  test("the same transaction signed by another key, or with a signature that recovers to no one's, is refused", async () => {
    const other = await privateKeyToAccount(OTHER).signTransaction(eip1559);
    const forged = serializeTransaction(eip1559, { r: "0x01", s: "0x01", yParity: 0 });
    for (const raw of [other, forged]) {
      answer = () => Promise.resolve(raw);
      const signed = await signer().signTransaction(TX, { purpose: "transaction" } as never);
      expect(signed).toEqual({ ok: false, reason: "refused" });
    }
  });

  test("another transaction than the one asked for, or a high-s signature, is refused", async () => {
    const account = privateKeyToAccount(KEY);
    const otherNonce = await account.signTransaction({ ...eip1559, nonce: 6 });
    const low = await account.signTransaction(eip1559);
    const { r, s, yParity } = await import("viem").then((v) => v.parseTransaction(low));
    const high = serializeTransaction(eip1559, { r: r!, s: `0x${(N - BigInt(s!)).toString(16)}` as Hex, yParity: yParity === 0 ? 1 : 0 });
    for (const raw of [otherNonce, high]) {
      answer = () => Promise.resolve(raw);
      expect(await signer().signTransaction(TX, { purpose: "transaction" } as never)).toEqual({ ok: false, reason: "refused" });
    }
  });

  test("the transaction asked for in a non-canonical encoding (value 0 as 0x00) is refused: its hash is not the transaction's", async () => {
    // Found by attacking the signers: it parsed as the transaction asked for, the node refused the bytes, and the
    // refusal read as the chain's (500 SUBMISSION_FAILED) with the signer counted healthy.
    const canonical = await privateKeyToAccount(KEY).signTransaction(eip1559);
    const fields = fromRlp(`0x${canonical.slice(4)}`, "hex") as Hex[];
    fields[6] = "0x00";
    const mangled = `0x02${toRlp(fields).slice(2)}` as Hex;
    expect(parseTransaction(mangled)).toMatchObject({ value: 0n, nonce: TX.nonce });
    answer = () => Promise.resolve(mangled);
    expect(await signer().signTransaction(TX, { purpose: "transaction" } as never)).toEqual({ ok: false, reason: "refused" });
  });

  test("typed data goes with its EIP712Domain type written out (geth's typed-data code, Clef's, refuses it without)", async () => {
    const typed = {
      domain: { name: "ATS signer self-test", version: "1" },
      types: { SelfTest: [{ name: "nonce", type: "uint256" }] },
      primaryType: "SelfTest",
      message: { nonce: 7n },
    } as const;
    const asked: unknown[] = [];
    const signature = await privateKeyToAccount(KEY).signTypedData(typed);
    answer = () => Promise.resolve(signature);
    const seen = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const body = await request.json() as { id: number; params: unknown[] };
        asked.push(JSON.parse(body.params[1] as string));
        return Response.json({ jsonrpc: "2.0", id: body.id, result: signature });
      },
    });
    try {
      const remote = openJsonRpcSigner(`http://127.0.0.1:${seen.port}/`, ADDRESS, { role: "delegate", audit: { log: { debug() {}, info() {}, warn() {}, error() {} }, timeoutMs: 2_000 } as never });
      expect(await remote.signTypedData(typed as never, { purpose: "self-test" } as never)).toMatchObject({ ok: true, signature });
      expect(asked).toEqual([{ ...typed, message: { nonce: "7" }, types: { EIP712Domain: [{ name: "name", type: "string" }, { name: "version", type: "string" }], SelfTest: typed.types.SelfTest } }]);
    } finally {
      seen.stop(true);
    }
  });

  test("an answer larger than the request could make is refused as it streams in, never read whole", async () => {
    // 64 MiB of result, sent in 1 MiB chunks: the signer stops reading after the cap (about 64 KiB here).
    let sent = 0;
    const chunk = new Uint8Array(1024 * 1024).fill(0x61);
    const huge = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(new ReadableStream({
          pull(controller) {
            if (sent === 0) controller.enqueue(new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"result":"0x'));
            if (sent++ < 64) controller.enqueue(chunk);
            else controller.close();
          },
        }), { headers: { "content-type": "application/json" } }),
    });
    try {
      const remote = openJsonRpcSigner(`http://127.0.0.1:${huge.port}/`, ADDRESS, { role: "delegate", audit: { log: { debug() {}, info() {}, warn() {}, error() {} }, timeoutMs: 2_000 } });
      expect(await remote.signTransaction(TX, { purpose: "transaction" })).toEqual({ ok: false, reason: "refused" });
      expect(sent).toBeLessThan(64);
    } finally {
      huge.stop(true);
    }
  });
});
