/**
 * The private relay's keys and turns (decisions §23, §12), found by attack, on the real service over Anvil:
 * - a malformed body or a refused batch under an `Idempotency-Key` is answered inside the keyed run, so its 400 is
 *   kept: the retry is the stored answer and another body under the key is 422 (before, the other body ran and mined);
 * - an account's writes and nonce reads take turns before any JSON-RPC call or stored key (before, a throwaway
 *   account's refused batches under fresh keys stored 5 KB each without bound, and each nonce read was an eth_call).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";
import { signedLinkedIdentifier } from "./support/linked_identifier.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
const SINGLE = "/api/private/relay/eas/delegated-attest";
const BATCH = "/api/private/relay/eas/delegated-attest/batch";
const NONCE = "/api/private/relay/eas/nonce";
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      FREE_PLAN_SCHEMAS: "*",
      PRIVATE_RELAY_ACCOUNT_RATE_PER_MINUTE: "8",
      NONCE_RATE_PER_MINUTE: "3",
    },
  });
}, 180_000);
afterAll(async () => await stack?.stop());

async function call(method: string, path: string, cookie: string, body?: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.baseUrl}${path}`, { method, headers: { origin: APP, cookie, "content-type": "application/json", ...headers }, body });
  return { status: res.status, body: await res.json() as Record<string, any>, replayed: res.headers.get("idempotent-replayed"), retryAfter: res.headers.get("retry-after") };
}

/** A linked identifier the signed-in wallet signs about itself, as a relay body. */
const linked = async (key: Hex, linkedId: string) => JSON.stringify(await signedLinkedIdentifier(stack, key, linkedId));

const keyRows = (accountScope: string) => {
  const db = new Database(join(stack.dir, "ats.sqlite"), { readonly: true });
  try {
    return db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM idempotency_keys WHERE scope = ?").get(accountScope)!.n;
  } finally {
    db.close();
  }
};

test("a malformed body, or a refused batch, under a key is kept: the retry is replayed, another body under the key is 422", async () => {
  const key = generatePrivateKey();
  const cookie = await signInCookie(stack.baseUrl, key, { origin: APP });
  const single = crypto.randomUUID();
  const first = await call("POST", SINGLE, cookie, "{not json", { "idempotency-key": single });
  const retry = await call("POST", SINGLE, cookie, "{not json", { "idempotency-key": single });
  expect([first.status, first.body.code, retry.status, retry.replayed]).toEqual([400, "INVALID_JSON", 400, "true"]);
  const other = await call("POST", SINGLE, cookie, await linked(key, "did:web:one.test"), { "idempotency-key": single });
  expect([other.status, other.body.code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);

  const batch = crypto.randomUUID();
  const empty = await call("POST", BATCH, cookie, JSON.stringify({ requests: [] }), { "idempotency-key": batch });
  const again = await call("POST", BATCH, cookie, JSON.stringify({ requests: [] }), { "idempotency-key": batch });
  expect([empty.status, empty.body.code, again.status, again.replayed]).toEqual([400, "INVALID_INPUT", 400, "true"]);
  const real = await call("POST", BATCH, cookie, JSON.stringify({ requests: [JSON.parse(await linked(key, "did:web:two.test"))] }), { "idempotency-key": batch });
  expect([real.status, real.body.code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
  // A batch body that is not JSON too (found by review).
  const broken = crypto.randomUUID();
  const notJson = await call("POST", BATCH, cookie, "{not json", { "idempotency-key": broken });
  const later = await call("POST", BATCH, cookie, JSON.stringify({ requests: [JSON.parse(await linked(key, "did:web:two.test"))] }), { "idempotency-key": broken });
  expect([notJson.status, notJson.body.code, later.status, later.body.code]).toEqual([400, "INVALID_JSON", 422, "IDEMPOTENCY_KEY_REUSED"]);
}, 60_000);

test("an account's writes and nonce reads take turns before any JSON-RPC call or stored key; another account has its own", async () => {
  const key = generatePrivateKey();
  const cookie = await signInCookie(stack.baseUrl, key, { origin: APP });
  const me = (await call("GET", "/api/private/accounts/me", cookie)).body as { account: { id: string } };
  const scope = `account:${me.account.id}`;
  const refusedBatch = JSON.stringify({ requests: Array.from({ length: 50 }, () => ({})) });
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) statuses.push((await call("POST", BATCH, cookie, refusedBatch, { "idempotency-key": `fresh-${i}` })).status);
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200]);
  expect(keyRows(scope)).toBe(8);
  stack.rpc.reset();
  const past = await call("POST", BATCH, cookie, refusedBatch, { "idempotency-key": "fresh-8" });
  expect([past.status, past.body.code, Number(past.retryAfter) > 0]).toEqual([429, "RATE_LIMITED", true]);
  const single = await call("POST", SINGLE, cookie, await linked(key, "did:web:three.test"));
  expect([single.status, single.body.code]).toEqual([429, "RATE_LIMITED"]);
  // A retry its key answers gets its kept answer even at the limit (found by review: it was 429, its turn taken first).
  const retry = await call("POST", BATCH, cookie, refusedBatch, { "idempotency-key": "fresh-0" });
  expect([retry.status, retry.replayed]).toEqual([200, "true"]);
  // Not kept (decisions §23: a 429 is not stored), and no call reached the node.
  expect(keyRows(scope)).toBe(8);
  expect(stack.rpc.methods()).toEqual([]);

  const address = privateKeyToAccount(key).address;
  const nonces: number[] = [];
  for (let i = 0; i < 4; i++) nonces.push((await call("GET", `${NONCE}?attester=${address}`, cookie)).status);
  expect(nonces).toEqual([200, 200, 200, 429]);
  expect(stack.rpc.methods().filter((m) => m === "eth_call")).toHaveLength(3);

  // Another account's turns are its own.
  const other = generatePrivateKey();
  const otherCookie = await signInCookie(stack.baseUrl, other, { origin: APP });
  const written = await call("POST", SINGLE, otherCookie, await linked(other, "did:web:four.test"));
  expect([written.status, written.body.success]).toEqual([200, true]);
}, 60_000);
