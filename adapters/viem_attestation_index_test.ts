import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { countingFetch } from "../e2e/harness.ts";
import { easWriter } from "../e2e/support/eas_writer.ts";
import { type RpcProxy, startRpcProxy } from "../e2e/support/rpc_proxy.ts";
import type { HexString } from "../ports/eas.ts";
import { type Devnet, startDevnet } from "./devnet/mod.ts";
import { classify, createViemAttestationIndex, splitRange, suggestedWidth, type ViemAttestationIndexOptions } from "./viem_attestation_index.ts";

let devnet: Devnet;
let dir: string;
let proxy: RpcProxy;
let writer: ReturnType<typeof easWriter>;
const R1 = "0x00000000000000000000000000000000000000a1" as Hex;
const R2 = "0x00000000000000000000000000000000000000a2" as Hex;
const seeded: { uid: Hex; recipient: Hex; schema: string; block: bigint }[] = [];
let headAfterSeed: bigint;

const review = (subject: string) =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, {
    subject,
    version: "1",
    ratingValue: 5,
    reviewBody: "ok",
    screenshotUrls: [],
    proofs: [],
  }) as { value: Hex }).value;
const witness = (subject: string) =>
  (encodeSchemaData(findSchemaByName("controller-witness")!.schema, {
    subject,
    controller: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001",
    method: "dns-txt",
    observedAt: 1,
  }) as { value: Hex }).value;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ats-index-"));
  devnet = await startDevnet({ dataDir: dir, persist: false });
  proxy = startRpcProxy(devnet.rpcUrl);
  writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress });
  const key = devnet.keys.users[0]!;
  const plan: [Hex, string, Hex][] = [
    [R1, "user-review", review("did:web:a")],
    [R1, "controller-witness", witness("did:web:a")],
    [R2, "user-review", review("did:web:b")],
    [R1, "user-review", review("did:web:c")],
    [R2, "controller-witness", witness("did:web:d")],
  ];
  for (const [recipient, schema, data] of plan) {
    const { uid, blockNumber } = await writer.attest(key, devnet.schemaUids[schema]!, { recipient, data, revocable: false });
    seeded.push({ uid, recipient, schema, block: blockNumber });
  }
  headAfterSeed = await writer.client.getBlockNumber({ cacheTime: 0 });
});

afterAll(async () => {
  await proxy?.stop();
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function makeIndex(options: Partial<ViemAttestationIndexOptions> & { viaProxy?: boolean } = {}) {
  const rpc = countingFetch();
  const index = createViemAttestationIndex({
    rpcUrl: options.viaProxy ? proxy.url : devnet.rpcUrl,
    chainId: devnet.chainId,
    easAddress: devnet.easAddress,
    startBlock: devnet.deployBlock,
    fetchFn: rpc.fetch,
    retryDelayMs: 5,
    ...options,
  });
  return { index, rpc };
}

const uidsFor = (recipients: Hex[], schemas: string[]): string[] =>
  seeded.filter((s) => recipients.includes(s.recipient) && schemas.includes(s.schema)).map((s) => s.uid.toLowerCase());

describe("viem attestation index on Anvil", () => {
  test("latestBlock, and schema strings read from the SchemaRegistry; an unknown UID is not registered", async () => {
    const { index } = makeIndex();
    const head = await index.latestBlock();
    expect(head).toEqual({ ok: true, value: headAfterSeed });
    const unknown = `0x${"12".repeat(32)}` as HexString;
    const records = await index.schemaRecords([devnet.schemaUids["user-review"]!, unknown], headAfterSeed);
    expect(records).toEqual({
      ok: true,
      value: [
        { uid: devnet.schemaUids["user-review"]!, registered: true, schema: findSchemaByName("user-review")!.schema, revocable: false },
        { uid: unknown, registered: false },
      ],
    });
  });

  test("one eth_getLogs filters by the OR-list of recipients and of schemas", async () => {
    const { index, rpc } = makeIndex();
    const schemas = ["user-review", "controller-witness"];
    const logs = await index.attestedUids({
      recipients: [R1],
      schemaUids: schemas.map((s) => devnet.schemaUids[s]!),
      toBlock: headAfterSeed,
    });
    expect(logs.ok ? logs.value.map((l): string => l.uid) : false).toEqual(uidsFor([R1], schemas));
    const both = await index.attestedUids({ recipients: [R1, R2], schemaUids: [devnet.schemaUids["controller-witness"]!], toBlock: headAfterSeed });
    expect(both.ok ? both.value.map((l): string => l.uid) : false).toEqual(uidsFor([R1, R2], ["controller-witness"]));
    expect(both.ok && both.value[0]).toMatchObject({ recipient: R1, schemaUid: devnet.schemaUids["controller-witness"]!.toLowerCase() });
    expect(rpc.methods()).toEqual(["eth_getLogs", "eth_getLogs"]);
  });

  test("logs stop at the pinned block", async () => {
    const { index } = makeIndex();
    const third = seeded[2]!.block;
    const logs = await index.attestedUids({ recipients: [R1, R2], schemaUids: [devnet.schemaUids["user-review"]!], toBlock: third });
    expect(logs.ok ? logs.value.map((l): string => l.uid) : false).toEqual(seeded.slice(0, 3).filter((s) => s.schema === "user-review").map((s) => s.uid.toLowerCase()));
  });

  test("attestations come back in order, in one round trip and one eth_call, pinned to the block", async () => {
    const { index, rpc } = makeIndex();
    const uids = seeded.map((s) => s.uid);
    const read = await index.attestations(uids, headAfterSeed);
    expect(read.ok ? read.value.map((a): string => a.uid) : false).toEqual(uids.map((u) => u.toLowerCase()));
    expect(read.ok && read.value[0]).toMatchObject({ recipient: expect.stringMatching(/^0x0+a1$/i), revocationTime: 0n, expirationTime: 0n });
    expect(rpc.trips()).toEqual([["eth_call"]]);
  });

  test("many uids split over several multicalls still travel in one HTTP request, each call pinned", async () => {
    const { index, rpc } = makeIndex({ viaProxy: true, multicallSize: 2 });
    proxy.calls.length = 0;
    const read = await index.attestations(seeded.map((s) => s.uid), headAfterSeed);
    expect(read.ok).toBe(true);
    expect(rpc.trips()).toEqual([["eth_call", "eth_call", "eth_call"]]);
    for (const call of proxy.calls) expect(call.params[1]).toBe(`0x${headAfterSeed.toString(16)}`);
  });

  test("a batch whose return data would exceed the deployless size cap is split, down to one plain eth_call for a huge attestation", async () => {
    const R3 = "0x00000000000000000000000000000000000000a3" as Hex;
    const key = devnet.keys.users[1]!;
    const schema = devnet.schemaUids["user-review"]!;
    const small = await writer.multiAttest(key, schema, Array.from({ length: 30 }, () => ({ recipient: R3, data: review("did:web:small"), revocable: false })));
    const huge = await writer.attest(key, schema, { recipient: R3, data: review(`did:web:${"x".repeat(25_000)}`), revocable: false });
    const head = await writer.client.getBlockNumber({ cacheTime: 0 });
    const { index, rpc } = makeIndex();
    const uids = [...small, huge.uid];
    const read = await index.attestations(uids, head);
    expect(read.ok ? read.value.map((a): string => a.uid) : false).toEqual(uids.map((u) => u.toLowerCase()));
    expect(read.ok && read.value.at(-1)!.data.length).toBeGreaterThan(50_000);
    expect(rpc.methods().every((m) => m === "eth_call")).toBe(true);
    expect(rpc.methods().length).toBeLessThan(20);
    // The sizes seen are remembered: the next read of the small ones needs no split.
    rpc.reset();
    expect((await index.attestations(small, head)).ok).toBe(true);
    expect(rpc.roundTrips()).toBe(1);
  });

  test("a uid that does not exist at the pinned block is `inconsistent` after bounded retries, never dropped", async () => {
    const { index, rpc } = makeIndex({ retries: 2 });
    const last = seeded.at(-1)!;
    const read = await index.attestations([seeded[0]!.uid, last.uid], last.block - 1n);
    expect(read).toEqual({ ok: false, reason: "inconsistent" });
    expect(rpc.roundTrips()).toBe(3);
  });
});

describe("viem attestation index faults (proxy in front of Anvil)", () => {
  const schemaUids = () => ["user-review", "controller-witness"].map((s) => devnet.schemaUids[s]!);
  const reset = () => {
    proxy.onCall = undefined;
    proxy.onHttp = undefined;
    proxy.calls.length = 0;
  };

  test("a refused range is split in halves until accepted, with the same logs as an unlimited provider; the width is remembered", async () => {
    reset();
    const width = (call: { params: unknown[] }) => {
      const filter = call.params[0] as { fromBlock: string; toBlock: string };
      return BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n;
    };
    proxy.onCall = (call) =>
      call.method === "eth_getLogs" && width(call) > 3n
        ? { code: -32000, message: "block range too large" }
        : undefined;
    const { index } = makeIndex({ viaProxy: true });
    const query = { recipients: [R1, R2], schemaUids: schemaUids(), toBlock: headAfterSeed };
    const logs = await index.attestedUids(query);
    expect(logs.ok ? logs.value.map((l): string => l.uid) : false).toEqual(uidsFor([R1, R2], ["user-review", "controller-witness"]));
    const refused = proxy.calls.filter((c) => c.method === "eth_getLogs" && width(c) > 3n).length;
    expect(refused).toBeGreaterThan(0);
    proxy.calls.length = 0;
    const again = await index.attestedUids(query);
    expect(again).toEqual(logs);
    expect(proxy.calls.every((c) => width(c) <= 3n)).toBe(true);
    reset();
  });

  test("an Infura-style refusal with a suggested range uses that range", async () => {
    reset();
    const from = devnet.deployBlock;
    proxy.onCall = (call) => {
      const filter = call.params[0] as { fromBlock: string; toBlock: string };
      const a = BigInt(filter.fromBlock);
      const b = BigInt(filter.toBlock);
      if (call.method !== "eth_getLogs" || b - a < 2n) return undefined;
      return { code: -32005, message: `query returned more than 10000 results. Try with this block range [0x${a.toString(16)}, 0x${(a + 1n).toString(16)}].` };
    };
    const { index } = makeIndex({ viaProxy: true });
    const logs = await index.attestedUids({ recipients: [R1, R2], schemaUids: schemaUids(), toBlock: headAfterSeed, fromBlock: from });
    expect(logs.ok ? logs.value.map((l): string => l.uid) : false).toEqual(uidsFor([R1, R2], ["user-review", "controller-witness"]));
    reset();
  });

  test("a provider that refuses even one block is range-too-large", async () => {
    reset();
    proxy.onCall = (call) => (call.method === "eth_getLogs" ? { code: -32602, message: "exceed maximum block range: 0" } : undefined);
    const { index } = makeIndex({ viaProxy: true, logConcurrency: 8 });
    const logs = await index.attestedUids({ recipients: [R1], schemaUids: schemaUids(), toBlock: headAfterSeed });
    expect(logs).toEqual({ ok: false, reason: "range-too-large" });
    reset();
  });

  test("5xx is retried a bounded number of times, then rpc-error; one 5xx then success recovers", async () => {
    reset();
    proxy.onHttp = () => new Response("upstream down", { status: 503 });
    const { index, rpc } = makeIndex({ viaProxy: true, retries: 2 });
    expect(await index.latestBlock()).toEqual({ ok: false, reason: "rpc-error" });
    expect(rpc.roundTrips()).toBe(3);
    let failures = 1;
    proxy.onHttp = () => (failures-- > 0 ? new Response("busy", { status: 502 }) : undefined);
    expect(await index.latestBlock()).toEqual({ ok: true, value: await writer.client.getBlockNumber({ cacheTime: 0 }) });
    reset();
  });

  test("a node that does not answer in time is a timeout", async () => {
    reset();
    proxy.onHttp = async () => {
      await Bun.sleep(400);
      return undefined;
    };
    const { index } = makeIndex({ viaProxy: true, timeoutMs: 100, retries: 1 });
    const started = performance.now();
    expect(await index.attestations([seeded[0]!.uid], headAfterSeed)).toEqual({ ok: false, reason: "timeout" });
    expect(performance.now() - started).toBeLessThan(2_000);
    reset();
  });

  test("a JSON-RPC error on eth_call is rpc-error; a dead port is rpc-error", async () => {
    reset();
    proxy.onCall = (call) => (call.method === "eth_call" ? { code: -32000, message: "header not found" } : undefined);
    const { index } = makeIndex({ viaProxy: true, retries: 1 });
    expect(await index.attestations([seeded[0]!.uid], headAfterSeed)).toEqual({ ok: false, reason: "rpc-error" });
    reset();
    const dead = createViemAttestationIndex({
      rpcUrl: "http://127.0.0.1:9",
      chainId: devnet.chainId,
      easAddress: devnet.easAddress,
      startBlock: 0n,
      retries: 1,
      retryDelayMs: 1,
    });
    expect(await dead.latestBlock()).toEqual({ ok: false, reason: "rpc-error" });
  });
});

describe("range helpers", () => {
  test("splitRange() covers the range exactly", () => {
    expect(splitRange(10n, 20n, null)).toEqual([[10n, 20n]]);
    expect(splitRange(10n, 20n, 4n)).toEqual([[10n, 13n], [14n, 17n], [18n, 20n]]);
    expect(splitRange(5n, 5n, 1n)).toEqual([[5n, 5n]]);
  });

  test("suggestedWidth() reads a range that starts where we asked", () => {
    expect(suggestedWidth("Try with this block range [0x10, 0x1f].", 16n, 100n)).toBe(16n);
    expect(suggestedWidth("this block range should work: [0x11, 0x1f]", 16n, 100n)).toBeUndefined();
    expect(suggestedWidth("no range here", 16n, 100n)).toBeUndefined();
  });

  test("classify() recognises common provider refusals only for log queries", () => {
    const texts = [
      "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size",
      "query returned more than 10000 results",
      "eth_getLogs is limited to a 10,000 range",
      "block range is too wide",
      "Block range limit exceeded.",
      "exceed maximum block range: 50000",
    ];
    for (const text of texts) {
      const error = Object.assign(new Error("RPC Request failed."), { details: text });
      expect(classify(error, true).kind).toBe("range");
      expect(classify(error, false).kind).toBe("transient");
    }
    expect(classify(Object.assign(new Error("x"), { details: "execution reverted", code: 3 }), true).kind).toBe("fatal");
  });
});
