/**
 * A free account's share of the private relay's hourly gas (`PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR`), on the real
 * service and the devnet's EAS. Free accounts cost nothing to make: before, a few of them spent the hour's budget
 * (`PRIVATE_RELAY_GAS_BUDGET_PER_HOUR`) and every account, paying ones too, was refused until the hour turned.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";
import { signedLinkedIdentifier } from "./support/linked_identifier.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    env: {
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "100",
      // Room for two linked identifiers (about 250,000 gas each) and not a third.
      PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR: "700000",
    },
  });
});
afterAll(async () => await stack?.stop());

async function write(key: Hex, cookie: string, n: number) {
  const res = await fetch(`${stack.baseUrl}/api/private/relay/eas/delegated-attest`, {
    method: "POST",
    headers: { origin: APP, cookie, "content-type": "application/json" },
    body: JSON.stringify(await signedLinkedIdentifier(stack, key, `did:web:l${n}.test`)),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

test("a free account is refused past its share of the hour; another account is served", async () => {
  const spender = generatePrivateKey();
  const cookie = await signInCookie(stack.baseUrl, spender, { origin: APP });
  const statuses: number[] = [];
  let refusal: Record<string, any> | undefined;
  for (let n = 0; n < 5 && refusal === undefined; n++) {
    const answer = await write(spender, cookie, n);
    statuses.push(answer.status);
    if (answer.status === 429) refusal = answer.body;
  }
  expect(statuses[0]).toBe(200);
  expect(refusal).toMatchObject({ code: "RATE_LIMITED", error: expect.stringMatching(/account's share of the private relay/) });
  expect(statuses.length).toBeLessThan(5);

  const other = generatePrivateKey();
  const served = await write(other, await signInCookie(stack.baseUrl, other, { origin: APP }), 0);
  expect(served.status).toBe(200);
});
