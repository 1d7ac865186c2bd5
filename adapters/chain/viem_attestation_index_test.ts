import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { encodeSchemaData } from "../../domain/schema_data.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import { countingFetch } from "../../e2e/harness.ts";
import { easWriter } from "../../e2e/support/eas_writer.ts";
import { type RpcProxy, startRpcProxy } from "../../e2e/support/rpc_proxy.ts";
import type { HexString } from "../../ports/eas.ts";
import { type Devnet, startDevnet } from "../devnet/mod.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import {
  classify,
  createViemAttestationIndex,
  splitBatchOutput,
  splitRange,
  suggestedWidth,
  type ViemAttestationIndexOptions,
} from "./viem_attestation_index.ts";

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

  test("a query without fromBlock starts at the configured start block (the first eth_getLogs asks from it)", async () => {
    const start = seeded[2]!.block;
    const { index } = makeIndex({ viaProxy: true, startBlock: start });
    proxy.calls.length = 0;
    const logs = await index.attestedUids({ recipients: [R1, R2], schemaUids: [devnet.schemaUids["user-review"]!], toBlock: headAfterSeed });
    const first = proxy.calls.find((c) => c.method === "eth_getLogs")!;
    expect((first.params[0] as { fromBlock: string }).fromBlock).toBe(`0x${start.toString(16)}`);
    expect(logs.ok ? logs.value.map((l): string => l.uid) : false).toEqual(
      seeded.filter((s) => s.block >= start && s.schema === "user-review").map((s) => s.uid.toLowerCase()),
    );
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

  test("sixty attestations are one eth_call through the state-overridden batch reader, field for field what EAS returns", async () => {
    const R4 = "0x00000000000000000000000000000000000000a4" as Hex;
    const key = devnet.keys.users[2]!;
    const uids: Hex[] = [];
    for (let i = 0; i < 6; i++) {
      const batch = Array.from({ length: 10 }, (_, j) => ({ recipient: R4, data: review(`did:web:r${i}-${j}.example`), revocable: false }));
      uids.push(...await writer.multiAttest(key, devnet.schemaUids["user-review"]!, batch));
    }
    const head = await writer.client.getBlockNumber({ cacheTime: 0 });
    const { index, rpc } = makeIndex({ viaProxy: true });
    proxy.calls.length = 0;
    const read = await index.attestations(uids, head);
    expect(rpc.methods()).toEqual(["eth_call"]);
    // The call carries the block and installs the reader's code by state override.
    expect(proxy.calls[0]!.params[1]).toBe(`0x${head.toString(16)}`);
    expect(Object.values(proxy.calls[0]!.params[2] as Record<string, { code: string }>)[0]!.code).toMatch(/^0x60/);
    const direct = await Promise.all(
      uids.map((uid) => writer.client.readContract({ address: devnet.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [uid], blockNumber: head })),
    );
    expect(read).toEqual({
      ok: true,
      value: direct.map((a) => ({
        uid: a.uid.toLowerCase() as Hex,
        schema: a.schema.toLowerCase() as Hex,
        time: a.time,
        expirationTime: a.expirationTime,
        revocationTime: a.revocationTime,
        refUID: a.refUID,
        recipient: a.recipient,
        attester: a.attester,
        revocable: a.revocable,
        data: a.data,
      })),
    });
  });

  test("a node that refuses state overrides is read deployless, from then on without trying again", async () => {
    proxy.calls.length = 0;
    proxy.onCall = (call) =>
      call.method === "eth_call" && call.params.length > 2 ? { code: -32602, message: "too many arguments, want at most 2" } : undefined;
    const events: string[] = [];
    const { index } = makeIndex({ viaProxy: true, log: (event) => events.push(event) });
    const uids = seeded.map((s) => s.uid);
    const first = await index.attestations(uids, headAfterSeed);
    expect(first.ok ? first.value.map((a): string => a.uid) : false).toEqual(uids.map((u) => u.toLowerCase()));
    expect(events).toEqual(["state_override_unsupported"]);
    proxy.calls.length = 0;
    expect(await index.attestations(uids, headAfterSeed)).toEqual(first);
    expect(proxy.calls.map((c) => [c.method, c.params.length])).toEqual([["eth_call", 2]]);
    proxy.onCall = undefined;
  });

  test("a node that ignores state overrides (the call answers empty) is read deployless too", async () => {
    proxy.calls.length = 0;
    proxy.onHttp = (calls) =>
      calls.every((c) => c.method === "eth_call" && c.params.length > 2)
        ? Response.json(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, result: "0x" })))
        : undefined;
    const events: string[] = [];
    const { index } = makeIndex({ viaProxy: true, log: (event) => events.push(event) });
    const uids = seeded.map((s) => s.uid);
    const read = await index.attestations(uids, headAfterSeed);
    proxy.onHttp = undefined;
    expect(read.ok ? read.value.map((a): string => a.uid) : false).toEqual(uids.map((u) => u.toLowerCase()));
    expect(events).toEqual(["state_override_unsupported"]);
  });

  test("a batch the node runs out of gas on is halved, not given up, and overrides stay in use", async () => {
    proxy.calls.length = 0;
    // More than two uids in one batch-reader call (4 words of calldata) runs out of gas.
    const uidsIn = (call: { params: unknown[] }) => ((call.params[0] as { data: string }).data.length - 2) / 64 - 2;
    proxy.onCall = (call) =>
      call.method === "eth_call" && call.params.length > 2 && uidsIn(call) > 2 ? { code: -32000, message: "out of gas" } : undefined;
    const events: string[] = [];
    const { index } = makeIndex({ viaProxy: true, log: (event) => events.push(event) });
    const uids = seeded.map((s) => s.uid);
    const read = await index.attestations(uids, headAfterSeed);
    proxy.onCall = undefined;
    expect(read.ok ? read.value.map((a): string => a.uid) : false).toEqual(uids.map((u) => u.toLowerCase()));
    expect(events).toEqual([]);
    // No deployless call (those have no `to`): the batch reader for the halves, a plain call for single uids.
    expect(proxy.calls.filter((c) => c.method === "eth_call").every((c) => typeof (c.params[0] as { to?: unknown }).to === "string")).toBe(true);
  });

  test("many uids split over several multicalls still travel in one HTTP request, each call pinned", async () => {
    const { index, rpc } = makeIndex({ viaProxy: true, multicallSize: 2 });
    proxy.calls.length = 0;
    const read = await index.attestations(seeded.map((s) => s.uid), headAfterSeed);
    expect(read.ok).toBe(true);
    expect(rpc.trips()).toEqual([["eth_call", "eth_call", "eth_call"]]);
    for (const call of proxy.calls) expect(call.params[1]).toBe(`0x${headAfterSeed.toString(16)}`);
  });

  test("deployless: a batch whose return data would exceed the size cap is split, down to one plain eth_call for a huge attestation", async () => {
    const R3 = "0x00000000000000000000000000000000000000a3" as Hex;
    const key = devnet.keys.users[1]!;
    const schema = devnet.schemaUids["user-review"]!;
    const small = await writer.multiAttest(key, schema, Array.from({ length: 30 }, () => ({ recipient: R3, data: review("did:web:small"), revocable: false })));
    const huge = await writer.attest(key, schema, { recipient: R3, data: review(`did:web:${"x".repeat(25_000)}`), revocable: false });
    const head = await writer.client.getBlockNumber({ cacheTime: 0 });
    // The batch reader has no size cap: the same 31 are one call.
    const overridden = makeIndex();
    expect((await overridden.index.attestations([...small, huge.uid], head)).ok).toBe(true);
    expect(overridden.rpc.methods()).toEqual(["eth_call"]);
    const { index, rpc } = makeIndex({ stateOverride: false });
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
    // Every request is held until the read gave up: only its timeout can end it (no wall-clock bound to race).
    const held: (() => void)[] = [];
    proxy.onHttp = () => new Promise<undefined>((resolve) => held.push(() => resolve(undefined)));
    const { index } = makeIndex({ viaProxy: true, timeoutMs: 100, retries: 1 });
    expect(await index.attestations([seeded[0]!.uid], headAfterSeed)).toEqual({ ok: false, reason: "timeout" });
    expect(held.length).toBeGreaterThanOrEqual(1);
    reset();
    for (const release of held) release();
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

describe("batch reader output", () => {
  test("splitBatchOutput() reads length-prefixed return data and refuses anything else", () => {
    const word = (n: number) => n.toString(16).padStart(64, "0");
    const output = `0x${word(32)}${"ab".repeat(32)}${word(0)}${word(64)}${"cd".repeat(64)}` as Hex;
    expect(splitBatchOutput(output, 3)).toEqual([`0x${"ab".repeat(32)}`, "0x", `0x${"cd".repeat(64)}`]);
    expect(() => splitBatchOutput(output, 2)).toThrow();
    expect(() => splitBatchOutput(`0x${word(64)}${"ab".repeat(32)}` as Hex, 1)).toThrow();
    expect(splitBatchOutput("0x", 0)).toEqual([]);
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
