/**
 * Webhook slots are shared fairly between accounts (issue 43, decisions §22 "one slow receiver cannot stall the
 * others"): the real service on loopback with Anvil and EAS, real receivers on loopback. One account's endpoints whose
 * receiver holds every request (it never answers until the test ends) hold at most `WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT`
 * deliveries, and another account's test event is delivered while they are held. Nothing here depends on timing: the
 * assertions are on how many requests the receivers held, waited for as conditions.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { type Stack, startStack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";
import { waitFor } from "./support/wait_for.ts";

/** A receiver on loopback: paths under /slow/ are held open until `release()`, any other answers 200 at once. */
function startReceiver() {
  const held: (() => void)[] = [];
  const seen: string[] = [];
  let holding = 0;
  let mostHeld = 0;
  let released = false;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      await request.text();
      seen.push(path);
      if (!path.startsWith("/slow/") || released) return new Response("ok");
      holding++;
      mostHeld = Math.max(mostHeld, holding);
      await new Promise<void>((resolve) => {
        held.push(resolve);
        request.signal.addEventListener("abort", () => resolve());
      });
      holding--;
      return new Response("ok");
    },
  });
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    seen,
    holding: () => holding,
    mostHeld: () => mostHeld,
    release() {
      released = true;
      for (const resolve of held.splice(0)) resolve();
    },
    stop: () => server.stop(true),
  };
}

let stack: Stack;
let receiver: ReturnType<typeof startReceiver>;

beforeAll(async () => {
  receiver = startReceiver();
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      ALLOW_PRIVATE_NETWORK: "true",
      WEBHOOK_CONFIRMATIONS: "0",
      WEBHOOK_POLL_MS: "50",
      // Twelve slots on this instance; an account holds at most eight of them.
      WEBHOOK_MAX_IN_FLIGHT: "12",
      WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: "8",
    },
  });
}, 120_000);
afterAll(async () => {
  receiver?.release();
  await stack?.stop();
  receiver?.stop();
});

async function endpointOf(cookie: string, url: string): Promise<string> {
  const res = await fetch(`${stack.baseUrl}/api/private/webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ url, events: ["webhook.test"] }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function sendTest(cookie: string, id: string): Promise<void> {
  const res = await fetch(`${stack.baseUrl}/api/private/webhooks/${id}/test`, { method: "POST", headers: { "content-type": "application/json", cookie }, body: "{}" });
  expect(res.status).toBe(202);
}

describe("webhook slots between accounts (issue 43)", () => {
  test("one account's slow endpoints hold at most its share of the slots; another account's test event is delivered while they are held", async () => {
    const flooder = await signInCookie(stack.baseUrl, stack.devnet.keys.users[1] as Hex);
    const other = await signInCookie(stack.baseUrl, stack.devnet.keys.users[2] as Hex);
    // Three endpoints x 4 test events: 12 due deliveries, as many as the instance's slots (the code before gave them all 12).
    // Test events are counted per account and receiving host (10 a minute): the second endpoint is named by `localhost`.
    const slow = await Promise.all([0, 1, 2].map((i) => endpointOf(flooder, i === 1 ? receiver.url(`/slow/${i}`).replace("127.0.0.1", "localhost") : receiver.url(`/slow/${i}`))));
    for (const id of slow) for (let n = 0; n < 4; n++) await sendTest(flooder, id);
    await waitFor("the flooding account's share held", () => (receiver.holding() >= 8 ? true : undefined));

    const fast = await endpointOf(other, receiver.url("/fast"));
    await sendTest(other, fast);
    await waitFor("the other account's test event", () => (receiver.seen.includes("/fast") ? true : undefined));
    // Its receivers never answered: the flooding account held its share and never more, a free slot went to the other.
    expect(receiver.mostHeld()).toBe(8);
  }, 90_000);
});
