/**
 * Each chain's webhooks at its own depth (decisions §22, §30): two attestation chains, A (the default) with
 * `confirmations: 0` and B with `confirmations: 2`, `WEBHOOK_CONFIRMATIONS` unset. An attestation at B's head is
 * indexed at once (the list shows it) but is not an event until two blocks cover it. Before, every chain's webhooks used
 * the default chain's depth: B's attestation was an event at depth 0, for a block that could still be reorganized away.
 *
 * Nothing here waits for something not to happen: two test events, one after the other was received, mark a
 * webhook round that began after the attestation was indexed (a round fans events out before it claims deliveries).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { easWriter } from "./support/eas_writer.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { signInCookie } from "./support/sign_in.ts";
import { startThreeChains, type ThreeChains } from "./support/three_chains.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-webhook-depth-"));
const linked = findSchemaByName("linked-identifier")!;
const SUBJECT = "did:web:depth.example";
let three: ThreeChains;
let service: ServiceProcess;
const received: { type: string; uid?: string }[] = [];
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const event = await request.json() as { type: string; data?: { uid?: string } };
    received.push({ type: event.type, uid: event.data?.uid });
    return new Response("ok");
  },
});

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
  const [a, b] = three.chains;
  const chainsFile = join(dir, "chains.json");
  writeFileSync(chainsFile, JSON.stringify([
    { caip2: a.caip2, rpcUrl: a.rpcUrl, role: "attestations", confirmations: 0 },
    { caip2: b.caip2, rpcUrl: b.rpcUrl, role: "attestations", confirmations: 2 },
  ]));
  service = await startServiceProcess({
    PORT: "0",
    CHAINS_FILE: chainsFile,
    TRUST_ANCHORS_PATH: three.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: three.keys.delegate,
    WITNESS_PRIVATE_KEY: three.keys.witness,
    ALLOW_RAW_KEYS: "true",
    DATA_DIR: join(dir, "service"),
    INDEX_POLL_MS: "100",
    WEBHOOK_POLL_MS: "50",
    LOG_LEVEL: "error",
    SIWE_DOMAINS: "app.test",
    ALLOW_PRIVATE_NETWORK: "true",
    ...TEST_RELAY_LIMITS,
  }, 60_000);
}, 180_000);

afterAll(async () => {
  await service?.stop();
  receiver.stop(true);
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await Bun.sleep(50);
  }
  throw new Error(`never: ${what}`);
}

test("an attestation at chain B's head is listed at once, and is an event only once B's two confirmations cover it", async () => {
  const b = three.chains[1];
  const cookie = await signInCookie(service.url, three.keys.users[1] as Hex);
  const created = await fetch(`${service.url}/api/private/webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ["attestation.created"], subjects: [SUBJECT] }),
  });
  expect(created.status).toBe(201);
  const endpoint = (await created.json() as { id: string }).id;

  const data = encodeSchemaData(linked.schema, { subject: SUBJECT, linkedId: "did:web:other.example", proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 });
  const recipient = didToAddress(SUBJECT);
  if (!data.ok || !recipient.ok) throw new Error("unreachable");
  const writer = easWriter({ rpcUrl: b.nodeUrl, easAddress: b.easAddress! });
  const { uid } = await writer.attest(three.keys.users[0] as Hex, computeSchemaUid(linked) as Hex, { recipient: recipient.value as Hex, data: data.value as Hex, revocable: true });
  await until(async () => {
    const list = await (await fetch(`${service.url}/v1/attestations?subject=${SUBJECT}&chain=${b.caip2}`)).json() as { items?: { attestation: { uid: string } }[] };
    return list.items?.some((item) => item.attestation.uid.toLowerCase() === uid.toLowerCase()) ? true : undefined;
  }, "the attestation listed on B");

  // Two rounds after the attestation was indexed: had B's event been due, it would be among the deliveries now.
  for (let i = 0; i < 2; i++) {
    const before = received.filter((event) => event.type === "webhook.test").length;
    expect((await fetch(`${service.url}/api/private/webhooks/${endpoint}/test`, { method: "POST", headers: { cookie, "content-type": "application/json" }, body: "{}" })).status).toBe(202);
    await until(async () => (received.filter((event) => event.type === "webhook.test").length > before ? true : undefined), "a test event");
  }
  const deliveries = async () =>
    (await (await fetch(`${service.url}/api/private/webhooks/${endpoint}/deliveries`, { headers: { cookie } })).json() as { items: { type: string }[] }).items;
  expect((await deliveries()).map((delivery) => delivery.type).filter((type) => type !== "webhook.test")).toEqual([]);

  // Two blocks cover it on B: now it is an event.
  await fetch(b.nodeUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0x2"] }) });
  await until(async () => (received.some((event) => event.type === "attestation.created" && event.uid?.toLowerCase() === uid.toLowerCase()) ? true : undefined), "B's event");
}, 90_000);
