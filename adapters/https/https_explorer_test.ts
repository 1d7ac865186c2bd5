import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DidDocumentFetch } from "../../ports/discovery.ts";
import { createHttpsDidDocumentFetcher } from "./https_did_document.ts";
import { createExplorerTxList, readTxlist, txlistUrl } from "./https_explorer.ts";

const WALLET = "0x14dc79964da2c08b23698b3d3cc7ca32193d9955";
const item = { hash: `0x${"a".repeat(64)}`, from: WALLET, to: `0x${"1".repeat(40)}`, isError: "0", txreceipt_status: "1", blockNumber: "12" };

let server: ReturnType<typeof Bun.serve>;
const asked: string[] = [];
/** Bytes the endless answer handed to the connection so far. */
let endlessServed = 0;
beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      asked.push(request.url);
      const path = new URL(request.url).pathname;
      if (path === "/down") return new Response("upstream secret", { status: 502 });
      if (path === "/big") return new Response(JSON.stringify({ status: "1", result: Array(20_000).fill(item) }));
      if (path === "/moved") return Response.redirect("http://127.0.0.1:1/api", 302);
      if (path === "/endless") {
        const chunk = new TextEncoder().encode(`${JSON.stringify(item)},`.repeat(512));
        return new Response(new ReadableStream({
          start: (controller) => controller.enqueue(new TextEncoder().encode(`{"status":"1","result":[`)),
          pull(controller) {
            endlessServed += chunk.byteLength;
            controller.enqueue(chunk);
          },
        }), { headers: { "content-type": "application/json" } });
      }
      return Response.json({ status: "1", message: "OK", result: [item, { ...item, isError: "1" }, { junk: true }] });
    },
  });
});
afterAll(() => server.stop(true));

describe("the explorer API", () => {
  test("txlist: newest first, one page, the address asked for", () => {
    const url = new URL(txlistUrl("https://api.example/api?apikey=K", WALLET, 100));
    expect(Object.fromEntries(url.searchParams)).toEqual({ apikey: "K", module: "account", action: "txlist", address: WALLET, sort: "desc", page: "1", offset: "100" });
  });

  test("an answer is read into candidates; failed ones marked; junk skipped; Etherscan's empty answer is no candidate", () => {
    expect(readTxlist({ status: "1", result: [item, { ...item, txreceipt_status: "0" }, 7] })).toEqual([
      { hash: item.hash, from: WALLET, to: item.to, failed: false, blockNumber: 12 },
      { hash: item.hash, from: WALLET, to: item.to, failed: true, blockNumber: 12 },
    ]);
    expect(readTxlist({ status: "0", message: "No transactions found", result: [] })).toEqual([]);
    expect(readTxlist({ status: "0", message: "NOTOK", result: "Invalid API Key" })).toBeUndefined();
  });

  test("the operator's explorer is fetched as configured; a 5xx, a redirect or an oversized body is unavailable", async () => {
    const explorers = createExplorerTxList({ pinned: () => Promise.reject(new Error("not for the operator's")), maxBytes: 100_000 });
    const base = `http://127.0.0.1:${server.port}`;
    const listed = await explorers.txlist(`${base}/api`, WALLET, "operator");
    expect(listed).toEqual({ ok: true, value: [{ hash: item.hash, from: WALLET, to: item.to, failed: false, blockNumber: 12 }, { hash: item.hash, from: WALLET, to: item.to, failed: true, blockNumber: 12 }] });
    for (const path of ["/down", "/big", "/moved"]) expect(await explorers.txlist(`${base}${path}`, WALLET, "operator")).toEqual({ ok: false, reason: "unavailable" });
  });

  test("the operator's explorer answering without end is read up to the cap and no further", async () => {
    // It read the whole body before comparing: an answer as large as the explorer chose, held in memory, until the
    // deadline cut it.
    const explorers = createExplorerTxList({ pinned: () => Promise.reject(new Error("not for the operator's")), maxBytes: 1024 * 1024, timeoutMs: 60_000 });
    expect(await explorers.txlist(`http://127.0.0.1:${server.port}/endless`, WALLET, "operator")).toEqual({ ok: false, reason: "unavailable" });
    // The cap, plus what the server had queued ahead of the reader.
    expect(endlessServed).toBeLessThan(32 * 1024 * 1024);
  });

  test("an embed's explorer goes through the pinned fetcher: http, IP literals and private addresses are refused before any request", async () => {
    const pinned = createHttpsDidDocumentFetcher({
      resolver: { resolveAddresses: () => Promise.resolve({ status: "found", addresses: ["127.0.0.1"] }) } as never,
      allowPrivateNetwork: false,
    });
    const explorers = createExplorerTxList({ pinned: (url) => pinned.fetchJsonUrl(url) });
    const before = asked.length;
    for (const url of [`http://127.0.0.1:${server.port}/api`, `https://127.0.0.1:${server.port}/api`, "https://user:pw@explorer.example/api", "https://explorer.example/api"]) {
      expect({ url, answer: await explorers.txlist(url, WALLET, "embed") }).toEqual({ url, answer: { ok: false, reason: "blocked" } });
    }
    expect(asked.length).toBe(before);
    const seen: string[] = [];
    const fake = createExplorerTxList({
      pinned: (url) => {
        seen.push(url);
        return Promise.resolve({ status: "ok", url, document: { status: "1", result: [item] } } as DidDocumentFetch);
      },
    });
    expect((await fake.txlist("https://explorer.example/api", WALLET, "embed")).ok).toBe(true);
    expect(seen[0]).toStartWith("https://explorer.example/api?module=account&action=txlist");
  });
});
