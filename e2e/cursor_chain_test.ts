/**
 * A list cursor stays bound to its chain when the default chain changes (decisions §30: "its cursor is bound to it").
 * The service runs as an operator runs it (`bun main.ts`, the embedded devnet with `DEVNET_CHAINS=2`, one data
 * directory), is stopped, and starts again with `DEFAULT_CHAIN` set to the second chain. Before, the default chain's
 * cursors were checked under the deployment's first key and another chain's under a key of its own: the restart moved
 * the first key to the new default, which then took the old default's cursors (a page of one chain's positions read on
 * another), and the old default refused its own.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { easWriter } from "./support/eas_writer.ts";
import { startServiceProcess } from "./support/service_process.ts";
import { waitFor } from "./support/wait_for.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-cursor-chain-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** Anvil's account 6: funded on both devnet chains, used by no other test of this file. */
const KEY = "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e" as Hex;
const LINKED = findSchemaByName("linked-identifier")!;
const SUBJECT = "did:web:cursor-chain.example";
const env = { HOME: dir, DATA_DIR: join(dir, "data"), PORT: "0", LOG_LEVEL: "error", DEVNET_CHAINS: "2" };

const listed = (url: string, chain: number, cursor?: string) =>
  fetch(`${url}/v1/attestations?attester=${privateKeyToAccount(KEY).address.toLowerCase()}&limit=1&chain=${chain}${cursor === undefined ? "" : `&cursor=${cursor}`}`);

test("a cursor of one chain is refused on another before and after DEFAULT_CHAIN changes, and stays good on its own", async () => {
  const first = await startServiceProcess(env, 90_000);
  let cursor: string;
  try {
    await waitFor("the first start to be ready", async () => ((await fetch(`${first.url}/readyz`)).status === 200 ? true : undefined));
    const rpcUrl = /devnet RPC (\S+)/.exec(first.banner)![1]!;
    const anchors = await (await fetch(`${first.url}/v1/trust-anchors`)).json() as { chains: Record<string, { easContract: Hex; schemas: Record<string, Hex> }> };
    const chainA = anchors.chains["eip155:31337"]!;
    const writer = easWriter({ rpcUrl, easAddress: chainA.easContract });
    const recipient = (didToAddress(SUBJECT) as { value: Hex }).value;
    for (const n of [1n, 2n, 3n]) {
      const data = (encodeSchemaData(LINKED.schema, { subject: SUBJECT, linkedId: `did:web:l${n}.example`, proofs: [], issuedAt: n, effectiveAt: 0n, expiresAt: 0n }) as { value: Hex }).value;
      await writer.attest(KEY, chainA.schemas["linked-identifier"]!, { recipient, data, revocable: true });
    }
    cursor = await waitFor("the writes to be listed", async () => {
      const page = await (await listed(first.url, 31337)).json() as { nextCursor?: string | null };
      return page.nextCursor ?? undefined;
    });
    expect((await listed(first.url, 31338, cursor)).status).toBe(400);
    expect((await listed(first.url, 31337, cursor)).status).toBe(200);
  } finally {
    await first.stop();
  }

  const second = await startServiceProcess({ ...env, DEFAULT_CHAIN: "31338" }, 90_000);
  try {
    await waitFor("the second start to be ready", async () => ((await fetch(`${second.url}/readyz`)).status === 200 ? true : undefined));
    const elsewhere = await listed(second.url, 31338, cursor);
    expect([elsewhere.status, (await elsewhere.json() as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
    // Its own chain still takes it: the next page of the same query.
    const own = await listed(second.url, 31337, cursor);
    expect(own.status).toBe(200);
    expect((await own.json() as { items: unknown[] }).items).toHaveLength(1);
  } finally {
    await second.stop();
  }
}, 240_000);
