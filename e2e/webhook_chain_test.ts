/**
 * Webhook events name their chain (decisions §30), end to end: the real service on Anvil with EAS writes the outbox
 * row of an attestation (its chain id and EAS in the row), and the delivery a receiver on loopback gets carries
 * `chain {chainId, caip2, easContract}`, verified with the official `standardwebhooks` package. A second instance on
 * the same database serves both chains of a two-chain devnet: an attestation on the second chain is told with it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Hex } from "viem";
import { Webhook } from "standardwebhooks";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";
import { type Stack, startStack } from "./harness.ts";
import { easWriter } from "./support/eas_writer.ts";
import { signInCookie } from "./support/sign_in.ts";
import { waitFor } from "./support/wait_for.ts";

const linked = findSchemaByName("linked-identifier")!;
const LINKED_UID = computeSchemaUid(linked) as Hex;
const SUBJECT = "did:web:chain-events.example";

type Received = { headers: Record<string, string>; body: string };
const received: Received[] = [];
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    received.push({ headers, body: await request.text() });
    return new Response("ok");
  },
});

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    devnet: { chains: 2 },
    env: { SIWE_DOMAINS: "app.test", SIWE_CHALLENGE_RATE_PER_MINUTE: "1000", ALLOW_PRIVATE_NETWORK: "true", WEBHOOK_CONFIRMATIONS: "0", WEBHOOK_POLL_MS: "50" },
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  receiver.stop(true);
});

describe("webhook events carry chain (decisions §30)", () => {
  test("attestation.created and attestation.revoked name the devnet's chain and EAS contract", async () => {
    const cookie = await signInCookie(stack.baseUrl, stack.devnet.keys.users[1] as Hex);
    const res = await fetch(`${stack.baseUrl}/api/private/webhooks`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ["attestation.created", "attestation.revoked"], subjects: [SUBJECT] }),
    });
    expect(res.status).toBe(201);
    const { secret } = await res.json() as { secret: string };

    const writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
    const attester = stack.devnet.keys.users[0] as Hex;
    const data = encodeSchemaData(linked.schema, { subject: SUBJECT, linkedId: "did:web:other.example", proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 });
    const recipient = didToAddress(SUBJECT);
    if (!data.ok || !recipient.ok) throw new Error("unreachable");
    const { uid } = await writer.attest(attester, LINKED_UID, { recipient: recipient.value as Hex, data: data.value as Hex, revocable: true });
    await stack.sync();
    await writer.revoke(attester, LINKED_UID, uid);
    await stack.sync();

    const payloadOf = async (type: string) => {
      const got = await waitFor(type, () => received.find((r) => (JSON.parse(r.body) as { type: string }).type === type));
      return new Webhook(secret).verify(got.body, got.headers) as { data: { uid: string; chain: unknown } };
    };
    const chain = { chainId: 31337, caip2: "eip155:31337", easContract: stack.devnet.easAddress.toLowerCase() };
    for (const type of ["attestation.created", "attestation.revoked"]) {
      const payload = await payloadOf(type);
      expect(payload.data.uid).toBe(uid.toLowerCase());
      expect(payload.data.chain).toEqual(chain);
    }

    // Decisions §30: an instance serving both chains (CHAINS_FILE) tells the second chain's attestation with its chain;
    // the first instance, which follows only the default chain, leaves that row to it.
    const second = stack.devnet.chains[1]!;
    const chainsFile = join(stack.dir, "chains.json");
    writeFileSync(chainsFile, JSON.stringify(stack.devnet.chains.map((c) => ({ caip2: c.caip2, rpcUrl: c.rpcUrl, role: "attestations" }))));
    // Chain 31338 is not a devnet id to the raw-key rule (decisions §27): its raw keys need ALLOW_RAW_KEYS.
    const both = await stack.restartService({ CHAINS_FILE: chainsFile, RPC_URL: "", ALLOW_RAW_KEYS: "true" });
    const writerB = easWriter({ rpcUrl: second.rpcUrl, easAddress: second.easAddress });
    // Data of its own: the two devnets share the EAS address, so the same attestation in the same second has the same uid.
    const dataB = encodeSchemaData(linked.schema, { subject: SUBJECT, linkedId: "did:web:chain-b.example", proofs: [], issuedAt: 2, effectiveAt: 2, expiresAt: 0 });
    if (!dataB.ok) throw new Error("unreachable");
    const onB = await writerB.attest(attester, LINKED_UID, { recipient: recipient.value as Hex, data: dataB.value as Hex, revocable: true });
    expect(onB.uid).not.toBe(uid);
    expect(await both.index.catchUp()).toBe(true);
    const got = await waitFor("attestation.created on chain B", () =>
      received.find((r) => (JSON.parse(r.body) as { data: { uid: string } }).data.uid === onB.uid.toLowerCase()));
    const payload = new Webhook(secret).verify(got.body, got.headers) as { type: string; data: { chain: unknown } };
    expect(payload.type).toBe("attestation.created");
    expect(payload.data.chain).toEqual({ chainId: second.chainId, caip2: second.caip2, easContract: second.easAddress.toLowerCase() });
  }, 120_000);
});
